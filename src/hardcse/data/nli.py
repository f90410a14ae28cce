"""NLI sentence pairs: the vendored files, their fixed splits, and user files."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from hardcse.data.decontamination import normalise
from hardcse.data.table import OnError, read_table
from hardcse.errors import HardcseError
from hardcse.paths import data_dir

# The fixed label order of every NLI probability vector in hardcse.
LABELS = ("entailment", "neutral", "contradiction")
LABEL_ID = {label: i for i, label in enumerate(LABELS)}

# Names of the vendored NLI files (relative to data/), by role. Evaluation files never enter training.
TRAIN_FILES = [
    "nli/MNLI-train-sample/train.tsv",
    "nli/SNLI-train-sample/train.tsv",
    "nli/CAD/train.tsv",
    "nli/ConjNLI/adversarial_train.tsv",
    "sts/SICK/train.tsv",
    "nli/SNLI/dev.tsv",
]
DEV_FILES = [
    "nli/MNLI-train-sample/dev.tsv",
    "nli/SNLI-train-sample/dev.tsv",
    "nli/ConjNLI/dev.tsv",
    "sts/SICK/trial.tsv",
]
EVAL_FILES = {
    "SNLI test": "nli/SNLI/test.tsv",
    "MNLI dev matched": "nli/MNLI-dev-TaxiNLI/matched.tsv",
    "MNLI dev mismatched": "nli/MNLI-dev-TaxiNLI/mismatched.tsv",
    "SICK test": "sts/SICK/test.tsv",
}


# The training pairs split three ways by premise (a third each), so that the models that grade generated data (the
# reward's discriminator, the judge) never trained on a pair the generator's warm start taught it, nor on each
# other's (hardcse/art/rl/warm_start.py; ``share`` in NLITrainConfig and WarmStartConfig)
SHARES = ("discriminator", "judge", "warm_start")


def premise_share(premise: str) -> str:
    """The share a premise's pairs belong to: sha256 of its normalised text, mod 3 (the same on every machine)."""
    digest = hashlib.sha256(normalise(premise).encode()).digest()
    return SHARES[int.from_bytes(digest[:8], "little") % len(SHARES)]


@dataclass
class NLIPairs:
    premises: list[str]
    hypotheses: list[str]
    labels: list[int]  # index into LABELS

    def __len__(self) -> int:
        return len(self.labels)

    def __add__(self, other: NLIPairs) -> NLIPairs:
        return NLIPairs(self.premises + other.premises, self.hypotheses + other.hypotheses, self.labels + other.labels)

    def share(self, name: str | None) -> NLIPairs:
        """The pairs whose premise is in share ``name`` (:data:`SHARES`); None: all of them."""
        if name is None:
            return self
        keep = [i for i, premise in enumerate(self.premises) if premise_share(premise) == name]
        return NLIPairs(*([column[i] for i in keep] for column in (self.premises, self.hypotheses, self.labels)))


def _label(text: str) -> int:
    label = text.strip().lower()
    if label not in LABEL_ID:
        raise ValueError(f"label must be one of {', '.join(LABELS)}")
    return LABEL_ID[label]


def read_nli(path: str | Path, on_error: OnError = "raise") -> NLIPairs:
    """premise / hypothesis / label columns (SICK's sentence1 / sentence2 / entailment are accepted too)."""
    path = Path(path)
    rename = {"sentence1": "premise", "sentence2": "hypothesis", "entailment": "label", "gold_label": "label"}
    table = read_table(
        path, ["premise", "hypothesis", "label"], rename=rename, converters={"label": _label}, on_error=on_error
    )
    return NLIPairs(table.column("premise"), table.column("hypothesis"), table.column("label"))


def read_nli_files(paths: list[str | Path], root: Path | None = None, on_error: OnError = "raise") -> NLIPairs:
    """Several NLI files concatenated; relative names resolve against the vendored data folder."""
    if not paths:
        raise HardcseError("no NLI files given")
    root = root or data_dir()
    pairs = NLIPairs([], [], [])
    for path in paths:
        path = Path(path)
        pairs = pairs + read_nli(path if path.is_absolute() or path.exists() else root / path, on_error)
    return pairs
