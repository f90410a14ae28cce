"""``hardcse diffaug train``: stage 1 (prefix-tuning) and stage 2 (joint tuning), or the SimCSE baselines.

Output folder:
    config.yaml
    stage1/       the encoder with its tuned prefixes, classifier.safetensors, stage1.json,
                  diagnostics.jsonl + diagnostics.png (delta and kappa against the step)
    model/        the final encoder (stage 2's best checkpoint on STS-B dev, or stage 1's for prefix-tuning only);
                  it encodes with both prefixes
    training.json stage-2 dev history, best step, seconds per optimiser step
A stage is written under a temporary name and renamed when complete. ``method: simcse`` runs stage 2 only, on
the same rows in the same order, with no prefixes (the two views then differ by dropout alone).
"""

from __future__ import annotations

import json
import logging
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from datasets import Dataset
from safetensors.torch import load_file, save_file
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.trainer import SentenceTransformerTrainer
from sentence_transformers.sentence_transformer.training_args import (
    BatchSamplers,
    SentenceTransformerTrainingArguments,
)
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from hardcse.atomic import write_text_atomic
from hardcse.config import DiffAugConfig, config_to_dict, load_config, save_config
from hardcse.data.corpus import read_sentences
from hardcse.data.nli import LABEL_ID, NLIPairs, read_nli_files
from hardcse.data.sts import ALL_TASKS, DEV_TASK, load_sts_task
from hardcse.data.triplets import Triplet, nli_triplets
from hardcse.diffaug.diagnostics import SELECTIONS, Stage1Diagnostics, plot_diagnostics
from hardcse.diffaug.objectives import PairClassifier, PrefixContrastiveLoss, PrefixPairClassificationLoss
from hardcse.diffaug.prefix import add_prefixes, prefixed
from hardcse.encoder.build import POOLINGS, load_encoder
from hardcse.errors import HardcseError
from hardcse.evaluation.sts import STSEvaluator
from hardcse.resources import resolve_model
from hardcse.selection import EvaluateAtEnd, best_checkpoint_arguments

log = logging.getLogger(__name__)
DEV_METRIC = "eval_sts-dev_spearman"
CLASSIFIER_WEIGHTS = "classifier.safetensors"
STAGE1, FINAL = "stage1", "model"
# Fields that shape stage 1's output: a later `--stage 2` warns when they differ from the saved config.
STAGE1_FIELDS = (
    *("model", "pooling", "prefixes", "prefix_length", "prefix_hidden_size"),
    *("nli_files", "nli_fraction", "max_seq_length", "seed", "stage1"),
)


def validate(config: DiffAugConfig, stages: list[int]) -> None:
    """Every config mistake, before any work or folder."""
    choices = {
        "setting": (config.setting, ("semi", "sup")),
        "method": (config.method, ("diffaug", "simcse")),
        "prefixes": (config.prefixes, ("different", "same")),
        "pooling": (config.pooling, POOLINGS),
        "stage1.labels": (config.stage1.labels, ("binary", "three_way")),
        "stage1.select": (config.stage1.select, SELECTIONS),
    }
    for name, (value, allowed) in choices.items():
        if value not in allowed:
            raise HardcseError(f"{name}: {value!r} is not one of {', '.join(allowed)}")
    if not stages or any(s not in (1, 2) for s in stages) or len(set(stages)) != len(stages):
        raise HardcseError(f"stages {stages}: use [1, 2], [1] or [2]")
    if config.method == "simcse" and 1 in stages:
        raise HardcseError("method simcse has no stage 1 (no prefixes to tune)")
    if not 0 < config.nli_fraction <= 1:
        raise HardcseError(f"nli_fraction {config.nli_fraction}: use a share in (0, 1]")
    if config.stage2.aux_weight < 0 or (config.stage2.aux_weight > 0 and config.setting != "semi"):
        raise HardcseError("stage2.aux_weight: a non-negative weight, and only for setting semi")
    positive = {
        "prefix_length": config.prefix_length,
        "prefix_hidden_size": config.prefix_hidden_size,
        "stage1.steps": config.stage1.steps,
        "stage1.batch_size": config.stage1.batch_size,
        "stage1.diagnostics_every": config.stage1.diagnostics_every,
        "stage1.probe_pairs": config.stage1.probe_pairs,
        "stage2.batch_size": config.stage2.batch_size,
        "stage2.eval_steps": config.stage2.eval_steps,
    }
    for name, value in positive.items():
        if value < 1:
            raise HardcseError(f"{name} must be at least 1 (got {value})")
    if config.stage2.max_steps == 0 or config.stage2.epochs <= 0 and config.stage2.max_steps < 0:
        raise HardcseError("stage 2 has no steps: set stage2.epochs > 0 or stage2.max_steps > 0")
    unknown = [t for t in config.eval_tasks if t not in ALL_TASKS]
    if unknown:
        raise HardcseError(f"eval_tasks: unknown {unknown}; known: {', '.join(ALL_TASKS)}")
    resolve_model(config.model)  # a missing model fails here, not after stage 1


