"""In-run checkpoint selection under both engines: the reproduction of issue 40, recorded.

    python benchmarks/engine_selection.py [--work runs/engine-selection]

Trains the bundled encoder on the raw-LLM baseline's recorded round-1 triplets (issue 28's seed-42 run, kept in
benchmarks/results/engine_selection/) with `hardcse simcse train --config simcse-sup`, an STS-B dev evaluation at
every step (5 steps at batch 32, lr 2e-4: large enough to move the scores), once with HARDCSE_ENGINE=torch and once
with HARDCSE_ENGINE=openvino, and records both in-run dev histories, the best steps and the saved models' STS-B test
scores in benchmarks/results/engine_selection.md (both runs made afresh each time). The "before the fix" line is the
issue's measurement of the old code, quoted, not measured by this script: the OpenVINO history was flat (it scored
the first evaluation's weights every time) and picked another step.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from lib.record import RESULTS, write_record

# the raw-LLM baseline's round-1 triplets of issue 28's seed-42 run (round 1's synthesis was not withdrawn), kept
# here when that run's record went
TRIPLETS = RESULTS / "engine_selection" / "triplets.csv"
OVERRIDES = [
    "training.eval_steps=1",
    "training.max_steps=5",
    "training.batch_size=32",
    "training.learning_rate=2e-4",
    "eval_tasks=[STS-B]",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default="runs/engine-selection", help="where the two run folders go")
    args = parser.parse_args()
    work = Path(args.work)
    rows = {}
    for engine in ("torch", "openvino"):
        out = work / engine
        command = ["hardcse", "simcse", "train", "--config", "simcse-sup", "--data", str(TRIPLETS), "--out", str(out)]
        command += [*OVERRIDES, "--overwrite"]  # always trained again: a folder from older code is never reused
        env = os.environ | {"HARDCSE_ENGINE": engine, "TQDM_DISABLE": "1"}
        subprocess.run([sys.executable, "-m", "hardcse.cli", *command[1:]], check=True, env=env)
        training = json.loads((out / "model" / "training.json").read_text(encoding="utf-8"))
        test = json.loads((out / "eval.json").read_text(encoding="utf-8"))["scores"]["STS-B"]
        history = [round(h["dev"], 3) for h in training["dev_history"]]
        rows[engine] = (history, training["best_step"], round(test, 2))
    lines = [
        "| engine | in-run STS-B dev, steps 1-5 | best step | saved model, STS-B test |",
        "|---|---|---:|---:|",
        *(f"| {e} | {', '.join(f'{d:.3f}' for d in h)} | {b} | {t:.2f} |" for e, (h, b, t) in rows.items()),
        "",
        "Before the fix (issue 40, same command): torch 87.157, 87.087, 86.899, 86.781, 86.706, best step 1, test "
        "82.58; OpenVINO 87.157, 87.158, 87.157, 87.165, 87.160 (the first evaluation's weights every time), best "
        "step 4, test 81.98.",
        "",
    ]
    text = write_record(
        "engine_selection",
        "In-run checkpoint selection under both engines (issue 40)",
        lines,
        about="; each engine: `HARDCSE_ENGINE=ENGINE hardcse simcse train --config simcse-sup --data "
        f"{TRIPLETS.relative_to(RESULTS.parent.parent)} --out OUT {' '.join(OVERRIDES)}` (OpenVINO at auto "
        "precision: bfloat16 where the CPU has it).",
    )
    print(text)


if __name__ == "__main__":
    main()
