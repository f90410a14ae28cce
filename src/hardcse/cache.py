"""What every on-disk cache of hardcse shares: the part of a key that is not the cache's own inputs, how an entry
is published so that it is complete or absent and two processes on one cold cache both succeed, and what an entry
records beside it so that ``hardcse cache`` can list and prune it (hardcse/cache_entries.py).

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

**Beside an entry.** ``<entry>.entry.json`` (:func:`write_sidecar`) says what the entry is: its kind, the inputs its
key names, its :func:`environment` and when it was made. It lies beside a folder entry, never inside: a folder entry
is copied into run folders byte for byte. ``<entry>.leases/<host>-<pid>`` (:func:`lease`) says that a process was
handed the folder entry; its modification time is the entry's last use. A file entry's last use is its own
modification time (:func:`read_file_entry` touches it). A prune deletes nothing a live process holds a lease on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import hashlib
import json
import os
import shutil
import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hardcse.atomic import write_json_atomic
from hardcse.machine import library_versions, machine_kind
from hardcse.paths import cache_dir

__all__ = [
    "EntryDescription",
    "cache_dir",
    "code_digest",
    "environment",
    "environment_digest",
    "lease",
    "locked",
    "publish_dir",
    "read_file_entry",
    "write_sidecar",
]


# the layers above the shared code (hardcse/cli, the methods, the assay): the shared code never imports them
# (tests/test_caches.py checks it), so what it computes does not depend on them
UPPER_LAYERS = ("art", "datacube", "diffaug", "cli", "assay.py", "api.py")
SIDECAR_SUFFIX = ".entry.json"
LEASES_SUFFIX = ".leases"


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


def environment(device: object, shared_code: bool = False) -> dict:
    """The part of a key that is not a cache's own inputs, for work on ``device`` (a ``torch.device``): the code
    digest and its scope (``shared``: without :data:`UPPER_LAYERS`; else ``all``), the computing libraries'
    versions and the machine's kind. ``device`` is named too, so that today's environment can be computed again
    for the same device (hardcse/cache_entries.py); it is not digested (the machine's kind is)."""
    return {
        "code": code_digest(without=UPPER_LAYERS if shared_code else ()),
        "scope": "shared" if shared_code else "all",
        "libraries": library_versions(),
        "machine": machine_kind(device),
        "device": str(device),
    }


def environment_digest(digest: Any, device: object, shared_code: bool = False) -> dict:
    """Feed ``digest`` (a hashlib object) with hardcse's code (``shared_code``: without :data:`UPPER_LAYERS`, for what
    only the shared code computes), the computing libraries' versions and the machine's kind for work on ``device``
    (a ``torch.device``); that :func:`environment`, for the entry's sidecar."""
    # the bytes and their order are every existing key's: tests/test_cache_command.py pins them
    found = environment(device, shared_code)
    digest.update(f"code {found['code']}\0".encode())
    digest.update(json.dumps(found["libraries"], sort_keys=True).encode())
    digest.update(f"\0{found['machine']}\0".encode())
    return found


@dataclasses.dataclass(frozen=True)
class EntryDescription:
    """What an entry's sidecar says about it (besides when it was made)."""

    kind: str  # converted-checkpoint, openvino, discriminator, tuned, generations, eval
    description: str  # the inputs its key names, in a few words
    environment: dict | None  # environment_digest's answer for its key


def sidecar_path(entry: Path) -> Path:
    return entry.with_name(entry.name + SIDECAR_SUFFIX)


def leases_dir(entry: Path) -> Path:
    return entry.with_name(entry.name + LEASES_SUFFIX)


def lock_path(entry: Path) -> Path:
    return entry.with_name(entry.name + ".lock")


def write_sidecar(entry: Path, described: EntryDescription) -> None:
    """``<entry>.entry.json``: ``described`` and the time now, written atomically."""
    created = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    write_json_atomic(sidecar_path(entry), {**dataclasses.asdict(described), "created": created})


def lease_name() -> str:
    """This process's lease file name: ``<host>-<pid>`` (a prune checks the pid on this host only)."""
    return f"{socket.gethostname()}-{os.getpid()}"


def _take_lease(entry: Path) -> None:
    # the file stays until a prune finds its process dead: a process cannot know when it is done with an entry
    folder = leases_dir(entry)
    folder.mkdir(exist_ok=True)
    (folder / lease_name()).touch()  # an existing lease: its mtime (the entry's last use) becomes now


@contextlib.contextmanager
def locked(target: Path) -> Iterator[None]:
    """Hold the lock of cache entry ``target`` (a ``<target>.lock`` file beside it; blocks while another process
    holds it)."""
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock_path(target))):
        yield


def lease(entry: Path, complete: Callable[[Path], bool]) -> bool:
    """Whether the folder entry ``entry`` is there complete; if so, this process now holds a lease on it (taken
    under its lock, so a prune either removed it before or sees the lease)."""
    if read_only(entry):  # no lock and no lease in a cache this process cannot write; nothing prunes it either
        return complete(entry)
    with locked(entry):
        if not complete(entry):
            return False
        _take_lease(entry)
    return True


def read_only(entry: Path) -> bool:
    """Whether this process cannot write the folder ``entry`` lies in (a shared cache prepared by another user)."""
    return entry.parent.is_dir() and not os.access(entry.parent, os.W_OK)


def publish_dir(
    target: Path,
    build: Callable[[Path], None],
    complete: Callable[[Path], bool],
    description: EntryDescription | None = None,
) -> Path:
    """The cache folder ``target``, built once and leased to this process: holding its lock, returned if
    ``complete(target)``; otherwise ``build(tmp)`` fills a new unique temporary sibling, which is renamed to
    ``target``, and ``description`` is written beside it (:func:`write_sidecar`). What a killed process left (its
    temporary folder, or a half-built folder at ``target``) is removed first; the temporary folder of a build that
    failed is removed."""
    if read_only(target) and complete(target):  # a cache this process cannot write (shared, prepared) still answers
        return target
    # a hit takes the lock too: the lease must be taken where a prune cannot remove the entry meanwhile
    with locked(target):
        if complete(target):  # built before, or by another process while this one waited
            if description is not None and not sidecar_path(target).is_file():  # a kill after the rename
                write_sidecar(target, description)
            _take_lease(target)
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
        if description is not None:
            write_sidecar(target, description)
        _take_lease(target)
    return target


def read_file_entry(path: Path) -> str | None:
    """The text of the file entry ``path`` (None if there is none, or a prune just removed it), its modification
    time (the entry's last use) set to now."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    with contextlib.suppress(OSError):  # a cache this process cannot write still answers
        os.utime(path)
    return text
