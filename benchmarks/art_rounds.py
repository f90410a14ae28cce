"""ART part 2 on the bundled models: the three-round CPU run against the raw-LLM baseline with the same anchors.

    python benchmarks/art_rounds.py [--runs-dir runs] [--skip-runs]

Runs (or, with --skip-runs, reads finished run folders of) these commands:
    hardcse art run --config configs/cpu-full.yaml --out runs/cpu-full
    hardcse art run --config configs/baseline-raw-llm.yaml --out runs/baseline-raw-llm
then writes benchmarks/results/art_rounds.md (the side-by-side table, both reports, wall time per run) and
copies the plots to benchmarks/results/art_rounds/. Needs runs/nli-minilm and runs/nli-judge (see cpu-full.yaml).
"""

import argparse
import json
import shutil
import sys
from datetime import date
from pathlib import Path

from hardcse.art.report import compare_runs, write_report
from hardcse.cli import main as hardcse

RESULTS = Path(__file__).parent / "results"
RUNS = {"cpu-full": "configs/cpu-full.yaml", "baseline-raw-llm": "configs/baseline-raw-llm.yaml"}


def minutes(run_dir: Path) -> float:
    stages = json.loads((run_dir / "manifest.json").read_text())["stages"]
    return sum(s.get("seconds", 0.0) for s in stages.values()) / 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", default="runs")
    parser.add_argument("--skip-runs", action="store_true", help="only read finished run folders")
    args = parser.parse_args()
    runs_dir = Path(args.runs_dir)
    for name, config in RUNS.items():
        if not args.skip_runs:
            resume = ["--resume"] if (runs_dir / name / "config.yaml").is_file() else []
            code = hardcse(["art", "run", "--config", config, "--out", str(runs_dir / name), *resume])
            if code:
                sys.exit(code)
    folders = [runs_dir / name for name in RUNS]
    plots = RESULTS / "art_rounds"
    plots.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# ART: three adaptive rounds on a 2-core CPU vs the raw-LLM baseline ({date.today()})",
        "",
        "Commands:",
        "",
        "```",
        *(f"hardcse art run --config {config} --out runs/{name}" for name, config in RUNS.items()),
        "python benchmarks/art_rounds.py --skip-runs   # this file",
        "```",
        "",
        compare_runs(folders),
        "",
        "Wall time (sum of stages): " + ", ".join(f"{f.name} {minutes(f):.1f} min" for f in folders),
        "",
    ]
    for folder in folders:
        report = write_report(folder).read_text(encoding="utf-8")
        for png in sorted((folder / "plots").glob("*.png")):
            shutil.copy2(png, plots / f"{folder.name}-{png.name}")
        report = report.replace("](plots/", f"](art_rounds/{folder.name}-").replace("\n## ", "\n### ")
        lines += [report.replace("# ART run", "## ART run", 1), ""]
    (RESULTS / "art_rounds.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines[:14]))


if __name__ == "__main__":
    main()
