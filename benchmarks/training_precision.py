"""The quickstart's discriminator trained in float32 and in bfloat16 mixed precision: seconds and dev accuracy.

    python benchmarks/training_precision.py [--seeds 42 7]

For each training seed and ``training.dtype`` (float32; bfloat16: the Trainer's autocast, weights and optimizer in
float32), the NLI model the quickstart trains in its run (configs/quickstart.yaml's ``discriminator_training``,
8,000 pairs) is trained from nothing into a temporary folder. Reported: steps, seconds, seconds a step, and the
accuracy on the 2,000 dev pairs, each pair predicted by the saved model in float32 (the model a run then loads).
bfloat16 - float32 per seed with its 95% paired bootstrap interval over dev pairs (same seed, same pairs, same
order), and the mean training time of each precision. Writes benchmarks/results/training_precision.{md,json}.
Run it alone on the machine: it times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

DTYPES = ("float32", "bfloat16")


def train_once(seed: int, dtype: str, out: Path) -> tuple[dict, np.ndarray]:
    """One training; its numbers, and 1/0 per dev pair: predicted right by the saved model."""
    from hardcse.art.config import ArtRunConfig
    from hardcse.config import load_config
    from hardcse.data.nli import read_nli_files
    from hardcse.discriminator.nli import NLIDiscriminator
    from hardcse.discriminator.train import train_nli

    overrides = [f"discriminator_training.training.seed={seed}", f"discriminator_training.training.dtype={dtype}"]
    config = load_config(ArtRunConfig, "configs/quickstart.yaml", overrides).discriminator_training
    start = time.perf_counter()
    train_nli(config, out)
    seconds = time.perf_counter() - start
    record = json.loads((out / "training.json").read_text(encoding="utf-8"))
    dev = read_nli_files(config.dev_files)
    probs = NLIDiscriminator.load(str(out)).predict_proba(dev.premises, dev.hypotheses)
    correct = (np.asarray(probs).argmax(axis=1) == np.asarray(dev.labels)).astype(float)
    row = {
        "seed": seed,
        "dtype": dtype,
        "seconds": round(seconds, 1),
        "steps": record["steps"],
        "seconds_per_step": round(record["seconds_per_step"], 3),
        "dev_accuracy": round(100 * float(correct.mean()), 2),
    }
    return row, correct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 7])
    args = parser.parse_args()
    from hardcse.stats import paired_bootstrap
    from lib.record import write_record

    rows, differences = [], {}
    for seed in args.seeds:
        correct = {}
        for dtype in DTYPES:
            with tempfile.TemporaryDirectory() as tmp:
                row, correct[dtype] = train_once(seed, dtype, Path(tmp) / "nli")
            rows.append(row)
            print(json.dumps(row), flush=True)
        boot = paired_bootstrap(100 * correct["float32"], 100 * correct["bfloat16"])
        differences[str(seed)] = boot["difference"].to_dict()
    result = {"seeds": args.seeds, "runs": rows, "differences": differences}
    print(
        write_record(
            "training_precision", "The quickstart's discriminator in float32 and in bfloat16", markdown(result), result
        )
    )


def markdown(result: dict) -> list[str]:
    from lib.record import signed_interval, verdict

    rows = result["runs"]
    lines = [
        "The NLI model the quickstart trains in its run (8,000 pairs, one epoch), trained from nothing per seed and "
        "`training.dtype`. Accuracy: three classes on the 2,000 dev pairs, predicted by the saved model in float32.",
        "",
        "| seed | training.dtype | steps | seconds | seconds a step | dev accuracy (%) |",
        "|---:|---|---:|---:|---:|---:|",
        *(
            f"| {r['seed']} | {r['dtype']} | {r['steps']} | {r['seconds']} | {r['seconds_per_step']} "
            f"| {r['dev_accuracy']:.2f} |"
            for r in rows
        ),
        "",
        "bfloat16 - float32, dev accuracy in points (95% paired bootstrap interval over the dev pairs, one training "
        "a side and seed):",
        "",
    ]
    for seed, d in result["differences"].items():
        lines.append(f"- seed {seed}: {signed_interval(d, 2)} ({verdict(d)})")
    seconds = {dtype: statistics.mean(r["seconds"] for r in rows if r["dtype"] == dtype) for dtype in DTYPES}
    lines += [
        "",
        f"Mean training time: {seconds['float32']:.1f} s in float32, {seconds['bfloat16']:.1f} s in bfloat16 "
        f"({seconds['bfloat16'] / seconds['float32']:.2f}x). The intervals cover the dev pairs, not the spread "
        "between training seeds: each seed is one training a side.",
        "",
    ]
    return lines


if __name__ == "__main__":
    main()
