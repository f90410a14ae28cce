"""What a cache key is made of: the names and bytes of a folder's files.

Every byte is read, large weight files too (a 540 MB checkpoint: ~0.3 s): a key of name, size and modification
time would take a same-sized file copied with its time (``cp -p``, ``rsync -t``) for the one it replaced.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any


def files_digest(folder: Path, digest: Any, skip: Collection[str] = ()) -> None:
    """Feed ``digest`` (a hashlib object) with every file under ``folder`` (but those named in ``skip``), in a fixed
    order."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name not in skip):
        digest.update(f"{path.relative_to(folder)}\0{path.stat().st_size}\0".encode())
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
