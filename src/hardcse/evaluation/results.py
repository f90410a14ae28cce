"""Evaluated models for comparison: where an ``eval.json`` lives, and which runs differ only by their seed.

A source is any of
- a folder with ``eval.json`` (a run folder of ``simcse``, ``datacube`` or ``diffaug train``, or ``eval --out``)
  or ``eval.json.gz`` (a benchmark's record);
- an ART run folder (its last evaluated ``round_*/eval.json``);
- an encoder (a model folder, a run folder's ``model/``, ``bundled:minilm-l6``): evaluated on the STS suite
  once and cached under ``<cache>/eval/<key>.json`` (the key: :func:`cached_eval`), so a second comparison loads no
  model.
Runs whose ``config.yaml`` files are equal once every ``seed`` key is left out form one group. Keys that say
where a run took a finished part from (``NOT_SETTINGS``) are left out too: the part itself is checked to match.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from hardcse.data.jsonl import read_json_mapping
from hardcse.data.sts import ALL_TASKS
from hardcse.engines import Engine
from hardcse.errors import HardcseError
from hardcse.folder_checks import round_dirs
from hardcse.paths import cache_dir

EVAL_FILES = ("eval.json", "eval.json.gz")


@dataclass
class Result:
    """One evaluated model: its label, its ``eval.json`` record and, for a run, its config."""

    label: str
    record: dict
    config: dict | None = None
    # the unit the bootstrap resamples first, where members come in clusters (e.g. the generation run whose data
    # trained this member: several training seeds each); None: a member is resampled on its own
    cluster: int | None = None

    @property
    def seed(self) -> int | None:
        """The run's seed (the first ``seed`` key of its config), or None."""
        found = _seeds(self.config or {})
        return found[0] if found else None

    @property
    def group_key(self) -> str:
        """Equal for runs that differ only by seed; a model without a config is a group of its own."""
        if self.config is None:
            return f"model:{self.label}"
        return json.dumps(_without_seeds(self.config), sort_keys=True, default=str)


def _seeds(data: object) -> list[int]:
    if isinstance(data, dict):
        return [v for k, v in data.items() if k == "seed" and isinstance(v, int)] + [
            s for k, v in data.items() if k != "seed" for s in _seeds(v)
        ]
    return []


# DiffAug's ``stage1_from``: a folder holding the same stage 1 (its stage-1 values must equal the run's, checked)
NOT_SETTINGS = {"seed", "stage1_from"}


def _without_seeds(data: object) -> object:
    if isinstance(data, dict):
        return {k: _without_seeds(v) for k, v in data.items() if k not in NOT_SETTINGS}
    return data


def _read_record(folder: Path) -> dict | None:
    if (folder / "eval.json").is_file():
        return read_json_mapping(folder / "eval.json")
    if (folder / "eval.json.gz").is_file():
        return json.loads(gzip.decompress((folder / "eval.json.gz").read_bytes()))
    return last_round_eval(folder)


def last_round_eval_path(run_dir: Path) -> Path | None:
    """An ART run folder's last evaluated ``round_*/eval.json`` (its path), or None."""
    evaluated = [d / "eval.json" for d in round_dirs(run_dir) if (d / "eval.json").is_file()]
    return evaluated[-1] if evaluated else None


def last_round_eval(run_dir: Path) -> dict | None:
    """An ART run folder's last evaluated ``round_*/eval.json``, or None."""
    path = last_round_eval_path(run_dir)
    return read_json_mapping(path) if path else None


def model_fingerprint(model_dir: Path) -> str:
    """sha256 over the names and bytes of a model folder's files (eval outputs left out)."""
    from hardcse.fingerprint import files_digest

    digest = hashlib.sha256()
    files_digest(model_dir, digest, skip=EVAL_FILES)
    return digest.hexdigest()


