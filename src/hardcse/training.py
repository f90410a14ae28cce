"""The one training job of hardcse: SimCSE, Data-CUBE, DiffAug stage 2 and the NLI discriminator all run here.

A method brings its model, its dataset, its loss and (optionally) its batch sampler; the job owns the rest, as
sentence-transformers' trainers own it for their losses:
- train on short inputs (``max_seq_length``), evaluate and save at the model's own length;
- evaluate on the selection set (STS-B dev for encoders) every ``eval_steps`` steps and at the last step;
- keep the best checkpoint by the dev metric (``load_best_model_at_end``);
- save into the output folder, delete the checkpoints, write ``training.json`` beside the weights;
- resume from the newest checkpoint in the folder when a killed job is run again, with what the loss trains
  beside the model (a classifier, a training-only head), which the trainer's checkpoints do not hold;
- under several processes (``accelerate launch``, ``torchrun``): DDP, each rank on its slice of every batch
  (``training.batch_size`` stays the batch of one step), the loss's own parameters averaged like the model's,
  rank 0 writing the files (hardcse/distributed.py).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from torch import nn
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from hardcse.atomic import write_json_atomic
from hardcse.config import Checked, ConfigValueError, check_choice, check_nonnegative, check_positive, check_range
from hardcse.devices import DTYPES, check_device, resolve_device, resolve_dtype
from hardcse.distributed import RankSlices, average_gradients, barrier, is_main, run_on_main, world_size
from hardcse.progress import shown
from hardcse.tracking.run import Tracking

log = logging.getLogger(__name__)
DEV_METRIC = "eval_sts-dev_spearman"  # STSEvaluator on STS-B dev, as the trainer logs it
CHECKPOINTS = "checkpoints"


@dataclass
class TrainingSettings(Checked):
    """The training block every method shares (its defaults are set by each method's config)."""

    epochs: float = 1.0
    max_steps: int = -1  # > 0 overrides epochs
    batch_size: int = 64
    learning_rate: float = 2e-5
    warmup_ratio: float = 0.0
    max_seq_length: int = 32  # training length (SimCSE's 32); evaluation and the saved model use the model's own
    eval_steps: int = 50  # the dev metric every N steps and at the last step; the best checkpoint is kept
    seed: int = 42
    # auto | cpu | cuda | cuda:0 (hardcse/devices.py). One training process trains on one GPU, the first visible
    # one (transformers' Trainer): pick another with CUDA_VISIBLE_DEVICES.
    device: str = "auto"
    # float32 | bfloat16 | auto. bfloat16: mixed precision (the Trainer's autocast; weights, gradients and the
    # optimizer stay float32); auto: bfloat16 where the device computes it natively (a CPU with AVX512-BF16 or AMX,
    # a GPU from Ampere on), else float32. float32 reproduces every run made before this key
    # (benchmarks/results/training_precision.md).
    dtype: str = "float32"

    def check(self) -> None:
        for key in ("batch_size", "learning_rate", "max_seq_length", "eval_steps"):
            check_positive(key, getattr(self, key))
        check_nonnegative("epochs", self.epochs)
        check_range("warmup_ratio", self.warmup_ratio, 0.0, 1.0)
        check_device("device", self.device)
        check_choice("dtype", self.dtype, DTYPES)
        if self.device.startswith("cuda:") and self.device != "cuda:0":
            raise ConfigValueError(
                "device",
                f"{self.device}: a training process trains on the first visible GPU; choose it with "
                f"CUDA_VISIBLE_DEVICES={self.device[5:]} and device: cuda",
            )
        if self.max_steps == 0 or self.max_steps < -1:
            raise ConfigValueError("max_steps", f"{self.max_steps}: give a number of steps > 0, or -1 to use epochs")
        if self.max_steps == -1 and self.epochs <= 0:
            raise ConfigValueError("epochs", f"{self.epochs}: no steps to train; set epochs > 0 or max_steps > 0")


@dataclass
class TrainOutcome:
    """What a training job kept: the model (best checkpoint) and the record written to ``training.json``."""

    model: Any
    record: dict

    @property
    def best_dev(self) -> float | None:
        return self.record["best_dev"]

    @property
    def best_step(self) -> int | None:
        return self.record["best_step"]


class EvaluateAtEnd(TrainerCallback):
    """Evaluate and save at the last step too, so the end of training can be the selected checkpoint even when
    the number of steps is not a multiple of ``eval_steps``."""

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object
    ) -> TrainerControl:
        if state.global_step == state.max_steps:
            control.should_evaluate = True
            control.should_save = True
        return control


