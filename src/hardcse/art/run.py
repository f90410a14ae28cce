"""``hardcse art run``: ART's adaptive rounds as one resumable run folder.

    round_0/eval.json                      the starting encoder on the STS tasks
    round_r/generator/                     PPO-tuned LoRA adapter + ppo_log.jsonl (difficulty by encoder r-1)
    round_r/synthetic.jsonl, triplets.csv  new anchors -> positive + negative -> NLI filter
    round_r/encoder/                       encoder r-1 trained further on the kept triplets (SimCSE loss)
    round_r/eval.json, measures.json       STS scores; judged accuracy and cosines of the synthetic data

Every stage writes its output under a temporary name and renames it when complete; ``resume`` skips stages whose
output exists and continues PPO from its last checkpoint, so a killed run loses at most one stage's work.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import platform
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import yaml
from sentence_transformers import SentenceTransformer

from hardcse.art.anchors import split_anchors
from hardcse.art.judge import judge_records
from hardcse.art.synthesis import synthesize
from hardcse.art.tuning import load_discriminator, tune_generator
from hardcse.atomic import write_text_atomic
from hardcse.config import TRAIN_IN_RUN, ArtRunConfig, TuneConfig, config_to_dict, save_config
from hardcse.data.sts import ALL_TASKS, DEV_TASK
from hardcse.data.triplets import Triplet, read_triplets
from hardcse.discriminator.nli import NLIDiscriminator, train_nli
from hardcse.encoder.build import load_encoder
from hardcse.encoder.train import train_encoder
from hardcse.errors import HardcseError
from hardcse.evaluation.sts import evaluate_sts
from hardcse.logs import log_to_file
from hardcse.report.plots import read_jsonl
from hardcse.resources import resolve_model

log = logging.getLogger(__name__)
PACKAGES = ("hardcse", "torch", "transformers", "sentence-transformers", "peft", "datasets", "accelerate")


@dataclass
class RoundAnchors:
    ppo: list[str]
    synthesis: list[str]


def round_anchors(train: list[str], config: ArtRunConfig) -> list[RoundAnchors]:
    """Disjoint anchors for every round: synthesis blocks first (round r: the r-th block of
    ``synthesis_anchors``), then PPO blocks. A one-round run with the whole budget therefore synthesises for
    exactly the anchors a multi-round run spreads over its rounds. No anchor is used twice in a run."""
    n_synth = config.synthesis_anchors
    n_ppo = config.ppo.steps * config.ppo.batch_size if config.tune_generator else 0
    need = config.rounds * (n_synth + n_ppo)
    if need > len(train):
        raise HardcseError(
            f"the run needs {need} distinct anchors ({config.rounds} rounds x ({n_synth} synthesis + {n_ppo} PPO)) "
            f"but the corpus has {len(train)} usable ones; lower synthesis_anchors, ppo.steps or rounds, "
            "or give a larger anchors.corpus"
        )
    ppo_start = config.rounds * n_synth
    return [
        RoundAnchors(
            ppo=train[ppo_start + r * n_ppo : ppo_start + (r + 1) * n_ppo],
            synthesis=train[r * n_synth : (r + 1) * n_synth],
        )
        for r in range(config.rounds)
    ]


def validate(config: ArtRunConfig) -> list[RoundAnchors]:
    """Every check that can fail before any work is done; returns the anchors of each round."""
    positive = {"rounds": config.rounds, "synthesis_anchors": config.synthesis_anchors}
    if config.tune_generator:
        positive |= {"ppo.steps": config.ppo.steps, "ppo.save_every": config.ppo.save_every}
    for key, value in positive.items():
        if value < 1:
            raise HardcseError(f"{key}={value}: must be at least 1")
    for key, value in {"mix_examples": config.mix_examples, "examples_per_round": config.examples_per_round}.items():
        if value is not None and value < 0:
            raise HardcseError(f"{key}={value}: must not be negative")
    unknown = [t for t in config.eval_tasks if t not in ALL_TASKS]
    if unknown:
        raise HardcseError(f"eval_tasks: unknown task(s) {unknown}; known: {', '.join(ALL_TASKS)}")
    if config.encoder_training.mode != "sup":
        raise HardcseError("encoder_training.mode: ART trains on triplets, so it must be sup")
    if config.pooling == "cls_mlp":
        raise HardcseError(
            "pooling=cls_mlp adds a freshly initialised head, a different one at every load; train it first "
            "(hardcse train-encoder --pooling cls_mlp) and give the saved folder as encoder"
        )
    if config.mix_triplets and not Path(config.mix_triplets).is_file():
        raise HardcseError(f"mix_triplets: {config.mix_triplets}: no such file")
    sources = {"encoder": config.encoder, "generator.model": config.generator.model, "judge": config.judge}
    if config.discriminator != TRAIN_IN_RUN:
        sources["discriminator"] = config.discriminator
    for key, source in sources.items():
        if source is not None:
            try:
                resolve_model(source)
            except HardcseError as e:
                raise HardcseError(f"{key}: {e}") from None
    return round_anchors(split_anchors(config.anchors).train, config)


class Manifest:
    """``manifest.json``: versions, seeds, git commit, and the start, end and seconds of every stage."""

    def __init__(self, path: Path, config: ArtRunConfig) -> None:
        self.path = path
        if path.is_file():
            self.data = json.loads(path.read_text(encoding="utf-8"))
        else:
            self.data = {
                "created": _now(),
                "versions": _versions(),
                "git_commit": _git_commit(),
                "seeds": {
                    "anchors": config.anchors.seed,
                    "generator": config.generator.seed,
                    "ppo": config.ppo.seed,
                    "encoder_training": config.encoder_training.seed,
                    "discriminator_training": config.discriminator_training.seed,
                },
                "stages": {},
            }
        self.data.setdefault("runs", []).append({"started": _now(), "platform": platform.platform()})
        self.save()

    def save(self) -> None:
        write_text_atomic(self.path, json.dumps(self.data, indent=2))

    def stage(self, name: str, done: Callable[[], bool], work: Callable[[], None]) -> None:
        """Run ``work`` unless ``done()`` already holds; record its timing."""
        if done():
            log.info("stage %s: done, skipped", name)
            return
        log.info("stage %s: start", name)
        print(f"== {name}", flush=True)
        attempts = self.data["stages"].get(name, {}).get("attempts", 0) + 1  # counts attempts that were killed
        entry = self.data["stages"][name] = {"start": _now(), "attempts": attempts}
        self.save()
        start = time.perf_counter()
        work()
        if not done():
            raise HardcseError(f"stage {name} finished without its output; this is a bug")
        entry |= {"end": _now(), "seconds": round(time.perf_counter() - start, 1)}
        self.save()

    def finish(self) -> None:
        self.data["runs"][-1]["finished"] = _now()
        self.save()


def prepare_run_dir(run_dir: Path, config: ArtRunConfig, resume: bool) -> None:
    """A new run needs an empty folder; a resumed one needs the same configuration it started with."""
    saved = run_dir / "config.yaml"
    if resume:
        if not saved.is_file():
            raise HardcseError(f"{run_dir} has no config.yaml: nothing to resume; drop --resume to start it")
        before = yaml.safe_load(saved.read_text(encoding="utf-8"))
        now = json.loads(json.dumps(config_to_dict(config)))
        changed = sorted(_differences(before, now))
        if changed:
            raise HardcseError(
                f"the configuration differs from {saved} in {', '.join(changed)}; a resumed run keeps its "
                "configuration (start a new run with another --name to change it)"
            )
        return
    if run_dir.exists() and any(run_dir.iterdir()):
        raise HardcseError(f"{run_dir} exists and is not empty; pass --resume to continue it, or another --name")
    run_dir.mkdir(parents=True, exist_ok=True)
    save_config(config, saved)


def saved_run_config(run_dir: Path) -> Path:
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise HardcseError(f"{run_dir}: not a run folder (no config.yaml)")
    return path


def art_run(config: ArtRunConfig, run_dir: str | Path, resume: bool = False) -> Path:
    """Run (or continue) every stage of the run; returns the final encoder's folder."""
    blocks = validate(config)
    run_dir = Path(run_dir)
    prepare_run_dir(run_dir, config, resume)
    with _exclusive(run_dir / "run.lock"), log_to_file(run_dir / "run.log"):
        return _run_stages(config, run_dir, blocks)


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """One process per run folder: a second one would delete the first one's temporary folders."""
    with lock_path.open("w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise HardcseError(f"another process is running {lock_path.parent}; wait for it or stop it") from None
        yield


@dataclass
class _Run:
    config: ArtRunConfig
    dir: Path
    manifest: Manifest
    discriminator_source: str
    discriminator: NLIDiscriminator
    tasks: list[str]


def _run_stages(config: ArtRunConfig, run_dir: Path, blocks: list[RoundAnchors]) -> Path:
    manifest = Manifest(run_dir / "manifest.json", config)

    discriminator_dir = run_dir / "discriminator"
    if config.discriminator == TRAIN_IN_RUN:
        manifest.stage(
            "discriminator",
            done=discriminator_dir.is_dir,
            work=lambda: _atomic_dir(discriminator_dir, lambda tmp: train_nli(config.discriminator_training, tmp)),
        )
        discriminator_source = str(discriminator_dir)
    else:
        discriminator_source = config.discriminator
    tasks = list(dict.fromkeys([*config.eval_tasks, DEV_TASK]))  # STS-B dev always: rounds select on it
    run = _Run(config, run_dir, manifest, discriminator_source, load_discriminator(discriminator_source), tasks)

    round0 = run_dir / "round_0" / "eval.json"
    manifest.stage(
        "round_0.eval",
        done=round0.is_file,
        work=lambda: _evaluate(load_encoder(config.encoder, config.pooling), config.encoder, tasks, round0),
    )
    encoder_source, generator_source = config.encoder, config.generator.model
    for r, anchors in enumerate(blocks, start=1):
        encoder_source, generator_source = _run_round(run, r, anchors, encoder_source, generator_source)

    from hardcse.report.art import write_report

    manifest.finish()
    write_report(run_dir)
    return Path(encoder_source)


def _run_round(run: _Run, r: int, anchors: RoundAnchors, encoder_source: str, generator_source: str) -> tuple[str, str]:
    """Round ``r``'s stages; returns the (encoder, generator) the next round starts from."""
    config, manifest = run.config, run.manifest
    round_dir = run.dir / f"round_{r}"
    round_dir.mkdir(exist_ok=True)
    pooling = config.pooling if r == 1 else "default"  # later rounds load a saved encoder as it is

    synthesis_generator = config.generator.model
    if config.tune_generator:
        generator_dir = round_dir / "generator"
        tune = TuneConfig(
            encoder=encoder_source,
            pooling=pooling,
            discriminator=run.discriminator_source,
            generator=dataclasses.replace(config.generator, model=generator_source),
            reward=config.reward,
            ppo=config.ppo,
            anchors=config.anchors,
            filter=config.filter,
        )
        manifest.stage(
            f"round_{r}.generator",
            done=generator_dir.is_dir,
            work=lambda: tune_generator(
                tune,
                round_dir / "ppo",
                resume=True,
                train_anchors=anchors.ppo,
                final_dir=generator_dir,
                discriminator=run.discriminator,
            ),
        )
        shutil.rmtree(round_dir / "ppo", ignore_errors=True)  # its checkpoint is now generator/
        synthesis_generator = str(generator_dir)
        if config.continue_generator:
            generator_source = synthesis_generator

    def run_synthesis() -> None:
        from hardcse.rl.reward import DualReward

        reward = DualReward(run.discriminator, load_encoder(encoder_source, pooling), config.reward)
        generation = config.generator
        if config.synthesis_temperature is not None:
            generation = dataclasses.replace(generation, temperature=config.synthesis_temperature)
        synthesize(synthesis_generator, anchors.synthesis, generation, reward, config.filter, round_dir)

    manifest.stage(f"round_{r}.synthesis", done=(round_dir / "synthesis.json").is_file, work=run_synthesis)

    previous_eval = run.dir / f"round_{r - 1}" / "eval.json"
    encoder_dir = round_dir / "encoder"
    manifest.stage(
        f"round_{r}.encoder",
        done=encoder_dir.is_dir,
        work=lambda: _train_round_encoder(config, round_dir, encoder_source, pooling, previous_eval),
    )
    eval_path = round_dir / "eval.json"
    manifest.stage(
        f"round_{r}.eval",
        done=eval_path.is_file,
        work=lambda: _evaluate_round(encoder_dir, eval_path, previous_eval, run.tasks),
    )
    measures = round_dir / "measures.json"
    manifest.stage(f"round_{r}.measures", done=measures.is_file, work=lambda: _measure(config, round_dir, measures))
    return str(encoder_dir), generator_source


def _atomic_dir(final: Path, build: Callable[[Path], object]) -> None:
    """``build(tmp)`` fills a temporary folder, which is then renamed to ``final``."""
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    build(tmp)
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)


