"""A supervised warm start of the generator's LoRA adapter before RL (an option beside the paper, which tunes the
raw instruction model; ``warm_start`` in the config: hardcse/art/warm_start_config.py).

The paper's 7B generator already writes a correct positive or negative 82% of the time; the bundled 135M model
mostly does not do the task yet, so RL from it learns format and shortcuts. The warm start teaches the task first
from NLI training pairs, as the answers the prompts ask for::

    positive prompt (premise)  ->  a hypothesis the premise entails
    negative prompt (premise)  ->  a hypothesis the premise contradicts

with the cross-entropy of the answer's tokens only (the prompt's are masked: TRL's ``SFTTrainer`` with
``completion_only_loss``). The prompts are the run's own (``generator``: its system prompt, its demonstrations),
so RL and synthesis meet the adapter on the inputs it learned from. The result is a generator folder: RL tunes on
from it and the run's raw baseline is it, untuned, so a held-out comparison measures RL's own effect.

A warm start is kept once per machine for its inputs in ``<cache>/warm_start/KEY`` (as a discriminator trained in a
run is: hardcse/discriminator/kept.py) and copied into each run that asks for it. KEY digests the warm start's
settings, the generator settings that decide its prompts and its adapter, the base model's files, the examples as
read, and (:func:`hardcse.cache.environment_digest`) hardcse's code, the libraries and the machine.

The pairs are training splits only (no SICK: its sentences overlap SICK-R's test set). A pair is left out when a
text of it is in an NLI dev or evaluation file (the discriminator's and the judge's dev data, SNLI test, MNLI dev),
matches an STS evaluation text (``decontamination``), its answer has fewer than ``min_words`` or more than
``max_words`` words, (``drop_shortcuts``) it teaches a shortcut, or (``KIND_min_cover``) too few of its answer's
content words are its premise's: a contradiction about something else, an entailment that adds what the premise
does not say. The pairs are drawn in a seeded order, positive and negative alternating, each read once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import torch

from hardcse.art.config import GeneratorConfig, TuneConfig
from hardcse.art.generator.model import (
    base_model_source,
    is_generator_folder,
    load_generator,
    save_generator,
    source_digest,
)
from hardcse.art.generator.prompts import Kind, render_prompts
from hardcse.art.reward.shortcuts import added_negations, anchor_cover, is_deletion
from hardcse.art.warm_start_config import WarmStartConfig
from hardcse.atomic import write_json_atomic
from hardcse.cache import EntryDescription, environment_digest, publish_dir
from hardcse.data.decontamination import Decontamination, DecontaminationConfig, normalise
from hardcse.data.nli import DEV_FILES, EVAL_FILES, LABEL_ID, read_nli_files
from hardcse.devices import resolve_device
from hardcse.distributed import world_size
from hardcse.errors import HardcseError
from hardcse.paths import cache_dir
from hardcse.progress import shown
from hardcse.seeding import callers_random_state, seeded_torch

if TYPE_CHECKING:
    from hardcse.run_folder import RunFolder

log = logging.getLogger(__name__)

CACHE_FORMAT = 1  # bump when what a kept warm start holds changes
RECORD = "warm_start.json"  # beside the adapter: what the warm start read and how its loss went
KIND_OF_LABEL = {LABEL_ID["entailment"]: "positive", LABEL_ID["contradiction"]: "negative"}


class Example(NamedTuple):
    """One pair as the generator learns it: the anchor (premise), the kind of prompt, the answer (hypothesis)."""

    anchor: str
    kind: Kind
    answer: str


def held_apart_texts() -> set[str]:
    """The normalised texts of every NLI dev and evaluation file: no warm-start pair may contain one."""
    pairs = read_nli_files([*DEV_FILES, *EVAL_FILES.values()])
    return {normalise(t) for t in pairs.premises + pairs.hypotheses}


def takes_shortcut(premise: str, kind: Kind, hypothesis: str) -> bool:
    """True for a pair that teaches a shortcut: a positive that deletes words of its premise, a negative that adds
    a negation word to it."""
    return is_deletion(premise, hypothesis) if kind == "positive" else bool(added_negations(premise, hypothesis))


def warm_start_examples(config: WarmStartConfig, decontamination: DecontaminationConfig) -> tuple[list[Example], dict]:
    """The ``config.pairs`` examples the warm start reads, in order, and the counts of what was left out and why."""
    pairs = read_nli_files(config.files).share(config.share)
    apart = held_apart_texts()
    reasons = ("neutral", "length", "shortcut", "positive_cover", "negative_cover", "dev_or_eval_text", "duplicate")
    counts = {"read": len(pairs)} | dict.fromkeys(reasons, 0)
    by_kind: dict[str, list[Example]] = {"positive": [], "negative": []}
    seen: set[tuple[str, str, str]] = set()
    for premise, hypothesis, label in zip(pairs.premises, pairs.hypotheses, pairs.labels, strict=True):
        if label not in KIND_OF_LABEL:
            counts["neutral"] += 1
        elif not config.min_words <= len(hypothesis.split()) <= config.max_words:
            counts["length"] += 1
        elif config.drop_shortcuts and takes_shortcut(premise, KIND_OF_LABEL[label], hypothesis):
            counts["shortcut"] += 1
        elif anchor_cover(premise, hypothesis) < getattr(config, f"{KIND_OF_LABEL[label]}_min_cover"):
            counts[f"{KIND_OF_LABEL[label]}_cover"] += 1
        elif normalise(premise) in apart or normalise(hypothesis) in apart:
            counts["dev_or_eval_text"] += 1
        elif (key := (normalise(premise), KIND_OF_LABEL[label], normalise(hypothesis))) in seen:
            counts["duplicate"] += 1
        else:
            seen.add(key)
            by_kind[KIND_OF_LABEL[label]].append(Example(premise.strip(), KIND_OF_LABEL[label], hypothesis.strip()))
    check = Decontamination(decontamination)
    for kind, examples in by_kind.items():
        kept = check.filter(f"warm_start {kind}", examples, lambda e: [("anchor", e.anchor), ("answer", e.answer)])
        random.Random(f"{config.seed}\0{kind}").shuffle(kept)  # a seeded order of its own per kind
        by_kind[kind] = kept
    counts["decontaminated"] = sum(c["dropped"] for c in check.summary()["sources"].values())
    half = config.pairs // 2
    short = [kind for kind, examples in by_kind.items() if len(examples) < half]
    if short:
        raise HardcseError(
            f"warm_start: {config.steps} steps of {config.batch_size} pairs need {half} {short[0]} pairs but the "
            f"files give {len(by_kind[short[0]])}; lower warm_start.steps or warm_start.{short[0]}_min_cover, or add "
            "warm_start.files"
        )
    examples = [e for pair in zip(by_kind["positive"][:half], by_kind["negative"][:half], strict=True) for e in pair]
    counts |= {"available": {k: len(v) for k, v in by_kind.items()}, "used": len(examples)}
    return examples, counts


def train_warm_start(
    config: WarmStartConfig,
    generation: GeneratorConfig,
    decontamination: DecontaminationConfig,
    out: Path,
    selected: tuple[list[Example], dict] | None = None,
) -> Path:
    """Train a new LoRA adapter on ``generation.model`` (a raw LM) into the generator folder ``out``, with
    :data:`RECORD` beside it; returns ``out``. ``selected``: :func:`warm_start_examples`' answer, if read already."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    examples, counts = selected or warm_start_examples(config, decontamination)
    with seeded_torch(config.seed):  # the new adapter's initial weights (the Trainer seeds the rest)
        model, tokenizer = load_generator(
            generation.model, dataclasses.replace(generation, dtype=config.dtype), trainable=True
        )
    model.get_base_model().set_attn_implementation("eager")  # faster than SDPA at these shapes on a CPU (above)
    prompts = render_prompts(tokenizer, [e.anchor for e in examples], [e.kind for e in examples], generation)
    data = Dataset.from_dict({"prompt": prompts, "completion": [e.answer for e in examples]})
    work = tempfile.TemporaryDirectory(prefix="hardcse-warm-start-")  # the Trainer's output folder; nothing kept
    bfloat16 = model.get_base_model().dtype == torch.bfloat16
    args = SFTConfig(
        bf16=bfloat16,  # TRL's default is bfloat16 autocast: emulated, and slow, on a CPU without AVX512-BF16
        fp16=False,
        output_dir=work.name,
        max_steps=config.steps,
        per_device_train_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        lr_scheduler_type="linear",
        completion_only_loss=True,  # the answer's tokens only; TRL appends the EOS the answer ends with
        gradient_checkpointing=False,  # TRL's default on; the 135M model needs no memory saving
        seed=config.seed,
        data_seed=config.seed,
        use_cpu=model.device.type == "cpu",
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=not shown(),
        dataloader_num_workers=0,
    )
    start = time.perf_counter()
    with work, callers_random_state():
        trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
        trainer.train()
    seconds = time.perf_counter() - start
    model.get_base_model().set_attn_implementation("sdpa")
    losses = [row["loss"] for row in trainer.state.log_history if "loss" in row]
    save_generator(model, base_model_source(generation.model), out)
    record = {
        "config": dataclasses.asdict(config),
        "pairs": counts,
        "steps": config.steps,
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
        "loss": losses,
        "seconds": round(seconds, 1),
        "seconds_per_step": round(seconds / config.steps, 2),
        "decontamination": dataclasses.asdict(decontamination),
    }
    write_json_atomic(out / RECORD, record)
    log.info("warm start: %d steps in %.0f s, loss %.3f -> %.3f", config.steps, seconds, losses[0], losses[-1])
    return out


