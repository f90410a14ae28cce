"""ART's evidence on the bundled models: the three-round CPU run (PPO and GRPO) against the raw-LLM baseline,
the mined-negative baseline and the three ablations, all on the same anchors, reward, discriminator and judge.

    python benchmarks/art_rounds.py [--runs-dir runs] [--only NAME ...] [--seeds 42 ...] [--skip-runs]

Trains the two NLI models first, once per machine (`hardcse nli train --config configs/nli-discriminator.yaml --out
CACHE/nli/nli-minilm-KEY`, `hardcse nli train --config configs/nli-judge.yaml --out CACHE/nli/nli-judge-KEY`, KEY a
hash of the training config, the NLI data and the base model: the same inputs find the same model again) and links
runs/nli-minilm and runs/nli-judge to them (a real folder of that name is used as it is), then runs (or resumes, or
with --skip-runs only reads) `hardcse art run --config configs/NAME.yaml --out runs/NAME` for each NAME below, and
writes benchmarks/results/art_rounds.md: one `art compare` table with each run's avg7 against its round 0 and
against the raw-LLM baseline (paired bootstrap 95% intervals over test pairs), wall time per run, and every run's
report (its held-out raw-vs-tuned comparison included); plots go to benchmarks/results/art_rounds/.
Every run is resumable: kill the script and start it again. Each finished run leaves a compact record in the
repository, benchmarks/results/art_rounds/records/NAME-seed-S/ (``RECORD_FILES``: config, manifest, log, every
round's eval.json with per-pair cosines, held-out comparison, synthesis, measures, training, kept triplets and RL
log; no weights, no full generations), so evidence outlives a session: a plain run skips what is recorded, and
``--skip-runs`` rebuilds every table, report and plot from the records alone. `--seeds` (default 42, the
configs' own) runs each config once per seed, every `seed` key of the config set to it (runs/NAME for 42,
runs/NAME-seed-S otherwise);
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
NLI_MODELS = {"nli-minilm": "configs/nli-discriminator.yaml", "nli-judge": "configs/nli-judge.yaml"}


def nli_model(runs_dir: Path, name: str, config: str) -> None:
    """``runs_dir/name``: the NLI model of ``config`` trained once per machine in the cache, linked here."""
    import dataclasses
    import hashlib

    from hardcse.discriminator.train import NLITrainConfig
    from hardcse.fingerprint import files_digest
    from hardcse.paths import cache_dir, data_dir
    from hardcse.resources import resolve_model

    loaded = load_config(NLITrainConfig, config)
    digest = hashlib.sha256(json.dumps(dataclasses.asdict(loaded), sort_keys=True).encode())
    files_digest(data_dir() / "nli", digest)
    files_digest(resolve_model(loaded.base_model), digest)
    target = cache_dir() / "nli" / f"{name}-{digest.hexdigest()[:16]}"
    if not (target / "model").is_dir():
        resume = ["--resume"] if (target / "config.yaml").is_file() else []
        run(["nli", "train", "--config", config, "--out", str(target), *resume])
    link = runs_dir / name
    if link.is_symlink():
        link.unlink()
    if link.exists():
        print(f"{link}: a folder of its own, used as it is (the cached model is {target})", flush=True)
        return
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target.resolve(), target_is_directory=True)


RECORDS = RESULTS / "art_rounds" / "records"
# what a record keeps of a run folder: what the report and the tables read, no weights, no full generations
RECORD_FILES = (
    "config.yaml",
    "manifest.json",
    "run.log",
    "discriminator/training.json",
    "round_*/eval.json",
    "round_*/heldout.json",
    "round_*/synthesis.json",
    "round_*/measures.json",
    "round_*/training.json",
    "round_*/triplets.csv",
    "round_*/generator/rl_log.jsonl",
    "round_*/generator/completions.jsonl",
)


def record_dir(name: str, seed: int) -> Path:
    return RECORDS / f"{name}-seed-{seed}"


def is_finished(folder: Path) -> bool:
    manifest = folder / "manifest.json"
    return manifest.is_file() and bool(json.loads(manifest.read_text())["runs"][-1].get("finished"))


def write_record(run_dir: Path, record: Path) -> None:
    """Copy ``RECORD_FILES`` of a finished run folder to ``record`` (written aside, then moved into place)."""
    partial = record.with_name(record.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    for pattern in RECORD_FILES:
        for path in sorted(run_dir.glob(pattern)):
            target = partial / path.relative_to(run_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    shutil.rmtree(record, ignore_errors=True)
    partial.rename(record)


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
        for name, config in NLI_MODELS.items():
            nli_model(runs_dir, name, config)
        for name, seed in names:
            if is_finished(record_dir(name, seed)):
                print(f"recorded: {record_dir(name, seed)}", flush=True)
                continue
            folder = run_folder(runs_dir, name, seed)
            resume = ["--resume"] if (folder / "config.yaml").is_file() else []
            run(["art", "run", "--config", RUNS[name], "--out", str(folder), *resume, *seed_overrides(name, seed)])
            write_record(folder, record_dir(name, seed))
    # the tables read the records (a run folder is recorded when it finishes): every finished run, any session
    folders = [record_dir(*n) for n in names if is_finished(record_dir(*n))]
    if not folders:
        sys.exit(f"error: no finished run recorded in {RECORDS} yet; run without --skip-runs first")
    baseline = next((f for f in folders if f.name.startswith(f"{BASELINE}-seed-")), None)
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
