"""``hardcse decontaminate FILE``: a user's training file without the rows that match an evaluation text."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "decontaminate",
        help="drop the rows of a training file that match an STS test or dev sentence (exact or near duplicate)",
        description="Every text column of every row is normalised (case, punctuation, whitespace) and matched "
        "against the sentences of the seven STS test sets and STS-B dev: an exact match, or a word n-gram Jaccard "
        "at or above --threshold, drops the row. The kept rows are written unchanged (their original lines) to "
        "--out, the dropped ones listed with what they matched in OUT's .matches.jsonl.",
    )
    p.add_argument("file", metavar="FILE", help="a .csv/.tsv with a header, a .jsonl, or a .txt (one text a line)")
    p.add_argument("--columns", nargs="+", help="the text columns (default: every column of the header)")
    p.add_argument("--out", help="the clean file (default: FILE with .decontaminated before its suffix)")
    p.add_argument("--ngram", type=int, default=3, help="word n-grams compared (default 3)")
    p.add_argument("--threshold", type=float, default=0.8, help="Jaccard for a near duplicate (default 0.8)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from hardcse.atomic import write_text_atomic
    from hardcse.data.decontamination import Decontamination, DecontaminationConfig
    from hardcse.data.jsonl import split_lines
    from hardcse.data.table import detect_format, read_table, text_columns
    from hardcse.errors import HardcseError, not_a_file
    from hardcse.folder_checks import check_output_file

    path = Path(args.file)
    if not path.is_file():
        raise not_a_file(path)
    out = Path(args.out) if args.out else path.with_name(f"{path.stem}.decontaminated{path.suffix}")
    matches = out.with_name(f"{out.stem}.matches.jsonl")
    if out.resolve() == path.resolve():
        raise HardcseError(f"--out {out}: the same file as FILE; write the clean rows elsewhere")
    check_output_file(out)
    if out.exists() and not args.overwrite:
        raise HardcseError(f"{out} exists; pass --overwrite to replace it, or another --out")
    try:
        config = DecontaminationConfig(ngram=args.ngram, threshold=args.threshold)
    except HardcseError as e:
        raise HardcseError(f"--{e}") from None
    fmt = detect_format(path)
    columns = args.columns or text_columns(path, fmt)
    table = read_table(path, columns, fmt=fmt, allow_empty=columns)
    numbered = list(zip(table.lines, table.rows, strict=True))
    check = Decontamination(config)
    kept = check.filter(str(path), numbered, lambda row: [(c, str(row[1][c])) for c in columns if row[1][c]])
    for record in check.dropped:  # the file's line, not the row's index
        record["line"] = numbered[record.pop("row") - 1][0]
    # the kept records' own lines (the readers take one line a record) after the header
    lines = split_lines(path.read_text(encoding="utf-8"), keepends=True)
    header = lines[: table.lines[0] - 1] if table.lines else lines
    text = "".join(header) + "".join(lines[line - 1] for line, _ in kept)
    check.write_matches(matches)  # the list first: a clean file never stands without it
    write_text_atomic(out, text)
    print(f"{check.lines()[0]}\nwritten: {out} ({len(kept)} rows), {matches}")
