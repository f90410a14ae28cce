"""The three compositions of docs/compose.md against their single-method counterparts, at CPU scale.

    python benchmarks/compositions.py [--out runs/compositions] [--skip-runs]

Runs, in this order (a finished run is not repeated, a cut-off one is resumed; every config keeps its own seed):
    hardcse art run --config quickstart --out OUT/art-quickstart                      # ART alone
    hardcse art run --config compose-art-easy-to-hard --out OUT/compose-a             # (a)
    hardcse datacube train --config datacube-full --out OUT/datacube-full             # Data-CUBE alone
    hardcse datacube train --config compose-art-in-datacube --out OUT/compose-c triplet_tasks=[OUT/art-quickstart]
    hardcse diffaug train --config diffaug-semi --out OUT/diffaug-semi                # DiffAug alone
    hardcse art run --config compose-diffaug-then-art --out OUT/compose-b encoder=OUT/diffaug-semi      # (b)
Records go to benchmarks/results/compositions/NAME (config.yaml, eval.json.gz, training.json; see lib/seeded.py).
Writes benchmarks/results/compositions.{json,md,png}: the seven STS tasks, avg7 and STS-B dev of each run and the
paired bootstrap 95% interval (test pairs resampled within each task; `hardcse compare`'s) of each composition
against its counterparts. One seed per run (92 min for all six on 2 cores, 2026-11-24): the interval covers the
test sets' sampling, not the spread between training seeds, which the DiffAug and Data-CUBE benchmarks measure.
"""

import argparse
import time
from pathlib import Path

from hardcse.cli import main as hardcse
from hardcse.evaluation.results import last_round_eval_path
from lib.provenance import recorded_runs
from lib.seeded import RESULTS, keep_record

BENCH = "compositions"
# name: (command, config, overrides with OUT for {out}); in the order they must run (b and c read earlier runs)
RUNS = {
    "art-quickstart": ("art run", "quickstart", []),
    "compose-a": ("art run", "compose-art-easy-to-hard", []),
    "datacube-full": ("datacube train", "datacube-full", []),
    "compose-c": ("datacube train", "compose-art-in-datacube", ["triplet_tasks=[{out}/art-quickstart]"]),
    "diffaug-semi": ("diffaug train", "diffaug-semi", []),
    "compose-b": ("art run", "compose-diffaug-then-art", ["encoder={out}/diffaug-semi"]),
}
# (counterpart, composition): B - A is reported
PAIRS = [
    ("art-quickstart", "compose-a"),
    ("diffaug-semi", "compose-b"),
    ("art-quickstart", "compose-b"),
    ("datacube-full", "compose-c"),
]


def final_eval(folder: Path) -> str:
    """Where a run folder's final evaluation is: its eval.json, or an ART run's last evaluated round's."""
    if (folder / "eval.json").is_file():
        return "eval.json"
    path = last_round_eval_path(folder)
    if path is None:
        raise SystemExit(f"{folder}: no eval.json; rerun the benchmark to resume it")
    return path.relative_to(folder).as_posix()


def run(name: str, out: Path) -> None:
    """The run (resumed if cut off; a finished one skips every stage) and its record, unless that exists."""
    dest = RESULTS / BENCH / name
    if (dest / "eval.json.gz").is_file():
        return
    command, config, overrides = RUNS[name]
    folder = out / name
    resume = ["--resume"] if (folder / "config.yaml").is_file() else []
    print(f"== {BENCH}: {name} -> {folder}{' (resumed)' if resume else ''}", flush=True)
    start = time.perf_counter()
    args = [*command.split(), "--config", config, "--out", str(folder), *resume]
    if hardcse(args + [o.format(out=out) for o in overrides]):
        raise SystemExit(f"{name} failed; rerun the benchmark to resume it")
    print(f"== {name}: {(time.perf_counter() - start) / 60:.1f} min", flush=True)
    training = [p.relative_to(folder).as_posix() for p in sorted(folder.glob("**/training.json"))[-1:]]
    keep_record(folder, dest, training, final_eval(folder))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/compositions")
    parser.add_argument("--skip-runs", action="store_true", help="build the table from the records alone")
    args = parser.parse_args()
    if not args.skip_runs:
        for name in RUNS:
            run(name, Path(args.out))
    from hardcse.evaluation.compare import compare_groups, write_comparison
    from hardcse.evaluation.results import load_result

    recorded = {name: RESULTS / BENCH / name for name in RUNS if (RESULTS / BENCH / name / "eval.json.gz").is_file()}
    groups = {name: [load_result(str(folder))] for name, folder in recorded.items()}
    missing = [name for name in RUNS if name not in recorded]
    markdown = write_comparison(
        compare_groups(groups, [(a, b) for a, b in PAIRS if {a, b} <= recorded.keys()]),
        RESULTS / BENCH,
        title="The methods composed, against their counterparts (bundled models, 2-core CPU, one seed each)",
        command="python benchmarks/compositions.py",
        extra=[recorded_runs(recorded), *(["", f"Not run yet: {', '.join(missing)}.", ""] if missing else [])],
    )
    print(markdown)


if __name__ == "__main__":
    main()
