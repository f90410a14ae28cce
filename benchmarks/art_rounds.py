"""ART's evidence on the bundled models: the three-round CPU run (PPO and GRPO) against the raw-LLM baseline,
the mined-negative baseline and the three ablations, all on the same anchors, reward, discriminator and judge.

    python benchmarks/art_rounds.py [--runs-dir runs] [--only NAME ...] [--seeds 42 ...] [--skip-runs]

Trains the two NLI models first when their folders are missing (`hardcse nli train --out runs/nli-minilm`,
`hardcse nli train --config configs/nli-judge.yaml --out runs/nli-judge`), then runs (or resumes, or with
--skip-runs only reads) `hardcse art run --config configs/NAME.yaml --out runs/NAME` for each NAME below, and
writes benchmarks/results/art_rounds.md: one `art compare` table with each run's avg7 against its round 0 and
against the raw-LLM baseline (paired bootstrap 95% intervals over test pairs), wall time per run, and every
run's report (its held-out raw-vs-tuned comparison included); plots go to benchmarks/results/art_rounds/.
Every run is resumable: kill the script and start it again. `--seeds` (default 42, the configs' own) runs each
config once per seed, every `seed` key of the config set to it (runs/NAME for 42, runs/NAME-seed-S otherwise);
with more than one seed the file adds a `hardcse compare` table: each setting as mean ± sd over its seeds and its
paired bootstrap interval against the raw-LLM baseline (test pairs and seeds resampled).
"""

import argparse
import json
import shutil
import sys
from datetime import date
from pathlib import Path

from hardcse.art.report import compare_runs, write_report
from hardcse.cli import main as hardcse
from hardcse.config import load_config
from hardcse.run_folder import seeds as seed_keys

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
    parser.add_argument("--seeds", nargs="+", type=int, default=[DEFAULT_SEED], help="one run of each per seed")
    args = parser.parse_args()
    runs_dir = Path(args.runs_dir)
    names = [(name, seed) for seed in args.seeds for name in args.only or list(RUNS)]
    if not args.skip_runs:
        for name, extra in NLI_MODELS.items():
            if not (runs_dir / name / "model").is_dir():
                resume = ["--resume"] if (runs_dir / name / "config.yaml").is_file() else []
                run(["nli", "train", *extra, "--out", str(runs_dir / name), *resume])
        for name, seed in names:
            folder = run_folder(runs_dir, name, seed)
            resume = ["--resume"] if (folder / "config.yaml").is_file() else []
            run(["art", "run", "--config", RUNS[name], "--out", str(folder), *resume, *seed_overrides(name, seed)])
    folders = [run_folder(runs_dir, *n) for n in names]
    folders = [f for f in folders if (f / "round_0" / "eval.json").is_file()]
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
        *(
            " ".join(["hardcse art run --config", RUNS[n], "--out", str(run_folder(Path("runs"), n, s))])
            + "".join(f" {o}" for o in seed_overrides(n, s))
            for n, s in names
        ),
        "python benchmarks/art_rounds.py --skip-runs   # this file",
        "```",
        "",
        compare_runs(folders, baseline=baseline),
        "",
        "Wall time (sum of stages): " + ", ".join(f"{f.name} {minutes(f):.1f} min" for f in folders),
        "",
        *seed_groups(folders, baseline, len(args.seeds)),
    ]
    for folder in folders:
        report = write_report(folder).read_text(encoding="utf-8")
        for png in sorted((folder / "plots").glob("*.png")):
            shutil.copy2(png, plots / f"{folder.name}-{png.name}")
        report = report.replace("](plots/", f"](art_rounds/{folder.name}-").replace("\n## ", "\n### ")
        lines += [report.replace("# ART run", "## ART run", 1), ""]
    (RESULTS / "art_rounds.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines[: 12 + len(folders)]))


DEFAULT_SEED = 42


def run_folder(runs_dir: Path, name: str, seed: int) -> Path:
    return runs_dir / (name if seed == DEFAULT_SEED else f"{name}-seed-{seed}")


def seed_overrides(name: str, seed: int) -> list[str]:
    """Every ``seed`` key of the config set to ``seed`` (none for the configs' own 42)."""
    if seed == DEFAULT_SEED:
        return []
    from hardcse.art.config import ArtRunConfig

    # seed_keys names each seed by the block that holds it ("seed" for the top level)
    keys = seed_keys(load_config(ArtRunConfig, RUNS[name]))
    return [f"{'' if key == 'seed' else key + '.'}seed={seed}" for key in keys]


def seed_groups(folders: list[Path], baseline: Path | None, n_seeds: int) -> list[str]:
    """With several seeds: each setting's final encoders as mean ± sd, against the raw-LLM baseline's group."""
    if n_seeds < 2:
        return []
    from hardcse.evaluation.compare import compare_groups, comparison_markdown
    from hardcse.evaluation.results import group_by_seed, load_result

    groups = group_by_seed([load_result(str(f)) for f in folders])
    base = next((g for g, members in groups.items() if baseline and any(BASELINE in m.label for m in members)), None)
    pairs = [(base, g) for g in groups if base and g != base]
    return [
        "Across seeds (`hardcse compare`, final round of each run):",
        "",
        comparison_markdown(compare_groups(groups, pairs)),
        "",
    ]


def run(argv: list[str]) -> None:
    print("$ hardcse " + " ".join(argv), flush=True)
    code = hardcse(argv)
    if code:
        sys.exit(code)


if __name__ == "__main__":
    main()
