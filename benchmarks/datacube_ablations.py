"""Data-CUBE's four settings on the bundled encoder and the built-in collection: same data, steps and seed.

    python benchmarks/datacube_ablations.py [--out runs/datacube]

For each of configs/datacube-{full,no-task-curriculum,no-instance-curriculum,vanilla}.yaml:
    hardcse curriculum plan --config CONFIG --out OUT/NAME/plan
    hardcse curriculum train --plan OUT/NAME/plan --out OUT/NAME/encoder
and the starting encoder once (hardcse eval). Writes benchmarks/results/datacube_ablations.{json,md}: the seven
STS tasks, their average, STS-B dev, and the share of training instances with a positive/negative margin below
0.05 before and after training (paper Fig. 2).
"""

import argparse
import json
import shutil
import time
from pathlib import Path

from hardcse.cli import main as hardcse
from hardcse.report.tables import sts_table_markdown

RESULTS = Path(__file__).parent / "results"
SETTINGS = ["full", "no-task-curriculum", "no-instance-curriculum", "vanilla"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/datacube")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="applied to every setting's plan")
    args = parser.parse_args()
    out = Path(args.out)
    rows, extra = {}, {}
    base = out / "bundled"
    if not (base / "eval.json").is_file():
        hardcse(["eval", "--model", "bundled:minilm-l6", "--out", str(base)])
    ev = json.loads((base / "eval.json").read_text())
    rows["bundled:minilm-l6 (start)"] = {**ev["scores"], "avg7": ev["avg7"]}
    for name in SETTINGS:
        folder = out / name
        shutil.rmtree(folder, ignore_errors=True)
        start = time.perf_counter()
        config = f"configs/datacube-{name}.yaml"
        if hardcse(["datacube", "train", "--config", config, "--out", str(folder), *args.overrides]):
            raise SystemExit(f"Data-CUBE failed for {name}")
        minutes = (time.perf_counter() - start) / 60
        ev = json.loads((folder / "eval.json").read_text())
        training = json.loads((folder / "model" / "training.json").read_text())
        plan = json.loads((folder / "plan" / "plan.json").read_text())
        rows[name] = {**ev["scores"], "avg7": ev["avg7"]}
        extra[name] = {
            "steps": training["steps"],
            "best_step": training["best_step"],
            "underfit_before_%": round(training["underfit_share_before"] * 100, 1),
            "underfit_after_%": round(training["underfit_share_after"] * 100, 1),
            "tour_similarity": round(plan["anneal"]["tour_similarity"], 3),
            "task_order": " > ".join(plan["task_order"]),
            "minutes": round(minutes, 1),
        }
    keys = list(next(iter(extra.values())))
    lines = [
        "# Data-CUBE ablations on the bundled encoder (2-core CPU)",
        "",
        f"`python benchmarks/datacube_ablations.py {' '.join(args.overrides)}` (commands: the script's docstring)",
        "",
        sts_table_markdown(rows),
        "",
        "| setting | " + " | ".join(keys) + " |",
        "|---|" + "---|" * len(keys),
        *(f"| {name} | " + " | ".join(str(e[k]) for k in keys) + " |" for name, e in extra.items()),
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "datacube_ablations.json").write_text(json.dumps({"sts": rows, "training": extra}, indent=2))
    (RESULTS / "datacube_ablations.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
