"""How a run's record keeps its large files: gzip-compressed, read back as if they were plain.

A run's record (art_rounds.keep_run: benchmarks/results/art_evidence/records/NAME-seed-S and
hard_correct/records/NAME-seed-S) keeps each file named in COMPRESSED as NAME.gz (gzip level 9 with no timestamp:
the same bytes always give the same file), the small ones as they are: every figure of a page is computed again
from them, at about a quarter of their plain size (docs/development.md, "Adding a benchmark record"). The
benchmarks read such a file through :func:`read_text` (the file, or its ``.gz``), :func:`plain_file` (a plain copy,
for a reader that takes a path) and :func:`unpacked` (whole record folders decompressed into a temporary folder
under their own names, for hardcse's readers of a run folder: the report, ``art compare``, ``load_result``).
"""

from __future__ import annotations

import gzip
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# a record's files kept compressed: per-pair cosines, the report's measures, the kept triplets and the RL logs
COMPRESSED = ("eval.json", "measures.json", "triplets.csv", "rl_log.jsonl", "completions.jsonl")
GZ = ".gz"


def compress(folder: Path) -> None:
    """Replace each file under ``folder`` named in COMPRESSED by its NAME.gz."""
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name in COMPRESSED:
            path.with_name(path.name + GZ).write_bytes(gzip.compress(path.read_bytes(), compresslevel=9, mtime=0))
            path.unlink()


def stored(path: Path) -> Path:
    """Where ``path`` is kept: itself, or its NAME.gz where only that exists."""
    packed = path.with_name(path.name + GZ)
    return packed if not path.is_file() and packed.is_file() else path


def exists(path: Path) -> bool:
    """``path`` is kept, plain or compressed."""
    return stored(path).is_file()


def read_bytes(path: Path) -> bytes:
    """The bytes of ``path``, decompressed where the record keeps it as NAME.gz."""
    kept = stored(path)
    return gzip.decompress(kept.read_bytes()) if kept != path else kept.read_bytes()


def read_text(path: Path) -> str:
    return read_bytes(path).decode("utf-8")


@contextmanager
def plain_file(path: Path) -> Iterator[Path]:
    """``path`` itself where it is plain; else a temporary plain copy of the same name (for readers that take a
    path and detect the format by its name, as hardcse's read_triplets does)."""
    if path.is_file():
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="record-file-") as tmp:
        copy = Path(tmp) / path.name
        copy.write_bytes(read_bytes(path))
        yield copy


@contextmanager
def unpacked(folders: list[Path]) -> Iterator[list[Path]]:
    """Temporary copies of record folders (each under its own name) with every compressed file decompressed: run
    folders as hardcse reads them. Nothing is written into the records."""
    with tempfile.TemporaryDirectory(prefix="records-") as tmp:
        copies = []
        for folder in folders:
            copy = Path(tmp) / folder.name
            shutil.copytree(folder, copy)
            for packed in sorted(copy.rglob("*" + GZ)):
                if packed.name.removesuffix(GZ) in COMPRESSED:
                    packed.with_name(packed.name.removesuffix(GZ)).write_bytes(gzip.decompress(packed.read_bytes()))
                    packed.unlink()
            copies.append(copy)
        yield copies
