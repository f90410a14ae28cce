"""ART's evidence on the bundled models: the three-round CPU run (PPO and GRPO) against the raw-LLM baseline,
the mined-negative baseline and the three ablations, all on the same anchors, reward, discriminator and judge.

    python benchmarks/art_rounds.py [--runs-dir runs] [--only NAME ...] [--skip-runs]

Trains the two NLI models first when their folders are missing (`hardcse nli train --out runs/nli-minilm`,
`hardcse nli train --config configs/nli-judge.yaml --out runs/nli-judge`), then runs (or resumes, or with
--skip-runs only reads) `hardcse art run --config configs/NAME.yaml --out runs/NAME` for each NAME below, and
writes benchmarks/results/art_rounds.md: one `art compare` table with each run's avg7 against its round 0 and
against the raw-LLM baseline (paired bootstrap 95% intervals over test pairs), wall time per run, and every
run's report (its held-out raw-vs-tuned comparison included); plots go to benchmarks/results/art_rounds/.
Every run is resumable: kill the script and start it again.
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
BASELINE = "baseline-raw-llm"
RUNS = {
    name: f"configs/{name}.yaml"
    for name in (
        "cpu-full",
        "cpu-full-grpo",
        BASELINE,
        "baseline-mined-negatives",
        "ablation-no-difficulty",
        "ablation-no-filter",
        "ablation-one-round",
    )
}
NLI_MODELS = {"nli-minilm": [], "nli-judge": ["--config", "configs/nli-judge.yaml"]}


def minutes(run_dir: Path) -> float:
    stages = json.loads((run_dir / "manifest.json").read_text())["stages"]
    return sum(s.get("seconds", 0.0) for s in stages.values()) / 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", default="runs")
    parser.add_argument("--skip-runs", action="store_true", help="only read finished run folders")
    parser.add_argument("--only", nargs="+", choices=list(RUNS), help="run these (default: all, in this order)")
    args = parser.parse_args()
    runs_dir = Path(args.runs_dir)
    names = args.only or list(RUNS)
    if not args.skip_runs:
        for name, extra in NLI_MODELS.items():
            if not (runs_dir / name / "model").is_dir():
                resume = ["--resume"] if (runs_dir / name / "config.yaml").is_file() else []
                run(["nli", "train", *extra, "--out", str(runs_dir / name), *resume])
        for name in names:
            resume = ["--resume"] if (runs_dir / name / "config.yaml").is_file() else []
            run(["art", "run", "--config", RUNS[name], "--out", str(runs_dir / name), *resume])
    folders = [runs_dir / name for name in names if (runs_dir / name / "round_0" / "eval.json").is_file()]
    if not folders:
        sys.exit("error: no run folder with an evaluated round 0 yet; run without --skip-runs first")
    baseline = runs_dir / BASELINE if (runs_dir / BASELINE / "round_1" / "eval.json").is_file() else None
    plots = RESULTS / "art_rounds"
    plots.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# ART on a 2-core CPU: adaptive rounds, baselines and ablations ({date.today()})",
        "",
        "Commands:",
        "",
        "```",
        *(f"hardcse art run --config {RUNS[f.name]} --out runs/{f.name}" for f in folders),
        "python benchmarks/art_rounds.py --skip-runs   # this file",
        "```",
        "",
        compare_runs(folders, baseline=baseline),
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
    print("\n".join(lines[: 12 + len(folders)]))


def run(argv: list[str]) -> None:
    print("$ hardcse " + " ".join(argv), flush=True)
    code = hardcse(argv)
    if code:
        sys.exit(code)


if __name__ == "__main__":
    main()
