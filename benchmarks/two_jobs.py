"""Two hardcse jobs on one small machine: how much an RL step slows when a second job shares the cores, and which
OpenMP setting keeps it near its share.

    python benchmarks/two_jobs.py [--steps 3]

An RL job at the smoke config's size (4 rollouts a step, answers of at most 40 tokens, the bundled SmolLM2-135M,
a random-head NLI model in place of the discriminator) times ``--steps`` steps after one warm-up step, each part
by the loop's own timer. It runs alone, then beside a second job of the same kind started first, niced (a user's
"background" run) and not niced (two jobs started alike), under each setting of SETTINGS, given to both processes
through the environment before torch starts:

- ``default``: what a user gets (torch's GNU OpenMP, one thread a core, threads spin at a barrier before they sleep);
- ``OMP_WAIT_POLICY=PASSIVE``: OpenMP threads sleep at once at a barrier instead of spinning;
- ``OMP_NUM_THREADS=1``: one thread a process, no barrier to wait at;
- ``GOMP_SPINCOUNT=N``: threads spin N times at a barrier before they sleep (libgomp's default is 300,000).

Writes benchmarks/results/two_jobs.{md,json}. Run it with nothing else on the machine: the second job is part of
the measurement, anything else is not.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SETTINGS = {
    "default": {},
    "OMP_WAIT_POLICY=PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"},
    "OMP_NUM_THREADS=1": {"OMP_NUM_THREADS": "1"},
    "GOMP_SPINCOUNT=10000": {"GOMP_SPINCOUNT": "10000"},
    "GOMP_SPINCOUNT=1000": {"GOMP_SPINCOUNT": "1000"},
}


def child(steps: int, out: Path) -> None:
    """One RL job: ``steps`` steps at the smoke config's size, its RL log written to ``out``."""
    sys.path.insert(0, str(HERE))
    from hardcse.art.config import ArtRunConfig
    from hardcse.art.rl.tuning import tune_generator
    from hardcse.config import load_config
    from hardcse.discriminator.nli import NLIDiscriminator
    from lib.stand_ins import random_discriminator

    work = out.with_suffix(".work")  # beside the log: the parent counts the steps in work/rl/rl_log.jsonl
    random_discriminator(work / "nli")
    overrides = [f"discriminator={work / 'nli'}", "judge=null", "reuse=false", "engine=torch"]
    overrides += [f"rl.steps={steps}", f"rl.save_every={steps}"]
    config = load_config(ArtRunConfig, "configs/smoke.yaml", overrides)
    discriminator = NLIDiscriminator.load(str(work / "nli"))
    final = tune_generator(config, work / "rl", work / "generator", discriminator=discriminator)
    out.write_text((final / "rl_log.jsonl").read_text(encoding="utf-8"), encoding="utf-8")


def job(steps: int, out: Path, environment: dict, nice: int = 0) -> subprocess.Popen:
    command = [sys.executable, __file__, "--child", str(steps), "--out", str(out)]
    if nice:
        command = ["nice", "-n", str(nice), *command]
    return subprocess.Popen(command, env=os.environ | environment, cwd=HERE.parent)


def timed(log: Path, steps: int) -> dict:
    """Median seconds of each part over the timed steps (the first, a warm-up, left out)."""
    from art_profile import median_seconds
    from hardcse.data.jsonl import read_jsonl

    rows = read_jsonl(log)[1 : steps + 1]
    parts, step = median_seconds(rows)
    tokens = round(statistics.mean(r["response_tokens"] for r in rows), 1)
    return {
        "step_seconds": round(step, 2),
        "parts": {p: round(s, 2) for p, s in parts.items()},
        "response_tokens_mean": tokens,
    }


KINDS = {"none": None, "niced": 10, "not niced": 0}  # the second job: its niceness (None: no second job)


def background_steps(work: Path) -> int:
    """The RL steps the background job has logged so far."""
    log = work / "background.work" / "rl" / "rl_log.jsonl"
    return len(log.read_text(encoding="utf-8").splitlines()) if log.is_file() else 0


def measure(steps: int, environment: dict, nice: int | None, work: Path) -> dict:
    """The foreground job's timed steps, alone or beside a background job at niceness ``nice`` started first (given
    20 s to load and begin its own steps, and run for as many steps as the foreground could possibly need). Beside
    one, also how many steps the background job made while the foreground ran; an error if it had ended."""
    work.mkdir(parents=True)
    background = None if nice is None else job(100 * (steps + 1), work / "background.jsonl", environment, nice=nice)
    try:
        if background:
            time.sleep(20)
        start, before = time.perf_counter(), background_steps(work)
        foreground = job(steps + 1, work / "foreground.jsonl", environment)
        if foreground.wait() != 0:
            raise SystemExit("the foreground job failed")
        wall = time.perf_counter() - start
        if background and background.poll() is not None:
            raise SystemExit(f"the second job ended (exit {background.returncode}) before the first: no measure")
        made = background_steps(work) - before
    finally:
        if background:
            background.kill()
            background.wait()
    beside = {"second_job_steps_meanwhile": made} if background else {}
    return timed(work / "foreground.jsonl", steps) | {"job_seconds": round(wall, 1)} | beside


def markdown(result: dict) -> list[str]:
    lines = [
        "The foreground RL job's step: the median of the timed steps in seconds, its generation part, its mean "
        "response tokens, and the step against the default setting's step alone:",
        "",
        "| setting | second job | step (s) | generation (s) | response tokens | step / default alone "
        "| second job's steps meanwhile |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    default = result["settings"]["default"]["none"]["step_seconds"]
    for name, runs in result["settings"].items():
        for kind, run in runs.items():
            lines.append(
                f"| {name} | {kind} | "
                f"{run['step_seconds']} | {run['parts']['generation']} | {run['response_tokens_mean']} | "
                f"{run['step_seconds'] / default:.2f} | {run.get('second_job_steps_meanwhile', '')} |"
            )
    lines += [
        "",
        f"A fair share of 2 cores between two jobs would make a step about 2x as long. The default alone: {default} s. "
        "Each cell is one job of one warm-up and the timed steps: response lengths vary between cells by about 15%, "
        "so read differences under ~1.2x as noise. The jobs run RL in PyTorch only (engine=torch); OpenVINO's own "
        "threads (synthesis, evaluation) are not measured here.",
        "",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3, help="RL steps to time after one warm-up step")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.out)
        return
    from lib.record import write_record

    settings = {}
    for name, environment in SETTINGS.items():
        with tempfile.TemporaryDirectory() as tmp:
            settings[name] = {  # each job in a folder of its own: a tuning folder left behind would be resumed
                kind: measure(args.steps, environment, nice, Path(tmp) / kind.replace(" ", "-"))
                for kind, nice in KINDS.items()
            }
        print(name, json.dumps(settings[name]), flush=True)
    result = {"steps_timed": args.steps, "settings": settings}
    print(
        write_record(
            "two_jobs", "Two jobs on one small machine: an RL step alone and beside another", markdown(result), result
        )
    )


if __name__ == "__main__":
    main()
