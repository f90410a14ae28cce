"""A discriminator trained inside an ART run (``discriminator: train``), kept once per machine for its inputs.

The run's NLI model is the reward's judge, not what the run studies, and on the quickstart it was about half of the
run (126 s of 232 on the AMX Xeon in float32; benchmarks/results/discriminator_sizes.md and training_precision.md
time the training alone). Its training is seeded, so the same inputs on the same machine train the same weights
(tests/test_caches.py checks two trainings byte for byte). A run whose inputs match an earlier run's copies that
run's model from ``<cache>/discriminator/KEY/`` instead of training again. It does so whatever ``reuse`` says, as
the raw generator's held-out texts are kept either way; ``keep_discriminator: false`` trains in every run.

KEY digests what decides the weights:

- the training config, but not ``report_to`` (how a run is watched) and not the file names;
- the training and dev pairs as read (a renamed file with the same rows is the same input, an edited one is not);
- the base model's files and the number of processes;
- through :func:`hardcse.cache.environment_digest`, the shared code (the training job, the data readers), the
  libraries' versions and the machine's kind where the training runs.

Only a training from nothing is kept, not one resumed from a killed run's checkpoint; a cache that cannot be
written (a full disk) costs a warning, not the run. A copy says it is one: its ``training.json`` names the entry's
KEY (``reused_from``) and drops the seconds a step, which this run did not spend (a copied stage reports no speed).
The rest of the folder is the first run's as it was, its model card (``README.md``, with that training's minutes)
included.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import shutil
from pathlib import Path

from hardcse.atomic import write_json_atomic
from hardcse.cache import EntryDescription, environment_digest, lease, publish_dir
from hardcse.data.nli import NLIPairs
from hardcse.devices import resolve_device
from hardcse.discriminator.train import NLITrainConfig, nli_training_pairs, train_nli
from hardcse.distributed import run_on_main, world_size
from hardcse.fingerprint import files_digest
from hardcse.paths import cache_dir
from hardcse.resources import resolve_model
from hardcse.tracking.run import Tracking

log = logging.getLogger(__name__)

CACHE_FORMAT = 1  # bump when what an entry holds changes
TRAINING_RECORD = "training.json"
TIMING_KEYS = ("steps_timed", "seconds_per_step")  # what the training spent: not a copy's


def kept_discriminator_dir(config: NLITrainConfig, data: tuple[NLIPairs, NLIPairs]) -> Path:
    """``<cache>/discriminator/KEY``: where a discriminator trained from ``config`` on ``data`` (its training and
    dev pairs) is kept (module doc)."""
    return _kept_entry(config, data)[0]


def discriminator_key(config: NLITrainConfig, data: tuple[NLIPairs, NLIPairs]) -> str:
    """The sha256 of what decides the weights ``config`` trains on ``data`` (module doc); also the key of the
    evidence benchmark's NLI models (benchmarks/art_rounds.py)."""
    return _keyed(config, data)[0]


def _kept_entry(config: NLITrainConfig, data: tuple[NLIPairs, NLIPairs]) -> tuple[Path, EntryDescription]:
    """:func:`kept_discriminator_dir` and the description of its entry (its sidecar: hardcse/cache.py)."""
    key, found = _keyed(config, data)
    what = f"{config.base_model} on {len(data[0])} NLI pairs ({len(data[1])} dev)"
    return cache_dir() / "discriminator" / key[:32], EntryDescription("discriminator", what, found)


def _keyed(config: NLITrainConfig, data: tuple[NLIPairs, NLIPairs]) -> tuple[str, dict]:
    """:func:`discriminator_key` and the environment part of it."""
    device = resolve_device(config.training.device, "discriminator_training.training.device")
    digest = hashlib.sha256(f"format {CACHE_FORMAT}\0world size {world_size()}\0".encode())
    found = environment_digest(digest, device, shared_code=True)
    settings = dataclasses.asdict(config)
    for key in ("report_to", "train_files", "dev_files"):  # how it is watched; the files' pairs are digested below
        settings.pop(key)
    settings["base_model"] = None  # its files below: a copied model folder is the same model
    digest.update(json.dumps(settings, sort_keys=True).encode())
    for pairs in data:
        digest.update(json.dumps([pairs.premises, pairs.hypotheses, pairs.labels]).encode())
    files_digest(resolve_model(config.base_model), digest)
    return digest.hexdigest(), found


def is_kept(folder: Path) -> bool:
    return (folder / TRAINING_RECORD).is_file()


def train_or_copy(config: NLITrainConfig, out_dir: Path, tracking: Tracking | None = None) -> Path:
    """The discriminator of ``config`` in ``out_dir``: copied from the cache when these inputs trained one on this
    machine before, else trained (every rank takes part, reporting to ``tracking``) and then kept. Returns its cache
    entry."""
    data = nli_training_pairs(config)
    entry, described = _kept_entry(config, data)
    # rank 0 decides for every rank (the ranks train together or not at all), and leases the entry it copies (a
    # miss takes no lock, as before: a cache that cannot be written costs no run)
    if run_on_main(lambda: is_kept(entry) and lease(entry, is_kept)):
        log.info("discriminator: the same inputs trained one on this machine before; copied from %s", entry)
        run_on_main(lambda: _copy_kept(entry, out_dir))
        return entry
    train_nli(config, out_dir, data, tracking)
    record = json.loads((Path(out_dir) / TRAINING_RECORD).read_text(encoding="utf-8"))
    if record.get("resumed_from"):  # only a training from nothing is kept: it is what the key promises
        log.info("discriminator: resumed from a checkpoint of a killed run, so not kept in %s", entry)
        return entry
    run_on_main(lambda: _keep(Path(out_dir), entry, described))
    return entry


def _keep(out_dir: Path, entry: Path, described: EntryDescription) -> None:
    try:
        publish_dir(entry, lambda tmp: shutil.copytree(out_dir, tmp, dirs_exist_ok=True), is_kept, described)
    except OSError as e:  # the run has its discriminator: a cache it cannot write only costs the next run time
        log.warning("discriminator: not kept in %s (%s); the next run with these inputs trains it again", entry, e)


def _copy_kept(entry: Path, out_dir: Path) -> None:
    shutil.rmtree(out_dir, ignore_errors=True)  # a killed training's checkpoints: the copy replaces them
    shutil.copytree(entry, out_dir)
    record = json.loads((out_dir / TRAINING_RECORD).read_text(encoding="utf-8"))
    record = {k: v for k, v in record.items() if k not in TIMING_KEYS} | {"reused_from": entry.name}
    write_json_atomic(out_dir / TRAINING_RECORD, record)
