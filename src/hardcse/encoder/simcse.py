"""SimCSE (Gao et al., 2021) on the shared training job: supervised (triplets) and unsupervised (dropout).

Both are :class:`hardcse.encoder.contrastive.InBatchContrastiveLoss` (equal to sentence-transformers'
``MultipleNegativesRankingLoss`` with scale = 1 / tau, and gathering the batch across processes):
- supervised, Eq. (5): -log e^{sim(h_i,h_i+)/tau} / sum_j (e^{sim(h_i,h_j+)/tau} + e^{sim(h_i,h_j-)/tau}),
  columns (anchor, positive, negative), in-batch negatives (several negative columns: each adds its sum over j);
- unsupervised, Eq. (4): each sentence is its own positive; the two encodings differ only by dropout noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from hardcse.config import check_choice, check_positive
from hardcse.data.corpus import read_sentences
from hardcse.data.decontamination import DecontaminationConfig
from hardcse.data.sts import ALL_TASKS
from hardcse.data.table import OnError
from hardcse.data.triplets import Triplet, read_triplets
from hardcse.encoder import PoolingName
from hardcse.engines import check_engine
from hardcse.errors import HardcseError
from hardcse.tracking.config import Tracked
from hardcse.training import MOVED_TO_TRAINING, TrainingSettings, TrainOutcome

if TYPE_CHECKING:
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer

    from hardcse.tracking.run import Tracking

Mode = Literal["sup", "unsup"]


@dataclass
class SimCSETraining(Tracked):
    """The SimCSE objective and its training (SimCSE's values: tau 0.05, 32 tokens, batch 64, lr 2e-5 for
    BERT-base). ART's rounds use this block as it is."""

    RENAMED: ClassVar[dict[str, str]] = {"temperature": "tau", **MOVED_TO_TRAINING}
    tau: float = 0.05  # the loss scale is 1 / tau
    max_examples: int | None = None  # take the first N training rows (quick runs)
    training: TrainingSettings = field(default_factory=TrainingSettings)

    def check(self) -> None:
        check_positive("tau", self.tau)
        check_positive("max_examples", self.max_examples, allow_none=True)


@dataclass
class SimCSEConfig(SimCSETraining):
    """``hardcse simcse train``: an encoder trained with SimCSE on a file, evaluated before and after."""

    RENAMED: ClassVar[dict[str, str]] = {**SimCSETraining.RENAMED, "model": "encoder"}
    encoder: str = "bundled:minilm-l6"  # the encoder trained: bundled:*, a folder or a hub id
    data: str | None = None  # sup: triplet CSV (sent0,sent1,hard_neg); unsup: one sentence a line (`--data`)
    mode: Mode = "sup"
    pooling: PoolingName = "default"
    eval_tasks: list[str] = field(default_factory=lambda: list(ALL_TASKS))  # before and after; [] for none
    # what encodes for the STS evaluations and training's dev scores: auto | torch | openvino (hardcse/engines.py)
    engine: str = "auto"
    # rows with a text that matches an STS test/dev text are dropped (hardcse/data/decontamination.py)
    decontamination: DecontaminationConfig = field(default_factory=DecontaminationConfig)

    def check(self) -> None:
        super().check()
        check_engine("engine", self.engine)
        for task in self.eval_tasks:
            check_choice("eval_tasks", task, ALL_TASKS)


def read_training_data(mode: str, path: str | Path, on_error: OnError = "raise") -> list[Triplet] | list[str]:
    """Triplets (``sup``) or sentences (``unsup``) from a file, checked row by row."""
    if mode == "sup":
        return read_triplets(path, on_error)
    if mode == "unsup":
        return read_sentences(path, on_error=on_error)
    raise HardcseError(f"mode {mode!r}: choose sup (triplets) or unsup (sentences)")


def simcse_dataset(mode: str, data: list[Triplet] | list[str]) -> Dataset:
    """The trainer's dataset: (anchor, positive, negative) for ``sup``, (anchor, positive=anchor) for ``unsup``."""
    from datasets import Dataset

    if not data:
        raise HardcseError("no training data")
    if mode == "sup":  # (anchor, positive, negative[, negative_2, ...]): every negative column is a candidate
        anchors, positives, *negatives = (list(col) for col in zip(*data, strict=True))
        names = ["negative", *(f"negative_{k}" for k in range(2, len(negatives) + 1))]
        return Dataset.from_dict({"anchor": anchors, "positive": positives, **dict(zip(names, negatives, strict=True))})
    if mode == "unsup":
        return Dataset.from_dict({"anchor": list(data), "positive": list(data)})
    raise HardcseError(f"mode {mode!r}: choose sup (triplets) or unsup (sentences)")


def train_simcse(
    model: SentenceTransformer,
    data: list[Triplet] | list[str],
    mode: str,
    config: SimCSETraining,
    out_dir: str | Path,
    *,
    evaluator: object,
    in_order: bool = False,
    tracking: Tracking | None = None,
) -> TrainOutcome:
    """Train ``model`` with SimCSE on ``data`` (triplets for ``sup``, sentences for ``unsup``); the best checkpoint
    by ``evaluator`` (STS-B dev: :func:`hardcse.evaluation.sts.dev_evaluator` at the model's own length) is saved
    to ``out_dir`` (see :func:`hardcse.training.run_training_job`). ``in_order``: batches follow ``data``'s order (a
    curriculum) instead of a shuffle. ``tracking``: the run folder's trackers."""
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers

    from hardcse.batching import ordered_batches
    from hardcse.encoder.contrastive import InBatchContrastiveLoss
    from hardcse.training import run_training_job

    dataset = simcse_dataset(mode, data)
    if config.max_examples is not None:
        dataset = dataset.select(range(min(config.max_examples, len(dataset))))
    return run_training_job(
        model,
        dataset,
        InBatchContrastiveLoss(model, config.tau),
        config.training,
        out_dir,
        evaluator=evaluator,
        # Repeated texts in one batch would be false in-batch negatives for the supervised loss.
        batch_sampler=ordered_batches(len(dataset), config.training.batch_size)
        if in_order
        else BatchSamplers.NO_DUPLICATES
        if mode == "sup"
        else BatchSamplers.BATCH_SAMPLER,
        record={"mode": mode, "order": "given" if in_order else "shuffled"},
        tracking=tracking,
    )
