"""``hardcse assay``: is training set B better than A for my encoder? An answer with no checkpoint selection.

Each triplet file trains the same start encoder with supervised SimCSE on one fixed schedule: the same number of
rows (the first ``rows`` of every file), the same steps, no evaluation while training and no dev gating (the last
step is kept), once per training seed (which seeds the trainer's default random batches; unlike ``simcse train``, no
no-duplicates sampler: ART's triplets rarely repeat a text). Each trained encoder is evaluated on the STS tasks;
every file is then compared with the first through ``hardcse compare``'s paired bootstrap over test pairs and seeds
(paired by seed). What differs between two files' rows is then the data alone, not which checkpoint a noisy dev
score picked.

Run folder: ``config.yaml``, ``manifest.json``, ``decontamination.json``, ``NAME/seed-S/eval.json`` (the STS
record, with the training job's record under ``training``), ``NAME/seed-S/model/`` with ``keep_models``, and
``assay.md`` / ``assay.json`` / ``assay.png`` (the comparison).
"""

from __future__ import annotations

import json
import math
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hardcse.config import ConfigValueError, check_choice, check_positive
from hardcse.data.decontamination import DecontaminationConfig
from hardcse.data.sts import ALL_TASKS, DEV_TASK, SEVEN_TASKS
from hardcse.data.table import OnError
from hardcse.data.triplets import Triplet, read_triplets
from hardcse.encoder import PoolingName
from hardcse.encoder.simcse import SimCSETraining
from hardcse.engines import Engine, check_engine
from hardcse.errors import HardcseError

if TYPE_CHECKING:
    from hardcse.tracking.run import Tracking

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# what the assay's run folder holds beside one folder per file: no file's label may be one of them
RUN_FOLDER_FILES = ("config.yaml", "manifest.json", "run.log", "run.lock", "tracking.json", "decontamination.json",
                    "decontaminated.jsonl", "assay.md", "assay.json", "assay.png", "tensorboard", "wandb")  # fmt: skip


@dataclass
class AssayConfig(SimCSETraining):
    """``hardcse assay``: triplet files (``data``; the first is the reference) each train ``encoder`` on one fixed
    schedule, per seed of ``seeds``; ``training.max_steps`` (default -1: one pass over ``rows`` at
    ``training.batch_size``, times ``training.epochs``) is the same for every file. ``training.eval_steps`` and
    ``training.seed`` are not used (no in-run evaluation; the seeds are ``seeds``)."""

    encoder: str = "bundled:minilm-l6"
    pooling: PoolingName = "default"
    data: list[str] = field(default_factory=list)  # triplet CSVs (sent0,sent1,hard_neg); the first is the reference
    names: list[str] = field(default_factory=list)  # a label per file (default: derived from its path)
    seeds: list[int] = field(default_factory=lambda: [1, 2, 3])  # training seeds, the same for every file
    rows: int | None = None  # the first N rows of every file (default: as many as the smallest file has)
    eval_tasks: list[str] = field(default_factory=lambda: [*SEVEN_TASKS, DEV_TASK])
    engine: str = "auto"  # what encodes for each trained encoder's STS evaluation: auto | torch | openvino
    resamples: int = 1000  # paired bootstrap resamples
    keep_models: bool = False  # keep each trained encoder (NAME/seed-S/model/); off: only their evaluations
    decontamination: DecontaminationConfig = field(default_factory=DecontaminationConfig)

    def check(self) -> None:
        super().check()
        check_engine("engine", self.engine)
        if self.names and len(self.names) != len(self.data):
            raise ConfigValueError("names", f"{len(self.names)} names for {len(self.data)} files; give one per file")
        for name in self.names:
            if not NAME.fullmatch(name):
                raise ConfigValueError("names", f"{name!r}: use letters, digits, '.', '_' and '-' (a folder name)")
        taken = [label for label in self.labels if label in RUN_FOLDER_FILES]
        if taken:
            raise ConfigValueError("names", f"{taken[0]!r} is a file of the run folder; give the file another name")
        if len(set(self.labels)) != len(self.labels):
            raise ConfigValueError("names", f"two files get one label ({', '.join(self.labels)}); give names")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ConfigValueError("seeds", f"{self.seeds}: give one or more distinct training seeds")
        check_positive("rows", self.rows, allow_none=True)
        check_positive("resamples", self.resamples)
        if self.resamples < 100:
            raise ConfigValueError("resamples", f"{self.resamples}: use at least 100 (1,000 for a table you publish)")
        if not self.eval_tasks:
            raise ConfigValueError("eval_tasks", "give the STS tasks to evaluate on (default: the seven and STS-B-dev)")
        for task in self.eval_tasks:
            check_choice("eval_tasks", task, ALL_TASKS)

    @property
    def labels(self) -> list[str]:
        """Each file's label: its name, else its path's parts joined until the labels differ."""
        if self.names:
            return list(self.names)
        paths = [Path(p) for p in self.data]
        for depth in range(1, max((len(p.parts) for p in paths), default=1) + 1):
            labels = [_label(p, depth) for p in paths]
            if len(set(labels)) == len(labels):
                return labels
        return [_label(p, len(p.parts)) for p in paths]


def _label(path: Path, depth: int) -> str:
    """The last ``depth`` parts of ``path`` (the file's stem last), joined by '.' and made a folder name."""
    parts = [*path.parent.parts[-(depth - 1) :], path.stem] if depth > 1 else [path.stem]
    return re.sub(r"[^A-Za-z0-9._-]+", "-", ".".join(p for p in parts if p not in ("/", ".", ".."))).strip("-.")