@dataclass
class NLIData:
    """What a run may use of the NLI files after the label-scarce sample: pairs (stage 1, aux loss), triplets
    (supervised stage 2) and the entailment probe pairs of the stage-1 diagnostics, held out of stage 1."""

    pairs: NLIPairs
    triplets: list[Triplet]
    probe: tuple[list[str], list[str]]


def nli_data(config: DiffAugConfig) -> NLIData:
    """Seeded: a ``nli_fraction`` share of the pairs, and of the triplets built from all pairs (a pair sample
    would break up the premises that triplets need); probe pairs are at most a quarter of the sample's
    entailment pairs."""
    pairs = read_nli_files(config.nli_files)
    rng = random.Random(config.seed)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    order = order[: max(1, round(len(order) * config.nli_fraction))]
    entailed = [i for i in order if pairs.labels[i] == LABEL_ID["entailment"]]
    probe_ids = entailed[: min(config.stage1.probe_pairs, len(entailed) // 4)]
    if not probe_ids:
        raise HardcseError(f"too few entailment pairs ({len(entailed)}) in the NLI data for the stage-1 probe")
    held_out = set(probe_ids)
    kept = [i for i in order if i not in held_out]
    subset = NLIPairs(
        [pairs.premises[i] for i in kept], [pairs.hypotheses[i] for i in kept], [pairs.labels[i] for i in kept]
    )
    triplets = nli_triplets(pairs)
    rng.shuffle(triplets)
    triplets = triplets[: max(1, round(len(triplets) * config.nli_fraction))]
    probe = ([pairs.premises[i] for i in probe_ids], [pairs.hypotheses[i] for i in probe_ids])
    return NLIData(subset, triplets, probe)


def classification_rows(pairs: NLIPairs, labels: str) -> tuple[list[str], list[str], list[int]]:
    """binary: entailment -> 1, contradiction -> 0, neutral dropped (the released code); three_way: all pairs."""
    if labels == "three_way":
        return pairs.premises, pairs.hypotheses, pairs.labels
    rows = [
        (p, h, int(y == LABEL_ID["entailment"]))
        for p, h, y in zip(pairs.premises, pairs.hypotheses, pairs.labels, strict=True)
        if y != LABEL_ID["neutral"]
    ]
    if not rows:
        raise HardcseError("no entailment or contradiction pairs in the NLI data")
    premises, hypotheses, ys = (list(c) for c in zip(*rows, strict=True))
    return premises, hypotheses, ys


def stage2_dataset(config: DiffAugConfig, data: NLIData) -> Dataset:
    """semi: (anchor, positive = anchor) from the unlabeled sentences, plus (premise, hypothesis, label) of NLI
    pairs cycled along the rows when the aux loss is on; sup: NLI triplets (anchor, positive, negative). Shuffled
    with the seed, then cut to ``max_examples``."""
    rng = random.Random(config.seed)
    if config.setting == "sup":
        if not data.triplets:
            raise HardcseError("the NLI data gives no (premise, entailment, contradiction) triplets")
        triplets = data.triplets[: config.max_examples]
        anchors, positives, negatives = (list(c) for c in zip(*triplets, strict=True))
        return Dataset.from_dict({"anchor": anchors, "positive": positives, "negative": negatives})
    sentences = read_sentences(config.unlabeled)
    rng.shuffle(sentences)
    sentences = sentences[: config.max_examples]
    columns: dict[str, list] = {"anchor": sentences, "positive": list(sentences)}
    if config.stage2.aux_weight > 0:
        premises, hypotheses, labels = classification_rows(data.pairs, config.stage1.labels)
        order = list(range(len(labels)))
        rng.shuffle(order)
        picks = [order[i % len(order)] for i in range(len(sentences))]
        columns |= {
            "premise": [premises[i] for i in picks],
            "hypothesis": [hypotheses[i] for i in picks],
            "label": [labels[i] for i in picks],
        }
    return Dataset.from_dict(columns)


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


def _num_labels(config: DiffAugConfig) -> int:
    return 3 if config.stage1.labels == "three_way" else 2


def starting_model(config: DiffAugConfig) -> SentenceTransformer:
    """The encoder stage 1 tunes prefixes for: ``config.model`` with fresh prefix modules (one for ``same``)."""
    model = load_encoder(config.model, config.pooling)
    num_prefixes = 2 if config.prefixes == "different" else 1
    return add_prefixes(
        model, resolve_model(config.model), config.prefix_length, config.prefix_hidden_size, num_prefixes
    )


def run_stage1(config: DiffAugConfig, data: NLIData, out_dir: Path) -> dict:
    """Prefix-tuning with the encoder frozen; writes ``out_dir`` (temporary name, then renamed)."""
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model = starting_model(config)
    eval_length = model.max_seq_length
    model.max_seq_length = config.max_seq_length
    for p in model.parameters():
        p.requires_grad_(False)
    for p in prefixed(model).prefixes.parameters():
        p.requires_grad_(True)
    premises, hypotheses, labels = classification_rows(data.pairs, config.stage1.labels)
    dataset = Dataset.from_dict({"premise": premises, "hypothesis": hypotheses, "label": labels})
    classifier = PairClassifier(model.get_embedding_dimension(), _num_labels(config))
    diagnostics = Stage1Diagnostics(
        model,
        data.probe,
        config.stage1.diagnostics_every,
        tmp / "diagnostics.jsonl",
        config.stage1.select,
        config.stage1.kappa_tolerance,
    )
    timer = StepTimer()
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp / "trainer"),
        seed=config.seed,
        data_seed=config.seed,
        report_to="none",
        dataloader_pin_memory=False,
        max_steps=config.stage1.steps,
        per_device_train_batch_size=config.stage1.batch_size,
        learning_rate=config.stage1.learning_rate,
        learning_rate_mapping={r"^classifier\.": config.stage1.classifier_learning_rate or config.stage1.learning_rate},
        warmup_ratio=config.stage1.warmup_ratio,
        save_strategy="no",
        eval_strategy="no",
        logging_steps=max(1, config.stage1.diagnostics_every // 5),
    )
    log.info("DiffAug stage 1: %d NLI pairs (%s), %d steps", len(dataset), config.stage1.labels, config.stage1.steps)
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        loss=PrefixPairClassificationLoss(model, classifier),
        callbacks=[timer, diagnostics],  # the timer's step ends before the diagnostics run
    )
    trainer.train()
    diagnostics.restore_selected()
    steps_run = trainer.state.global_step
    selected = diagnostics.selected_step if diagnostics.selected_step is not None else steps_run
    model.max_seq_length = eval_length
    model.save(str(tmp))
    shutil.rmtree(tmp / "trainer", ignore_errors=True)
    save_file({k: v.contiguous() for k, v in classifier.state_dict().items()}, str(tmp / CLASSIFIER_WEIGHTS))
    plot_diagnostics(diagnostics.rows, tmp / "diagnostics.png", selected)
    record = {
        "steps_run": steps_run,
        "selected_step": selected,
        "select": config.stage1.select,
        "training_pairs": len(dataset),
        "probe_pairs": len(data.probe[0]),
        "train_loss": [{"step": e["step"], "loss": e["loss"]} for e in trainer.state.log_history if "loss" in e],
        **timer.summary(),
    }
    write_text_atomic(tmp / "stage1.json", json.dumps(record, indent=2))
    save_config(config, tmp / "config.yaml")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return record


