"""DiffAug against its SimCSE baselines on the bundled encoder: same start, data, order, steps and seed.

    python benchmarks/diffaug_runs.py [--out runs/diffaug] [--also NAME ...]

Runs, in this order (NAME = configs/diffaug-NAME.yaml):
    hardcse diffaug train --config configs/diffaug-semi.yaml --out OUT/semi
    hardcse diffaug train --config configs/diffaug-sup.yaml --out OUT/sup --stage 2
    hardcse diffaug train --config configs/diffaug-semi-simcse.yaml --out OUT/semi-simcse
    hardcse diffaug train --config configs/diffaug-sup-simcse.yaml --out OUT/sup-simcse
    then each --also NAME (e.g. ablation-same-prefix, semi-aux, sup-10pct) into OUT/NAME.
A DiffAug config whose stage-1 values equal diffaug-semi's starts from a copy of OUT/semi/stage1 and runs
`--stage 2` (for `stages: [1]`, prefix-tuning only, the copy is the model and is evaluated with `hardcse eval`).
A run whose folder already has eval.json is not repeated. Each ends with the STS suite.
Writes benchmarks/results/diffaug.{json,md} (seven STS tasks, average, STS-B dev,
best step, seconds per optimiser step for stage 1 and stage 2, the DiffAug/SimCSE time ratios) and copies stage 1's
delta/kappa curves to benchmarks/results/diffaug/stage1_diagnostics.png. Run it alone on the machine: the step
times are wall-clock.
"""

import argparse
import json
import shutil
import time
from pathlib import Path

from hardcse.cli import main as hardcse
from hardcse.config import load_config
from hardcse.diffaug.config import DiffAugConfig
from hardcse.diffaug.train import STAGE1_FIELDS
from hardcse.report.tables import sts_table_markdown

RESULTS = Path(__file__).parent / "results"
MAIN = ["semi", "sup", "semi-simcse", "sup-simcse"]
PAIRS = {"semi": "semi-simcse", "sup": "sup-simcse"}


def _read(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def shares_semi_stage1(name: str) -> bool:
    config, semi = (load_config(DiffAugConfig, f"configs/diffaug-{n}.yaml") for n in (name, "semi"))
    same = all(getattr(config, k) == getattr(semi, k) for k in STAGE1_FIELDS)
    return name != "semi" and config.method == "diffaug" and same


def run(name: str, out: Path) -> float:
    """Minutes the run took (recorded in its folder, read back when the run was done before)."""
    folder = out / name
    if (folder / "eval.json").is_file() and (folder / "minutes.json").is_file():
        return json.loads((folder / "minutes.json").read_text())
    start = time.perf_counter()
    config = f"configs/diffaug-{name}.yaml"
    stage1 = out / "semi" / "stage1"
    if shares_semi_stage1(name) and (stage1 / "stage1.json").is_file():
        reuse = f"stage1_from={stage1}"
        code = hardcse(["diffaug", "train", "--config", config, "--out", str(folder), "--overwrite", reuse])
    else:
        code = hardcse(["diffaug", "train", "--config", config, "--out", str(folder), "--overwrite"])
    if code:
        raise SystemExit(f"{name} failed")
    minutes = round((time.perf_counter() - start) / 60, 1)
    (folder / "minutes.json").write_text(json.dumps(minutes))
    return minutes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/diffaug")
    parser.add_argument("--also", nargs="*", default=[], metavar="NAME", help="more configs/diffaug-NAME.yaml")
    args = parser.parse_args()
    out = Path(args.out)
    base = out / "bundled"
    if not (base / "eval.json").is_file():
        hardcse(["eval", "--model", "bundled:minilm-l6", "--out", str(base)])
    ev = _read(base / "eval.json")
    rows = {"bundled:minilm-l6 (start)": {**ev["scores"], "avg7": ev["avg7"]}}
    extra = {}
    for name in [*MAIN, *args.also]:
        minutes = run(name, out)
        folder = out / name
        ev, training, stage1 = (
            _read(folder / "eval.json"),
            _read(folder / "training.json"),
            _read(folder / "stage1" / "stage1.json"),
        )
        rows[name] = {**ev["scores"], "avg7": ev["avg7"]}
        extra[name] = {
            "stage1_steps": stage1["steps_run"] if stage1 else 0,
            "stage1_s_per_step": round(stage1["seconds_per_step"], 2) if stage1 else None,
            "stage2_steps": training["steps"] if training else 0,
            "stage2_s_per_step": round(training["seconds_per_step"], 2) if training else None,
            "best_step": training["best_step"] if training else None,
            "minutes": minutes,
        }
    ratios = {}
    for method, baseline in PAIRS.items():
        d, b = extra[method], extra[baseline]
        total_d = d["stage1_steps"] * d["stage1_s_per_step"] + d["stage2_steps"] * d["stage2_s_per_step"]
        total_b = b["stage2_steps"] * b["stage2_s_per_step"]
        ratios[method] = {
            "stage2_step_ratio": round(d["stage2_s_per_step"] / b["stage2_s_per_step"], 2),
            "training_time_ratio": round(total_d / total_b, 2),
        }
    shutil.copyfile(out / "semi" / "stage1" / "diagnostics.png", _results_dir() / "stage1_diagnostics.png")
    shutil.copyfile(out / "semi" / "stage1" / "diagnostics.jsonl", _results_dir() / "stage1_diagnostics.jsonl")
    keys = list(next(iter(extra.values())))
    lines = [
        "# DiffAug on the bundled encoder (2-core CPU)",
        "",
        f"`python benchmarks/diffaug_runs.py --out {args.out}{' --also ' + ' '.join(args.also) if args.also else ''}`"
        " (commands: the script's docstring)",
        "",
        sts_table_markdown(rows),
        "",
        "| run | " + " | ".join(keys) + " |",
        "|---|" + "---|" * len(keys),
        *(f"| {name} | " + " | ".join(str(e[k]) for k in keys) + " |" for name, e in extra.items()),
        "",
        "Training time, DiffAug / SimCSE (seconds per optimiser step x steps; evaluation excluded):",
        "",
        "| setting | stage-2 step ratio | whole training ratio (stage 1 + stage 2) |",
        "|---|---|---|",
        *(f"| {m} | {r['stage2_step_ratio']} | {r['training_time_ratio']} |" for m, r in ratios.items()),
        "",
        "Stage-1 curves: `diffaug/stage1_diagnostics.png` (data: `diffaug/stage1_diagnostics.jsonl`).",
    ]
    (RESULTS / "diffaug.json").write_text(json.dumps({"sts": rows, "training": extra, "time": ratios}, indent=2))
    (RESULTS / "diffaug.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def _results_dir() -> Path:
    path = RESULTS / "diffaug"
    path.mkdir(parents=True, exist_ok=True)
    return path


if __name__ == "__main__":
    main()
