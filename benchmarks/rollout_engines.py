"""Does it matter who samples RL's rollouts? A round of RL with PyTorch's and with OpenVINO's rollouts, then both
tuned generators on the same held-out anchors.

    python benchmarks/rollout_engines.py [--anchors 300] [--seeds 42]

For each ``rl.rollout_engine`` (torch: the policy samples itself; openvino: OpenVINO GenAI with the policy's current
LoRA adapter) and seed: cpu-full's first round of RL (25 PPO steps x 16 rollouts in minibatches of 4, lr 5e-4, the
bundled SmolLM2-135M and MiniLM), rewarded by the NLI model the quickstart trains (copied from this machine's cache
when trained before: hardcse/discriminator/kept.py), then the held-out comparison a run makes (cpu-full's first
``--anchors`` held-out anchors, the raw and the tuned generator at the synthesis temperature, in OpenVINO;
hardcse/art/synthesis/heldout.py).

Reported per engine: the RL step's median seconds and parts, the held-out tuned - raw reward and kept fraction
with their paired intervals (what a run's report says), and per anchor, openvino - torch on what the tuned
generators write (reward, kept, parse failures, answer lengths), each with its 95% paired bootstrap interval over
anchors. One seed a side measures one tuning each: those intervals cover the anchors, not the spread between
tunings. With several seeds the record adds, per seed, OpenVINO - PyTorch on the RL step's and its generation's
seconds and on the
held-out tuned - raw reward and kept fraction, and their mean over seeds with a t interval over seeds (the seed is
the unit: each tuning counts once). Every seed runs PyTorch's rollouts first, so a drift of the machine during a
seed would fall on the timing difference.

Writes benchmarks/results/rollout_engines.{md,json}. Run it alone on the machine: it times.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import numpy as np

ENGINES = ("torch", "openvino")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--anchors", type=int, default=300, help="held-out anchors each tuned generator writes for")
    parser.add_argument("--seeds", type=int, nargs="+", default=[42], help="RL seeds, each run with both engines")
    args = parser.parse_args()
    from art_profile import PARTS, median_seconds
    from hardcse.art.config import ArtRunConfig
    from hardcse.art.rl.tuning import tune_generator
    from hardcse.art.synthesis.heldout import held_out_comparison
    from hardcse.config import load_config
    from hardcse.data.jsonl import read_jsonl
    from hardcse.discriminator.kept import train_or_copy
    from hardcse.discriminator.nli import NLIDiscriminator
    from hardcse.encoder.build import load_encoder
    from hardcse.engines import Engine
    from hardcse.stats import paired_bootstrap
    from lib.record import write_record
    from synthesis_prefix import MEASURES

    quickstart = load_config(ArtRunConfig, "configs/quickstart.yaml", [])
    engine = Engine("openvino")
    runs: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        nli = Path(tmp) / "nli"
        train_or_copy(quickstart.discriminator_training, nli)
        discriminator = NLIDiscriminator.load(str(nli))
        for seed in args.seeds:
            for rollouts in ENGINES:
                overrides = [f"discriminator={nli}", "judge=null", "reuse=false", f"rl.rollout_engine={rollouts}"]
                config = load_config(ArtRunConfig, "configs/cpu-full.yaml", [*overrides, f"rl.seed={seed}"])
                work = Path(tmp) / f"{rollouts}-{seed}"
                tuned = tune_generator(config, work / "rl", work / "generator", discriminator=discriminator)
                log = read_jsonl(tuned / "rl_log.jsonl")
                parts, step = median_seconds(log[1:])
                compared = held_out_comparison(
                    config,
                    discriminator,
                    load_encoder(config.encoder),
                    str(tuned),
                    work / "heldout",
                    args.anchors,
                    engine,
                )
                runs[f"{rollouts}-{seed}"] = {
                    "rollouts": rollouts,
                    "seed": seed,
                    "step_seconds": round(step, 2),
                    "parts": {p: round(parts[p], 3) for p in PARTS},
                    "response_tokens": round(statistics.mean(r["response_tokens"] for r in log), 1),
                    "reward_last_5_steps": round(statistics.mean(r["reward"] for r in log[-5:]), 4),
                    "heldout": {k: compared[k] for k in ("anchors", "reward", "parse_failure")},
                    "records": read_jsonl(work / "heldout" / "tuned" / "synthetic.jsonl"),
                    "raw_records": read_jsonl(work / "heldout" / "raw" / "synthetic.jsonl"),
                }
                print(rollouts, seed, runs[f"{rollouts}-{seed}"]["step_seconds"], flush=True)
    differences = {}
    for seed in args.seeds:
        a, b = runs[f"torch-{seed}"], runs[f"openvino-{seed}"]
        differences[seed] = {}
        for name, measure in MEASURES.items():
            x, y = (np.array([measure(r) for r in side["records"]], dtype=float) for side in (a, b))
            differences[seed][name] = {k: v.to_dict() for k, v in paired_bootstrap(x, y).items()}
        for side in (a, b):  # the kept fraction, tuned - raw, as the run's report would give it
            raw, tuned = (np.array([MEASURES["kept"](r) for r in side[key]]) for key in ("raw_records", "records"))
            side["heldout"]["kept"] = {k: v.to_dict() for k, v in paired_bootstrap(raw, tuned).items()}
    for side in runs.values():
        del side["records"], side["raw_records"]  # per-anchor texts stay out of the record
    result = {"anchors": args.anchors, "seeds": args.seeds, "runs": runs, "differences": differences}
    print(write_record("rollout_engines", "RL's rollouts in PyTorch and in OpenVINO", markdown(result), result))


def markdown(result: dict) -> list[str]:
    from art_profile import PARTS
    from lib.record import difference_cell, signed_interval

    lines = [
        "cpu-full's first round of RL (25 PPO steps x 16 rollouts) per rollout engine and seed, the quickstart's "
        f"discriminator rewarding; then both tuned generators and the raw one on the first {result['anchors']} "
        "held-out anchors (OpenVINO, the CPU's precision).",
        "",
        "| rollouts | seed | RL step s | " + " | ".join(PARTS) + " | response tokens | reward, last 5 steps "
        "| held-out reward, tuned - raw | held-out kept, tuned - raw |",
        "|---|---:|---:|" + "---:|" * len(PARTS) + "---:|---:|---|---|",
    ]
    for run in result["runs"].values():
        held = run["heldout"]
        cells = [run["rollouts"], run["seed"], f"{run['step_seconds']:.2f}", *(f"{run['parts'][p]:.2f}" for p in PARTS)]
        cells += [f"{run['response_tokens']:.1f}", f"{run['reward_last_5_steps']:+.3f}"]
        cells += [signed_interval(held["reward"]["difference"]), signed_interval(held["kept"]["difference"])]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    for seed, differences in result["differences"].items():
        lines += [
            "",
            f"Seed {seed}, what the two tuned generators write per held-out anchor (95% paired bootstrap intervals):",
            "",
            "| measure | PyTorch rollouts | OpenVINO rollouts | OpenVINO - PyTorch |",
            "|---|---:|---:|---|",
        ]
        for name, d in differences.items():
            diff = d["difference"]
            lines.append(f"| {name} | {d['a']['estimate']:.3f} | {d['b']['estimate']:.3f} | {difference_cell(diff)} |")
    lines += [
        "",
        "One tuning a side and seed: the intervals above are over held-out anchors, not over tunings, so they do not "
        "cover how much two tunings with the same engine differ.",
        "",
    ]
    if len(result["seeds"]) > 1:
        lines += over_seeds(result)
    return lines


def over_seeds(result: dict) -> list[str]:
    """OpenVINO - PyTorch per seed on the held-out tuned - raw estimates, and the mean over seeds with its 95% t
    interval (the seed the unit)."""
    from scipy import stats

    from lib.record import difference_cell

    runs, seeds = result["runs"], result["seeds"]
    measures = {
        "RL step seconds": lambda run: run["step_seconds"],
        "generation seconds (of the step)": lambda run: run["parts"]["generation"],
        "held-out reward, tuned - raw": lambda run: run["heldout"]["reward"]["difference"]["estimate"],
        "held-out kept, tuned - raw": lambda run: run["heldout"]["kept"]["difference"]["estimate"],
    }
    lines = [
        f"Over the {len(seeds)} seeds (OpenVINO - PyTorch per seed; the mean with its 95% t interval over seeds):",
        "",
        "| measure | PyTorch, mean | OpenVINO, mean | "
        + " | ".join(f"seed {s}" for s in seeds)
        + " | mean difference |",
        "|---|---:|---:|" + "---:|" * len(seeds) + "---|",
    ]
    for name, measure in measures.items():
        torch_values = np.array([measure(runs[f"torch-{s}"]) for s in seeds])
        openvino_values = np.array([measure(runs[f"openvino-{s}"]) for s in seeds])
        d = openvino_values - torch_values
        half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
        diff = {"estimate": float(d.mean()), "low": float(d.mean() - half), "high": float(d.mean() + half)}
        mean = ".2f" if "seconds" in name else "+.3f"
        cells = [f"{torch_values.mean():{mean}}", f"{openvino_values.mean():{mean}}", *(f"{x:+.3f}" for x in d)]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {difference_cell(diff)} |")
    return lines + [""]


if __name__ == "__main__":
    main()
