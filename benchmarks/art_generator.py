"""ART part 1 on the bundled models: PPO speed, then raw vs tuned generator on held-out anchors.

    python benchmarks/art_generator.py --config configs/tune-cpu.yaml [--out runs/bench-art] [--judge ...]

Runs, through the CLI (synthesis at the authors' temperature 0.8, the same for both generators):
    hardcse tune-generator --config CONFIG --out OUT/tune ppo.steps=30 ppo.batch_size=16
    hardcse generate --config CONFIG --generator bundled:smollm2-135m --anchors held-out --limit 200 --out OUT/raw
    hardcse generate --config CONFIG --generator OUT/tune/generator --anchors held-out --limit 200 --out OUT/tuned
    hardcse judge --synthetic OUT/raw/synthetic.jsonl OUT/tuned/synthetic.jsonl --judge JUDGE
and records seconds per PPO step (generation / scoring / reference / optimisation) and the comparison in
benchmarks/results/art_generator.{json,md}.
"""

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

from hardcse.art.analysis.judge import judge_table_markdown
from hardcse.cli import main as hardcse
from hardcse.data.jsonl import read_jsonl
from lib.record import write_record

PARTS = ["generation_s", "scoring_s", "reference_s", "optimisation_s"]


def run(command: list[str]) -> float:
    start = time.perf_counter()
    if hardcse(command) != 0:
        sys.exit(f"failed: hardcse {' '.join(command)}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/bench-art")
    parser.add_argument("--judge", default="runs/nli-judge")
    parser.add_argument("--config", default="configs/tune-cpu.yaml")
    parser.add_argument("--anchors", type=int, default=200)
    parser.add_argument("--synthesis-temperature", type=float, default=0.8)
    parser.add_argument("--tag", default="", help="suffix of the results files, to keep several runs")
    parser.add_argument("overrides", nargs="*", help="TuneConfig overrides for the tuning run only")
    args = parser.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    config = ["--config", args.config]
    tune = ["art", "tune", *config, "--out", str(out / "tune"), "ppo.steps=30", "ppo.batch_size=16", *args.overrides]
    gen = [*config, "--anchors", "held-out", "--limit", str(args.anchors)]
    temperature = f"generator.sampling_temperature={args.synthesis_temperature}"
    commands = {
        "tune": tune,
        "raw": ["art", "generate", *gen, "--generator", "bundled:smollm2-135m", "--out", str(out / "raw"), temperature],
        "tuned": ["art", "generate", *gen, "--generator", str(out / "tune" / "generator"), "--out", str(out / "tuned")]
        + [temperature],
    }
    seconds = {name: run(command) for name, command in commands.items()}
    judge_command = ["judge", "--synthetic", str(out / "raw/synthetic.jsonl"), str(out / "tuned/synthetic.jsonl")]
    judge_command += ["--judge", args.judge, "--out", str(out / "judge.json")]
    run(judge_command)
    commands["judge"] = judge_command

    steps = [r for r in read_jsonl(out / "tune" / "ppo_log.jsonl") if not r.get("skipped")]
    per_step = {part: statistics.mean(r[part] for r in steps) for part in PARTS}
    per_step["total_s"] = sum(per_step.values())
    judged = json.loads((out / "judge.json").read_text())
    named = {"raw SmolLM2-135M": judged[str(out / "raw/synthetic.jsonl")]}
    named["ART-tuned (30 PPO steps)"] = judged[str(out / "tuned/synthetic.jsonl")]
    same = sum(
        a["positive_raw"] == b["positive_raw"]
        for a, b in zip(read_jsonl(out / "raw/synthetic.jsonl"), read_jsonl(out / "tuned/synthetic.jsonl"), strict=True)
    )
    first, last = steps[:5], steps[-5:]
    record = {
        "cli": {k: "hardcse " + " ".join(v) for k, v in commands.items()},
        "tuning_seconds": round(seconds["tune"], 1),
        "mean_seconds_per_step": {k: round(v, 2) for k, v in per_step.items()},
        "reward_first5_last5": [
            statistics.mean(r["reward"] for r in first),
            statistics.mean(r["reward"] for r in last),
        ],
        "synthesis": {k: json.loads((out / k / "synthesis.json").read_text()) for k in ("raw", "tuned")},
        "judged": named,
        "positives_identical_to_raw": same,
    }
    lines = [
        "It runs:",
        "",
        *[f"    {c}" for c in record["cli"].values()],
        "",
        f"30 PPO steps at batch 16: **{seconds['tune'] / 60:.1f} min** in all (model loading included; target 15 min).",
        "Mean seconds per step: " + ", ".join(f"{k} {v:.1f}" for k, v in per_step.items()) + ".",
        "Mean reward, first 5 steps {:.3f}, last 5 {:.3f}.".format(*record["reward_first5_last5"]),
        f"Held-out positives token-identical to the raw model's under the same seed: {same} of {args.anchors}.",
        "",
        f"On {args.anchors} held-out anchors (never seen in tuning), judged by `{args.judge}` "
        "(not the reward's discriminator):",
        "",
        judge_table_markdown(named),
        "",
    ]
    for name, r in named.items():
        lines += [f"Examples, {name}:", ""]
        lines += [f"- x: {e['anchor']}<br>y+: {e['positive']}<br>y-: {e['negative']}" for e in r["examples"]]
        lines.append("")
    name = "art_generator" + (f"-{args.tag}" if args.tag else "")
    print(write_record(name, "ART part 1: PPO speed and raw vs tuned generator", lines, record))


if __name__ == "__main__":
    main()