def read_assay_data(config: AssayConfig, on_error: OnError = "raise") -> tuple[dict[str, list[Triplet]], int]:
    """Each file's triplets (label -> rows, in ``data``'s order) and the rows every file trains on."""
    if not config.data:
        raise HardcseError("no training data: give --data A.csv [B.csv ...] (or data: in the config)")
    data = {label: read_triplets(path, on_error) for label, path in zip(config.labels, config.data, strict=True)}
    fewest = min(len(rows) for rows in data.values())
    rows = config.rows if config.rows is not None else fewest
    short = [f"{config.data[i]} ({len(r)})" for i, r in enumerate(data.values()) if len(r) < rows]
    if short:
        raise HardcseError(f"rows={rows}: {', '.join(short)} hold fewer rows; set rows <= {fewest} or give more rows")
    if rows == 0:
        raise HardcseError(f"{config.data[0]}: no rows to train on")
    return data, rows


def fixed_steps(config: AssayConfig, rows: int) -> int:
    """The steps every training of the assay runs: ``training.max_steps``, else ``epochs`` passes over ``rows``."""
    if config.training.max_steps > 0:
        return config.training.max_steps
    return max(1, math.ceil(config.training.epochs * math.ceil(rows / config.training.batch_size)))


def train_and_evaluate(
    config: AssayConfig,
    triplets: list[Triplet],
    seed: int,
    steps: int,
    folder: Path,
    engine: Engine,
    tracking: Tracking | None = None,
) -> dict:
    """Train a fresh copy of the start encoder on ``triplets`` for ``steps`` steps at ``seed`` (no selection), and
    evaluate it in ``engine``; writes ``folder/eval.json`` (and ``folder/model/`` with ``keep_models``); returns the
    record. ``tracking``: the run folder's trackers."""
    import dataclasses

    from hardcse.atomic import write_json_atomic
    from hardcse.encoder.build import load_encoder
    from hardcse.encoder.contrastive import InBatchContrastiveLoss
    from hardcse.encoder.simcse import simcse_dataset
    from hardcse.evaluation.sts import sts_record
    from hardcse.training import run_training_job

    settings = dataclasses.replace(config.training, max_steps=steps, seed=seed)
    model = load_encoder(config.encoder, config.pooling, head_seed=seed, device=settings.device)
    model_dir = folder / "model"
    outcome = run_training_job(
        model,
        simcse_dataset("sup", triplets),
        InBatchContrastiveLoss(model, config.tau),
        settings,
        model_dir,
        metric=None,  # no dev gating: the last step is the encoder
        record={"seed": seed, "rows": len(triplets)},
        tracking=tracking,
    )
    record = sts_record(outcome.model, str(model_dir), config.eval_tasks, engine=engine) | {"training": outcome.record}
    if not config.keep_models:
        shutil.rmtree(model_dir)
    write_json_atomic(folder / "eval.json", record)
    return record


def assay_run(
    config: AssayConfig, out: str | Path, *, resume: bool = False, overwrite: bool = False, on_error: OnError = "raise"
) -> str:
    """``hardcse assay`` as a run folder (module docstring); returns the comparison's Markdown."""
    from hardcse.data.decontamination import Decontamination, triplet_texts
    from hardcse.evaluation.compare import compare_groups, write_comparison
    from hardcse.evaluation.results import Result
    from hardcse.resources import resolve_model
    from hardcse.run_folder import RunFolder

    data, rows = read_assay_data(config, on_error)  # a bad file fails before the folder exists
    resolve_model(config.encoder)
    check = Decontamination(config.decontamination)
    for label, path in zip(config.labels, config.data, strict=True):
        data[label] = check.filter(path, data[label], triplet_texts)
    short = [f"{label} ({len(r)} left)" for label, r in data.items() if len(r) < rows]
    if short:
        raise HardcseError(
            f"rows={rows}: after decontamination {', '.join(short)}; set rows lower or train on other data"
        )
    steps = fixed_steps(config, rows)
    groups: dict[str, list[Result]] = {}
    engine = Engine.resolve(config.engine)
    with RunFolder(out, config, resume=resume, overwrite=overwrite, command="assay", engine=engine) as run:
        run.stage("decontamination", check.COUNTS, lambda path: check.write(path.parent), in_place=True)
        run.record("assay", {"rows": rows, "steps": steps, "files": dict(zip(config.labels, config.data, strict=True))})
        for label, triplets in data.items():
            groups[label] = []
            for seed in config.seeds:
                path = run.stage(
                    f"{label}/seed-{seed}",
                    f"{label}/seed-{seed}",
                    lambda partial, t=triplets[:rows], s=seed: train_and_evaluate(
                        config, t, s, steps, partial, engine, run.tracking
                    ),
                )
                record = json.loads((path / "eval.json").read_text(encoding="utf-8"))
                groups[label].append(Result(label, record, {"seed": seed}))
        labels = list(groups)
        comparison = compare_groups(groups, [(labels[0], b) for b in labels[1:]], resamples=config.resamples)
        command = f"hardcse assay --config {run.dir / 'config.yaml'} --out {run.dir}"
        extra = [
            f"Each file: its first {rows} triplets, {steps} steps at batch {config.training.batch_size}, "
            f"lr {config.training.learning_rate}, no dev gating; training seeds {', '.join(map(str, config.seeds))}; "
            f"start encoder {config.encoder}. Intervals: paired bootstrap 95% over test pairs and seeds (paired by "
            "seed); a difference is a finding only where its interval excludes zero."
        ]
        if len(labels) == 1:  # valid (the evidence scripts assay one file at a time): its encoders' scores alone
            extra.append(f"One file: nothing to compare it with; the table gives its {len(config.seeds)} encoders' "
                         "scores (give two or more files for B - A with its interval).")  # fmt: skip
        markdown = write_comparison(comparison, run.dir / "assay", "Data assay", command, extra)
        run.finish()
    return markdown
