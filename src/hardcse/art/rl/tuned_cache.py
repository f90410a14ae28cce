"""A tuned generator kept once per machine for the inputs it depends on (opt-in, ``reuse: true``).

RL is the costly stage of ART. Two runs whose round tunes the same generator with the same reward, RL settings,
encoder, discriminator, anchors and code (cpu-full and its ablation without the filter share their whole first
round) need it once: the first writes its tuned generator to ``<cache>/tuned/KEY/steps-N-ANCHORS/`` and the second
copies it from there. The copy has the same files, so the generation cache (hardcse/art/generator/texts.py) then
finds the texts it wrote too. KEY digests the tuning config (not the filter, which RL does not read, nor
``rl.steps``; ``rl.rollout_engine`` as resolved: auto shares the entries of what it resolves to), the files of the
generator, encoder and discriminator, the reward terms' code (with the user's modules they import), the number of
processes (each rank samples its own rows), the engine and precision of the reward's cosines, and through
:func:`hardcse.cache.environment_digest` hardcse's own code, the libraries' versions and the machine's kind where RL
and the reward compute; ``steps-N-ANCHORS`` names the number of steps and a digest of the anchors those steps read.

A longer tuning of the same KEY starts from a kept shorter one when its first steps read the same anchors: RL has
no schedule over ``rl.steps`` (constant learning rate, per-step seeds, the KL controller's state in the checkpoint),
so steps 1..N of a 75-step tuning are the same experiment as a 25-step tuning (cpu-full's first round and the
one-round ablation's first 25 of 75 steps). It continues from the kept checkpoint as a resumed run does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import shutil
from pathlib import Path

from hardcse.art.config import TuneConfig
from hardcse.art.generator.model import GENERATOR_FILE, source_digest
from hardcse.art.reward.term_loading import term_code_digest
from hardcse.art.rl.loop import saved_state_exists
from hardcse.art.rl.rl_log import COMPLETIONS, RL_LOG, RLLog
from hardcse.art.rl.rollouts import resolve_rollout_engine
from hardcse.art.synthesis.anchors import anchors_for_step
from hardcse.atomic import recover_dir, replace_dir
from hardcse.cache import EntryDescription, environment_digest, lease, publish_dir
from hardcse.devices import resolve_device, supports_bfloat16
from hardcse.distributed import run_on_main, world_size
from hardcse.engines import Engine
from hardcse.errors import HardcseError
from hardcse.fingerprint import files_digest
from hardcse.machine import machine_kind
from hardcse.paths import cache_dir
from hardcse.resources import resolve_model

log = logging.getLogger(__name__)

CACHE_FORMAT = 2  # bump when what a cached tuned generator holds changes
# settings RL does not read (or that are keyed by their files: a warm start is generator.model's); report_to: how
# the run is watched
NOT_READ_BY_RL = (
    "filter",
    "decontamination",
    "anchors",
    "encoder",
    "discriminator",
    "reuse",
    "report_to",
    "warm_start",
)
ENTRY = re.compile(r"steps-(\d+)-[0-9a-f]+")


class TunedEntry(type(Path())):  # type(Path()): a concrete path class can be subclassed on Python 3.11 too
    """A path that carries the description of the tuned generator kept there, for :func:`keep_generator` to write
    beside it (tuning.py hands it the path :func:`tuned_cache_dir` returned, and nothing else)."""

    described: EntryDescription | None = None


def tuned_cache_dir(config: TuneConfig, train_anchors: list[str], engine: Engine) -> Path:
    """``<cache>/tuned/KEY/steps-N-ANCHORS``: where a tuned generator of these inputs is kept (module doc), the
    reward's cosines computed in ``engine``."""
    family, found = _keyed_family(config, engine)
    entry = TunedEntry(_entry(family, config, train_anchors, config.rl.steps))
    what = f"{config.generator.model}, {config.rl.algorithm} {config.rl.steps} steps"
    entry.described = EntryDescription("tuned", what, found)
    return entry


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


def _family(config: TuneConfig, engine: Engine) -> Path:
    """``<cache>/tuned/KEY``: the folder of the tunings of these inputs, however many steps."""
    return _keyed_family(config, engine)[0]


