"""A blind sample of kept triplets for a reader, and the reader's answers split back by side (for triplet_read.py).

    python benchmarks/read_sample.py sample --work DIR --sides A B [--count 100] --out SAMPLE_DIR
    python benchmarks/read_sample.py sample --work DIR --sides mined=assay_warm_start/mined/chunk-000 ... --out S
    python benchmarks/read_sample.py sample --work DIR --sides old=benchmarks/results/OLD_READ/art.jsonl new=... --out S
    python benchmarks/read_sample.py split --out SAMPLE_DIR --folder benchmarks/results/NAME [--mined SIDE ...]

``sample``: the first ``--count`` kept triplets of each side's ``synthetic.jsonl`` in the benchmarks/warm_start.py
work folder DIR (a side ``NAME=PATH,PATH`` reads DIR/PATH/synthetic.jsonl of each, in order: benchmarks/warm_assay.py's
chunks; a side ``NAME=FILE.jsonl`` takes the triplets of an earlier read's side file, so one reader judges old and
new data alike), mixed in a seeded order and numbered, into SAMPLE_DIR/sample.jsonl (id, anchor, positive,
negative: nothing says which side wrote a triplet or how a model judged it) and SAMPLE_DIR/key.json (id -> side and
the triplet's place in its side). The reader writes SAMPLE_DIR/read.jsonl, one judgment per id: ``positive_ok``,
``negative_ok`` (the negative contradicts the anchor), ``negative_false_negative`` (the negative says what the
anchor says), ``shortcuts`` (a list: ``deletion``, ``negation``) and a ``note``. ``split`` checks that every id is
judged once and writes FOLDER/SIDE.jsonl, each side's judgments in its own order, for triplet_read.py; a side named
in ``--mined`` (its negatives mined from a corpus: a good one is unrelated, not a contradiction) keeps
``negative_false_negative`` only, which triplet_read.py counts for mined negatives.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

FIELDS = ("positive_ok", "negative_ok", "negative_false_negative", "shortcuts", "note")


def sample(work: Path, sides: list[str], count: int, out: Path, seed: int = 0) -> None:
    rows = []
    for given in sides:
        side, _, paths = given.partition("=")
        if paths.endswith(".jsonl"):  # an earlier read's side: its triplets, read again blind beside the new ones
            kept = [json.loads(line) for line in Path(paths).read_text().splitlines()][:count]
        else:
            folders = [work / p for p in (paths.split(",") if paths else [side])]
            lines = [line for f in folders for line in (f / "synthetic.jsonl").read_text().splitlines()]
            kept = [r for r in map(json.loads, lines) if r["drop_reason"] is None][:count]
        if len(kept) < count:
            sys.exit(f"error: {given}: {len(kept)} kept triplets, fewer than --count {count}")
        rows += [(side, i, r) for i, r in enumerate(kept)]
    random.Random(seed).shuffle(rows)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "sample.jsonl").open("w") as f:
        for n, (_, _, r) in enumerate(rows):
            f.write(json.dumps({"id": n, "anchor": r["anchor"], "positive": r["positive"], "negative": r["negative"]}))
            f.write("\n")
    key = {n: {"side": side, "idx": i} for n, (side, i, _) in enumerate(rows)}
    (out / "key.json").write_text(json.dumps(key, indent=1))


def split(out: Path, folder: Path, mined: list[str]) -> None:
    key = json.loads((out / "key.json").read_text())
    texts = {str(r["id"]): r for r in map(json.loads, (out / "sample.jsonl").read_text().splitlines())}
    read = [json.loads(line) for line in (out / "read.jsonl").read_text().splitlines() if line.strip()]
    ids = [str(r["id"]) for r in read]
    if sorted(ids) != sorted(key) or len(set(ids)) != len(ids):
        sys.exit(f"error: {out / 'read.jsonl'}: judges {len(set(ids))} distinct ids of {len(key)}; judge each once")
    missing = [f for r in read for f in FIELDS if f not in r]
    if missing:
        sys.exit(f"error: {out / 'read.jsonl'}: a judgment lacks {missing[0]!r}")
    by_side: dict[str, list[dict]] = {}
    for r in read:
        place = key[str(r["id"])]
        text = texts[str(r["id"])]
        by_side.setdefault(place["side"], []).append(
            {"idx": place["idx"], "anchor": text["anchor"], "positive": text["positive"],
             "negative": text["negative"], "sample_id": r["id"],
             **{f: r[f] for f in FIELDS if not (f == "negative_ok" and place["side"] in mined)}}
        )  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    for side, rows in by_side.items():
        rows.sort(key=lambda r: r["idx"])
        (folder / f"{side}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample")
    s.add_argument("--work", required=True)
    s.add_argument("--sides", nargs="+", required=True)
    s.add_argument("--count", type=int, default=100)
    s.add_argument("--out", required=True)
    p = sub.add_parser("split")
    p.add_argument("--out", required=True)
    p.add_argument("--folder", required=True)
    p.add_argument("--mined", nargs="*", default=[], help="sides whose negatives were mined")
    args = parser.parse_args()
    if args.command == "sample":
        sample(Path(args.work), args.sides, args.count, Path(args.out))
    else:
        split(Path(args.out), Path(args.folder), args.mined)


if __name__ == "__main__":
    main()
