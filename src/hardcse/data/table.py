"""One careful reader for every tabular file a user brings: TSV, CSV, JSONL, or one text per line.

Every problem is reported with file and line. With ``on_error="raise"`` (the default) the first problem stops
the read with a :class:`HardcseError`; with ``on_error="skip"`` the bad record is dropped, counted by reason,
and the counts are kept on the returned :class:`Table` for the caller to report. Nothing is dropped silently.
"""

from __future__ import annotations

import csv
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from hardcse.data.jsonl import split_lines
from hardcse.errors import HardcseError, not_a_file

log = logging.getLogger(__name__)

OnError = Literal["raise", "skip"]
MAX_FIELD_CHARS = 10_000
FORMATS = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".txt": "txt"}

csv.field_size_limit(2**31 - 1)  # long fields are caught below with a clear message, not by csv's limit


@dataclass
class Table:
    """Rows of one file, with the line each row started on and the count of skipped records by reason."""

    path: Path
    rows: list[dict[str, Any]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    first_problems: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, name: str) -> list[Any]:
        return [row[name] for row in self.rows]

    def summary(self) -> str:
        text = f"{self.path}: {len(self.rows)} rows"
        if self.skipped:
            reasons = ", ".join(f"{n} {reason}" for reason, n in self.skipped.most_common())
            text += f", skipped {sum(self.skipped.values())} ({reasons}); first: {self.first_problems[0]}"
        return text


