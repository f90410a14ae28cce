"""``hardcse curriculum train``: contrastive training that follows a plan batch by batch.

The loss of a batch (one task) is the paper's in-batch contrastive loss,
    l_j = -log e^{sim(q_j, s_j+)/tau} / sum_k (e^{sim(q_j, s_k+)/tau} + e^{sim(q_j, s_k-)/tau}),   tau = 0.01,
averaged over the rows whose mask is 1; masked rows add no loss of their own but their positives and negatives
stay in every other row's denominator. Instructions are part of the texts, so the trainer, its data collator and
the saved model stay standard sentence-transformers.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.sampler import DefaultBatchSampler
from sentence_transformers.sentence_transformer.trainer import SentenceTransformerTrainer
from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments
from torch import nn

from hardcse.atomic import write_text_atomic
from hardcse.config import save_config
from hardcse.curriculum.plan import Plan, difficulties
from hardcse.data.sts import DEV_TASK, load_sts_task
from hardcse.encoder.build import load_encoder
from hardcse.evaluation.sts import STSEvaluator
from hardcse.selection import EvaluateAtEnd, best_checkpoint_arguments

DEV_METRIC = "eval_sts-dev_spearman"


class MaskedInBatchContrastiveLoss(nn.Module):
    """Columns (anchor, positive, negative) and a 0/1 ``label`` per row: the loss mask."""

    def __init__(self, model: SentenceTransformer, temperature: float) -> None:
        super().__init__()
        self.model = model
        self.temperature = temperature

    def forward(self, sentence_features: list[dict[str, torch.Tensor]], labels: torch.Tensor) -> torch.Tensor:
        q, pos, neg = (nn.functional.normalize(self.model(f)["sentence_embedding"], dim=-1) for f in sentence_features)
        scores = q @ torch.cat([pos, neg]).T / self.temperature  # (B, 2B): every positive and negative of the batch
        losses = nn.functional.cross_entropy(scores, torch.arange(len(q), device=q.device), reduction="none")
        mask = labels.to(losses.dtype)
        return (losses * mask).sum() / mask.sum().clamp(min=1.0)


class PlanBatchSampler(DefaultBatchSampler):
    """Yields the plan's batches in the plan's order (the dataset rows are laid out batch after batch)."""

    def __init__(self, dataset: Dataset, sizes: list[int], **kwargs: object) -> None:
        super().__init__(dataset, **kwargs)
        self.sizes = sizes

    def __len__(self) -> int:
        return len(self.sizes)

    def __iter__(self) -> Iterator[list[int]]:
        start = 0
        for size in self.sizes:
            yield list(range(start, start + size))
            start += size


class PlanBatches:
    """The trainer's ``batch_sampler`` argument: builds a :class:`PlanBatchSampler` (picklable, unlike a lambda,
    because the trainer saves its arguments with every checkpoint)."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes

    def __call__(self, dataset: Dataset, **kwargs: object) -> PlanBatchSampler:
        return PlanBatchSampler(dataset, self.sizes, **kwargs)


def underfit_share(model: SentenceTransformer, plan: Plan) -> float:
    """The share of the plan's instances whose margin phi = sim(q,s+) - sim(q,s-) is below ``underfit_margin``."""
    phi = np.concatenate([difficulties(model, task) for task in plan.tasks])
    return float((phi < plan.config.underfit_margin).mean())


def train_from_plan(plan: Plan, out_dir: str | Path) -> dict:
    """Train ``plan.config.model`` on the plan's batches in order; save the best checkpoint by STS-B dev to
    ``out_dir``; returns (and writes to ``training.json``) dev scores and underfitting shares before/after."""
    config = plan.config
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    save_config(config, out_dir / "config.yaml")
    rows = plan.instances_in_order()
    dataset = Dataset.from_dict(
        {
            "anchor": [r[0] for r in rows],
            "positive": [r[1] for r in rows],
            "negative": [r[2] for r in rows],
            "label": [float(r[3]) for r in rows],
        }
    )
    model = load_encoder(config.model)
    eval_length = model.max_seq_length
    model.max_seq_length = config.max_seq_length
    before = underfit_share(model, plan)
    checkpoints = out_dir / "checkpoints"
    args = SentenceTransformerTrainingArguments(
        **best_checkpoint_arguments(str(checkpoints), config.eval_steps, DEV_METRIC, config.seed),
        num_train_epochs=config.epochs,
        per_device_train_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        warmup_ratio=config.warmup_ratio,
        batch_sampler=PlanBatches([len(b.rows) for b in plan.batches]),
    )
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        loss=MaskedInBatchContrastiveLoss(model, config.temperature),
        evaluator=STSEvaluator(load_sts_task(DEV_TASK), max_seq_length=eval_length),
        callbacks=[EvaluateAtEnd()],
    )
    trainer.train()
    history = [e for e in trainer.state.log_history if DEV_METRIC in e]
    best = max(history, key=lambda e: e[DEV_METRIC]) if history else None
    after = underfit_share(model, plan)
    model.max_seq_length = eval_length
    model.save(str(out_dir))
    shutil.rmtree(checkpoints, ignore_errors=True)
    record = {
        "steps": trainer.state.global_step,
        "masked_rows": int(sum(len(b.mask) - sum(b.mask) for b in plan.batches)),
        "best_dev": best[DEV_METRIC] if best else None,
        "best_step": best["step"] if best else None,
        "dev_history": [{"step": e["step"], "sts_dev": e[DEV_METRIC]} for e in history],
        "underfit_share_before": before,
        "underfit_share_after": after,
    }
    write_text_atomic(out_dir / "training.json", json.dumps(record, indent=2))
    return record
