"""What the warm-start benchmarks share (warm_start.py, warm_assay.py, warm_rl.py, judge_agreement.py): the NLI
models each trains once in its work folder, the warm-started generator, cpu-full's synthesis settings with LoRA on
all seven projections, the graders, and what a warm start's record says."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

NLI_SEEDS = {"discriminator": 42, "judge": 7}
ALL_PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def nli_model(share: str, out: Path, whole_share: bool = False) -> Path:
    """An NLI model trained on ``share``'s pairs, in ``out`` (copied from the cache if kept): the quickstart's
    discriminator training (8,000 pairs, one epoch), or with ``whole_share`` configs/nli-judge.yaml's (every pair
    of the share, two epochs), in bfloat16 where the CPU computes it natively."""
    from hardcse.art.config import ArtRunConfig
    from hardcse.config import load_config
    from hardcse.discriminator.kept import train_or_copy
    from hardcse.discriminator.train import NLITrainConfig

    if (out / "training.json").is_file():
        return out
    if whole_share:
        training = load_config(NLITrainConfig, "nli-judge")
        training = dataclasses.replace(training, training=dataclasses.replace(training.training, dtype="auto"))
    else:
        training = load_config(ArtRunConfig, "quickstart").discriminator_training
    training = dataclasses.replace(
        training, share=share, training=dataclasses.replace(training.training, seed=NLI_SEEDS[share])
    )
    partial = out.with_name(out.name + ".partial")
    train_or_copy(training, partial)
    partial.rename(out)
    return out


def synthesis_settings(config, seed: int):
    """cpu-full's generator as its synthesis samples (the synthesis temperature), with sampling seed ``seed`` and
    LoRA on all seven projections (what the warm start trains)."""
    return dataclasses.replace(
        config.generator,
        seed=seed,
        sampling_temperature=config.synthesis_temperature or config.generator.sampling_temperature,
        lora_target_modules=ALL_PROJECTIONS,
    )


def warm_generator(config, generation, steps: int, out: Path, name: str = "warm_start", **settings) -> Path:
    """The warm-started generator of ``config.warm_start`` at ``steps`` steps (and these other ``settings``) with
    ``generation``'s prompts, in ``out/NAME`` (from the cache where these inputs trained one before)."""
    from hardcse.art.rl.warm_start import warm_started

    warm_dir = out / name
    if not warm_dir.is_dir():
        warm_config = dataclasses.replace(config.warm_start, steps=steps, **settings)
        warm_started(warm_config, generation, config.decontamination, out / f"{name}.partial")
        (out / f"{name}.partial").rename(warm_dir)
    return warm_dir


RECORD_KEYS = ("config", "pairs", "loss_first", "loss_last", "seconds")


def record_of(warm_dir: Path, keys: tuple[str, ...] = RECORD_KEYS) -> dict:
    """What a warm start's record (warm_start.json) says of its training: ``keys`` of it."""
    from hardcse.art.rl.warm_start import read_record

    record = read_record(warm_dir)
    return {k: record[k] for k in keys}


def graders(config, discriminator_dir: Path, judge_dir: Path, engine):
    """The reward's discriminator, the judge, the starting encoder and the reward they make, as ``config`` places
    them."""
    from hardcse.art.reward.dual import Reward
    from hardcse.discriminator.nli import NLIDiscriminator, load_discriminator
    from hardcse.encoder.build import load_encoder

    discriminator = load_discriminator(str(discriminator_dir), config.device)
    judge = NLIDiscriminator.load(str(judge_dir), device=config.device)
    encoder = load_encoder(config.encoder, config.pooling, device=config.device)
    return discriminator, judge, encoder, Reward(discriminator, encoder, config.reward, engine)


def nli_accuracy(model, path: Path) -> dict:
    """The model's accuracy and per-class F1 on the held-out NLI sets (SNLI test, MNLI dev, SICK test), kept in
    ``path``."""
    from hardcse.atomic import write_json_atomic
    from hardcse.discriminator.nli import evaluate_nli

    if not path.is_file():
        write_json_atomic(path, evaluate_nli(model))
    return json.loads(path.read_text())


def false_negatives(records: list[dict], judge) -> dict:
    """Kept negatives the judge labels entailment: paraphrases the encoder would be trained to push away."""
    from hardcse.data.nli import LABEL_ID

    kept = [r for r in records if r["drop_reason"] is None]
    if not kept:
        return {"kept": 0, "entailed": None}
    probs = judge.predict_proba([r["anchor"] for r in kept], [r["negative"] for r in kept])
    entailed = int((np.argmax(probs, axis=1) == LABEL_ID["entailment"]).sum())
    return {"kept": len(kept), "entailed": entailed, "share": entailed / len(kept)}