def read_record(folder: Path) -> dict:
    return json.loads((folder / RECORD).read_text(encoding="utf-8"))


# the generator settings that decide what the warm start trains: its prompts (and the demonstrations they draw) and
# its adapter; sampling settings do not enter
PROMPT_AND_ADAPTER = (
    "positive_prompt",
    "negative_prompt",
    "system_prompt",
    "few_shot",
    "demonstrations",
    "seed",
    "lora_r",
    "lora_alpha",
    "lora_dropout",
    "lora_target_modules",
    "device",
)


def check_warm_start(config: TuneConfig) -> None:
    """With ``warm_start`` on, what can fail before any model loads: a tuned folder as ``generator.model``, too few
    pairs in the files."""
    if not config.warm_start.enabled:
        return
    if is_generator_folder(config.generator.model):
        raise HardcseError(
            f"warm_start: generator.model {config.generator.model} is a tuned generator folder; a warm start trains "
            "a new adapter on a raw model (give its base model, or warm_start.steps: 0)"
        )
    warm_start_examples(config.warm_start, config.decontamination)
    for role in ("discriminator", "judge"):  # an ArtRunConfig's models trained in the run
        training = getattr(config, f"{role}_training", None)
        if getattr(config, role, None) == "train" and training is not None and training.share is None:
            log.warning(
                "warm_start: the run's %s trains on every NLI pair, the warm start's included; set "
                "%s_training.share: %s for one that never saw them",
                *(role,) * 3,
            )