def _evaluate(model: SentenceTransformer, source: str, tasks: list[str], out: Path) -> None:
    result = evaluate_sts(model, tasks)
    write_text_atomic(out, json.dumps({"model": source, **result.to_dict()}, indent=2))


def _training_data(config: ArtRunConfig, round_dir: Path) -> list[Triplet]:
    data = read_triplets(round_dir / "triplets.csv")
    if config.mix_triplets:
        mixed = read_triplets(config.mix_triplets)
        data = data + mixed[: config.mix_examples] if config.mix_examples is not None else data + mixed
    return data


def _train_round_encoder(config: ArtRunConfig, round_dir: Path, source: str, pooling: str, previous: Path) -> None:
    """Train the previous encoder on the round's triplets; hand on the better of the two on STS-B dev."""
    previous_dev = json.loads(previous.read_text(encoding="utf-8"))["scores"][DEV_TASK]
    data = _training_data(config, round_dir)
    model = load_encoder(source, pooling)
    record: dict = {"triplets": len(data), "previous_dev": previous_dev, "source": source}
    final = round_dir / "encoder"

    def build(tmp: Path) -> None:
        if not data:
            record.update(trained=False, handed_on="previous", why="no triplets survived the filter")
            model.save(str(tmp))
        else:
            training = dataclasses.replace(config.encoder_training, model=source, pooling=pooling)
            outcome = train_encoder(training, data, tmp, model=model)
            record.update(
                trained=True, best_dev=outcome.best_dev, best_step=outcome.best_step, dev_history=outcome.history
            )
            if config.keep_better_encoder and not (outcome.best_dev is not None and outcome.best_dev > previous_dev):
                record.update(handed_on="previous", why="training did not beat the previous encoder on STS-B dev")
                shutil.rmtree(tmp)
                load_encoder(source, pooling).save(str(tmp))
            else:
                record["handed_on"] = "trained"
        # before the rename: a done encoder stage always has its record
        write_text_atomic(round_dir / "training.json", json.dumps(record, indent=2))

    _atomic_dir(final, build)


