"""A tuned generator kept once per machine for the inputs it depends on (opt-in, ``reuse: true``).

RL is the costly stage of ART. Two runs whose round tunes the same generator with the same reward, RL settings,
encoder, discriminator, anchors and code (cpu-full and its ablation without the filter share their whole first
round) need it once: the first writes its tuned generator to ``<cache>/tuned/KEY/steps-N-ANCHORS/`` and the second
copies it from there. The copy has the same files, so the generation cache (hardcse/art/generator/texts.py) then
finds the texts it wrote too. KEY digests the tuning config (not the filter, which RL does not read, nor
``rl.steps``), the files of the generator, encoder and discriminator, the reward terms' source, the bytes of
hardcse's own code, and the torch version and bfloat16 support that decide its arithmetic; ``steps-N-ANCHORS``
names the number of steps and a digest of the anchors those steps read.

A longer tuning of the same KEY starts from a kept shorter one when its first steps read the same anchors: RL has
no schedule over ``rl.steps`` (constant learning rate, per-step seeds, the KL controller's state in the checkpoint),
so steps 1..N of a 75-step tuning are the same experiment as a 25-step tuning (cpu-full's first round and the
one-round ablation's first 25 of 75 steps). It continues from the kept checkpoint as a resumed run does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import re
import shutil
from pathlib import Path

import torch

import hardcse
from hardcse.art.anchors import anchors_for_step
from hardcse.art.config import TuneConfig
from hardcse.art.generator.model import GENERATOR_FILE, source_digest
from hardcse.art.plots import COMPLETIONS, RL_LOG
from hardcse.atomic import replace_dir
from hardcse.devices import resolve_device, supports_bfloat16
from hardcse.fingerprint import files_digest
from hardcse.paths import cache_dir
from hardcse.resources import resolve_model

CACHE_FORMAT = 2  # bump when what a cached tuned generator holds changes
NOT_READ_BY_RL = ("filter", "decontamination", "anchors", "encoder", "discriminator", "reuse")  # or keyed by files
ENTRY = re.compile(r"steps-(\d+)-[0-9a-f]+")


def tuned_cache_dir(config: TuneConfig, train_anchors: list[str]) -> Path:
    """``<cache>/tuned/KEY/steps-N-ANCHORS``: where a tuned generator of these inputs is kept (module doc)."""
    return _entry(_family(config), config, train_anchors, config.rl.steps)


def kept_prefix(entry: Path, config: TuneConfig, train_anchors: list[str]) -> tuple[Path, int] | None:
    """The longest kept tuning beside ``entry`` (this tuning's :func:`tuned_cache_dir`: the same inputs) with fewer
    steps than ``rl.steps`` whose steps read the anchors this tuning's first steps read, and its number of steps;
    None when there is none."""
    family = entry.parent
    counts = (int(m.group(1)) for p in family.glob("steps-*") if (m := ENTRY.fullmatch(p.name)))
    for steps in sorted((n for n in counts if n < config.rl.steps), reverse=True):
        entry = _entry(family, config, train_anchors, steps)
        if is_cached(entry):
            return entry, steps
    return None


def _family(config: TuneConfig) -> Path:
    device = resolve_device(config.generator.device, "generator.device")
    header = f"format {CACHE_FORMAT}\0torch {torch.__version__}\0bfloat16 {supports_bfloat16(device)}\0"
    digest = hashlib.sha256(header.encode())
    for path in sorted(Path(hardcse.__file__).parent.rglob("*.py")):  # any change to the code is a new key
        digest.update(path.read_bytes())
    settings = dataclasses.asdict(config)
    for key in NOT_READ_BY_RL:
        settings.pop(key)
    settings["rl"].pop("steps")  # in the entry's name: a shorter tuning is a prefix of a longer one
    settings["generator"]["model"] = None  # its files below: a copied generator folder is the same generator
    digest.update(json.dumps(settings, sort_keys=True).encode())
    source_digest(config.generator.model, digest)
    files_digest(resolve_model(config.encoder), digest)
    files_digest(resolve_model(config.discriminator), digest)
    for term in config.reward.terms:
        digest.update(_source(term.fn).encode())
    return cache_dir() / "tuned" / digest.hexdigest()[:32]


def _entry(family: Path, config: TuneConfig, train_anchors: list[str], steps: int) -> Path:
    """The folder of a ``steps``-step tuning that reads ``train_anchors`` as tuning.py's steps do."""
    read = [anchors_for_step(train_anchors, t, config.rl.anchors_per_step) for t in range(1, steps + 1)]
    return family / f"steps-{steps}-{hashlib.sha256(json.dumps(read).encode()).hexdigest()[:16]}"


def _source(spec: str) -> str:
    """The text a reward term's code is, as far as it can be read (a file's bytes, a module's source)."""
    where = spec.rpartition(":")[0]
    if where.endswith(".py"):
        return Path(where).read_text(encoding="utf-8")
    try:
        import importlib

        return inspect.getsource(importlib.import_module(where))
    except (OSError, TypeError, ImportError):
        return spec


def is_cached(folder: Path) -> bool:
    return (folder / GENERATOR_FILE).is_file()


def copy_generator(source: Path, target: Path) -> None:
    """``target`` becomes a copy of the generator folder ``source``, atomically (a kill leaves the old or the new)."""
    partial = target.with_name(target.name + ".partial")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(source, partial)
    replace_dir(partial, target)


def start_from(kept: Path, checkpoint: Path, work_dir: Path) -> None:
    """A work folder that continues from the kept tuning ``kept``: its state becomes ``checkpoint`` and its RL log
    and completions the work folder's (the tuned generator folder holds all of them, tuning.py's ``_finish``)."""
    for name in (RL_LOG, COMPLETIONS):
        if (kept / name).is_file():
            shutil.copy2(kept / name, work_dir / name)
    copy_generator(kept, checkpoint)
