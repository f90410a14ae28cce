"""DiffAug against its fair baselines, its four ablations and its label-scarce runs, over seeds.

    python benchmarks/diffaug_runs.py [--seeds 1 2 3] [--out runs/diffaug] [--only NAME ...] [--skip-runs]

For each tier of TIERS (fair baselines, then ablations, then label-scarce), each seed S and each setting NAME of
the tier (configs/diffaug-NAME.yaml), in this order, so that a cut-off benchmark has whole tiers over every seed:
    hardcse diffaug train --config configs/diffaug-NAME.yaml --out OUT/NAME/seed-S training.seed=S \
        decontamination.enabled=false
(no decontamination: the first records were made before it existed, and every run of the table sees the same data;
with it, 162 of the NLI sample's 17,555 texts and none of the Wikipedia sentences match an evaluation text)
A setting whose stage-1 values equal diffaug-semi's starts from a copy of OUT/semi/seed-S/stage1
(`stage1_from=...`): the same prefixes for semi, semi-aux, sup and the fixed-prefix and prefix-only ablations.
Every method of a row pair sees the same labels: stage 1 and the aux loss use the sampled triplets' own pairs.
Records go to benchmarks/results/diffaug/NAME/seed-S (see benchmarks/lib/seeded.py; a recorded run is not repeated).
Writes benchmarks/results/diffaug.{json,md,png}: mean ± sd over seeds of the seven STS tasks, avg7 and STS-B dev,
and the paired bootstrap 95% interval of each comparison below (`hardcse compare`'s), plus steps, seconds per
step and the DiffAug / SimCSE training-time ratios (wall-clock: run it alone on the machine), and copies seed 1's
stage-1 delta/kappa curves to benchmarks/results/diffaug/stage1_diagnostics.png.
"""

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path

from hardcse.cli import main as hardcse
from hardcse.config import load_config
from hardcse.diffaug.config import DiffAugConfig
from hardcse.diffaug.train import STAGE1_FIELDS
from lib.provenance import recorded_runs
from lib.seeded import DEFAULT_SEEDS, RESULTS, record_dir, recorded_seeds, run_seeded

BENCH = "diffaug"
TIERS = [
    ["semi", "semi-aux", "semi-joint", "sup", "sup-simcse"],
    ["ablation-same-prefix", "ablation-fixed-prefixes", "ablation-prefix-only"],
    ["sup-10pct", "sup-simcse-10pct", "sup-1pct", "sup-simcse-1pct"],
]
SETTINGS = [name for tier in TIERS for name in tier]
# (baseline, method): B - A is reported
PAIRS = [
    ("semi-joint", "semi"),
    ("semi-joint", "semi-aux"),
    ("sup-simcse", "sup"),
    ("sup-simcse-10pct", "sup-10pct"),
    ("sup-simcse-1pct", "sup-1pct"),
    ("semi", "ablation-same-prefix"),
    ("semi", "ablation-fixed-prefixes"),
    ("semi", "ablation-prefix-only"),
]
# DiffAug / SimCSE training time; semi-aux against semi-joint is like for like (both compute the aux loss's pairs)
TIME_PAIRS = {"semi": "semi-joint", "semi-aux": "semi-joint", "sup": "sup-simcse"}


def shares_semi_stage1(name: str) -> bool:
    config, semi = (load_config(DiffAugConfig, f"configs/diffaug-{n}.yaml") for n in (name, "semi"))
    same = all(getattr(config, k) == getattr(semi, k) for k in STAGE1_FIELDS)
    return name != "semi" and config.method == "diffaug" and same


def run(name: str, seed: int, out: Path) -> Path:
    def command(folder: Path, resume: bool) -> int:
        start = time.perf_counter()
        args = ["diffaug", "train", "--config", f"configs/diffaug-{name}.yaml", "--out", str(folder)]
        args += ["--resume"] if resume else []
        # the records started before decontamination existed: every run of the table keeps the same data
        args += [f"training.seed={seed}", "decontamination.enabled=false"]
        stage1 = out / "semi" / f"seed-{seed}" / "stage1"
        if shares_semi_stage1(name) and (stage1 / "stage1.json").is_file():
            args.append(f"stage1_from={stage1}")
        code = hardcse(args)
        if not code:
            (folder / "minutes.json").write_text(json.dumps(round((time.perf_counter() - start) / 60, 1)))
        return code

    return run_seeded(BENCH, name, seed, out, command, ["model/training.json", "stage1/stage1.json", "minutes.json"])


