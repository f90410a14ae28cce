"""What every on-disk cache of hardcse shares: the part of a key that is not the cache's own inputs, and how an
entry is published so that it is complete or absent and two processes on one cold cache both succeed.

**Keys.** An entry's key digests everything that decides its content. Beside a cache's own inputs (model files,
config, prompts, seeds), :func:`environment_digest` adds what decides the arithmetic and the code path: the bytes
of hardcse's own source, the versions of the libraries that compute (hardcse/machine.py's ``LIBRARIES``), and the
machine's kind on the device the work runs on (CPU model, kernel flags and threads; or the GPU and CUDA). So a
cache shared between machines, or kept across an upgrade, is a miss, never a silent answer from other code.

**Publishing.** A folder entry (:func:`publish_dir`) is built in a temporary sibling unique to this process and
call, and renamed into place under a lock (``<target>.lock``, the ``filelock`` package that transformers and the
hub already use), after checking again whether another process finished it meanwhile: the second process of two
on a cold cache waits for the first and then reads its entry. A complete entry is never replaced, so a reader never
sees one change under it. A file entry is written by :func:`hardcse.atomic.write_text_atomic`, which also writes
to a unique temporary sibling and renames it (the last of two writers of one key wins with the same bytes).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hardcse.machine import library_versions, machine_kind
from hardcse.paths import cache_dir

__all__ = ["cache_dir", "code_digest", "environment_digest", "locked", "publish_dir"]


# the layers above the shared code (hardcse/cli, the methods, the assay): the shared code never imports them
# (tests/test_caches.py checks it), so what it computes does not depend on them
UPPER_LAYERS = ("art", "curriculum", "diffaug", "cli", "assay.py")


@functools.cache  # the code a process runs is the code it imported: one digest per process
def code_digest(without: tuple[str, ...] = ()) -> str:
    """sha256 over the names and bytes of hardcse's own ``*.py`` files: any change to the code is a new key.
    ``without``: top-level modules and packages left out (:data:`UPPER_LAYERS`, for what only the shared code
    computes, such as an NLI model)."""
    import hardcse

    package = Path(hardcse.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).parts[0] in without:
            continue
        digest.update(f"{path.relative_to(package)}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def environment_digest(digest: Any, device: object, shared_code: bool = False) -> None:
    """Feed ``digest`` (a hashlib object) with hardcse's code (``shared_code``: without :data:`UPPER_LAYERS`, for what
    only the shared code computes), the computing libraries' versions and the machine's kind for work on ``device``
    (a ``torch.device``)."""
    digest.update(f"code {code_digest(without=UPPER_LAYERS if shared_code else ())}\0".encode())
    digest.update(json.dumps(library_versions(), sort_keys=True).encode())
    digest.update(f"\0{machine_kind(device)}\0".encode())


@contextlib.contextmanager
def locked(target: Path) -> Iterator[None]:
    """Hold the lock of cache entry ``target`` (a ``<target>.lock`` file beside it; blocks while another process
    holds it)."""
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target.with_name(target.name + ".lock"))):
        yield


def publish_dir(target: Path, build: Callable[[Path], None], complete: Callable[[Path], bool]) -> Path:
    """The cache folder ``target``, built once: returned at once if ``complete(target)``; otherwise, holding its
    lock, checked again, then ``build(tmp)`` fills a new unique temporary sibling, which is renamed to ``target``.
    What a killed process left (its temporary folder, or a half-built folder at ``target``) is removed first; the
    temporary folder of a build that failed is removed."""
    if complete(target):
        return target
    with locked(target):
        if complete(target):  # another process finished it while this one waited
            return target
        for stale in target.parent.glob(f"{target.name}.partial-*"):  # a killed build's (none runs: we hold the lock)
            shutil.rmtree(stale, ignore_errors=True)
        tmp = target.with_name(f"{target.name}.partial-{uuid.uuid4().hex[:12]}")
        tmp.mkdir(parents=True)
        try:
            build(tmp)
            if not complete(tmp):
                raise RuntimeError(f"building cache entry {target} left it incomplete")
            if target.exists():  # left incomplete by a process killed before this lock existed or while renaming
                shutil.rmtree(target)
            tmp.rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target