def warm_start_stage(folder: RunFolder, config: TuneConfig) -> TuneConfig:
    """With ``warm_start`` on, the ``warm_start`` stage (the warm-started generator, copied from the cache or
    trained: hardcse/art/rl/warm_start.py) and ``config`` with it as ``generator.model``: RL tunes on from it, it is
    the raw baseline, and with ``rl.reference: auto`` the KL's reference. Otherwise ``config`` as it is."""
    if not config.warm_start.enabled:
        return config
    warm = folder.stage(
        "warm_start",
        "warm_start",
        lambda partial: warm_started(config.warm_start, config.generator, config.decontamination, partial),
    )
    generator = dataclasses.replace(config.generator, model=str(warm))
    reference = str(warm) if config.rl.reference == "auto" else config.rl.reference  # RL's KL keeps near it
    return dataclasses.replace(config, generator=generator, rl=dataclasses.replace(config.rl, reference=reference))


def is_kept(path: Path) -> bool:
    return (path / RECORD).is_file() and is_generator_folder(str(path))


def warm_start_entry(
    config: WarmStartConfig, generation: GeneratorConfig, decontamination: DecontaminationConfig
) -> tuple[Path, dict, tuple[list[Example], dict]]:
    """``<cache>/warm_start/KEY`` for these inputs (module doc), the environment part of KEY and the examples it
    digests (:func:`warm_start_examples`' answer)."""
    import trl

    selected = warm_start_examples(config, decontamination)
    examples = selected[0]
    device = resolve_device(generation.device, "generator.device")
    # TRL is not among the computing libraries every key names (hardcse/machine.py): its SFT decides the weights here
    digest = hashlib.sha256(f"format {CACHE_FORMAT}\0trl {trl.__version__}\0".encode())
    found = environment_digest(digest, device)
    settings = {
        "warm_start": dataclasses.asdict(config) | {"files": None},  # the examples below stand for the files
        "generator": {key: getattr(generation, key) for key in PROMPT_AND_ADAPTER},
        "decontamination": dataclasses.asdict(decontamination),
    }
    digest.update(json.dumps(settings, sort_keys=True).encode())
    digest.update(json.dumps([list(e) for e in examples]).encode())
    source_digest(generation.model, digest)
    return cache_dir() / "warm_start" / digest.hexdigest()[:32], found, selected


def warm_started(
    config: WarmStartConfig, generation: GeneratorConfig, decontamination: DecontaminationConfig, out: Path
) -> Path:
    """The warm start of ``generation.model`` (a raw LM) copied into the generator folder ``out``: trained once per
    machine for its inputs and kept in ``<cache>/warm_start/KEY`` (module doc); returns ``out``."""
    target, found, selected = warm_start_entry(config, generation, decontamination)
    if world_size() > 1 and not is_kept(target):  # the Trainer would wrap the model for the ranks that wait
        raise HardcseError(
            "warm_start: not trained on this machine yet, and a warm start trains in one process: run the same "
            "config once in one process (hardcse art tune, rl.steps=1), then again under several (it is copied)"
        )
    what = f"{generation.model}, {config.steps} steps of {config.batch_size} NLI pairs"
    publish_dir(
        target,
        lambda tmp: train_warm_start(config, generation, decontamination, tmp, selected),
        is_kept,
        EntryDescription("warm_start", what, found),
    )
    shutil.copytree(target, out, dirs_exist_ok=True)
    return out
