"""Kept triplets in the ecosystem's format: a ``datasets`` table with ``anchor, positive, negative`` columns (the
columns sentence-transformers' ``SentenceTransformerTrainer`` and ``MultipleNegativesRankingLoss`` read), saved as
a folder that ``datasets.load_dataset(FOLDER)`` loads: ``train.parquet`` and a dataset card ``README.md`` whose YAML
front matter is the Hugging Face Hub's (the data files, the licence, the features) and whose text says what made
the rows. The SimCSE CSV (``sent0, sent1, hard_neg``) stays beside it for SimCSE's scripts.

A row with several negatives gets ``negative``, ``negative_2``, ...: sentence-transformers reads every column after
the positive as one more negative.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from hardcse.atomic import write_text_atomic
from hardcse.errors import HardcseError

if TYPE_CHECKING:
    from datasets import Dataset

DATA_FILE = "train.parquet"
CARD_FILE = "README.md"


def triplet_columns(width: int) -> list[str]:
    """The columns of rows of ``width`` texts: anchor, positive, negative[, negative_2, ...]."""
    if width < 3:
        raise HardcseError(f"a triplet has an anchor, a positive and a negative; these rows have {width} texts")
    return ["anchor", "positive", "negative", *(f"negative_{k}" for k in range(2, width - 1))]


def triplet_dataset(triplets: Sequence[Sequence[str]], extra: Mapping[str, Sequence] | None = None) -> Dataset:
    """The triplets as a ``datasets.Dataset`` (every text a string column); ``extra``: more columns, one value a row
    (the scores that decided each row, say)."""
    from datasets import Dataset, Features, Value

    widths = {len(t) for t in triplets} or {3}
    if len(widths) > 1:
        raise HardcseError(f"rows of {sorted(widths)} texts; every row needs the same number of negatives")
    columns = triplet_columns(widths.pop())
    data = {c: [t[k] for t in triplets] for k, c in enumerate(columns)}
    for name, values in (extra or {}).items():
        if len(values) != len(triplets):
            raise HardcseError(f"column {name!r}: {len(values)} values for {len(triplets)} rows")
        data[name] = list(values)
    if not triplets:  # no rows to infer the types from: the text columns are strings all the same
        return Dataset.from_dict(data, features=Features({c: Value("string") for c in data}))
    return Dataset.from_dict(data)


def write_triplet_dataset(folder: str | Path, dataset: Dataset, card: Mapping[str, object]) -> Path:
    """``folder/train.parquet`` and ``folder/README.md`` (the card: ``card``'s items, in order, under a title; its
    ``licence`` item also in the front matter). Returns ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{DATA_FILE}.partial"
    dataset.to_parquet(str(partial))
    partial.replace(folder / DATA_FILE)
    write_text_atomic(folder / CARD_FILE, card_text(dataset, card))
    return folder


def card_text(dataset: Dataset, card: Mapping[str, object]) -> str:
    """The dataset card: the Hub's YAML front matter, then what made the rows."""
    front = {
        "license": _hub_licence(str(card.get("licence", "unknown"))),
        "language": ["en"],
        "task_categories": ["sentence-similarity"],
        "tags": ["hardcse", "sentence-transformers", "triplets", "hard-negatives"],
        "size_categories": [_size_category(len(dataset))],
        "configs": [{"config_name": "default", "data_files": [{"split": "train", "path": DATA_FILE}]}],
        "dataset_info": {
            "features": [{"name": n, "dtype": str(getattr(f, "dtype", f))} for n, f in dataset.features.items()]
        },
    }
    lines = [
        "---",
        yaml.safe_dump(front, sort_keys=False).rstrip(),
        "---",
        "",
        "# Hard triplets written by hardcse",
        "",
        f"{len(dataset)} rows with columns {', '.join(f'`{c}`' for c in dataset.column_names)}.",
        "Load them with `datasets.load_dataset(FOLDER)`, FOLDER being this card's folder.",
        "`SentenceTransformerTrainer` with `MultipleNegativesRankingLoss` trains on them as they are.",
        "",
    ]
    lines += [f"- **{key}**: {_inline(value)}" for key, value in card.items()]
    return "\n".join(lines) + "\n"


def _inline(value: object) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {v}" for k, v in value.items()) or "none"
    return str(value)


def _hub_licence(text: str) -> str:
    """The Hub's licence identifier of ``text`` where one is named (``cc-by-sa-4.0``, ...), else ``other``."""
    known = {"cc by-sa 4.0": "cc-by-sa-4.0", "cc by-sa": "cc-by-sa-4.0", "apache-2.0": "apache-2.0", "mit": "mit"}
    lowered = text.lower()
    named = (v for k, v in known.items() if re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", lowered))
    return next(named, "unknown" if lowered.startswith("unknown") else "other")


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "n>1M"
