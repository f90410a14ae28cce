"""The quickstart's discriminator at several training sizes: seconds and dev accuracy.

    python benchmarks/discriminator_sizes.py [--sizes 2000 4000 8000 16000]

Each size trains the NLI model the quickstart trains in its run (configs/quickstart.yaml's
``discriminator_training``, only ``max_examples`` changed) into a temporary folder, from nothing (no cache), and
reads its ``training.json``: steps, seconds a step and the accuracy on the 2,000 dev pairs. The quickstart evaluates
once, after the last step (``eval_steps`` 1000 is more than its steps), so no checkpoint is selected on dev.
Writes benchmarks/results/discriminator_sizes.{md,json}. Run it alone on the machine: it times.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def train_once(size: int, out: Path) -> dict:
    from hardcse.art.config import ArtRunConfig
    from hardcse.config import load_config
    from hardcse.discriminator.train import train_nli

    config = load_config(ArtRunConfig, "configs/quickstart.yaml", [f"discriminator_training.max_examples={size}"])
    start = time.perf_counter()
    train_nli(config.discriminator_training, out)
    seconds = time.perf_counter() - start
    record = json.loads((out / "training.json").read_text(encoding="utf-8"))
    return {
        "pairs": size,
        "seconds": round(seconds, 1),
        "steps": record["steps"],
        "seconds_per_step": round(record["seconds_per_step"], 3),
        "dev_accuracy": record["best_dev"],
    }


def _binomial_interval(accuracy: float, n: int = 2000) -> str:
    p = accuracy / 100
    half = 1.96 * (p * (1 - p) / n) ** 0.5 * 100
    return f"[{accuracy - half:.1f}, {accuracy + half:.1f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 4000, 8000, 16000])
    args = parser.parse_args()
    from collections import Counter

    from hardcse.art.config import ArtRunConfig
    from hardcse.config import load_config
    from hardcse.data.nli import read_nli_files
    from lib.record import write_record

    dev = read_nli_files(load_config(ArtRunConfig, "configs/quickstart.yaml", []).discriminator_training.dev_files)
    majority = 100 * Counter(dev.labels).most_common(1)[0][1] / len(dev.labels)
    rows = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(train_once(size, Path(tmp) / "nli"))
        print(json.dumps(rows[-1]), flush=True)
    lines = [
        "The NLI model the quickstart trains in its run, trained from nothing at each size (only `max_examples`",
        "changed). Accuracy: three classes on the 2,000 dev pairs, once after the last step. The most frequent dev",
        f"label is {majority:.1f}% of them: a model that always said it would score that.",
        "",
        "| pairs | steps | seconds | seconds a step | dev accuracy (%) | 95% interval |",
        "|---:|---:|---:|---:|---:|---|",
        *(
            f"| {r['pairs']:,} | {r['steps']} | {r['seconds']} | {r['seconds_per_step']} | {r['dev_accuracy']:.2f} "
            f"| {_binomial_interval(r['dev_accuracy'])} |"
            for r in rows
        ),
        "",
        "The interval is the binomial one of 2,000 dev pairs (normal approximation). One training a size: the",
        "spread between training seeds is not measured here and adds to it.",
        "",
    ]
    print(
        write_record(
            "discriminator_sizes", "The quickstart's discriminator: time and accuracy by size", lines, {"sizes": rows}
        )
    )


if __name__ == "__main__":
    main()
