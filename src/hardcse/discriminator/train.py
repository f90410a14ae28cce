"""Training the NLI discriminator (ART Section 3.2): a pretrained encoder + a one-hidden-layer MLP head, 3-way
cross-entropy on SNLI + MNLI, the checkpoint with the best dev accuracy kept (the shared training job)."""

from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from datasets import Dataset
from sentence_transformers.base.evaluation.evaluator import BaseEvaluator
from sentence_transformers.cross_encoder import CrossEncoder
from sentence_transformers.cross_encoder.losses import CrossEntropyLoss

from hardcse.batching import LengthGroupedBatchSampler
from hardcse.config import ConfigValueError, check_choice, check_positive
from hardcse.data.nli import DEV_FILES, EVAL_FILES, LABEL_ID, LABELS, SHARES, TRAIN_FILES, NLIPairs, read_nli_files
from hardcse.discriminator.nli import NLIDiscriminator, nli_metrics
from hardcse.errors import HardcseError
from hardcse.paths import data_dir
from hardcse.resources import resolve_model
from hardcse.seeding import seeded_torch
from hardcse.tracking.config import Tracked
from hardcse.tracking.run import Tracking
from hardcse.training import MOVED_TO_TRAINING, TrainingSettings, run_training_job

log = logging.getLogger(__name__)
DEV_ACCURACY = "eval_dev_accuracy"


def _nli_training() -> TrainingSettings:
    return TrainingSettings(batch_size=32, learning_rate=5e-5, warmup_ratio=0.1, max_seq_length=128, eval_steps=500)


@dataclass
class NLITrainConfig(Tracked):
    """``hardcse nli train``: the cross-encoder, its data and its training (``training.max_seq_length`` is the
    pair length for training and prediction alike)."""

    RENAMED: ClassVar[dict[str, str]] = {
        **MOVED_TO_TRAINING,
        "model": "base_model",
        "max_length": "training.max_seq_length",
    }
    base_model: str = "bundled:minilm-l6"  # the pretrained encoder under the classification head
    train_files: list[str] = field(default_factory=lambda: list(TRAIN_FILES))
    dev_files: list[str] = field(default_factory=lambda: list(DEV_FILES))
    length_grouped: bool = True  # batches of similar length: less padding, faster on CPU
    max_examples: int | None = None  # take a random N of the training pairs (quick runs)
    # null: every training pair; discriminator | judge: only the pairs whose premise is in that third
    # (hardcse/data/nli.py SHARES), disjoint from the other's and from the generator's warm start
    share: str | None = None
    training: TrainingSettings = field(default_factory=_nli_training)

    def check(self) -> None:
        check_positive("max_examples", self.max_examples, allow_none=True)
        if self.share is not None:
            check_choice("share", self.share, SHARES)
        root = data_dir()
        eval_paths = {str((root / p).resolve()) for p in EVAL_FILES.values()}
        leaked = [f for f in self.train_files if str((root / f).resolve()) in eval_paths]
        if leaked:
            raise ConfigValueError("train_files", f"evaluation file(s) {leaked} cannot be training data; remove them")


class DevAccuracy(BaseEvaluator):
    """Accuracy on dev pairs (logged as ``eval_dev_accuracy``): the metric that selects the checkpoint."""

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


def nli_training_pairs(config: NLITrainConfig) -> tuple[NLIPairs, NLIPairs]:
    """The training and dev pairs, read whole (a bad or empty file fails here, before any model loads)."""
    train, dev = read_nli_files(config.train_files).share(config.share), read_nli_files(config.dev_files)
    for key, pairs in (("train_files", train), ("dev_files", dev)):
        if not len(pairs):
            raise HardcseError(f"{key}: {getattr(config, key)} hold no NLI pairs; give files with rows")
    return train, dev


def train_nli(
    config: NLITrainConfig,
    out_dir: str | Path,
    data: tuple[NLIPairs, NLIPairs] | None = None,
    tracking: Tracking | None = None,
) -> NLIDiscriminator:
    """Train the discriminator on ``config.train_files``, select on ``config.dev_files`` (``data``: those pairs,
    already read), save to ``out_dir``; ``tracking``: the run folder's trackers."""
    settings = config.training
    train, dev = data or nli_training_pairs(config)
    if config.max_examples is not None and config.max_examples < len(train):
        keep = sorted(random.Random(settings.seed).sample(range(len(train)), config.max_examples))
        train = NLIPairs(*([column[i] for i in keep] for column in (train.premises, train.hypotheses, train.labels)))
    log.info("NLI training: %d train pairs, %d dev pairs", len(train), len(dev))

    with seeded_torch(settings.seed):  # the fresh classification head: the same weights in every run
        model = CrossEncoder(
            str(resolve_model(config.base_model)),
            num_labels=len(LABELS),
            max_length=settings.max_seq_length,
            local_files_only=True,
            config_kwargs={"id2label": dict(enumerate(LABELS)), "label2id": dict(LABEL_ID)},
        )
    dataset = Dataset.from_dict({"premise": train.premises, "hypothesis": train.hypotheses, "label": train.labels})
    run_training_job(  # the Trainer seeds its training itself (TrainingSettings.seed)
        model,
        dataset,
        CrossEntropyLoss(model),
        settings,
        out_dir,
        evaluator=DevAccuracy(dev),
        metric=DEV_ACCURACY,
        batch_sampler=LengthGroupedBatchSampler if config.length_grouped else "batch_sampler",
        tracking=tracking,
    )
    return NLIDiscriminator(model)


def nli_run(
    config: NLITrainConfig, out: str | Path, *, evaluate: bool = True, resume: bool = False, overwrite: bool = False
) -> dict[str, dict] | None:
    """``hardcse nli train`` as a run folder: ``model/`` (a CrossEncoder folder, with ``training.json``) and
    ``nli_eval.json`` (accuracy and per-class F1 on the held-out NLI sets); returns the evaluation."""
    from hardcse.atomic import write_json_atomic
    from hardcse.discriminator.nli import evaluate_nli
    from hardcse.run_folder import RunFolder

    folder = RunFolder(out, config, resume=resume, overwrite=overwrite, command="nli train")
    folder.check()  # --out mistakes before the data is read
    resolve_model(config.base_model)
    trained = resume and (Path(out) / "model").is_dir()
    data = None if trained else nli_training_pairs(config)  # read whole now: a bad file fails before the model
    with folder as run:
        model_dir = run.stage(
            "model",
            "model",
            lambda partial: train_nli(config, partial, data, run.tracking),
            keep_partial=True,
            all_ranks=True,
        )
        results = None
        if evaluate:
            path = run.stage(
                "eval",
                "nli_eval.json",
                lambda partial: write_json_atomic(
                    partial, evaluate_nli(NLIDiscriminator.load(str(model_dir), device=config.training.device))
                ),
            )
            results = json.loads(path.read_text(encoding="utf-8"))
        run.finish()
    return results