def cached_eval(
    source: str,
    cache: Path | None = None,
    engine: Engine | None = None,
    tasks: Sequence[str] = ALL_TASKS,
    pooling: str = "default",
    device: str = "auto",
) -> dict:
    """The STS record of the encoder ``source`` on ``tasks`` (with ``pooling``, on ``device``) encoded in ``engine``
    (default: :meth:`Engine.from_environment`), evaluated once per distinct key: the model's files, the tasks, the
    pooling, the STS data's files, the engine and precision that encode, and hardcse's code, the libraries' versions
    and the machine's kind (hardcse/cache.py). A record read back names its file (``read_from``) and has no
    ``seconds``: reading took none of the evaluation's time."""
    from hardcse.cache import EntryDescription, environment_digest, read_file_entry, write_sidecar
    from hardcse.devices import resolve_device
    from hardcse.encoder.build import loads_hardcse_modules
    from hardcse.evaluation.sts import write_sts_eval
    from hardcse.fingerprint import files_digest
    from hardcse.paths import data_dir
    from hardcse.resources import resolve_model

    where = resolve_device(device, "device")  # where write_sts_eval evaluates
    engine = engine or Engine.from_environment()
    used, model_path = engine.on(where), resolve_model(source)
    precision = engine.precision if used == "openvino" else "-"
    key = f"{model_fingerprint(model_path)}\0{used} {precision}\0tasks {' '.join(tasks)}\0pooling {pooling}\0"
    digest = hashlib.sha256(key.encode())
    files_digest(data_dir() / "sts", digest)
    # evaluation runs the shared code only, unless the model folder loads hardcse's own modules (DiffAug's)
    found = environment_digest(digest, where, shared_code=not loads_hardcse_modules(model_path))
    path = (cache or cache_dir()) / "eval" / f"{digest.hexdigest()[:32]}.json"
    text = read_file_entry(path)
    if text is not None:
        record = {**json.loads(text), "model": source, "read_from": str(path)}
        record.pop("seconds", None)
        return record
    record = write_sts_eval(path, source, tasks, pooling, device, engine=engine)
    what = f"{source} on {' '.join(tasks)}, pooling {pooling}, {used} {precision}"
    write_sidecar(path, EntryDescription("eval", what, found))
    return record


def load_result(source: str, cache: Path | None = None, engine: Engine | None = None) -> Result:
    """The :class:`Result` of one source (see the module docstring); an encoder is evaluated in ``engine``
    (:func:`cached_eval`)."""
    record, config = read_source(source)
    if record is not None:
        return Result(source, record, config)
    return Result(source, cached_eval(source, cache, engine), None)


def read_source(source: str) -> tuple[dict | None, dict | None]:
    """A source's evaluation record and config as saved (both None for an encoder, which is checked to exist);
    every refusal :func:`load_result` makes, without evaluating anything."""
    from hardcse.resources import resolve_model

    folder = Path(source).expanduser()
    if folder.is_file() and folder.name in EVAL_FILES:
        folder = folder.parent
    config_path = folder / "config.yaml"
    config = None
    if config_path.is_file():
        try:
            config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError):
            raise HardcseError(f"{config_path}: not valid YAML; the file is damaged: restore it") from None
    record = _read_record(folder) if folder.is_dir() else None
    if record is not None:
        return record, config
    if folder.is_dir() and config is not None and not (folder / "model").is_dir():
        raise HardcseError(
            f"{source}: this run folder has no eval.json yet; finish it with --resume (a folder of a command that "
            "evaluates nothing, such as `art generate`, never has one)"
        )
    resolve_model(source)
    return None, None


def group_by_seed(results: Sequence[Result]) -> dict[str, list[Result]]:
    """Results grouped by :attr:`Result.group_key`, in the order of first appearance, each group labelled by the
    folder its members share (or its first member's label and a count)."""
    keyed: dict[str, list[Result]] = {}
    for result in results:
        keyed.setdefault(result.group_key, []).append(result)
    groups: dict[str, list[Result]] = {}
    for members in keyed.values():
        label = members[0].label
        if len(members) > 1:
            parents = {str(Path(m.label).parent) for m in members}
            label = parents.pop() if len(parents) == 1 and parents != {"."} else f"{label} (+{len(members) - 1})"
        while label in groups:
            label += "'"
        groups[label] = members
    return groups
