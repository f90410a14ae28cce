"""A corpus read one sentence at a time: text files, JSONL, CSV/TSV, Parquet, or a dataset saved by ``datasets``.

For corpora too large to hold (the ART paper draws its anchors from 1M sentences): nothing but the current line
(text formats) or the current batch of 10,000 rows (Parquet, a saved dataset, memory-mapped by Arrow) is in
memory. Blank lines and rows with an empty text are not sentences and are skipped; a line that is not UTF-8, a
JSONL line that is not an object with the column, or a file without the column stops the read with ``file:line``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from hardcse.data.jsonl import parse_line
from hardcse.errors import HardcseError, not_a_file

BATCH_ROWS = 10_000
FORMATS = ".txt, .jsonl, .csv, .tsv, .parquet"


def is_saved_dataset(path: Path) -> bool:
    """A folder written by ``Dataset.save_to_disk``."""
    return path.is_dir() and (path / "dataset_info.json").is_file() and (path / "state.json").is_file()


def stream_sentences(path: str | Path, column: str = "text") -> Iterator[str]:
    """The non-empty texts of ``column`` (the whole line for .txt) in file order, stripped of surrounding space."""
    path = Path(path)
    if is_saved_dataset(path):
        yield from _saved_dataset(path, column)
        return
    if (path / "dataset_dict.json").is_file():
        raise HardcseError(f"{path}: a DatasetDict; give the folder of one split (e.g. {path}/train)")
    if not path.is_file():
        raise not_a_file(path, f" (a corpus is {FORMATS} or a saved dataset's folder)")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        yield from _parquet(path, column)
    elif suffix in (".txt", ".jsonl", ".json", ".csv", ".tsv"):
        yield from _text_file(path, suffix, column)
    else:
        raise HardcseError(f"{path}: unknown corpus type {suffix!r}; use {FORMATS} or a saved dataset's folder")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                yield number, raw.decode("utf-8-sig" if number == 1 else "utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                raise HardcseError(f"{path}:{number}: not UTF-8 text; re-save the file as UTF-8") from None


def _text_file(path: Path, suffix: str, column: str) -> Iterator[str]:
    if suffix == ".txt":
        for _, line in _lines(path):
            if line.strip():
                yield line.strip()
        return
    if suffix in (".jsonl", ".json"):
        for number, line in _lines(path):
            row = parse_line(path, number, line)
            if row is None:
                continue
            if not isinstance(row.get(column), str):
                raise HardcseError(f"{path}:{number}: expected an object with a text {column!r}")
            if row[column].strip():
                yield row[column].strip()
        return
    lines = (line + "\n" for _, line in _lines(path))
    reader = csv.reader(lines, delimiter="\t" if suffix == ".tsv" else ",")
    header = [name.strip() for name in next(reader, [])]
    if column not in header:
        raise HardcseError(f"{path}:1: no column {column!r}; the header has {header}")
    index = header.index(column)
    for row in reader:
        if len(row) != len(header):
            raise HardcseError(f"{path}:{reader.line_num}: {len(row)} fields, the header has {len(header)}")
        if row[index].strip():
            yield row[index].strip()


def _batches_of(column_values: Iterator[list], path: Path, column: str) -> Iterator[str]:
    for values in column_values:
        for value in values:
            if value is not None and not isinstance(value, str):
                raise HardcseError(f"{path}: column {column!r} holds {type(value).__name__} values, not text")
            if value and value.strip():
                yield value.strip()


def _parquet(path: Path, column: str) -> Iterator[str]:
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path)
    if column not in file.schema_arrow.names:
        raise HardcseError(f"{path}: no column {column!r}; it has {file.schema_arrow.names}")
    batches = file.iter_batches(batch_size=BATCH_ROWS, columns=[column])
    yield from _batches_of((b.column(0).to_pylist() for b in batches), path, column)


def _saved_dataset(path: Path, column: str) -> Iterator[str]:
    from datasets import load_from_disk

    dataset = load_from_disk(str(path))  # memory-mapped: rows are read as they are asked for
    if column not in dataset.column_names:
        raise HardcseError(f"{path}: no column {column!r}; it has {dataset.column_names}")
    batches = dataset.select_columns([column]).iter(batch_size=BATCH_ROWS)
    yield from _batches_of((b[column] for b in batches), path, column)
