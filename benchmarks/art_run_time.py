"""A whole ART run's time, stage by stage, as a user's `hardcse art run` spends it, beside an earlier run's record.

    python benchmarks/art_run_time.py --out runs/cpu-full-time [--config CONFIG] [--seed 5] [--before RECORD_DIR]
        [key=value ...]

Runs ``hardcse art run --config CONFIG`` (default configs/cpu-full.yaml; the command line a user runs) with the
``key=value`` overrides and every seed key of the config at ``--seed`` (a killed run is resumed,
a finished one only read), then reads its manifest.json: each
stage's seconds, summed by kind (RL, synthesis, held-out comparison, encoder training, evaluations and measures, the
discriminator's training), the RL step's median parts per round (rl_log.jsonl), and its report's first line (the
held-out effect). ``--before``: an earlier run's record folder (config.yaml, manifest.json), whose stages are shown
beside, by kind; the two are not one run, so the ratio is of two records, not a measured speed-up.

Writes benchmarks/results/art_run_time.{md,json}. Run it alone on the machine: it times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
KINDS = {  # a stage name's last part -> what it is
    "generator": "RL",
    "synthesis": "synthesis",
    "heldout": "held-out comparison",
    "encoder": "encoder training",
    "eval": "evaluations and measures",
    "measures": "evaluations and measures",
    "discriminator": "discriminator training",
}


def by_kind(manifest: dict) -> dict[str, float]:
    """Minutes per kind of stage (KINDS; anything else under its own name)."""
    minutes: dict[str, float] = {}
    for stage, entry in manifest["stages"].items():
        kind = KINDS.get(stage.rsplit(".", 1)[-1], stage)
        minutes[kind] = minutes.get(kind, 0.0) + entry.get("seconds", 0.0) / 60
    return minutes


def rl_step_parts(run_dir: Path) -> dict[str, dict[str, float]]:
    """Per round, each RL step part's median seconds (rl_log.jsonl's ``PART_s``)."""
    rl = {}
    for log in sorted(run_dir.glob("round_*/generator/rl_log.jsonl")):
        rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        parts = [k.removesuffix("_s") for k in rows[0] if k.endswith("_s") and k != "seconds_per_step"]
        rl[log.parent.parent.name] = {p: round(statistics.median(r[f"{p}_s"] for r in rows), 2) for p in parts}
    return rl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="the run folder (a finished one is read, not rerun)")
    parser.add_argument("--config", default="configs/cpu-full.yaml")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--before", type=Path, help="an earlier run's record folder to show beside")
    parser.add_argument("overrides", nargs="*", help="key=value overrides of the config")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from art_rounds import config_seed_overrides
    from lib.provenance import machine_line
    from lib.record import write_record

    overrides = [*args.overrides, *config_seed_overrides(args.config, args.seed, args.overrides)]
    command = ["hardcse", "art", "run", "--config", args.config, "--out", str(args.out), *overrides]
    wall = None
    if not (args.out / "report.md").is_file():
        resume = ["--resume"] if (args.out / "config.yaml").is_file() else []
        start = time.perf_counter()
        subprocess.run(command + resume, check=True, cwd=HERE.parent)
        wall = time.perf_counter() - start
    manifest = json.loads((args.out / "manifest.json").read_text(encoding="utf-8"))
    minutes = by_kind(manifest)
    rl = rl_step_parts(args.out)
    report = (
        (args.out / "report.md").read_text(encoding="utf-8").splitlines() if (args.out / "report.md").is_file() else []
    )
    effect = next((line for line in report if line.strip() and not line.startswith("#")), "")
    before = None
    if args.before:
        before = {
            "record": str(args.before),
            "minutes": by_kind(json.loads((args.before / "manifest.json").read_text())),
        }
    result = {
        "command": " ".join(command),
        "wall_minutes": None if wall is None else round(wall / 60, 2),
        "minutes": {k: round(v, 2) for k, v in minutes.items()},
        "total_minutes": round(sum(minutes.values()), 2),
        "rl_step_parts": rl,
        "report_first_line": effect,
        "before": before,
    }
    lines = [
        f"`{result['command']}`",
        "",
        f"Stages summed by kind, minutes (manifest.json); the whole run {result['total_minutes']:.1f} min"
        + ("" if wall is None else f", {result['wall_minutes']:.1f} min of wall time with loading and the report")
        + ".",
        "",
        "| stage | this run | " + (f"before ({args.before.name}) |" if before else ""),
        "|---|---:|" + ("---:|" if before else ""),
    ]
    for kind in dict.fromkeys([*minutes, *(before["minutes"] if before else {})]):
        cells = [f"{minutes.get(kind, 0.0):.1f}"] + ([f"{before['minutes'].get(kind, 0.0):.1f}"] if before else [])
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    total_before = f" | {sum(before['minutes'].values()):.1f}" if before else ""
    lines.append(f"| **all** | **{result['total_minutes']:.1f}**{total_before} |")
    lines += ["", "The RL step's median parts per round, seconds:", ""]
    for name, parts in rl.items():
        lines.append(f"- {name}: " + ", ".join(f"{p} {s}" for p, s in parts.items()))
    lines += ["", f"The report's first line: {effect}", ""]
    if before:
        lines += [
            f"The before is another run's record ({args.before}), not this run: its config differs where its "
            "config.yaml says, and its machine is the one its manifest names.",
            "",
        ]
    print(write_record("art_run_time", "A whole ART run, stage by stage", lines, result, machine=machine_line()))


if __name__ == "__main__":
    main()