def stage2_model(config: DiffAugConfig, stage1_dir: Path) -> tuple[SentenceTransformer, PairClassifier | None]:
    """The model stage 2 trains (stage 1's, or the plain encoder for SimCSE) and the aux-loss classifier."""
    aux = config.stage2.aux_weight > 0
    if config.method == "simcse":
        model = load_encoder(config.model, config.pooling)
        classifier = PairClassifier(model.get_embedding_dimension(), _num_labels(config)) if aux else None
        return model, classifier
    if not (stage1_dir / "stage1.json").is_file():
        raise HardcseError(f"{stage1_dir} has no finished stage 1: run `hardcse diffaug train --stage 1` first")
    now, then = config_to_dict(config), config_to_dict(load_config(DiffAugConfig, stage1_dir / "config.yaml"))
    changed = [k for k in STAGE1_FIELDS if now[k] != then[k]]
    if changed:
        log.warning("stage 1 in %s was run with other %s; stage 2 uses its prefixes as they are", stage1_dir, changed)
    model = load_encoder(str(stage1_dir))
    classifier = None
    if aux:
        classifier = PairClassifier(model.get_embedding_dimension(), _num_labels(config))
        classifier.load_state_dict(load_file(str(stage1_dir / CLASSIFIER_WEIGHTS)))
    return model, classifier


