"""Supervised SimCSE on the bundled encoder with triplets from SNLI dev; STS before and after.

    python benchmarks/simcse_sup.py [--out runs/simcse-sup-snli-dev] [key=value ...]

Runs the two CLI commands below and records wall time and scores in benchmarks/results/simcse_sup.{json,md}:
    hardcse nli-triplets --nli nli/SNLI/dev.tsv --out OUT/snli_dev_triplets.csv
    hardcse train-encoder --model bundled:minilm-l6 --data OUT/snli_dev_triplets.csv --mode sup --out OUT/encoder
"""

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from hardcse.cli import main as hardcse
from hardcse.tables import sts_table_markdown
from lib.record import write_record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/simcse-sup-snli-dev")
    parser.add_argument("overrides", nargs="*", help="SimCSEConfig overrides for train-encoder")
    args = parser.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    triplets = out / "snli_dev_triplets.csv"
    commands = [
        ["nli", "triplets", "--nli", "nli/SNLI/dev.tsv", "--out", str(triplets)],
        ["simcse", "train", "--config", "configs/simcse-sup.yaml", "--data", str(triplets)]
        + ["--out", str(out / "encoder"), *args.overrides],
    ]
    start = time.perf_counter()
    for command in commands:
        if hardcse(command) != 0:
            sys.exit(f"failed: hardcse {' '.join(command)}")
    seconds = time.perf_counter() - start
    result = {
        "before": json.loads((out / "encoder" / "eval_before.json").read_text()),
        "after": json.loads((out / "encoder" / "eval.json").read_text()),
    }
    training = json.loads((out / "encoder" / "model" / "training.json").read_text())
    n_triplets = sum(1 for _ in triplets.open()) - 1
    record = {
        "cli": ["hardcse " + " ".join(c) for c in commands],
        "seconds_total": round(seconds, 1),
        "n_triplets": n_triplets,
        "training": training,
        "before": result["before"],
        "after": result["after"],
    }
    rows = {
        f"{side} ({r['model']})": {**r["scores"], "avg7": r["avg7"]}
        for side, r in (("before", result["before"]), ("after", result["after"]))
    }
    lines = [
        "It runs:",
        "",
        *[f"    {c}" for c in record["cli"]],
        "",
        f"{n_triplets} triplets; whole run (both evaluations included) {seconds / 60:.1f} min; "
        f"best STS-B dev {training['best_dev']:.2f} at step {training['best_step']}.",
        "",
        sts_table_markdown(rows),
        "",
        "STS-B dev during training: " + ", ".join(f"step {h['step']}: {h['dev']:.2f}" for h in training["dev_history"]),
        "",
    ]
    print(write_record("simcse_sup", "Supervised SimCSE on SNLI-dev triplets", lines, record))


if __name__ == "__main__":
    main()