def _read(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def timing_lines(recorded: dict[str, list[int]]) -> list[str]:
    """Per recorded setting, steps and seconds per step (means over its seeds), then the DiffAug / SimCSE ratios."""
    rows = {}
    for name, seeds in recorded.items():
        recs = [record_dir(BENCH, name, s) for s in seeds]
        training = [_read(r / "training.json") for r in recs]
        stage1 = [_read(r / "stage1.json") for r in recs]
        own = stage1[0] is not None and not shares_semi_stage1(name)
        s1 = statistics.mean(s["seconds_per_step"] for s in stage1) if own else None
        rows[name] = {
            "stage1_steps": stage1[0]["steps_run"] if stage1[0] else 0,
            "stage1_s_per_step": s1,
            "stage2_steps": training[0]["steps"],
            "stage2_s_per_step": statistics.mean(t["seconds_per_step"] for t in training),
            "best_steps": " / ".join(str(t["best_step"]) for t in training),
            "minutes": statistics.mean(_read(r / "minutes.json") for r in recs),
        }
    keys = list(next(iter(rows.values())))
    lines = ["| setting | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for name, row in rows.items():
        cells = [f"{v:.2f}" if isinstance(v, float) else ("" if v is None else str(v)) for v in row.values()]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "| setting | stage-2 step ratio | whole training ratio (stage 1 + stage 2) |", "|---|---:|---:|"]
    for method, baseline in TIME_PAIRS.items():
        if not {"semi", method, baseline} <= rows.keys():
            continue
        d, b = rows[method], rows[baseline]
        total_d = rows["semi"]["stage1_steps"] * rows["semi"]["stage1_s_per_step"]
        total_d += d["stage2_steps"] * d["stage2_s_per_step"]
        step_ratio = d["stage2_s_per_step"] / b["stage2_s_per_step"]
        lines.append(f"| {method} | {step_ratio:.2f} | {total_d / (b['stage2_steps'] * b['stage2_s_per_step']):.2f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/diffaug")
    parser.add_argument("--seeds", nargs="+", type=int, default=DEFAULT_SEEDS)
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run these settings only (no tables)")
    parser.add_argument("--skip-runs", action="store_true", help="build the tables from the records alone")
    args = parser.parse_args()
    out = Path(args.out)
    if not args.skip_runs:
        for tier in [args.only] if args.only else TIERS:
            for seed in args.seeds:
                for name in tier:
                    run(name, seed, out)
    if args.only:
        return
    from hardcse.evaluation.compare import compare_groups, write_comparison
    from hardcse.evaluation.results import load_result

    groups = {"bundled:minilm-l6 (start)": [load_result("bundled:minilm-l6")]}  # evaluated once, then cached
    recorded, not_run = recorded_seeds(BENCH, SETTINGS, args.seeds)  # a pair below needs both sides recorded
    groups |= {name: [load_result(str(record_dir(BENCH, name, s))) for s in seeds] for name, seeds in recorded.items()}
    diagnostics = out / "semi" / f"seed-{args.seeds[0]}" / "stage1"
    if (diagnostics / "diagnostics.png").is_file():
        for suffix in ("png", "jsonl"):
            shutil.copyfile(diagnostics / f"diagnostics.{suffix}", RESULTS / BENCH / f"stage1_diagnostics.{suffix}")
    markdown = write_comparison(
        compare_groups(groups, [(a, b) for a, b in PAIRS if {a, b} <= recorded.keys()]),
        RESULTS / "diffaug",
        title="DiffAug on the bundled encoder (2-core CPU)",
        command=f"python benchmarks/diffaug_runs.py --seeds {' '.join(map(str, args.seeds))}",
        extra=[
            recorded_runs({f"{n}/seed-{s}": record_dir(BENCH, n, s) for n, seeds in recorded.items() for s in seeds}),
            "",
            *not_run,
            "Training (means over seeds; best step per seed; stage-1 seconds where the setting trains its own):",
            "",
            *timing_lines(recorded),
            "",
            "Stage-1 curves (seed 1): `diffaug/stage1_diagnostics.png` (data: `diffaug/stage1_diagnostics.jsonl`).",
        ],
    )
    print(markdown)


if __name__ == "__main__":
    main()
