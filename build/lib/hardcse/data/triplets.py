"""SimCSE triplet files (sent0, sent1, hard_neg) and triplets built from NLI pairs."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from pathlib import Path

from hardcse.atomic import write_text_atomic
from hardcse.data.nli import LABEL_ID, NLIPairs
from hardcse.data.table import OnError, read_table

TRIPLET_COLUMNS = ["sent0", "sent1", "hard_neg"]
Triplet = tuple[str, str, str]


def read_triplets(path: str | Path, on_error: OnError = "raise") -> list[Triplet]:
    """A SimCSE CSV (or TSV/JSONL) with columns sent0, sent1, hard_neg."""
    table = read_table(path, TRIPLET_COLUMNS, on_error=on_error)
    return [(r["sent0"], r["sent1"], r["hard_neg"]) for r in table.rows]


def write_triplets(path: str | Path, triplets: list[Triplet]) -> None:
    """Write a SimCSE CSV atomically."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(TRIPLET_COLUMNS)
    writer.writerows(triplets)
    write_text_atomic(path, buffer.getvalue())


def nli_triplets(pairs: NLIPairs) -> list[Triplet]:
    """(premise, entailed hypothesis, contradicting hypothesis), as SimCSE built its supervised data.

    A premise with several entailments and contradictions gives min(#entail, #contra) triplets, pairing
    them in file order; premises missing either label give none.
    """
    entail: dict[str, list[str]] = defaultdict(list)
    contra: dict[str, list[str]] = defaultdict(list)
    for premise, hypothesis, label in zip(pairs.premises, pairs.hypotheses, pairs.labels, strict=True):
        if label == LABEL_ID["entailment"]:
            entail[premise].append(hypothesis)
        elif label == LABEL_ID["contradiction"]:
            contra[premise].append(hypothesis)
    return [
        (premise, pos, neg)
        for premise in entail
        for pos, neg in zip(entail[premise], contra.get(premise, []), strict=False)
    ]
