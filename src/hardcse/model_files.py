"""Which file of a model folder is damaged, and how: the diagnosis behind a failed load (:func:`errors.loading`).

A library that fails to parse a file a user handed over (a truncated ``model.safetensors``, a ``tokenizer.json``
that is not JSON) raises its own error, often without naming the file. After such a failure hardcse checks the
folder's files itself, cheaply and without loading weights: every JSON file it or the libraries read parses, and
every safetensors file has a whole header whose tensors fit in the file (the format: an 8-byte little-endian
header length, a JSON header with each tensor's ``data_offsets``, then the data).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

JSON_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "modules.json",
    "config_sentence_transformers.json",
    "sentence_bert_config.json",
    "adapter_config.json",
    "generation_config.json",
    "generator.json",
)
MAX_HEADER = 100 << 20  # safetensors' own limit on the header's size


def _safetensors_problem(path: Path) -> str | None:
    size = path.stat().st_size
    if size < 8:
        return f"{size} bytes, shorter than a safetensors header"
    with path.open("rb") as fh:
        (length,) = struct.unpack("<Q", fh.read(8))
        if length > MAX_HEADER or 8 + length > size:
            return "not a safetensors file (its header length does not fit the file)"
        try:
            header = json.loads(fh.read(length))
        except (UnicodeDecodeError, ValueError):
            return "not a safetensors file (its header is not JSON)"
    if not isinstance(header, dict):
        return "not a safetensors file (its header is not a JSON object)"
    ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__" and isinstance(t, dict)]
    needed = 8 + length + max(ends, default=0)
    if needed > size:
        return f"truncated: {size:,} bytes, its header describes {needed:,}"
    return None


def _json_problem(path: Path) -> str | None:
    try:
        json.loads(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError:
        return "not UTF-8 text"
    except ValueError as e:
        return f"not valid JSON ({e})"
    return None


def damaged_file(folder: str | Path) -> tuple[Path, str] | None:
    """The first damaged file of a model folder (its subfolders too, as sentence-transformers modules live
    there) and what is wrong with it, or None when every checked file is whole."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        if path.suffix == ".safetensors":
            problem = _safetensors_problem(path)
        elif path.name in JSON_FILES:
            problem = _json_problem(path)
        else:
            continue
        if problem:
            return path, problem
    return None
