"""Lines and JSON Lines: how every file hardcse reads is split, and how every JSONL file it writes is written.

Lines are split on ``\\n`` only (a ``\\r`` before it is dropped, so CRLF files read the same): ``str.splitlines``
would also split on U+2028, U+2029, U+0085, form feed and other separators that may stand inside a sentence.
Writers escape those separators, so a JSONL file hardcse writes has exactly one record per line for any tool.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO

from hardcse.errors import HardcseError, not_a_file

# Line separators of str.splitlines that JSON leaves raw (it escapes every control character below U+0020).
_RAW_SEPARATORS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """``text`` split on ``\\n`` only; a final newline does not start an empty line. Without ``keepends`` the line
    ends (``\\n``, ``\\r\\n``) are dropped; with it, each line keeps its ``\\n``."""
    lines = text.split("\n")
    last = lines.pop()
    if keepends:
        return [line + "\n" for line in lines] + ([last] if last else [])
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    return lines + ([last.removesuffix("\r")] if last else [])


def jsonl_line(record: object) -> str:
    """One JSON record and its newline; non-ASCII text kept readable, line separators escaped."""
    text = json.dumps(record, ensure_ascii=False)
    for raw, escaped in _RAW_SEPARATORS.items():
        text = text.replace(raw, escaped)  # these can only stand inside a JSON string, where \\uXXXX is equivalent
    return text + "\n"


def jsonl_text(records: list) -> str:
    return "".join(jsonl_line(r) for r in records)


def append_jsonl(handle: IO[str], record: object) -> None:
    """Append one record to an open log and flush it, so a kill leaves at most the last line torn."""
    handle.write(jsonl_line(record))
    handle.flush()


def read_jsonl(path: str | Path) -> list[dict]:
    """Every non-empty line of ``path`` as a JSON object; a bad line is an error naming ``file:line``."""
    return [record for _, record in read_jsonl_numbered(path)]


def read_jsonl_numbered(path: str | Path, text: str | None = None) -> list[tuple[int, dict]]:
    """(line number, object) for every non-empty line of ``path`` (or of its already read ``text``)."""
    return _parse(Path(path), read_utf8(path) if text is None else text)


def read_jsonl_log(path: str | Path) -> tuple[list[dict], int]:
    """A log appended to by a process that may be killed: its records and the number of torn lines dropped (0 or
    1: only a last line without its newline that is not valid JSON, the end of an interrupted write)."""
    path = Path(path)
    text = read_utf8(path)
    torn = 0
    if text and not text.endswith("\n"):
        head, _, tail = text.rpartition("\n")
        try:
            json.loads(tail)
        except json.JSONDecodeError:
            text, torn = head, 1
    return [record for _, record in _parse(path, text)], torn


def read_utf8(path: str | Path) -> str:
    """A text file's content (a UTF-8 BOM dropped); a missing or non-UTF-8 file is an error naming it."""
    path = Path(path)
    if not path.is_file():
        raise not_a_file(path)
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise HardcseError(f"{path}: not UTF-8 text (byte {e.object[e.start]:#04x})") from None


def read_json(path: str | Path) -> object:
    """A JSON file hardcse wrote (a manifest, an evaluation record); a damaged one is an error naming it."""
    text = read_utf8(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise HardcseError(
            f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}); the file is damaged: restore it "
            "or run the command again into a new folder"
        ) from None


def read_json_mapping(path: str | Path) -> dict:
    """:func:`read_json` of a file that holds one JSON object."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise HardcseError(f"{path}: not a JSON object; the file is damaged: restore it or run the command again")
    return data


def parse_line(path: Path, number: int, line: str) -> dict | None:
    """Line ``number`` of a JSONL file as its object (None for a blank line); anything else is an error."""
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except json.JSONDecodeError as e:
        raise HardcseError(f"{path}:{number}: not valid JSON ({e.msg})") from None
    if not isinstance(record, dict):
        raise HardcseError(f"{path}:{number}: expected a JSON object per line")
    return record


def _parse(path: Path, text: str) -> list[tuple[int, dict]]:
    lines = enumerate(split_lines(text), start=1)
    return [(n, record) for n, line in lines if (record := parse_line(path, n, line)) is not None]
