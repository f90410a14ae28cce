"""The seven STS tasks (and STS-B dev) as pair lists, by the convention of REFERENCE.md section 4."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hardcse.data.table import OnError, read_table
from hardcse.errors import HardcseError
from hardcse.paths import data_dir

# STS12-16: the year's subsets in this order, concatenated (SentEval's "all", MTEB's convention).
STS_YEARS = {
    "STS12": ["MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"],
    "STS13": ["FNWN", "headlines", "OnWN"],
    "STS14": ["deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"],
    "STS15": ["answers-forums", "answers-students", "belief", "headlines", "images"],
    "STS16": ["answer-answer", "headlines", "plagiarism", "postediting", "question-question"],
}
SEVEN_TASKS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R"]
DEV_TASK = "STS-B-dev"
ALL_TASKS = [*SEVEN_TASKS, DEV_TASK]
# by name only: MTEB's SICK-R, all 9,927 SICK pairs (train + trial + test), where SentEval's uses the test pairs
EXTRA_TASKS = ["SICK-R-full"]
KNOWN_TASKS = [*ALL_TASKS, *EXTRA_TASKS]


@dataclass
class STSPairs:
    """Sentence pairs with gold similarity scores."""

    name: str
    sentences1: list[str]
    sentences2: list[str]
    scores: np.ndarray

    def __len__(self) -> int:
        return len(self.scores)


def read_scored_pairs(
    path: str | Path, name: str | None = None, score_column: str = "score", on_error: OnError = "raise"
) -> STSPairs:
    """A pair file a user brings: columns sentence1, sentence2 and a finite numeric score column; a correlation
    needs at least two pairs whose scores differ."""
    table = read_table(
        path, ["sentence1", "sentence2", score_column], converters={score_column: finite_float}, on_error=on_error
    )
    scores = np.asarray(table.column(score_column), dtype=np.float64)
    if len(scores) < 2 or np.all(scores == scores[0]):
        found = f"{len(scores)} pair(s)" if len(scores) < 2 else f"all {len(scores)} scores are {scores[0]:g}"
        raise HardcseError(
            f"{path}: a correlation needs at least two pairs with different {score_column!r} values; {found}"
        )
    return STSPairs(
        name=name or Path(path).stem,
        sentences1=table.column("sentence1"),
        sentences2=table.column("sentence2"),
        scores=scores,
    )


def finite_float(text: str) -> float:
    """A number that is not NaN or infinite (a gold score, a label weight)."""
    value = float(text)
    if not np.isfinite(value):
        raise ValueError("not a finite number")
    return value


def _concat(name: str, parts: list[STSPairs]) -> STSPairs:
    return STSPairs(
        name=name,
        sentences1=[s for p in parts for s in p.sentences1],
        sentences2=[s for p in parts for s in p.sentences2],
        scores=np.concatenate([p.scores for p in parts]),
    )


def load_sts_task(name: str, root: Path | None = None) -> STSPairs:
    """One of ``KNOWN_TASKS`` from the vendored data."""
    sts = (root or data_dir()) / "sts"
    if name in STS_YEARS:
        return _concat(name, [read_scored_pairs(sts / name / f"{s}.tsv") for s in STS_YEARS[name]])
    if name == "STS-B":
        return read_scored_pairs(sts / "STSBenchmark" / "test.tsv", name)
    if name == DEV_TASK:
        return read_scored_pairs(sts / "STSBenchmark" / "dev.tsv", name)
    if name == "SICK-R":
        return read_scored_pairs(sts / "SICK" / "test.tsv", name, score_column="relatedness")
    if name == "SICK-R-full":
        parts = ("train", "trial", "test")
        return _concat(name, [read_scored_pairs(sts / "SICK" / f"{s}.tsv", score_column="relatedness") for s in parts])
    raise HardcseError(f"unknown STS task {name!r}; known: {', '.join(KNOWN_TASKS)}")