def _evaluate_round(encoder_dir: Path, out: Path, previous: Path, tasks: list[str]) -> None:
    training_path = encoder_dir.parent / "training.json"  # absent when a user trained the encoder folder
    training = json.loads(training_path.read_text(encoding="utf-8")) if training_path.is_file() else {}
    if training.get("handed_on") == "previous":  # the same weights as last round: the same scores
        record = json.loads(previous.read_text(encoding="utf-8")) | {
            "model": str(encoder_dir),
            "copied_from": str(previous),
        }
        write_text_atomic(out, json.dumps(record, indent=2))
        return
    _evaluate(load_encoder(str(encoder_dir)), str(encoder_dir), tasks, out)


def _measure(config: ArtRunConfig, round_dir: Path, out: Path) -> None:
    """Tables 4-6 measures of the round's synthetic data. Cosines come from the run's starting encoder, so that
    rounds are compared by one fixed judge of difficulty (the paper uses one fixed encoder for Table 5)."""
    judge = NLIDiscriminator.load(config.judge) if config.judge else None
    records = read_jsonl(round_dir / "synthetic.jsonl")
    result = judge_records(
        records, judge, config.examples_per_round, cosine_encoder=load_encoder(config.encoder, config.pooling)
    )
    result["judge"] = config.judge
    write_text_atomic(out, json.dumps(result, indent=2))


def _differences(a: object, b: object, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            out += _differences(a.get(key), b.get(key), f"{prefix}{key}.")
        return out
    return [] if a == b else [prefix.rstrip(".")]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None
