"""Atomic file writes: a file is either complete or absent, never half-written (what ``--resume`` relies on)."""

import os
from pathlib import Path


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to a temporary sibling, then rename it over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def write_json_atomic(path: str | Path, data: object) -> Path:
    """``data`` as indented JSON, written atomically."""
    import json

    return write_text_atomic(path, json.dumps(data, indent=2))
