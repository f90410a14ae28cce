"""What a cache key is made of: the bytes of a folder's files (large ones by name, size and modification time)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

HASHED_BYTES = 64 << 20  # files up to this size are keyed by their bytes, larger ones by name, size and mtime


def files_digest(folder: Path, digest: Any) -> None:
    """Feed ``digest`` (a hashlib object) with every file under ``folder``, in a fixed order."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(folder)}\0{stat.st_size}\0".encode())
        if stat.st_size > HASHED_BYTES:
            digest.update(str(stat.st_mtime_ns).encode())
            continue
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