class StepTimer(TrainerCallback):
    """Wall seconds of every optimiser step (forward, backward, update), evaluation and saving excluded."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self._start = 0.0

    def on_step_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: object
    ) -> None:
        self._start = time.perf_counter()

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: object) -> None:
        self.seconds.append(time.perf_counter() - self._start)

    def summary(self) -> dict:
        steady = self.seconds[1:] or self.seconds  # the first step pays for warm-up
        return {"steps_timed": len(self.seconds), "seconds_per_step": sum(steady) / max(len(steady), 1)}


LOSS_STATE = "loss_state.safetensors"


def loss_owned_state(loss: nn.Module) -> dict:
    """The loss's own trained tensors (its ``model`` left out)."""
    return {k: v.detach().contiguous() for k, v in loss.state_dict().items() if not k.startswith("model.")}


class LossStateCheckpoint(TrainerCallback):
    """Writes the loss's own tensors into every checkpoint folder the trainer saves."""

    def __init__(self, loss: nn.Module) -> None:
        self.loss = loss

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: object) -> None:
        from safetensors.torch import save_file

        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        owned = loss_owned_state(self.loss)
        if owned and folder.is_dir() and is_main():
            save_file(owned, str(folder / LOSS_STATE))


class AverageLossGradients(TrainerCallback):
    """Under several processes, averages the gradients of the loss's own parameters (DDP averages the model's
    only), so every rank's classifier or head takes the same step."""

    def __init__(self, loss: nn.Module) -> None:
        self.parameters = [p for name, p in loss.named_parameters() if not name.startswith("model.")]

    def on_pre_optimizer_step(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: object
    ) -> None:
        average_gradients(self.parameters)


def sliced_batches(trainer_cls: type) -> type:
    """``trainer_cls`` whose batch sampler (the one sentence-transformers builds from ``args.batch_sampler``) yields
    each batch as one slice per rank (:class:`hardcse.distributed.RankSlices`)."""

    class SlicedBatchTrainer(trainer_cls):
        def get_batch_sampler(self, *args: Any, **kwargs: Any) -> Any:
            return RankSlices(super().get_batch_sampler(*args, **kwargs), world_size())

    return SlicedBatchTrainer


