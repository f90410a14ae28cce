"""Atomic file writes: a file is either complete or absent, never half-written (what ``--resume`` relies on)."""

import os
import tempfile
from pathlib import Path


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to a temporary sibling of its own (unique to this call, so two processes writing one path
    never share it), then rename it over ``path``: a reader sees the old file or the new one, whole."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would make a shared cache entry unreadable to other users
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path: str | Path, data: object) -> Path:
    """``data`` as indented JSON, written atomically."""
    import json

    return write_text_atomic(path, json.dumps(data, indent=2))


def replace_dir(new: str | Path, target: str | Path) -> Path:
    """Put the complete folder ``new`` in place of ``target`` so that a kill at any moment leaves a complete
    folder: ``target`` is first renamed to ``TARGET.old``, then ``new`` to ``target``, then the old one is removed.
    :func:`recover_dir` finishes or undoes an interrupted replacement."""
    import shutil

    new, target = Path(new), Path(target)
    old = target.with_name(target.name + ".old")
    recover_dir(target)
    if target.exists():
        os.replace(target, old)
    os.replace(new, target)
    shutil.rmtree(old, ignore_errors=True)
    return target


def recover_dir(target: str | Path) -> Path | None:
    """After a kill inside :func:`replace_dir`: the complete ``target`` (the new one if it was already in place,
    else the old one put back), or None if there is none."""
    import shutil

    target = Path(target)
    old = target.with_name(target.name + ".old")
    if old.exists():
        if target.exists():
            shutil.rmtree(old)
        else:
            os.replace(old, target)
    return target if target.exists() else None