class _Problem(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def detect_format(path: Path) -> str:
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise HardcseError(f"{path}: unknown file type {path.suffix!r}; use one of {', '.join(sorted(FORMATS))}")
    return fmt


def text_columns(path: Path, fmt: str) -> list[str]:
    """The columns of a file as a reader would name them: the header's (CSV/TSV), the string-valued keys of the
    first object (JSONL), or ``text`` (one text a line)."""
    if fmt == "txt":
        return ["text"]
    text, _ = _decode(path, "skip")
    lines = [line for line in split_lines(text) if line.strip()]
    if not lines:
        raise HardcseError(f"{path}: the file is empty")
    if fmt == "jsonl":
        try:
            first = json.loads(lines[0])
        except json.JSONDecodeError as e:
            raise HardcseError(f"{path}:1: not valid JSON ({e.msg})") from None
        if not isinstance(first, dict):
            raise HardcseError(f"{path}:1: expected a JSON object per line")
        return [k for k, v in first.items() if isinstance(v, str)]
    return [name.strip() for name in next(csv.reader(lines[:1], delimiter="\t" if fmt == "tsv" else ","))]


def read_table(
    path: str | Path,
    columns: Sequence[str],
    *,
    converters: Mapping[str, Callable[[str], Any]] | None = None,
    rename: Mapping[str, str] | None = None,
    fmt: str | None = None,
    on_error: OnError = "raise",
    max_field_chars: int = MAX_FIELD_CHARS,
    allow_empty: Sequence[str] = (),
) -> Table:
    """Read ``columns`` from a file; other columns are ignored.

    ``rename`` maps names in the file to the names asked for (``{"premise": "sentence1"}``);
    ``converters`` turn a column's text into a value (``{"score": float}``); a failing conversion is a
    problem of that line. For ``txt`` files the single column is the whole line.
    """
    path = Path(path)
    if on_error not in ("raise", "skip"):
        raise HardcseError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
    if not path.is_file():
        raise not_a_file(path)
    fmt = fmt or detect_format(path)
    text, bad_lines = _decode(path, on_error)
    table = Table(path=path)
    converters = converters or {}
    rename = dict(rename or {})
    for line, raw in _records(path, text, fmt, columns, rename):
        try:
            if isinstance(raw, _Problem):
                raise raw
            if line in bad_lines:
                raise _Problem("encoding", f"{path}:{line}: not UTF-8 text")
            row = _check_row(path, line, raw, columns, converters, max_field_chars, allow_empty)
        except _Problem as problem:
            if on_error == "raise":
                raise HardcseError(f"{problem}; --skip-bad-rows (on_error='skip') counts and skips such rows") from None
            table.skipped[problem.reason] += 1
            if len(table.first_problems) < 5:
                table.first_problems.append(str(problem))
            continue
        table.rows.append(row)
        table.lines.append(line)
    if table.skipped:
        log.warning("skipped bad rows: %s", table.summary())
    return table


def _decode(path: Path, on_error: OnError) -> tuple[str, set[int]]:
    """The file's text, and the numbers of lines that are not UTF-8 (only in skip mode; else an error)."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig"), set()
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        if on_error == "raise":
            raise HardcseError(
                f"{path}:{line}: not UTF-8 text (byte {data[e.start]:#04x}); re-save the file as UTF-8"
            ) from None
    bad_lines, lines = set(), []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append(raw.decode("utf-8-sig" if number == 1 else "utf-8"))
        except UnicodeDecodeError:
            bad_lines.add(number)
            lines.append(raw.decode("utf-8", errors="replace"))
    return "\n".join(lines), bad_lines


def _records(
    path: Path, text: str, fmt: str, columns: Sequence[str], rename: dict[str, str]
) -> Iterator[tuple[int, dict[str, Any] | _Problem]]:
    if fmt == "txt":
        if len(columns) != 1:
            raise HardcseError(f"{path}: a one-per-line text file has one column, not {list(columns)}")
        for number, line in enumerate(split_lines(text), start=1):
            if line.strip():
                yield number, {columns[0]: line.strip()}
        return
    if fmt == "jsonl":
        for number, line in enumerate(split_lines(text), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                yield number, _Problem("bad JSON", f"{path}:{number}: not valid JSON ({e.msg})")
                continue
            if not isinstance(obj, dict):
                yield number, _Problem("bad JSON", f"{path}:{number}: expected a JSON object per line")
                continue
            yield number, {rename.get(k, k): v for k, v in obj.items()}
        return
    delimiter = "\t" if fmt == "tsv" else ","
    lines = split_lines(text, keepends=True)
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    try:
        header = next(reader)
    except (StopIteration, csv.Error):
        raise HardcseError(f"{path}: the file is empty; it needs a header row with {list(columns)}") from None
    header = [rename.get(name.strip(), name.strip()) for name in header]
    missing = [c for c in columns if c not in header]
    if missing:
        raise HardcseError(
            f"{path}:1: missing column(s) {missing}; the header has {header}. "
            f"Rename the header or map names (e.g. premise->sentence1)."
        )
    # One record at a time from its first line: a broken record (an unclosed quote swallows the lines after it)
    # costs exactly its first line, and parsing goes on at the next line, so every line is read or counted.
    index = reader.line_num
    while index < len(lines):
        start = index + 1
        reader = csv.reader((lines[i] for i in range(index, len(lines))), delimiter=delimiter, strict=True)
        try:
            cells = next(reader)
        except csv.Error as e:
            yield start, _Problem("broken quoting", f"{path}:{start}: broken quoting ({e}): is a quote not closed")
            index += 1
            continue
        if reader.line_num > 1:
            yield (
                start,
                _Problem(
                    "broken quoting",
                    f"{path}:{start}: a quoted field runs over {reader.line_num} lines; a quote is probably not closed",
                ),
            )
            index += 1
            continue
        index += 1
        if not cells or (len(cells) == 1 and not cells[0].strip() and len(header) > 1):
            continue  # a blank line is not a record
        if len(cells) != len(header):
            yield (
                start,
                _Problem(
                    "wrong number of fields",
                    f"{path}:{start}: {len(cells)} fields, the header has {len(header)} "
                    f"(a stray {'tab' if delimiter == chr(9) else 'comma'} or quote?)",
                ),
            )
        else:
            yield start, dict(zip(header, cells, strict=True))


def _check_row(
    path: Path,
    line: int,
    raw: dict[str, Any],
    columns: Sequence[str],
    converters: Mapping[str, Callable[[str], Any]],
    max_field_chars: int,
    allow_empty: Sequence[str],
) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for name in columns:
        if name not in raw:
            raise _Problem("missing field", f"{path}:{line}: no field {name!r}")
        value = raw[name]
        if value is None:
            value = ""
        if not isinstance(value, str):
            value = str(value) if name in converters else value
        if not isinstance(value, str):
            raise _Problem("not text", f"{path}:{line}: field {name!r} is {type(value).__name__}, not text")
        if len(value) > max_field_chars:
            raise _Problem(
                "field too long",
                f"{path}:{line}: field {name!r} has {len(value):,} characters (limit {max_field_chars:,})",
            )
        value = value.strip()
        if not value and name not in allow_empty:
            raise _Problem("empty field", f"{path}:{line}: field {name!r} is empty")
        if name in converters and value:
            try:
                value = converters[name](value)
            except (TypeError, ValueError) as e:
                raise _Problem("bad value", f"{path}:{line}: field {name!r}: {value[:40]!r} ({e})") from None
        row[name] = value
    return row
