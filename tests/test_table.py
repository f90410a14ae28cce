import json

import pytest

from hardcse.data.table import read_table
from hardcse.errors import HardcseError


def write(tmp_path, name, text):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_reads_tsv_with_quotes_converters_and_renames(tmp_path):
    path = write(tmp_path, "a.tsv", 'premise\thypothesis\tscore\n"He said ""hi"""\tOk.\t4.5\nB\tC\t1\n')
    table = read_table(path, ["sentence1", "score"], rename={"premise": "sentence1"}, converters={"score": float})
    assert table.rows == [{"sentence1": 'He said "hi"', "score": 4.5}, {"sentence1": "B", "score": 1.0}]
    assert table.lines == [2, 3]


def test_missing_column_names_file_and_header(tmp_path):
    path = write(tmp_path, "a.csv", "sent0,sent1\nx,y\n")
    with pytest.raises(HardcseError, match=r"a\.csv:1: missing column\(s\) \['hard_neg'\]"):
        read_table(path, ["sent0", "sent1", "hard_neg"])


def test_empty_cell_is_an_error_with_its_line(tmp_path):
    path = write(tmp_path, "a.csv", "sent0,sent1\nx,y\nz,\n")
    with pytest.raises(HardcseError, match=r"a\.csv:3: field 'sent1' is empty"):
        read_table(path, ["sent0", "sent1"])


def test_broken_quoting_points_at_the_opening_line(tmp_path):
    closed_later = write(tmp_path, "a.tsv", 'a\tb\nfine\tok\n"open\tquote\nnext"\tline\nlast\tline\n')
    with pytest.raises(HardcseError, match=r"a\.tsv:3: a quoted field runs over 2 lines"):
        read_table(closed_later, ["a", "b"])
    never_closed = write(tmp_path, "b.tsv", 'a\tb\nfine\tok\n"open\tquote\nnext\tline\n')
    with pytest.raises(HardcseError, match=r"b\.tsv:3: broken quoting"):
        read_table(never_closed, ["a", "b"])


def test_wrong_field_count(tmp_path):
    path = write(tmp_path, "a.tsv", "a\tb\nx\ty\tz\n")
    with pytest.raises(HardcseError, match=r"a\.tsv:2: 3 fields, the header has 2"):
        read_table(path, ["a", "b"])


def test_wrong_encoding_names_the_line(tmp_path):
    path = write(tmp_path, "a.txt", b"good line\n" + b"caf\xe9 latin-1\n")
    with pytest.raises(HardcseError, match=r"a\.txt:2: not UTF-8"):
        read_table(path, ["text"])


def test_a_100kb_line_is_refused(tmp_path):
    path = write(tmp_path, "a.txt", "short\n" + "x" * 100_000 + "\n")
    with pytest.raises(HardcseError, match=r"a\.txt:2: field 'text' has 100,000 characters"):
        read_table(path, ["text"])


def test_skip_mode_counts_every_dropped_row(tmp_path):
    text = "sent0,sent1\nx,y\nz,\n" + "a," + "b" * 20_000 + "\nok,fine\n"
    table = read_table(write(tmp_path, "a.csv", text), ["sent0", "sent1"], on_error="skip")
    assert table.column("sent0") == ["x", "ok"]
    assert table.skipped == {"empty field": 1, "field too long": 1}
    assert "a.csv:3" in table.summary()


def test_skip_mode_drops_undecodable_lines_only(tmp_path):
    path = write(tmp_path, "a.txt", b"one\ntw\xff\nthree\n")
    table = read_table(path, ["text"], on_error="skip")
    assert table.column("text") == ["one", "three"]
    assert table.skipped == {"encoding": 1}


def test_jsonl_bad_json_and_non_text(tmp_path):
    path = write(tmp_path, "a.jsonl", '{"text": "a"}\n{"text": \n{"text": 3}\n')
    with pytest.raises(HardcseError, match=r"a\.jsonl:2: not valid JSON"):
        read_table(path, ["text"])
    table = read_table(path, ["text"], on_error="skip")
    assert table.column("text") == ["a"]
    assert table.skipped == {"bad JSON": 1, "not text": 1}


def test_unknown_extension_and_missing_file(tmp_path):
    with pytest.raises(HardcseError, match="unknown file type"):
        read_table(write(tmp_path, "a.xlsx", "x"), ["a"])
    with pytest.raises(HardcseError, match="no such file"):
        read_table(tmp_path / "nope.tsv", ["a"])


def test_literal_replacement_character_in_valid_utf8_is_kept(tmp_path):
    path = write(tmp_path, "a.txt", "it\ufffds fine\n")
    assert read_table(path, ["text"]).column("text") == ["it\ufffds fine"]


SEPARATORS = ["\u2028", "\u2029", "\x85", "\x0c", "\x0b", "\x1c", "\x1d", "\x1e"]  # str.splitlines splits on all


@pytest.mark.parametrize("fmt", ["tsv", "csv", "txt", "jsonl"])
def test_only_newline_ends_a_row(tmp_path, fmt):
    texts = [f"one{sep}still one" for sep in SEPARATORS]
    if fmt == "jsonl":
        body = "".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts)
    else:
        body = ("text\n" if fmt != "txt" else "") + "".join(t + "\n" for t in texts)
    table = read_table(write(tmp_path, f"a.{fmt}", body), ["text"])
    first = 2 if fmt in ("tsv", "csv") else 1  # after the header
    assert table.column("text") == texts and table.lines == list(range(first, first + len(texts)))


def test_crlf_and_a_byte_order_mark_read_like_plain_files(tmp_path):
    plain = read_table(write(tmp_path, "a.tsv", "a\tb\nx\ty\nz\tw\n"), ["a", "b"])
    windows = read_table(write(tmp_path, "b.tsv", b"\xef\xbb\xbfa\tb\r\nx\ty\r\nz\tw\r\n"), ["a", "b"])
    assert windows.rows == plain.rows and windows.lines == plain.lines == [2, 3]


def test_skip_mode_after_an_unclosed_quote_keeps_the_rows_that_follow(tmp_path):
    text = 'a\tb\nfine\tok\n"open\tquote\nnext\tline\nlast\tline\n'
    table = read_table(write(tmp_path, "a.tsv", text), ["a", "b"], on_error="skip")
    assert table.column("a") == ["fine", "next", "last"] and table.lines == [2, 4, 5]
    assert table.skipped == {"broken quoting": 1} and "a.tsv:3" in table.summary()


def test_skip_mode_drops_the_undecodable_line_by_the_same_numbers(tmp_path):
    # a U+2028 on line 2 would shift every later number if lines were counted by str.splitlines
    path = write(tmp_path, "a.tsv", "a\tb\nx\u2028x\ty\n".encode() + b"caf\xe9\tz\n" + b"ok\tw\n")
    with pytest.raises(HardcseError, match=r"a\.tsv:3: not UTF-8"):
        read_table(path, ["a", "b"])
    table = read_table(path, ["a", "b"], on_error="skip")
    assert table.column("a") == ["x\u2028x", "ok"] and table.lines == [2, 4]
    assert table.skipped == {"encoding": 1} and "a.tsv:3" in table.summary()
