"""The STS suite: Spearman x 100 of cosine similarity against gold scores, each distinct sentence encoded once."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.evaluation.evaluator import BaseEvaluator

from hardcse.data.sts import ALL_TASKS, DEV_TASK, SEVEN_TASKS, STSPairs, load_sts_task
from hardcse.encoder.encode import encode, encoding_engine, row_cosines
from hardcse.engines import Engine
from hardcse.errors import HardcseError


@dataclass
class STSResult:
    """Scores by task (Spearman x 100), their average over the seven STS tasks, and how long it took."""

    scores: dict[str, float]
    seconds: float
    n_sentences: int
    meta: dict = field(default_factory=dict)
    # per task, the cosine of every pair in file order: what paired bootstrap intervals resample
    cosines: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def average(self) -> float | None:
        return seven_task_average(self.scores)

    def to_dict(self) -> dict:
        return {
            "scores": self.scores,
            "avg7": self.average,
            "seconds": round(self.seconds, 2),
            "n_sentences": self.n_sentences,
            **self.meta,
            "cosines": {task: exact_decimals(values) for task, values in self.cosines.items()},
        }


def exact_decimals(values: np.ndarray) -> list[float]:
    """Each value as a decimal that reads back to it exactly: float32 (the cosines) as its shortest round-trip
    decimal, at most 9 significant digits; anything else as float64's. So eval.json's cosines rank exactly as the
    scored ones did: rounding them to fewer digits ties neighbours, and a Spearman recomputed from the file then
    differs from the stored score."""
    values = np.asarray(values)
    if values.dtype == np.float32:
        return [float(str(v)) for v in values]  # numpy's str of a float32 is its shortest round-trip decimal
    return [float(v) for v in values.astype(np.float64)]


def seven_task_average(scores: dict[str, float]) -> float | None:
    """avg7: the mean over the seven STS tasks, or None when not all seven were evaluated."""
    if not all(t in scores for t in SEVEN_TASKS):
        return None
    return float(np.mean([scores[t] for t in SEVEN_TASKS]))


def _spearman_x100(cosine: np.ndarray, gold: np.ndarray) -> float:
    return float(spearmanr(cosine, gold).statistic * 100)


def spearman_of_cosine(emb1: np.ndarray, emb2: np.ndarray, gold: np.ndarray) -> float:
    """Spearman x 100 between row-wise cosine similarities and gold scores."""
    return _spearman_x100(row_cosines(emb1, emb2), gold)


def cosines_of_pairs(pairs: Sequence[STSPairs], embeddings: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The cosine of each pair of each pair list, from a sentence -> embedding lookup."""
    return {
        task.name: row_cosines(
            np.stack([embeddings[s] for s in task.sentences1]), np.stack([embeddings[s] for s in task.sentences2])
        )
        for task in pairs
    }


def evaluate_sts(
    model: SentenceTransformer,
    tasks: Sequence[str | STSPairs] = ALL_TASKS,
    batch_size: int = 64,
    show_progress: bool = True,
    engine: Engine | None = None,
) -> STSResult:
    """Evaluate on STS tasks by name (see ``ALL_TASKS``) or on pair lists a user brings, encoding in ``engine``
    (default: :meth:`Engine.from_environment`)."""
    if not tasks:
        raise HardcseError("no STS tasks to evaluate")
    start = time.perf_counter()
    pairs = [load_sts_task(t) if isinstance(t, str) else t for t in tasks]
    sentences = sorted({s for task in pairs for s in (*task.sentences1, *task.sentences2)})
    engine = engine or Engine.from_environment()
    vectors = encode(model, sentences, batch_size=batch_size, show_progress=show_progress, engine=engine)
    cosines = cosines_of_pairs(pairs, dict(zip(sentences, vectors, strict=True)))
    scores = {task.name: _spearman_x100(cosines[task.name], task.scores) for task in pairs}
    used = encoding_engine(model, engine)
    meta = {"engine": used} | ({"precision": engine.precision} if used == "openvino" else {})
    return STSResult(scores, time.perf_counter() - start, len(sentences), meta=meta, cosines=cosines)


def sts_record(
    model: SentenceTransformer, source: str, tasks: Sequence[str | STSPairs] = ALL_TASKS, *, engine: Engine
) -> dict:
    """What hardcse writes to ``eval.json``: the model's name, the scores by task, avg7, timing, the engine."""
    return {"model": source, **evaluate_sts(model, tasks, engine=engine).to_dict()}


def write_sts_eval(
    path: str | Path,
    model_source: str,
    tasks: Sequence[str | STSPairs] = ALL_TASKS,
    pooling: str = "default",
    device: str = "auto",
    *,
    engine: Engine,
) -> dict:
    """Evaluate the encoder at ``model_source`` (with ``pooling``, on ``device``, in ``engine``) and write its record
    to ``path`` (JSON, atomically)."""
    from hardcse.atomic import write_json_atomic
    from hardcse.encoder.build import load_encoder

    record = sts_record(load_encoder(model_source, pooling, device=device), model_source, tasks, engine=engine)
    write_json_atomic(path, record)
    return record


def sts_rows(records: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Table rows (scores + avg7) from ``eval.json`` records, keyed by a label (see hardcse/tables.py)."""
    return {label: {**r["scores"], "avg7": r["avg7"]} for label, r in records.items()}


class STSEvaluator(BaseEvaluator):
    """A trainer evaluator: Spearman x 100 on one pair list, encoded at ``max_seq_length`` (the evaluation
    length, which can differ from the shorter training length) in ``engine`` (default: as :func:`evaluate_sts`)."""

    def __init__(
        self,
        pairs: STSPairs,
        name: str = "sts-dev",
        max_seq_length: int | None = None,
        engine: Engine | None = None,
    ) -> None:
        super().__init__()
        self.pairs = pairs
        self.name = name
        self.max_seq_length = max_seq_length
        self.engine = engine
        self.primary_metric = "spearman"

    def __call__(
        self, model: SentenceTransformer, output_path: str | None = None, epoch: int = -1, steps: int = -1
    ) -> dict[str, float]:
        training_length = model.max_seq_length
        if self.max_seq_length is not None:
            model.max_seq_length = self.max_seq_length
        try:
            score = evaluate_sts(model, [self.pairs], show_progress=False, engine=self.engine).scores[self.pairs.name]
        finally:
            model.max_seq_length = training_length
        return self.prefix_name_to_metrics({"spearman": score}, self.name)


def dev_evaluator(max_seq_length: int | None, engine: Engine) -> STSEvaluator:
    """STS-B dev as training selects checkpoints on it: its sentences encoded alone in the command's ``engine``, the
    encoder at ``max_seq_length``."""
    return STSEvaluator(load_sts_task(DEV_TASK), max_seq_length=max_seq_length, engine=engine)


def dev_score(model: SentenceTransformer, engine: Engine) -> float:
    """``model``'s STS-B dev scored as training scores its checkpoints (:func:`dev_evaluator` at the model's own
    length), so a trained model's best and a previous model's score compare like with like (an eval.json encodes
    the dev set among the whole suite's sentences, in other batches, which can move the last digits)."""
    return next(iter(dev_evaluator(model.max_seq_length, engine)(model).values()))
