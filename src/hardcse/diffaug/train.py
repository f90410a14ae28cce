"""DiffAug's two stages on the shared training job (Wang & Lu, EMNLP 2022).

- Stage 1, prefix-tuning (the stage-1 loss): the encoder frozen; the prefixes and a classifier on [u; v; |u - v|] learn
  NLI classification, premise through prefix 1, hypothesis through prefix 2. No dev selection: the prefixes of
  the last step, or of the ``stage1.select`` rule (delta peak, kappa convergence; diagnostics.py), are kept.
- Stage 2, joint tuning (the stage-2 SimCSE loss, + the auxiliary NLI loss): encoder + prefixes, anchor through
  prefix 1, positive (and hard negative) through prefix 2; best checkpoint on STS-B dev (both prefixes), then
  the inference prefix (``inference_prefix``; ``dev`` picks it on STS-B dev).
``method: simcse`` runs stage 2 on the same rows in the same order, with no prefixes (the two views then differ by
dropout alone). The training-only MLP head (``mlp_head``) is stage 1's in stage 2, a fresh one for SimCSE.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch
import yaml
from datasets import Dataset
from safetensors.torch import load_file, save_file
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.training_args import BatchSamplers

from hardcse.atomic import write_json_atomic
from hardcse.config import config_to_dict, save_config
from hardcse.diffaug.config import DiffAugConfig
from hardcse.diffaug.data import NLIData, classification_rows, stage2_dataset
from hardcse.diffaug.diagnostics import Stage1Diagnostics, plot_diagnostics
from hardcse.diffaug.objectives import MLPHead, PairClassifier, PrefixContrastiveLoss, PrefixPairClassificationLoss
from hardcse.diffaug.prefix import add_prefixes, prefixed
from hardcse.distributed import is_main
from hardcse.encoder.build import load_encoder
from hardcse.engines import Engine
from hardcse.errors import HardcseError
from hardcse.evaluation.sts import STSEvaluator, dev_evaluator
from hardcse.resources import resolve_model
from hardcse.seeding import seeded_torch
from hardcse.tracking.run import Tracking
from hardcse.training import TrainingSettings, TrainOutcome, run_training_job

log = logging.getLogger(__name__)
CLASSIFIER_WEIGHTS = "classifier.safetensors"
HEAD_WEIGHTS = "mlp_head.safetensors"
INFERENCE_VIEWS = {"both": None, "first": 0, "second": 1}


def _save_module(module: torch.nn.Module, path: Path) -> None:
    save_file({k: v.detach().contiguous() for k, v in module.state_dict().items()}, str(path))


def _num_labels(config: DiffAugConfig) -> int:
    return 3 if config.stage1.labels == "three_way" else 2


def starting_model(config: DiffAugConfig) -> SentenceTransformer:
    """The encoder stage 1 tunes prefixes for: ``config.encoder`` with fresh prefix modules (one for ``same``)."""
    model = load_encoder(config.encoder, config.pooling, head_seed=config.seed, device=config.training.device)
    num_prefixes = 2 if config.prefixes == "different" else 1
    return add_prefixes(
        model,
        resolve_model(config.encoder),
        config.prefix_length,
        config.prefix_hidden_size,
        num_prefixes,
        config.prefix_dropout,
    )


def stage1_settings(config: DiffAugConfig) -> TrainingSettings:
    """Stage 1's steps, batch and rates as training settings (seed from ``config.seed``; length, device and dtype
    from ``config.training``)."""
    stage1 = config.stage1
    return TrainingSettings(
        max_steps=stage1.steps,
        batch_size=stage1.batch_size,
        learning_rate=stage1.learning_rate,
        warmup_ratio=stage1.warmup_ratio,
        max_seq_length=config.training.max_seq_length,
        eval_steps=stage1.diagnostics_every,  # sets the logging interval; stage 1 has no dev evaluation
        seed=config.seed,
        device=config.training.device,
        dtype=config.training.dtype,
    )


def run_stage1(config: DiffAugConfig, data: NLIData, out_dir: Path, tracking: Tracking | None = None) -> dict:
    """Prefix-tuning with the encoder frozen, into ``out_dir``: the encoder with its prefixes, the classifier,
    ``stage1.json``, ``diagnostics.jsonl`` + ``diagnostics.png`` and the config."""
    # the fresh prefixes and classifier: the same in every run (the Trainer seeds its training itself)
    with seeded_torch(config.seed):
        out_dir.mkdir(parents=True, exist_ok=True)
        model = starting_model(config)
        for p in model.parameters():
            p.requires_grad_(False)
        for p in prefixed(model).prefixes.parameters():
            p.requires_grad_(True)
        premises, hypotheses, labels = classification_rows(data.pairs, config.stage1.labels)
        dataset = Dataset.from_dict({"premise": premises, "hypothesis": hypotheses, "label": labels})
        classifier = PairClassifier(model.get_embedding_dimension(), _num_labels(config))
        head = MLPHead(model.get_embedding_dimension()) if config.mlp_head else None
        diagnostics = Stage1Diagnostics(
            model,
            data.probe,
            config.stage1.diagnostics_every,
            out_dir / "diagnostics.jsonl",
            config.stage1.select,
            config.stage1.kappa_tolerance,
            loss_modules={"classifier": classifier, **({"head": head} if head is not None else {})},
        )
        log.info(
            "DiffAug stage 1: %d NLI pairs (%s), %d steps", len(dataset), config.stage1.labels, config.stage1.steps
        )

    def select_prefixes(trained: SentenceTransformer) -> dict:
        diagnostics.restore_selected()
        return {"selected_step": diagnostics.selected_step}

    outcome = run_training_job(
        model,
        dataset,
        PrefixPairClassificationLoss(model, classifier, head),
        stage1_settings(config),
        out_dir,
        metric=None,
        tracking=tracking,
        callbacks=[diagnostics],
        extra_arguments={
            "learning_rate_mapping": {
                r"^classifier\.": config.stage1.classifier_learning_rate or config.stage1.learning_rate
            }
        },
        before_save=select_prefixes,
    )
    diagnostics.discard_saved_peak()
    steps_run = outcome.record["steps"]
    selected = outcome.record["selected_step"] if outcome.record["selected_step"] is not None else steps_run
    record = {
        "steps_run": steps_run,
        "selected_step": selected,
        "select": config.stage1.select,
        "training_pairs": len(dataset),
        "probe_pairs": len(data.probe[0]),
        "train_loss": outcome.record["train_loss"],
        "steps_timed": outcome.record["steps_timed"],
        "seconds_per_step": outcome.record["seconds_per_step"],
    }
    if is_main():
        _save_module(classifier, out_dir / CLASSIFIER_WEIGHTS)
        if head is not None:
            _save_module(head, out_dir / HEAD_WEIGHTS)
        plot_diagnostics(diagnostics.rows, out_dir / "diagnostics.png", selected)
        write_json_atomic(out_dir / "stage1.json", record)
        data.decontamination.write(out_dir)
        save_config(config, out_dir / "config.yaml")  # a stage-1 folder describes itself (see stage1_from)
    log.info("stage 1 done: %d steps, prefixes of step %d kept", steps_run, selected)
    return record


def stage2_model(
    config: DiffAugConfig, stage1_dir: Path
) -> tuple[SentenceTransformer, PairClassifier | None, MLPHead | None]:
    """The model stage 2 trains (stage 1's, or the plain encoder for SimCSE), the aux-loss classifier and the
    training-only MLP head (stage 1's when it has one, else fresh)."""
    if config.method == "simcse":
        model = load_encoder(config.encoder, config.pooling, head_seed=config.seed, device=config.training.device)
    elif not (stage1_dir / "stage1.json").is_file():
        raise HardcseError(f"{stage1_dir} has no finished stage 1")
    else:
        model = load_encoder(str(stage1_dir), device=config.training.device)
    dim = model.get_embedding_dimension()
    classifier = PairClassifier(dim, _num_labels(config)) if config.stage2.aux_weight > 0 else None
    head = MLPHead(dim) if config.mlp_head else None
    if config.method == "diffaug":
        for module, name in ((classifier, CLASSIFIER_WEIGHTS), (head, HEAD_WEIGHTS)):
            if module is not None and (stage1_dir / name).is_file():
                module.load_state_dict(load_file(str(stage1_dir / name)))
    return model, classifier, head


def choose_inference_prefix(config: DiffAugConfig, model: SentenceTransformer, evaluator: STSEvaluator) -> dict:
    """Set the prefix(es) the trained model encodes with: ``inference_prefix``, or for ``dev`` the best of both /
    first / second on STS-B dev (training's ``evaluator``); returns what was chosen and why."""
    transformer = prefixed(model)
    if transformer is None:
        return {}
    if config.inference_prefix != "dev":
        transformer.inference_view = INFERENCE_VIEWS[config.inference_prefix]
        return {"inference_prefix": config.inference_prefix}
    scores = {}
    for name, view in INFERENCE_VIEWS.items():
        transformer.inference_view = view
        scores[name] = next(iter(evaluator(model).values()))
    best = max(scores, key=scores.__getitem__)
    transformer.inference_view = INFERENCE_VIEWS[best]
    log.info("inference prefix on STS-B dev: %s (%s)", best, ", ".join(f"{k} {v:.2f}" for k, v in scores.items()))
    return {"inference_prefix": best, "inference_prefix_dev": scores}


def run_stage2(
    config: DiffAugConfig,
    data: NLIData,
    stage1_dir: Path,
    out_dir: Path,
    engine: Engine,
    tracking: Tracking | None = None,
) -> TrainOutcome:
    """Joint tuning (or SimCSE); keeps the best checkpoint on STS-B dev (encoded in ``engine``) in ``out_dir`` with
    ``training.json``."""
    with seeded_torch(config.seed):  # the fresh parts of the model: the same in every run
        model, classifier, head = stage2_model(config, stage1_dir)
        transformer = prefixed(model)
        if transformer is not None and not config.stage2.train_prefixes:
            for p in transformer.prefixes.parameters():
                p.requires_grad_(False)
        if not config.stage2.train_encoder:  # the prefix-only ablation: the encoder's own weights stay as they are
            for p in model[0].model.parameters():
                p.requires_grad_(False)
        dataset = stage2_dataset(config, data)
        n_contrastive = 3 if config.setting == "sup" else 2
        loss = PrefixContrastiveLoss(model, config.tau, n_contrastive, classifier, config.stage2.aux_weight, head)
        log.info("DiffAug stage 2 (%s, %s): %d rows, %s", config.setting, config.method, len(dataset), config.training)
        evaluator = dev_evaluator(model.max_seq_length, engine)
    outcome = run_training_job(
        model,
        dataset,
        loss,
        config.training,
        out_dir,
        evaluator=evaluator,
        # Repeated texts in one batch would be false in-batch negatives for the supervised loss.
        batch_sampler=BatchSamplers.NO_DUPLICATES if config.setting == "sup" else BatchSamplers.BATCH_SAMPLER,
        before_save=lambda trained: choose_inference_prefix(config, trained, evaluator),
        record={"method": config.method, "setting": config.setting},
        tracking=tracking,
    )
    if is_main():
        data.decontamination.write(out_dir)
    return outcome


# The values that shape stage 1's output: a stage 1 reused through ``stage1_from`` must match them.
STAGE1_FIELDS = (
    *("encoder", "pooling", "prefixes", "prefix_length", "prefix_hidden_size", "prefix_dropout", "mlp_head"),
    *("nli_files", "nli_fraction", "decontamination", "stage1"),
)
STAGE1_TRAINING_FIELDS = ("seed", "max_seq_length", "dtype")


def stage1_folder(config: DiffAugConfig) -> Path:
    """The finished stage 1 that ``stage1_from`` names (a run folder or its stage1/), checked to match the
    config in every value that shapes stage 1."""
    source = Path(config.stage1_from)
    folder = source / "stage1" if (source / "stage1" / "stage1.json").is_file() else source
    if not (folder / "stage1.json").is_file():
        raise HardcseError(f"stage1_from: {source} holds no finished stage 1 (no stage1.json)")
    saved = yaml.safe_load((folder / "config.yaml").read_text(encoding="utf-8"))
    now = json.loads(json.dumps(config_to_dict(config)))  # lists and tuples as YAML gives them
    # a stage 1 saved before decontamination existed ran without it
    saved.setdefault("decontamination", {**now["decontamination"], "enabled": False})
    saved["training"].setdefault("dtype", "float32")  # a stage 1 saved before training.dtype existed: float32
    if not now["decontamination"]["enabled"] and not saved["decontamination"]["enabled"]:
        saved["decontamination"] = now["decontamination"]  # off is off, whatever the other values
    changed = [k for k in STAGE1_FIELDS if now[k] != saved.get(k)]
    changed += [f"training.{k}" for k in STAGE1_TRAINING_FIELDS if now["training"][k] != saved["training"].get(k)]
    if changed:
        raise HardcseError(f"stage1_from: {folder} was trained with other {', '.join(changed)}; use matching values")
    return folder
