"""Data-CUBE training: contrastive training that follows a plan batch by batch (the shared training job).

The loss of a batch (one task) is the paper's in-batch contrastive loss,
    l_j = -log e^{sim(q_j, s_j+)/tau} / sum_k (e^{sim(q_j, s_k+)/tau} + e^{sim(q_j, s_k-)/tau}),   tau = 0.01,
averaged over the rows whose mask is 1 (the instance curriculum's delta, Section 3.3); masked rows add no loss of
their own but their positives and negatives stay in every other row's denominator. Instructions are part of the
texts, so the trainer, its data collator and the saved model stay standard sentence-transformers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from datasets import Dataset
from sentence_transformers import SentenceTransformer

from hardcse.batching import PlanBatches
from hardcse.datacube.plan import Plan, difficulties
from hardcse.encoder.build import load_encoder
from hardcse.encoder.contrastive import InBatchContrastiveLoss
from hardcse.engines import Engine
from hardcse.evaluation.sts import dev_evaluator
from hardcse.tracking.run import Tracking
from hardcse.training import TrainOutcome, run_training_job


def underfit_share(model: SentenceTransformer, plan: Plan, engine: Engine) -> float:
    """The share of the plan's instances whose margin phi = sim(q,s+) - sim(q,s-) (in ``engine``) is below
    ``underfit_margin``."""
    phi = np.concatenate([difficulties(model, task, engine) for task in plan.tasks])
    return float((phi < plan.config.underfit_margin).mean())


def train_from_plan(plan: Plan, out_dir: str | Path, engine: Engine, tracking: Tracking | None = None) -> TrainOutcome:
    """Train ``plan.config.encoder`` on the plan's batches in order; save the best checkpoint by STS-B dev to
    ``out_dir`` with ``training.json`` (dev scores, masked rows, underfitting shares before and after), encoding
    in ``engine``; ``tracking``: the run folder's trackers."""
    config = plan.config
    rows = plan.instances_in_order()
    dataset = Dataset.from_dict(
        {
            "anchor": [r[0] for r in rows],
            "positive": [r[1] for r in rows],
            "negative": [r[2] for r in rows],
            "label": [float(r[3]) for r in rows],
        }
    )
    model = load_encoder(config.encoder, device=config.training.device)
    own_length = model.max_seq_length
    model.max_seq_length = config.training.max_seq_length  # phi at the training length, before and after
    before = underfit_share(model, plan, engine)
    model.max_seq_length = own_length
    return run_training_job(
        model,
        dataset,
        InBatchContrastiveLoss(model, config.tau, labels_are_mask=True),  # the label column is the mask
        config.training,
        out_dir,
        evaluator=dev_evaluator(own_length, engine),
        batch_sampler=PlanBatches([len(b.rows) for b in plan.batches]),
        before_save=lambda trained: {"underfit_share_after": underfit_share(trained, plan, engine)},
        record={
            "masked_rows": int(sum(len(b.mask) - sum(b.mask) for b in plan.batches)),
            "underfit_share_before": before,
        },
        tracking=tracking,
    )
