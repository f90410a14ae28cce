"""Labelled sentence pairs (MRPC, QQP, PAWS: 1 = paraphrase / duplicate, 0 = not)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hardcse.data.table import OnError, read_table


@dataclass
class LabeledPairs:
    sentences1: list[str]
    sentences2: list[str]
    labels: list[int]

    def __len__(self) -> int:
        return len(self.labels)


def _binary(text: str) -> int:
    if text not in ("0", "1"):
        raise ValueError("label must be 0 or 1")
    return int(text)


def read_labeled_pairs(
    path: str | Path,
    columns: tuple[str, str, str] = ("sentence1", "sentence2", "label"),
    on_error: OnError = "raise",
) -> LabeledPairs:
    """Pairs with a 0/1 label; ``columns`` names the two sentence columns and the label column in the file."""
    first, second, label = columns
    table = read_table(path, [first, second, label], converters={label: _binary}, on_error=on_error)
    return LabeledPairs(table.column(first), table.column(second), table.column(label))
