"""A read of kept triplets, counted: how many a reader who did not make them calls wrong.

    python benchmarks/triplet_read.py [--folder benchmarks/results/warm_start_read] [--name warm_start_read]
        [--compare A:B ...]

FOLDER holds one ``SIDE.jsonl`` per side read, a judgment per kept triplet: ``positive_ok`` (the anchor entails the
positive), ``negative_ok`` (the negative contradicts the anchor; a generated negative) or
``negative_false_negative`` (a mined negative that says what the anchor says), ``shortcuts`` (``deletion``: the
positive is the anchor with words deleted; ``negation``: the negative only adds not / no / never), and a note. The
reads of 2026-12-02 were made by a separate assistant session (not a human annotator) given the first kept records
of benchmarks/warm_start.py's work folder (``--out`` of benchmarks/results/warm_start.md) and the definitions above,
who had not made them. Counting needs no model: any machine gives the same. Writes benchmarks/results/NAME.md and
NAME.json. ``--compare A:B``: B - A of each share (wrong positive, wrong negative, wrong triplet), with a 95% interval
by the normal approximation for two independent samples: the sides read their own first kept triplets, so the
anchors overlap but are not paired. With ``--by-anchor`` the interval is a bootstrap over anchors instead: the
anchors either side read are drawn with replacement, each with every judgment of either side it holds, so an
anchor both sides wrote for (the same triplet read twice, or two triplets) moves as one and what the sides share
cancels out of the difference.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path

import numpy as np

from lib.record import RESULTS, signed_interval, write_record


def is_wrong(row: dict, measure: str) -> bool:
    """Whether the read calls ``measure`` (wrong_positive, wrong_negative, wrong_triplet) wrong in ``row``."""
    negative = (not row["negative_ok"]) if "negative_ok" in row else row["negative_false_negative"]
    return {"wrong_positive": not row["positive_ok"], "wrong_negative": negative}.get(
        measure, (not row["positive_ok"]) or negative
    )


def counts(rows: list[dict]) -> dict:
    """The read's tallies: wrong positives, wrong negatives (or false negatives), either, and the shortcuts."""
    generated = "negative_ok" in rows[0]
    wrong_positive, wrong_negative, either = (
        sum(is_wrong(r, m) for r in rows) for m in ("wrong_positive", "wrong_negative", "wrong_triplet")
    )
    shortcuts = [r.get("shortcuts") or ([r["shortcut"]] if r.get("shortcut") else []) for r in rows]
    return {
        "read": len(rows),
        "negatives": "generated" if generated else "mined",
        "wrong_positive": wrong_positive,
        "wrong_negative" if generated else "false_negative": wrong_negative,
        "wrong_triplet": either,
        "deletion_positive": sum("deletion" in s for s in shortcuts),
        "negation_negative": sum("negation" in s for s in shortcuts),
        "right_with_shortcut": sum(
            bool(s) and not is_wrong(r, "wrong_triplet") for r, s in zip(rows, shortcuts, strict=True)
        ),
        "right_answers": sum(r["positive_ok"] for r in rows) + sum(r["negative_ok"] for r in rows if generated),
    }


def anchor_bootstrap_difference(
    rows_a: list[dict], rows_b: list[dict], measure: str, resamples: int = 10_000, seed: int = 0
) -> dict:
    """B's wrong share minus A's with a 95% percentile bootstrap over anchors: the union of the anchors both sides
    read, drawn with replacement, each drawn anchor with every row of either side it holds."""
    anchors = {a: i for i, a in enumerate(sorted({r["anchor"] for r in (*rows_a, *rows_b)}))}

    def per_anchor(rows: list[dict]) -> tuple[np.ndarray, np.ndarray]:
        read, wrong = np.zeros(len(anchors)), np.zeros(len(anchors))
        for r in rows:
            read[anchors[r["anchor"]]] += 1
            wrong[anchors[r["anchor"]]] += is_wrong(r, measure)
        return read, wrong

    (read_a, wrong_a), (read_b, wrong_b) = per_anchor(rows_a), per_anchor(rows_b)
    draws = np.random.default_rng(seed).multinomial(len(anchors), np.full(len(anchors), 1 / len(anchors)), resamples)
    with np.errstate(invalid="ignore", divide="ignore"):  # a draw without one side's rows: left out
        differences = draws @ wrong_b / (draws @ read_b) - draws @ wrong_a / (draws @ read_a)
    low, high = np.nanpercentile(differences, [2.5, 97.5])
    estimate = wrong_b.sum() / read_b.sum() - wrong_a.sum() / read_a.sum()
    return {"estimate": float(estimate), "low": float(low), "high": float(high), "anchors": len(anchors)}


