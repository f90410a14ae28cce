"""A tuned generator kept once per machine for the inputs it depends on (opt-in, ``reuse: true``).

RL is the costly stage of ART. Two runs whose round tunes the same generator with the same reward, RL settings,
encoder, discriminator, anchors and code (cpu-full and its ablation without the filter share their whole first
round) need it once: the first writes its tuned generator to ``<cache>/tuned/KEY/`` and the second copies it
from there. The copy has the same files, so the generation cache (hardcse/art/generator/texts.py) then finds the
texts it wrote too. KEY digests the tuning config (not the filter, which RL does not read), the files of the
generator, encoder and discriminator, the reward terms' source, the anchors RL reads, the bytes of hardcse's own
code, and the torch version and bfloat16 support that decide its arithmetic.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import shutil
from pathlib import Path

import torch

import hardcse
from hardcse.art.config import TuneConfig
from hardcse.art.generator.model import GENERATOR_FILE, source_digest
from hardcse.atomic import replace_dir
from hardcse.devices import resolve_device, supports_bfloat16
from hardcse.fingerprint import files_digest
from hardcse.paths import cache_dir
from hardcse.resources import resolve_model

CACHE_FORMAT = 1  # bump when what a cached tuned generator holds changes
NOT_READ_BY_RL = ("filter", "decontamination", "anchors", "encoder", "discriminator", "reuse")  # or keyed by files


def tuned_cache_dir(config: TuneConfig, train_anchors: list[str]) -> Path:
    """``<cache>/tuned/KEY``: where a tuned generator of these inputs is kept (module doc)."""
    device = resolve_device(config.generator.device, "generator.device")
    header = f"format {CACHE_FORMAT}\0torch {torch.__version__}\0bfloat16 {supports_bfloat16(device)}\0"
    digest = hashlib.sha256(header.encode())
    for path in sorted(Path(hardcse.__file__).parent.rglob("*.py")):  # any change to the code is a new key
        digest.update(path.read_bytes())
    settings = dataclasses.asdict(config)
    for key in NOT_READ_BY_RL:
        settings.pop(key)
    settings["generator"]["model"] = None  # its files below: a copied generator folder is the same generator
    digest.update(json.dumps(settings, sort_keys=True).encode())
    source_digest(config.generator.model, digest)
    files_digest(resolve_model(config.encoder), digest)
    files_digest(resolve_model(config.discriminator), digest)
    for term in config.reward.terms:
        digest.update(_source(term.fn).encode())
    digest.update(json.dumps(train_anchors).encode())
    return cache_dir() / "tuned" / digest.hexdigest()[:32]


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
