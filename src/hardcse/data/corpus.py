"""Unlabeled sentences: one per line, or one column of a table."""

from __future__ import annotations

from pathlib import Path

from hardcse.data.table import OnError, detect_format, read_table
from hardcse.errors import not_a_file
from hardcse.paths import data_dir

WIKI_SENTENCES = "unlabeled/wiki_sentences.txt"


def read_sentences(path: str | Path | None = None, column: str = "text", on_error: OnError = "raise") -> list[str]:
    """Sentences from a .txt file (one a line) or a column of a TSV/CSV/JSONL; default: the vendored wiki sample."""
    path = Path(path) if path is not None else data_dir() / WIKI_SENTENCES
    if not path.is_file():
        raise not_a_file(path)
    if detect_format(path) == "txt":
        column = "text"
    return read_table(path, [column], on_error=on_error).column(column)