def _keyed_family(config: TuneConfig, engine: Engine) -> tuple[Path, dict]:
    """:func:`_family` and the environment part of KEY."""
    device = resolve_device(config.generator.device, "generator.device")
    scoring = resolve_device(config.device, "device")  # where the reward's encoder and discriminator score
    used = engine.on(scoring)  # the reward's cosines: PyTorch or OpenVINO, at a precision
    precision = engine.precision if used == "openvino" else "-"
    header = (
        f"format {CACHE_FORMAT}\0bfloat16 {supports_bfloat16(device)}\0scoring {scoring.type} {machine_kind(scoring)}"
        f"\0engine {used} {precision}\0world size {world_size()}\0"  # rank r samples with seed + r * 1_000_003
    )
    digest = hashlib.sha256(header.encode())
    found = environment_digest(digest, device)  # hardcse's code, the libraries' versions, the generator's machine
    settings = dataclasses.asdict(config)
    for key in NOT_READ_BY_RL:
        settings.pop(key)
    settings["rl"].pop("steps")  # in the entry's name: a shorter tuning is a prefix of a longer one
    settings["generator"]["model"] = None  # its files below: a copied generator folder is the same generator
    reference = config.rl.reference  # base (auto outside a warm-started run is base), or a folder: its files below
    settings["rl"]["reference"] = "base" if reference in ("base", "auto") else "folder"
    # who samples, not the word chosen: auto is torch or openvino by the engine and the machine
    settings["rl"]["rollout_engine"] = resolve_rollout_engine(config.rl.rollout_engine, config.generator, engine)
    digest.update(json.dumps(settings, sort_keys=True).encode())
    source_digest(config.generator.model, digest)
    if reference not in ("base", "auto"):
        files_digest(Path(reference), digest)
    files_digest(resolve_model(config.encoder), digest)
    files_digest(resolve_model(config.discriminator), digest)
    for term in config.reward.terms:
        term_code_digest(term.fn, digest)
    return cache_dir() / "tuned" / digest.hexdigest()[:32], found


def _entry(family: Path, config: TuneConfig, train_anchors: list[str], steps: int) -> Path:
    """The folder of a ``steps``-step tuning that reads ``train_anchors`` as tuning.py's steps do."""
    read = [anchors_for_step(train_anchors, t, config.rl.anchors_per_step) for t in range(1, steps + 1)]
    return family / f"steps-{steps}-{hashlib.sha256(json.dumps(read).encode()).hexdigest()[:16]}"


def is_cached(folder: Path) -> bool:
    return (folder / GENERATOR_FILE).is_file()


def keep_generator(source: Path, entry: Path) -> None:
    """Keep the tuned generator folder ``source`` as the cache entry ``entry``, once (an entry another process
    finished first stays as it is: hardcse/cache.py), described as :func:`tuned_cache_dir` found it."""
    described = getattr(entry, "described", None)
    publish_dir(entry, lambda tmp: shutil.copytree(source, tmp, dirs_exist_ok=True), is_cached, described)


def copy_generator(source: Path, target: Path) -> None:
    """``target`` becomes a copy of the kept generator ``source`` (a cache entry, leased to this process first:
    hardcse/cache.py), atomically (a kill leaves the old or the new)."""
    if not lease(source, is_cached):  # found a moment ago: a prune removed it since
        raise HardcseError(f"{source}: the kept tuned generator was pruned just before this run copied it; run again")
    partial = target.with_name(target.name + ".partial")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(source, partial)
    replace_dir(partial, target)


def start_from(kept: Path, checkpoint: Path, work_dir: Path) -> None:
    """A work folder that continues from the kept tuning ``kept``: its state becomes ``checkpoint`` and its RL log
    and completions the work folder's (the tuned generator folder holds all of them: ``RLLog.finish``)."""
    for name in (RL_LOG, COMPLETIONS):
        if (kept / name).is_file():
            shutil.copy2(kept / name, work_dir / name)
    copy_generator(kept, checkpoint)


def continue_tuning(
    entry: Path | None, config: TuneConfig, train_anchors: list[str], work_dir: Path, rl_log: RLLog
) -> bool:
    """Whether the tuning in ``work_dir`` continues from a checkpoint there: a killed run's, or (with a cache
    ``entry``) a kept shorter tuning of the same inputs, which becomes the work folder's checkpoint and log here."""
    checkpoint = work_dir / "checkpoint"
    run_on_main(lambda: recover_dir(checkpoint))  # a kill mid-replacement leaves a complete checkpoint in place
    prefix = None if entry is None or saved_state_exists(checkpoint) else kept_prefix(entry, config, train_anchors)
    if prefix is not None:  # its first steps were tuned before on this machine
        log.info("steps 1-%d of these inputs were kept in %s: RL continues from there", prefix[1], prefix[0])
        run_on_main(lambda: start_from(prefix[0], checkpoint, work_dir))
        rl_log.report_kept(work_dir)  # the kept steps' curves, then the new steps'
    return saved_state_exists(checkpoint)
