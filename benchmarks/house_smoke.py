"""Smoke runs of ART, Data-CUBE and DiffAug on the bundled models, compared with the scores the code gave before
the house refactor (one training job, run folders, configs beside their code, one CLI grammar).

    python benchmarks/house_smoke.py --out runs/house-smoke

"before" (recorded in benchmarks/results/house_smoke.json) came from commit cba5edb with the NLI head seeded
before it is created (without that, two identical ART runs differ), through the old grammar:
    hardcse art run --config configs/smoke.yaml --name art --runs-dir OUT keep_better_encoder=false
    hardcse curriculum plan --config configs/datacube-full.yaml --out OUT/dc-plan max_per_task=16 \
        queries_per_task=8 anneal_iterations=20000 batch_size=8 eval_steps=10
    hardcse curriculum train --plan OUT/dc-plan --out OUT/dc
    hardcse diffaug train --config configs/diffaug-semi.yaml --out OUT/da stage1.steps=10 stage1.batch_size=16 \
        stage1.diagnostics_every=5 stage2.max_steps=10 stage2.batch_size=16 stage2.eval_steps=5 max_examples=160
each followed by `hardcse eval` on the seven STS tasks and STS-B dev. This script runs the same settings in the new
grammar, writes the "after" scores next to "before" and prints both with their largest difference.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from hardcse.cli import main as hardcse
from lib.record import RESULTS, stamp, write_json

RECORD = RESULTS / "house_smoke.json"
TASKS = "eval_tasks=[STS12, STS13, STS14, STS15, STS16, STS-B, SICK-R, STS-B-dev]"
RUNS = {
    "art": ["art", "run", "--config", "configs/smoke.yaml", "keep_better_encoder=false"],
    "datacube": [
        *("datacube", "train", "--config", "configs/datacube-full.yaml", "max_per_task=16", "queries_per_task=8"),
        *("anneal_iterations=20000", "training.batch_size=8", "training.eval_steps=10", TASKS),
    ],
    "diffaug": [
        *("diffaug", "train", "--config", "configs/diffaug-semi.yaml", "stage1.steps=10", "stage1.batch_size=16"),
        *("stage1.diagnostics_every=5", "training.max_steps=10", "training.batch_size=16", "training.eval_steps=5"),
        *("max_examples=160", TASKS),
    ],
}


def scores(path: Path) -> dict:
    record = json.loads(path.read_text(encoding="utf-8"))
    return {**record["scores"], "avg7": record["avg7"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/house-smoke")
    args = parser.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    after = {}
    for name, command in RUNS.items():
        if hardcse([*command, "--out", str(out / name)]) != 0:
            sys.exit(f"{name} failed")
        if name == "art":  # its run evaluates STS-B only: the full suite on the trained encoder
            encoder = str(out / name / "round_1" / "encoder")
            if hardcse(["eval", "--model", encoder, "--out", str(out / "art-eval")]) != 0:
                sys.exit("eval failed")
            after[name] = scores(out / "art-eval" / "eval.json")
        else:
            after[name] = scores(out / name / "eval.json")
    recorded = json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.is_file() else {}
    # the "after" side's command, date and machine (the "before" one's: not kept)
    recorded |= {"after": after, **{f"after_{key}": value for key, value in stamp().items()}}
    write_json("house_smoke", recorded)
    for name, row in after.items():
        before = recorded.get("before", {}).get(name, {})
        gap = max((abs(row[k] - before[k]) for k in row if k in before), default=float("nan"))
        was = before.get("avg7", float("nan"))
        print(f"{name}: avg7 before {was:.4f}, after {row['avg7']:.4f}; largest gap over the tasks {gap:.4f}")


if __name__ == "__main__":
    main()
