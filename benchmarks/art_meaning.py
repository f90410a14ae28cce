"""Does RL teach the generator meaning? PPO and GRPO at cpu-full's RL size, then raw vs tuned on held-out anchors.

    python benchmarks/art_meaning.py [--configs configs/cpu-full.yaml configs/cpu-full-grpo.yaml] [--anchors 500]
                                     [--out runs/meaning] [--tag NAME] [key=value ...]

For each config (the overrides apply to all): the generator is tuned as in round 1 of ``hardcse art run``
(``tune_run``: RL against the dual reward with the config's discriminator and starting encoder; a killed tuning
resumes), then the raw and the tuned generator write for the first ``--anchors`` held-out anchors at the synthesis
temperature (hardcse/art/synthesis/heldout.py, as the run's ``heldout.json``): per anchor P(target) among parsed answers
(the reward's discriminator), judged accuracy (the config's ``judge``, not the reward's discriminator), r2 among
parsed answers, the reward among parsed answers, parse failures; tuned - raw with its 95% paired bootstrap
interval over anchors. Beside it, from the RL log, what could make meaning move or not: the spread of the reward
within a step (all answers, parsed answers, GRPO's groups), the KL to the reference and its coefficient, the
policy's movement per update (approx_kl / kl_token, clipfrac), entropy, parse failures and length, averaged over the
first and the last 5 steps. Writes benchmarks/results/art_meaning[-TAG].{json,md}; the run folders keep the rest.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from hardcse.art.config import ArtRunConfig
from hardcse.art.rl.rl_log import RL_LOG
from hardcse.art.synthesis.heldout import compare_markdown, held_out_comparison
from hardcse.cli.art import tune_run
from hardcse.config import load_config
from hardcse.data.jsonl import read_jsonl
from hardcse.discriminator.nli import load_discriminator
from hardcse.encoder.build import load_encoder
from lib.record import signed_interval, write_record

MEANING = ("p_target_parsed", "judged_correct", "r2_parsed", "reward_parsed", "parse_failure", "reward")
DIAGNOSTICS = (
    "reward",
    "reward_parsed",
    "p_target",
    "r2",
    "reward_std",
    "reward_parsed_std",
    "reward_std_in_group",
    "parse_failure_rate",
    "response_tokens",
    "truncated",
    "kl",
    "kl_coef",
    "approx_kl",
    "kl_token",
    "clipfrac",
    "entropy",
)


def rl_diagnostics(log: list[dict], window: int = 5) -> dict:
    """Each diagnostic's mean over the first and the last ``window`` steps (those the log has)."""
    steps = [row for row in log if not row.get("skipped")]
    out = {}
    for key in DIAGNOSTICS:
        values = [[row.get(key) for row in part] for part in (steps[:window], steps[-window:])]
        if all(v is None for part in values for v in part):
            continue
        first, last = ([float(v) for v in part if v is not None] for part in values)
        out[key] = {"first": float(np.mean(first)), "last": float(np.mean(last))}
    return out


def step_seconds(log: list[dict]) -> float | None:
    """Mean seconds of an RL step: its timed parts (generation_s, scoring_s, ...) summed."""
    totals = [sum(v for k, v in row.items() if k.endswith("_s")) for row in log if not row.get("skipped")]
    return round(float(np.mean(totals)), 2) if totals else None


def markdown(record: dict) -> list[str]:
    """The page's lines under the record's header."""
    lines = [
        "| config | RL | " + " | ".join(f"{m} (tuned - raw)" for m in MEANING) + " |",
        "|---|---|" + "---:|" * len(MEANING),
    ]
    for name, run in record["runs"].items():
        cells = []
        for measure in MEANING:
            d = (run["heldout"].get(measure) or {}).get("difference")
            mark = " *" if d and (d["low"] > 0 or d["high"] < 0) else ""
            cells.append(f"{signed_interval(d)}{mark}" if d else "-")
        lines.append(f"| `{name}` | {run['algorithm']}, {run['rl_minutes']:.1f} min | " + " | ".join(cells) + " |")
    lines += ["", "\\* the interval excludes zero.", ""]
    for name, run in record["runs"].items():
        lines += [f"## `{name}`", "", compare_markdown(run["heldout"]), "", "RL log, first and last 5 steps:", ""]
        lines += ["| measure | first 5 | last 5 |", "|---|---:|---:|"]
        lines += [f"| {k} | {v['first']:.4f} | {v['last']:.4f} |" for k, v in run["rl"].items()]
        lines.append("")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=["configs/cpu-full.yaml", "configs/cpu-full-grpo.yaml"])
    parser.add_argument("--anchors", type=int, default=500)
    parser.add_argument("--out", type=Path, default=Path("runs/meaning"))
    parser.add_argument("--tag", default="", help="suffix of the results files and run folders")
    parser.add_argument("overrides", nargs="*", help="config overrides for every run, e.g. rl.learning_rate=1e-3")
    args = parser.parse_args()
    suffix = f"-{args.tag}" if args.tag else ""
    runs = {}
    for path in args.configs:
        config = load_config(ArtRunConfig, path, args.overrides)
        name = Path(path).stem + suffix
        folder = args.out / name
        start = time.perf_counter()
        tuned = folder / "generator"
        if not tuned.is_dir():
            tune_run(config, folder, resume=folder.is_dir())
        rl_minutes = (time.perf_counter() - start) / 60
        log = read_jsonl(tuned / RL_LOG)
        heldout = held_out_comparison(
            config,
            load_discriminator(config.discriminator, config.device),
            load_encoder(config.encoder, config.pooling, device=config.device),
            str(tuned),
            folder / "heldout",
            args.anchors,
        )
        runs[name] = {
            "config": path,
            "algorithm": config.rl.algorithm,
            "rl_minutes": round(rl_minutes, 1),  # 0 when the tuned generator was already there
            "rl_seconds_per_step": step_seconds(log),
            "heldout": heldout,
            "rl": rl_diagnostics(log),
        }
        changes = [f"{m} {heldout[m]['difference']['estimate']:+.3f}" for m in MEANING if heldout.get(m)]
        print(f"{name}: " + ", ".join(changes), flush=True)
    record = {"overrides": args.overrides, "runs": runs}
    title = "Does RL teach meaning? Raw vs tuned generator on held-out anchors"
    print(write_record(f"art_meaning{suffix}", title, markdown(record), record))


if __name__ == "__main__":
    main()
