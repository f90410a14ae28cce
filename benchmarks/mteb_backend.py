"""Both evaluation backends side by side on one encoder: hardcse's STS suite and MTEB's own STS evaluator.

    python benchmarks/mteb_backend.py [--model bundled:minilm-l6]

Runs the two commands below (the seven tasks, STS-B dev and MTEB's SICK-R, SICK-R-full) and writes
benchmarks/results/mteb_backend.{json,md}: both backends' scores, their largest difference and both wall times
(MTEB encodes both sides of every pair; hardcse each distinct sentence once). Timings are wall-clock: run it
alone on the machine.
    hardcse eval --model MODEL --tasks TASKS --out runs/mteb-backend/hardcse
    hardcse eval --model MODEL --tasks TASKS --backend mteb --out runs/mteb-backend/mteb
"""

import argparse
import json
import shutil
import sys
from pathlib import Path

from hardcse.cli import main as hardcse
from hardcse.data.sts import ALL_TASKS
from hardcse.tables import sts_table_markdown
from lib.record import write_record

TASKS = [*ALL_TASKS, "SICK-R-full"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="bundled:minilm-l6")
    parser.add_argument("--out", default="runs/mteb-backend")
    args = parser.parse_args()
    records = {}
    for backend in ("hardcse", "mteb"):
        folder = Path(args.out) / backend
        shutil.rmtree(folder, ignore_errors=True)
        command = ["eval", "--model", args.model, "--tasks", *TASKS, "--backend", backend, "--out", str(folder)]
        if hardcse(command) != 0:
            sys.exit(f"failed: hardcse {' '.join(command)}")
        records[backend] = json.loads((folder / "eval.json").read_text(encoding="utf-8"))
    difference = max(abs(records["hardcse"]["scores"][t] - records["mteb"]["scores"][t]) for t in TASKS)
    rows = {f"{args.model} ({b})": {**r["scores"], "avg7": r["avg7"]} for b, r in records.items()}
    seconds = {b: r["seconds"] for b, r in records.items()}
    md = (
        f"{sts_table_markdown(rows)}\n\n"
        f"Largest difference over the tasks: {difference:.4f}. Wall time: hardcse {seconds['hardcse']:.1f} s, "
        f"MTEB {seconds['mteb']:.1f} s ({records['mteb']['backend']}). SICK-R is SentEval's 4,927 test pairs (MTEB "
        "runs it as SICK-R-SentEval), SICK-R-full MTEB's SICK-R (all 9,927 pairs).\n"
    )
    summary = {"max_difference": difference, "seconds": seconds, "scores": rows}
    print(write_record("mteb_backend", "Evaluation backends side by side", md, summary))


if __name__ == "__main__":
    main()
