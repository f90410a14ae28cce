"""SimCSE triplet files (sent0, sent1, hard_neg[, hard_neg_2, ...]) and triplets built from NLI pairs.

A row may carry several hard negatives (columns ``hard_neg``, ``hard_neg_2``, ``hard_neg_3``, ...: every row of a
file the same number), as sentence-transformers' losses take several negative columns: each is one more candidate
of the in-batch contrastive loss (hardcse/encoder/contrastive.py).
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from pathlib import Path

from hardcse.atomic import write_text_atomic
from hardcse.data.nli import LABEL_ID, NLIPairs
from hardcse.data.table import OnError, detect_format, read_table, text_columns
from hardcse.errors import HardcseError

TRIPLET_COLUMNS = ["sent0", "sent1", "hard_neg"]
Triplet = tuple[str, ...]  # (anchor, positive, negative[, more negatives])


def negative_columns(count: int) -> list[str]:
    """The file columns of ``count`` hard negatives: hard_neg, hard_neg_2, ..."""
    return ["hard_neg", *(f"hard_neg_{k}" for k in range(2, count + 1))]


def read_triplets(path: str | Path, on_error: OnError = "raise") -> list[Triplet]:
    """A SimCSE CSV (or TSV/JSONL) with columns sent0, sent1, hard_neg (and hard_neg_2, ... where present)."""
    path = Path(path)
    present = set(text_columns(path, detect_format(path))) if path.is_file() else set()
    count = 1
    while f"hard_neg_{count + 1}" in present:
        count += 1
    columns = ["sent0", "sent1", *negative_columns(count)]
    table = read_table(path, columns, on_error=on_error)
    return [tuple(r[c] for c in columns) for r in table.rows]


def write_triplets(path: str | Path, triplets: list[Triplet]) -> None:
    """Write a SimCSE CSV atomically (with hard_neg_2, ... when the rows carry several negatives)."""
    widths = {len(t) for t in triplets} or {3}
    if len(widths) > 1 or min(widths) < 3:
        raise HardcseError(
            f"{path}: rows of {sorted(widths)} texts; every row needs anchor, positive and the same number of negatives"
        )
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(["sent0", "sent1", *negative_columns(widths.pop() - 2)])
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
