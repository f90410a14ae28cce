"""The NLI discriminator: a cross-encoder over (premise, hypothesis) with a one-hidden-layer MLP head.

On a BERT-style checkpoint, sentence-transformers' ``CrossEncoder(num_labels=3)`` puts the model's pooler
(Linear + tanh on [CLS], pretrained) under a fresh Linear classifier: that is the paper's "encoder + MLP with
one hidden layer". Probabilities always come in the order of ``hardcse.data.nli.LABELS``, whatever label
order a loaded model was trained with.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from datasets import Dataset
from sentence_transformers.base.evaluation.evaluator import BaseEvaluator
from sentence_transformers.cross_encoder import (
    CrossEncoder,
    CrossEncoderTrainer,
    CrossEncoderTrainingArguments,
)
from sentence_transformers.cross_encoder.losses import CrossEntropyLoss
from transformers import TrainerCallback

from hardcse.batching import LengthGroupedBatchSampler
from hardcse.config import NLITrainConfig, save_config
from hardcse.data.nli import EVAL_FILES, LABEL_ID, LABELS, NLIPairs, read_nli_files
from hardcse.errors import HardcseError
from hardcse.paths import data_dir
from hardcse.resources import resolve_model
from hardcse.selection import EvaluateAtEnd, best_checkpoint_arguments

log = logging.getLogger(__name__)


class NLIDiscriminator:
    """Wraps a 3-way cross-encoder; ``predict_proba`` returns P(entailment, neutral, contradiction)."""

    def __init__(self, model: CrossEncoder) -> None:
        self.model = model
        self.column_of_label = self._label_columns(model)

    @staticmethod
    def _label_columns(model: CrossEncoder) -> list[int]:
        id2label = {int(i): str(name).lower() for i, name in model.config.id2label.items()}
        by_name = {name: i for i, name in id2label.items()}
        if len(id2label) != 3 or not all(label in by_name for label in LABELS):
            raise HardcseError(
                f"the NLI model's labels are {id2label}; expected the three labels {list(LABELS)} "
                "(train one with `hardcse train-nli` or pass a 3-way NLI cross-encoder)"
            )
        return [by_name[label] for label in LABELS]

    @classmethod
    def load(cls, source: str, max_length: int | None = None) -> NLIDiscriminator:
        return cls(CrossEncoder(str(resolve_model(source)), local_files_only=True, max_length=max_length))

    def predict_proba(
        self,
        premises: Sequence[str],
        hypotheses: Sequence[str],
        batch_size: int = 64,
        show_progress: bool = False,
    ) -> np.ndarray:
        """(n, 3) probabilities in ``LABELS`` order; batches are length-sorted by the cross-encoder."""
        if len(premises) != len(hypotheses):
            raise HardcseError(f"{len(premises)} premises but {len(hypotheses)} hypotheses")
        if not premises:
            return np.zeros((0, 3), dtype=np.float32)
        pairs = list(zip(premises, hypotheses, strict=True))
        with torch.inference_mode():
            logits = self.model.predict(
                pairs, batch_size=batch_size, show_progress_bar=show_progress, activation_fn=torch.nn.Identity()
            )
        probs = torch.softmax(torch.as_tensor(np.asarray(logits), dtype=torch.float32), dim=-1).numpy()
        return probs[:, self.column_of_label]

    def save(self, path: str | Path) -> None:
        self.model.save_pretrained(str(path))


def nli_metrics(probs: np.ndarray, labels: Sequence[int]) -> dict:
    """Accuracy and per-class F1 (x 100) of argmax predictions."""
    labels = np.asarray(labels)
    pred = probs.argmax(axis=1)
    result = {"n": int(len(labels)), "accuracy": float((pred == labels).mean() * 100)}
    for i, name in enumerate(LABELS):
        tp = int(((pred == i) & (labels == i)).sum())
        precision = tp / max(int((pred == i).sum()), 1)
        recall = tp / max(int((labels == i).sum()), 1)
        result[f"f1_{name}"] = 0.0 if tp == 0 else float(200 * precision * recall / (precision + recall))
    return result


def evaluate_nli(
    discriminator: NLIDiscriminator, files: dict[str, str] | None = None, batch_size: int = 64
) -> dict[str, dict]:
    """Accuracy and per-class F1 on the held-out NLI sets (SNLI test, MNLI dev m/mm, SICK test by default)."""
    results = {}
    for name, path in (files or EVAL_FILES).items():
        pairs = read_nli_files([path])
        probs = discriminator.predict_proba(pairs.premises, pairs.hypotheses, batch_size=batch_size)
        results[name] = nli_metrics(probs, pairs.labels)
    return results


def _dataset(pairs: NLIPairs) -> Dataset:
    return Dataset.from_dict({"premise": pairs.premises, "hypothesis": pairs.hypotheses, "label": pairs.labels})


class DevAccuracy(BaseEvaluator):
    """Accuracy on dev pairs (reported as ``dev_accuracy``): the metric that selects the checkpoint."""

    def __init__(self, pairs: NLIPairs, batch_size: int = 64, name: str = "dev") -> None:
        super().__init__()
        self.pairs = pairs
        self.batch_size = batch_size
        self.name = name
        self.primary_metric = "accuracy"

    def __call__(
        self, model: CrossEncoder, output_path: str | None = None, epoch: int = -1, steps: int = -1
    ) -> dict[str, float]:
        probs = NLIDiscriminator(model).predict_proba(self.pairs.premises, self.pairs.hypotheses, self.batch_size)
        accuracy = nli_metrics(probs, self.pairs.labels)["accuracy"]
        log.info("NLI %s accuracy at step %d: %.2f", self.name, steps, accuracy)
        return self.prefix_name_to_metrics({"accuracy": accuracy}, self.name)


def train_nli(
    config: NLITrainConfig, out_dir: str | Path, callbacks: list[TrainerCallback] | None = None
) -> NLIDiscriminator:
    """Train the discriminator on ``config.train_files``, select on ``config.dev_files``, save to ``out_dir``."""
    out_dir = Path(out_dir)
    root = data_dir()
    eval_paths = {str((root / p).resolve()) for p in EVAL_FILES.values()}
    leaked = [f for f in config.train_files if str((root / f).resolve()) in eval_paths]
    if leaked:
        raise HardcseError(f"evaluation file(s) {leaked} cannot be training data; remove them from train_files")
    train = read_nli_files(config.train_files)
    dev = read_nli_files(config.dev_files)
    if config.max_examples is not None and config.max_examples < len(train):
        keep = sorted(random.Random(config.seed).sample(range(len(train)), config.max_examples))
        train = NLIPairs(*([column[i] for i in keep] for column in (train.premises, train.hypotheses, train.labels)))
    log.info("NLI training: %d train pairs, %d dev pairs", len(train), len(dev))

    model = CrossEncoder(
        str(resolve_model(config.model)),
        num_labels=len(LABELS),
        max_length=config.max_length,
        local_files_only=True,
        config_kwargs={"id2label": dict(enumerate(LABELS)), "label2id": dict(LABEL_ID)},
    )
    torch.manual_seed(config.seed)
    args = CrossEncoderTrainingArguments(
        **best_checkpoint_arguments(str(out_dir / "checkpoints"), config.eval_steps, "eval_dev_accuracy", config.seed),
        num_train_epochs=config.epochs,
        per_device_train_batch_size=config.batch_size,
        per_device_eval_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        warmup_ratio=config.warmup_ratio,
        batch_sampler=LengthGroupedBatchSampler if config.length_grouped else "batch_sampler",
    )
    evaluator = DevAccuracy(dev)
    trainer = CrossEncoderTrainer(
        model=model,
        args=args,
        train_dataset=_dataset(train),
        loss=CrossEntropyLoss(model),
        evaluator=evaluator,
        callbacks=[EvaluateAtEnd(), *(callbacks or [])],
    )
    trainer.train()
    discriminator = NLIDiscriminator(model)
    discriminator.save(out_dir)
    save_config(config, out_dir / "hardcse_config.yaml")
    return discriminator