def trainer_arguments(output_dir: Path, settings: TrainingSettings, metric: str | None) -> dict:
    """Training-argument values of every hardcse job: seeded, offline and quiet; with a ``metric``, evaluate every
    ``eval_steps`` steps and keep the best checkpoint."""
    device = resolve_device(settings.device, "training.device")
    common = {
        "output_dir": str(output_dir),
        "num_train_epochs": settings.epochs,
        "max_steps": settings.max_steps,
        "per_device_train_batch_size": settings.batch_size,
        "per_device_eval_batch_size": settings.batch_size,
        "learning_rate": settings.learning_rate,
        "warmup_ratio": settings.warmup_ratio,
        "logging_steps": max(1, settings.eval_steps // 5),
        "seed": settings.seed,
        "data_seed": settings.seed,
        "report_to": "none",
        "disable_tqdm": not shown(),  # a caller may turn progress off (hardcse/progress.py)
        "dataloader_pin_memory": False,
        # several processes: a loss runs the model once per column (DiffAug: one prefix view each), and DDP's search
        # for unused parameters after each forward would mark a parameter ready twice; a static graph (the same
        # parameters every step) lets DDP find the unused ones (e.g. BERT's pooler) once instead
        "ddp_find_unused_parameters": False,
        "ddp_static_graph": True,
        # auto on a machine without a GPU is the CPU too: under a launcher the trainer's process group is then gloo
        "use_cpu": device.type == "cpu",
        "bf16": resolve_dtype(settings.dtype, device) == torch.bfloat16,
    }
    if metric is None:
        return common | {"save_strategy": "no", "eval_strategy": "no"}
    return common | {
        "eval_strategy": "steps",
        "eval_steps": settings.eval_steps,
        "save_strategy": "steps",
        "save_steps": settings.eval_steps,
        "save_total_limit": 1,
        "load_best_model_at_end": True,
        "metric_for_best_model": metric,
        "greater_is_better": True,
    }


def run_training_job(
    model: Any,
    dataset: Dataset,
    loss: nn.Module,
    settings: TrainingSettings,
    out_dir: str | Path,
    *,
    evaluator: Any = None,
    metric: str = DEV_METRIC,
    batch_sampler: Any = None,
    callbacks: list[TrainerCallback] | None = None,
    extra_arguments: dict | None = None,
    before_save: Callable[[Any], dict] | None = None,
    record: dict | None = None,
    tracking: Tracking | None = None,
) -> TrainOutcome:
    """Train ``model`` on ``dataset`` with ``loss``; keep the best checkpoint by ``metric`` (``evaluator`` scores
    it, e.g. :func:`hardcse.evaluation.sts.dev_evaluator` at the model's own length; ``metric=None``: no selection,
    the last step is kept); save it to ``out_dir`` with ``training.json``.

    A SentenceTransformer trains at ``settings.max_seq_length`` and is saved at its own length; a CrossEncoder
    keeps the length it was built with. ``before_save(model)`` runs on the selected model before the length is
    restored and it is saved (a measure, or a method's own selection); its dict joins the record, as does
    ``record``. Checkpoints live in ``out_dir/checkpoints`` until the
    end, so a job killed and started again on the same folder resumes from the newest one. ``tracking``: the run
    folder's trackers (none: the job reports nowhere).
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.cross_encoder import CrossEncoder, CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.sentence_transformer.trainer import SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

    if metric is not None and evaluator is None:
        raise ValueError(f"run_training_job: selecting on {metric!r} needs the evaluator that computes it")
    out_dir = Path(out_dir)
    checkpoints = out_dir / CHECKPOINTS
    is_encoder = isinstance(model, SentenceTransformer)
    if is_encoder:
        eval_length = model.max_seq_length
        model.max_seq_length = settings.max_seq_length
    elif not isinstance(model, CrossEncoder):
        raise TypeError(f"run_training_job trains a SentenceTransformer or a CrossEncoder, not {type(model)}")
    arguments_cls = SentenceTransformerTrainingArguments if is_encoder else CrossEncoderTrainingArguments
    trainer_cls = SentenceTransformerTrainer if is_encoder else CrossEncoderTrainer
    extra = dict(extra_arguments or {})
    if batch_sampler is not None:
        extra["batch_sampler"] = batch_sampler
    if world_size() > 1:  # each rank its slice of every batch: one step trains on one whole batch
        trainer_cls = sliced_batches(trainer_cls)
    args = arguments_cls(**trainer_arguments(checkpoints, settings, metric), **extra)
    # under DDP sentence-transformers turns on drop_last against uneven last batches; RankSlices gives every rank
    # a slice of every batch, so nothing needs dropping (and one process would not drop it either)
    args.dataloader_drop_last = False
    if args.world_size == 1 and args.n_gpu > 1:
        # one process, one GPU: the Trainer would wrap the model in DataParallel over every visible GPU and
        # multiply the batch by their count, changing SimCSE's in-batch negatives and the step count
        args._n_gpu = 1
    timer = StepTimer()
    # the run folder's trackers, if it reports to any: the Trainer's own integrations, guarded, while it trains
    with (tracking or Tracking()).training_job(out_dir) as trackers:
        trainer = trainer_cls(
            model=model,
            args=args,
            train_dataset=dataset,
            loss=loss,
            evaluator=evaluator,
            callbacks=[
                timer,
                AverageLossGradients(loss),
                *([EvaluateAtEnd(), LossStateCheckpoint(loss)] if metric is not None else []),
                *(callbacks or []),
                *trackers,
            ],
        )

        def newest_checkpoint() -> str | None:
            shutil.rmtree(out_dir / (CHECKPOINTS + ".old"), ignore_errors=True)  # a kill while they were being removed
            return last_complete_checkpoint(checkpoints)

        last = run_on_main(newest_checkpoint)  # rank 0 tidies the folder; every rank resumes from the same one
        if last is not None:
            log.info("resuming training from %s", last)
            if (Path(last) / LOSS_STATE).is_file():
                from safetensors.torch import load_file

                loss.load_state_dict(load_file(str(Path(last) / LOSS_STATE)), strict=False)
        trainer.train(resume_from_checkpoint=last)
    # bfloat16 (training.dtype): accelerate wrapped the model's forward in autocast; every later use of the model
    # (before_save, the caller's evaluation) computes in float32, as the saved model does when it is loaded
    trainer.accelerator.unwrap_model(model, keep_fp32_wrapper=False)
    model.__dict__.pop("_is_accelerate_prepared", None)  # a later job on this model prepares it again

    history = [e for e in trainer.state.log_history if metric in e]
    best = max(history, key=lambda e: e[metric]) if history else None
    full_record = {
        **(record or {}),
        "rows": len(dataset),
        "steps": trainer.state.global_step,
        "best_dev": best[metric] if best else None,
        "best_step": best["step"] if best else None,
        "dev_history": [{"step": e["step"], "dev": e[metric]} for e in history],
        "train_loss": [{"step": e["step"], "loss": e["loss"]} for e in trainer.state.log_history if "loss" in e],
        **timer.summary(),
        "resumed_from": Path(last).name if last else None,
        "world_size": world_size(),
    }
    if before_save is not None:
        full_record |= before_save(model)
    if is_encoder:
        model.max_seq_length = eval_length
    if is_main():
        _save_outcome(model, full_record, out_dir, is_encoder)
    barrier()  # the other ranks return once the folder is complete
    return TrainOutcome(model, full_record)


def _save_outcome(model: Any, record: dict, out_dir: Path, is_encoder: bool) -> None:
    """The selected model and ``training.json`` into ``out_dir``; then the checkpoints go."""
    if is_encoder:
        model.save(str(out_dir))
    else:
        model.save_pretrained(str(out_dir))
    write_json_atomic(out_dir / "training.json", record)
    # the best checkpoint now lives in out_dir itself; renamed first, so a kill never leaves a half-deleted one
    checkpoints = out_dir / CHECKPOINTS
    if checkpoints.is_dir():
        trash = out_dir / (CHECKPOINTS + ".old")
        os.replace(checkpoints, trash)
        shutil.rmtree(trash)


def last_complete_checkpoint(checkpoints: Path) -> str | None:
    """The newest ``checkpoint-N`` the Trainer finished writing (it writes ``trainer_state.json`` last); newer ones
    that a kill left half-written are removed, so resuming never loads a torn checkpoint."""
    if not checkpoints.is_dir():
        return None
    found = sorted(
        (p for p in checkpoints.iterdir() if p.is_dir() and p.name.startswith("checkpoint-")),
        key=lambda p: int(p.name.removeprefix("checkpoint-")) if p.name.removeprefix("checkpoint-").isdigit() else -1,
    )
    while found and not (found[-1] / "trainer_state.json").is_file():
        log.warning("removing %s: a kill left it half-written", found[-1])
        shutil.rmtree(found.pop())
    return str(found[-1]) if found else None


# Keys that sat at the top of a method's config before the shared training block existed.
MOVED_TO_TRAINING = {f.name: f"training.{f.name}" for f in fields(TrainingSettings)}
