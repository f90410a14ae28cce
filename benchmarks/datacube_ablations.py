"""Data-CUBE's four settings on the bundled encoder and the built-in collection: same data, steps and seeds.

    python benchmarks/datacube_ablations.py [--seeds 1 2 3] [--out runs/datacube] [--skip-runs]

For each setting NAME in full, no-task-curriculum, no-instance-curriculum, vanilla and each seed S:
    hardcse datacube train --config configs/datacube-NAME.yaml --out OUT/NAME/seed-S training.seed=S
(the seed draws the instances, the annealing and the training order). Records go to
benchmarks/results/datacube/NAME/seed-S (see benchmarks/lib/seeded.py; a recorded run is not repeated). Writes
benchmarks/results/datacube_ablations.{json,md,png}: mean ± sd over seeds of the seven STS tasks, avg7 and STS-B
dev; the paired bootstrap 95% interval of each difference (test pairs resampled within each task, seeds paired;
`hardcse compare`); steps, best step, masked rows and the share of training instances with a margin below
0.05 before and after training (paper Fig. 2). The "minutes" column is wall-clock: run it alone on the machine.

The recorded seeds 1-3 (2026-11) were made before decontamination existed: the collection then left out only the
instances pairing the two texts of an STS test/dev pair. This code builds the decontaminated collection (SICK
entailment keeps 6 of 1,299 instances, STS-B train 32 of 1,406, MRPC 1,578 of 2,407), so a run made now is not
comparable with those records: remove benchmarks/results/datacube to rerun the table.
"""

import argparse
import json
import time
from pathlib import Path

from hardcse.cli import main as hardcse
from lib.provenance import recorded_runs
from lib.seeded import DEFAULT_SEEDS, RESULTS, record_dir, recorded_seeds, run_seeded

BENCH = "datacube"
SETTINGS = ["full", "no-task-curriculum", "no-instance-curriculum", "vanilla"]
# (baseline, method): vanilla against each curriculum, and the full method against each ablation of it
PAIRS = [
    ("vanilla", "full"),
    ("vanilla", "no-task-curriculum"),
    ("vanilla", "no-instance-curriculum"),
    ("no-task-curriculum", "full"),
    ("no-instance-curriculum", "full"),
]


def run(name: str, seed: int, out: Path) -> Path:
    def command(folder: Path, resume: bool) -> int:
        start = time.perf_counter()
        config = f"configs/datacube-{name}.yaml"
        flags = ["--resume"] if resume else []
        code = hardcse(["datacube", "train", "--config", config, "--out", str(folder), *flags, f"training.seed={seed}"])
        if not code:
            plan = json.loads((folder / "plan" / "plan.json").read_text())
            summary = {
                "task_order": plan["task_order"],
                "tour_similarity": plan["anneal"]["tour_similarity"],
                "minutes": round((time.perf_counter() - start) / 60, 1),
            }
            (folder / "plan_summary.json").write_text(json.dumps(summary, indent=2))
        return code

    return run_seeded(BENCH, name, seed, out, command, ["model/training.json", "plan_summary.json"])


def settings_table(recorded: dict[str, list[int]]) -> list[str]:
    """Per setting, means over its recorded seeds of the training figures (masked rows, underfitting shares)."""
    keys = ["steps", "best_steps", "masked_rows", "underfit_before_%", "underfit_after_%", "tour_similarity", "minutes"]
    lines = ["| setting | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for name, seeds in recorded.items():
        recs = [record_dir(BENCH, name, s) for s in seeds]
        training = [json.loads((r / "training.json").read_text()) for r in recs]
        plans = [json.loads((r / "plan_summary.json").read_text()) for r in recs]

        def mean(values: list[float], digits: int = 1) -> str:
            return f"{sum(values) / len(values):.{digits}f}"

        cells = [
            str(training[0]["steps"]),
            " / ".join(str(t["best_step"]) for t in training),
            " / ".join(str(t["masked_rows"]) for t in training),
            mean([t["underfit_share_before"] * 100 for t in training]),
            mean([t["underfit_share_after"] * 100 for t in training]),
            mean([p["tour_similarity"] for p in plans], 3),
            mean([p["minutes"] for p in plans]),
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/datacube")
    parser.add_argument("--seeds", nargs="+", type=int, default=DEFAULT_SEEDS)
    parser.add_argument("--skip-runs", action="store_true", help="build the tables from the records alone")
    args = parser.parse_args()
    out = Path(args.out)
    if not args.skip_runs:
        for seed in args.seeds:
            for name in SETTINGS:
                run(name, seed, out)
    from hardcse.evaluation.compare import compare_groups, write_comparison
    from hardcse.evaluation.results import load_result

    groups = {"bundled:minilm-l6 (start)": [load_result("bundled:minilm-l6")]}  # evaluated once, then cached
    recorded, not_run = recorded_seeds(BENCH, SETTINGS, args.seeds)
    groups |= {name: [load_result(str(record_dir(BENCH, name, s))) for s in seeds] for name, seeds in recorded.items()}
    command = f"python benchmarks/datacube_ablations.py --seeds {' '.join(map(str, args.seeds))}"
    comparison = write_comparison(
        compare_groups(groups, [(a, b) for a, b in PAIRS if {a, b} <= recorded.keys()]),
        RESULTS / "datacube_ablations",
        title="Data-CUBE ablations on the bundled encoder (2-core CPU)",
        command=command,
        extra=[
            recorded_runs({f"{n}/seed-{s}": record_dir(BENCH, n, s) for n, seeds in recorded.items() for s in seeds}),
            "",
            *not_run,
            "Per setting (best step and masked rows per seed; minutes are wall-clock, other jobs shared the machine):",
            "",
            *settings_table(recorded),
        ],
    )
    print(comparison)


if __name__ == "__main__":
    main()