def run_stage2(config: DiffAugConfig, data: NLIData, stage1_dir: Path, out_dir: Path) -> dict:
    """Joint tuning (or SimCSE); keeps the best checkpoint on STS-B dev in ``out_dir / model``."""
    final = out_dir / FINAL
    tmp = final.with_name(FINAL + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model, classifier = stage2_model(config, stage1_dir)
    eval_length = model.max_seq_length
    model.max_seq_length = config.max_seq_length
    transformer = prefixed(model)
    if transformer is not None and not config.stage2.train_prefixes:
        for p in transformer.prefixes.parameters():
            p.requires_grad_(False)
    dataset = stage2_dataset(config, data)
    n_contrastive = 3 if config.setting == "sup" else 2
    loss = PrefixContrastiveLoss(model, config.temperature, n_contrastive, classifier, config.stage2.aux_weight)
    timer = StepTimer()
    args = SentenceTransformerTrainingArguments(
        **best_checkpoint_arguments(str(tmp / "checkpoints"), config.stage2.eval_steps, DEV_METRIC, config.seed),
        num_train_epochs=config.stage2.epochs,
        max_steps=config.stage2.max_steps,
        per_device_train_batch_size=config.stage2.batch_size,
        learning_rate=config.stage2.learning_rate,
        warmup_ratio=config.stage2.warmup_ratio,
        # Repeated texts in one batch would be false in-batch negatives for the supervised loss.
        batch_sampler=BatchSamplers.NO_DUPLICATES if config.setting == "sup" else BatchSamplers.BATCH_SAMPLER,
    )
    log.info("DiffAug stage 2 (%s, %s): %d rows, %s", config.setting, config.method, len(dataset), config.stage2)
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        loss=loss,
        evaluator=STSEvaluator(load_sts_task(DEV_TASK), max_seq_length=eval_length),
        callbacks=[timer, EvaluateAtEnd()],
    )
    trainer.train()
    history = [e for e in trainer.state.log_history if DEV_METRIC in e]
    best = max(history, key=lambda e: e[DEV_METRIC]) if history else None
    model.max_seq_length = eval_length
    model.save(str(tmp))
    shutil.rmtree(tmp / "checkpoints", ignore_errors=True)
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    record = {
        "method": config.method,
        "setting": config.setting,
        "rows": len(dataset),
        "steps": trainer.state.global_step,
        "best_dev": best[DEV_METRIC] if best else None,
        "best_step": best["step"] if best else None,
        "dev_history": [{"step": e["step"], "sts_dev": e[DEV_METRIC]} for e in history],
        "train_loss": [{"step": e["step"], "loss": e["loss"]} for e in trainer.state.log_history if "loss" in e],
        **timer.summary(),
    }
    write_text_atomic(out_dir / "training.json", json.dumps(record, indent=2))
    return record


def diffaug_train(config: DiffAugConfig, out_dir: str | Path, stages: list[int] | None = None) -> Path:
    """Run ``stages`` (default: the config's; SimCSE: stage 2) into ``out_dir``; returns the final model folder
    (``model/``), or ``stage1/`` when only stage 1 ran."""
    stages = sorted(stages or ([2] if config.method == "simcse" else config.stages))
    validate(config, stages)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    save_config(config, out_dir / "config.yaml")
    torch.manual_seed(config.seed)
    data = nli_data(config)
    stage1_dir = out_dir / STAGE1
    if 1 in stages:
        record = run_stage1(config, data, stage1_dir)
        log.info("stage 1 done: %d steps, prefixes of step %d kept", record["steps_run"], record["selected_step"])
    if 2 in stages:
        run_stage2(config, data, stage1_dir, out_dir)
        return out_dir / FINAL
    if config.stages == [1]:  # prefix-tuning only: stage 1's encoder is the result
        final = out_dir / FINAL
        shutil.rmtree(final, ignore_errors=True)
        shutil.copytree(stage1_dir, final)
        return final
    return stage1_dir
