"""SimCSE on sentence-transformers' trainer: supervised (triplets) and unsupervised (dropout).

Both are ``MultipleNegativesRankingLoss`` with scale = 1 / tau:
- supervised: -log e^{sim(h_i,h_i+)/tau} / sum_j (e^{sim(h_i,h_j+)/tau} + e^{sim(h_i,h_j-)/tau}),
  columns (anchor, positive, negative), in-batch negatives;
- unsupervised: each sentence is its own positive; the two encodings differ only by dropout noise.
STS-B dev is evaluated every ``eval_steps`` steps, and the best checkpoint is what is kept.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from datasets import Dataset
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from sentence_transformers.sentence_transformer.trainer import SentenceTransformerTrainer
from sentence_transformers.sentence_transformer.training_args import (
    BatchSamplers,
    SentenceTransformerTrainingArguments,
)
from transformers import TrainerCallback

from hardcse.config import EncoderTrainConfig, save_config
from hardcse.data.corpus import read_sentences
from hardcse.data.sts import DEV_TASK, load_sts_task
from hardcse.data.table import OnError
from hardcse.data.triplets import Triplet, read_triplets
from hardcse.encoder.build import load_encoder
from hardcse.errors import HardcseError
from hardcse.evaluation.sts import STSEvaluator
from hardcse.selection import EvaluateAtEnd, best_checkpoint_arguments

log = logging.getLogger(__name__)
DEV_METRIC = "eval_sts-dev_spearman"


@dataclass
class TrainOutcome:
    """What a training run kept: the model, its best STS-B dev score (x 100) and the step it came from."""

    model: SentenceTransformer
    best_dev: float | None
    best_step: int | None
    history: list[dict]


def read_training_data(mode: str, path: str | Path, on_error: OnError = "raise") -> list[Triplet] | list[str]:
    """Triplets (``sup``) or sentences (``unsup``) from a file, checked row by row."""
    if mode == "sup":
        return read_triplets(path, on_error)
    if mode == "unsup":
        return read_sentences(path, on_error=on_error)
    raise HardcseError(f"mode {mode!r}: choose sup (triplets) or unsup (sentences)")


def simcse_dataset(mode: str, data: list[Triplet] | list[str]) -> Dataset:
    """The trainer's dataset: (anchor, positive, negative) for ``sup``, (anchor, positive=anchor) for ``unsup``."""
    if not data:
        raise HardcseError("no training data")
    if mode == "sup":
        anchors, positives, negatives = (list(col) for col in zip(*data, strict=True))
        return Dataset.from_dict({"anchor": anchors, "positive": positives, "negative": negatives})
    if mode == "unsup":
        return Dataset.from_dict({"anchor": list(data), "positive": list(data)})
    raise HardcseError(f"mode {mode!r}: choose sup (triplets) or unsup (sentences)")


def train_encoder(
    config: EncoderTrainConfig,
    data: str | Path | list[Triplet] | list[str],
    out_dir: str | Path,
    callbacks: list[TrainerCallback] | None = None,
    model: SentenceTransformer | None = None,
) -> TrainOutcome:
    """Train with SimCSE from ``config`` on ``data`` (a file, or triplets / sentences); save the best to ``out_dir``.

    ``model`` continues training an already loaded encoder instead of loading ``config.model``.
    """
    out_dir = Path(out_dir)
    if isinstance(data, str | Path):
        data = read_training_data(config.mode, data)
    dataset = simcse_dataset(config.mode, data)
    if config.max_examples is not None:
        dataset = dataset.select(range(min(config.max_examples, len(dataset))))
    if model is None:
        model = load_encoder(config.model, config.pooling)
    eval_length = model.max_seq_length  # train on short inputs (SimCSE: 32 tokens), evaluate and save at full length
    model.max_seq_length = config.max_seq_length
    loss = MultipleNegativesRankingLoss(model, scale=1.0 / config.temperature)
    out_dir.mkdir(parents=True, exist_ok=True)
    save_config(config, out_dir / "config.yaml")
    checkpoints = out_dir / "checkpoints"
    args = SentenceTransformerTrainingArguments(
        **best_checkpoint_arguments(str(checkpoints), config.eval_steps, DEV_METRIC, config.seed),
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        per_device_train_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        warmup_ratio=config.warmup_ratio,
        # Repeated texts in one batch would be false in-batch negatives for the supervised loss.
        batch_sampler=BatchSamplers.NO_DUPLICATES if config.mode == "sup" else BatchSamplers.BATCH_SAMPLER,
    )
    log.info("SimCSE (%s): %d training rows, %s", config.mode, len(dataset), config)
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        loss=loss,
        evaluator=STSEvaluator(load_sts_task(DEV_TASK), max_seq_length=eval_length),
        callbacks=[EvaluateAtEnd(), *(callbacks or [])],
    )
    trainer.train()
    history = [entry for entry in trainer.state.log_history if DEV_METRIC in entry]
    best = max(history, key=lambda e: e[DEV_METRIC]) if history else None
    model.max_seq_length = eval_length
    model.save(str(out_dir))
    shutil.rmtree(checkpoints, ignore_errors=True)  # the best checkpoint now lives in out_dir itself
    outcome = TrainOutcome(
        model=model,
        best_dev=best[DEV_METRIC] if best else None,
        best_step=best["step"] if best else None,
        history=[{"step": e["step"], "sts_dev": e[DEV_METRIC]} for e in history],
    )
    (out_dir / "training.json").write_text(
        json.dumps({"best_dev": outcome.best_dev, "best_step": outcome.best_step, "dev_history": outcome.history})
    )
    return outcome