def share_difference(a: int, n_a: int, b: int, n_b: int) -> dict:
    """b/n_b - a/n_a with its 95% interval (normal approximation, independent samples)."""
    p, q = a / n_a, b / n_b
    half = 1.96 * math.sqrt(p * (1 - p) / n_a + q * (1 - q) / n_b)
    return {"estimate": q - p, "low": q - p - half, "high": q - p + half}


ABOUT = (
    "Deletion positives count near-deletions (an article or a number changed) too; the reader's shortcut labels "
    "sometimes disagree with its own notes, so those counts are approximate. One reader, no agreement check."
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", default=str(RESULTS / "warm_start_read"), help="the reads, SIDE.jsonl each")
    parser.add_argument("--name", default="warm_start_read", help="the record's name in benchmarks/results")
    parser.add_argument("--compare", nargs="*", default=[], metavar="A:B", help="B - A of the wrong shares")
    parser.add_argument(
        "--about", default=ABOUT, help="what the page says of the labels and readers (default: the first reads')"
    )
    parser.add_argument(
        "--by-anchor", action="store_true", help="the differences' interval a bootstrap over anchors (paired)"
    )
    args = parser.parse_args()
    rows = {
        path.stem: [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
        for path in sorted(Path(args.folder).glob("*.jsonl"))
    }
    sides = {side: counts(side_rows) for side, side_rows in rows.items()}
    shown = os.path.relpath(Path(args.folder).resolve(), RESULTS.parent.parent)  # as the repository names it
    lines = [
        "A count of a reader's judgments: any machine gives the same. Each side's first kept triplets, in the work "
        "folder's order, read by a reader who did not make them (a separate assistant session, not a human "
        f"annotator); the judgments and a note for each are in {shown}/. {args.about}",
        "",
        "| side | negatives | read | wrong positive | wrong negative (generated) or false negative (mined) | "
        "wrong triplet | right triplets with a shortcut | deletion positives | negation-only negatives |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for side, c in sides.items():
        negative = c.get("wrong_negative", c.get("false_negative"))
        lines.append(
            f"| {side} | {c['negatives']} | {c['read']} | {c['wrong_positive']} | {negative} | {c['wrong_triplet']} | "
            f"{c['right_with_shortcut']} | {c['deletion_positive']} | {c['negation_negative']} |"
        )
    comparisons = {}
    for pair in args.compare:
        a, b = pair.split(":")
        measures = ["wrong_positive", "wrong_triplet"]
        measures += ["wrong_negative"] if "wrong_negative" in sides[a] and "wrong_negative" in sides[b] else []
        comparisons[f"{b} - {a}"] = {
            m: anchor_bootstrap_difference(rows[a], rows[b], m)
            if args.by_anchor
            else share_difference(sides[a][m], sides[a]["read"], sides[b][m], sides[b]["read"])
            for m in measures
        }
    if comparisons and args.by_anchor:
        shared = {
            f"{b} - {a}": len({r["anchor"] for r in rows[a]} & {r["anchor"] for r in rows[b]})
            for a, b in (pair.split(":") for pair in args.compare)
        }
        lines += [
            "",
            "Differences of the shares (B - A) with a 95% bootstrap interval over anchors (10,000 resamples, seed 0): "
            "the anchors either side read, drawn with replacement, each with both sides' judgments of it, so what the "
            "sides share cancels out ("
            + "; ".join(
                f"{name}: {n} of {comparisons[name]['wrong_triplet']['anchors']} anchors read on both sides"
                for name, n in shared.items()
            )
            + "):",
            "",
        ]
    elif comparisons:
        lines += ["", "Differences of the shares (B - A, 95% normal-approximation interval, unpaired samples):", ""]
    if comparisons:
        lines += ["| B - A | measure | difference |", "|---|---|---:|"]
        for name, measures in comparisons.items():
            for m, d in measures.items():
                lines.append(f"| {name} | {m} | {signed_interval(d, 2)} |")
    payload = {"sides": sides, **({"comparisons": comparisons} if comparisons else {})}
    write_record(args.name, "Kept triplets read by a reader who did not make them", [*lines, ""], payload)


if __name__ == "__main__":
    main()
