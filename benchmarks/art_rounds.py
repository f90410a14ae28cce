"""ART's evidence on the bundled models: the three-round CPU run (PPO and GRPO) against the raw-LLM baseline,
the mined-negative baseline and the three ablations, all on the same anchors, reward, discriminator and judge.

    python benchmarks/art_rounds.py [--runs-dir runs] [--only NAME ...] [--seeds 42 ...] [--skip-runs]

Trains the two NLI models first, once per machine and code (`hardcse nli train --config
configs/nli-discriminator.yaml --out CACHE/nli/nli-minilm-KEY`, `hardcse nli train --config configs/nli-judge.yaml
--out CACHE/nli/nli-judge-KEY`, KEY a hash of the training config, the NLI data, the base model, hardcse's shared code
(not art/ and the other upper layers, which NLI training never runs), the libraries' versions and the machine's kind:
the same inputs find the same model again; a second process waits for the first's training) and links
runs/nli-minilm and runs/nli-judge to them (a real folder of that name is used as it is), then runs (or resumes, or
with --skip-runs only reads) `hardcse art run --config configs/NAME.yaml --out runs/NAME` for each NAME below, and
writes benchmarks/results/art_evidence.md: per seed, one `art compare` table with each run's avg7 against its round 0
and against the same seed's raw-LLM baseline (paired bootstrap 95% intervals over test pairs), wall time per run,
the evidence in two tables and one plot (art_evidence/evidence.png): held-out tuned - raw generator per round (reward,
format, meaning, judge) and each setting's final encoders (the mean over its seeds) against the raw-LLM baseline's
and cpu-full's, ART's (PPO, GRPO) also against the mined-negative baseline's (avg7 and STS-B dev; test pairs and
seeds resampled, paired by seed where both ran it), and every run's report (its held-out raw-vs-tuned comparison
included); plots go to benchmarks/results/art_evidence/ (issue 42; issue 28's withdrawn
records stay in benchmarks/results/art_rounds/ until these replace them).
Every run is resumable: kill the script and start it again. Each finished run leaves a compact record in the
repository, benchmarks/results/art_evidence/records/NAME-seed-S/ (``RECORD_FILES``: config, manifest, log, every
round's eval.json with per-pair cosines, held-out comparison, synthesis, measures, training, kept triplets and RL
log; no weights, no full generations), so evidence outlives a session: a plain run skips what is recorded, and
``--skip-runs`` rebuilds every table, report and plot from the records alone. `--seeds` (default 42, the
configs' own) runs each config once per seed, every `seed` key of the config set to it (runs/NAME for 42,
runs/NAME-seed-S otherwise);
with more than one seed of a setting the file adds the full `hardcse compare` tables (every task, mean ± sd).
"""

import argparse
import json
import shutil
import sys
from pathlib import Path

from hardcse.art.analysis.report import compare_runs, write_report
from hardcse.cli import main as hardcse
from hardcse.config import load_config
from hardcse.data.sts import DEV_TASK
from hardcse.evaluation.compare import Comparison, compare_groups, comparison_markdown, interval_cell
from hardcse.evaluation.results import Result, load_result
from hardcse.run_folder import round_dirs
from hardcse.run_folder import seeds as seed_keys
from hardcse.stats import Interval
from machine_line import recorded_machines

RESULTS = Path(__file__).parent / "results"
BASELINE = "baseline-raw-llm"
MAIN = "cpu-full"
MINED = "baseline-mined-negatives"
ART = (MAIN, "cpu-full-grpo")  # ART itself (PPO, GRPO): also compared with the mined-negative baseline
RUNS = {
    name: f"configs/{name}.yaml"
    for name in (
        "cpu-full",
        "cpu-full-grpo",
        BASELINE,
        "baseline-mined-negatives",
        "art-two-negatives",
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

    from hardcse.cache import environment_digest, locked
    from hardcse.devices import resolve_device
    from hardcse.discriminator.train import NLITrainConfig
    from hardcse.fingerprint import files_digest
    from hardcse.paths import cache_dir, data_dir
    from hardcse.resources import resolve_model

    loaded = load_config(NLITrainConfig, config)
    digest = hashlib.sha256(json.dumps(dataclasses.asdict(loaded), sort_keys=True).encode())
    files_digest(data_dir() / "nli", digest)
    files_digest(resolve_model(loaded.base_model), digest)
    # NLI training runs the shared code only (never hardcse/art and the other upper layers): a change there keeps it
    environment_digest(digest, resolve_device(loaded.training.device, "training.device"), shared_code=True)
    target = cache_dir() / "nli" / f"{name}-{digest.hexdigest()[:16]}"
    with locked(target):  # a second benchmark started meanwhile waits for this training, then uses it
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


def nli_models(runs_dir: Path, linked: bool) -> None:
    """The discriminator and the judge in ``runs_dir`` (``nli_model``); with ``linked``, a model already linked
    there is used as it is, not trained again for this code's cache key (each record names its weights' digest:
    runs compare only where those agree)."""
    for name, config in NLI_MODELS.items():
        if linked and (runs_dir / name).is_dir():
            print(f"NLI model as linked: {runs_dir / name} (its digest goes into each record)", flush=True)
            continue
        nli_model(runs_dir, name, config)


# issue 42's evidence: the page art_evidence.md, the records and plots in art_evidence/
EVIDENCE = RESULTS / "art_evidence"
RECORDS = EVIDENCE / "records"
# issue 28's records (their encoder figures withdrawn, issue 40), which benchmarks/reward_bins.py, shortcut_rates.py,
# art_assay.py and engine_selection.py read until issue 42's replace them
ISSUE_28_RECORDS = RESULTS / "art_rounds" / "records"
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
    """Copy ``RECORD_FILES`` of a finished run folder to ``record`` (written aside, then moved into place), with
    ``NLI_RECORD``: which NLI models the run used, by their weights' digest."""
    partial = record.with_name(record.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    for pattern in RECORD_FILES:
        for path in sorted(run_dir.glob(pattern)):
            target = partial / path.relative_to(run_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    write_nli_record(partial)
    shutil.rmtree(record, ignore_errors=True)
    partial.rename(record)


NLI_RECORD = "nli_models.json"


def write_nli_record(record: Path) -> None:
    """``record/NLI_RECORD``: the discriminator and judge of the record's config, each by the SHA-256 of its model
    folder's files (runs from several sessions are comparable only where these agree: a model trained again, on
    another machine or code, may differ)."""
    from hardcse.art.config import ArtRunConfig

    config = load_config(ArtRunConfig, record / "config.yaml")
    models = {
        role: {"source": source, "sha256": model_digest(source)}
        for role, source in (("discriminator", config.discriminator), ("judge", config.judge))
    }
    (record / NLI_RECORD).write_text(json.dumps(models, indent=1) + "\n", encoding="utf-8")


def config_changes(config: str, overrides: list[str], record: Path) -> list[str]:
    """'key: recorded -> built' for each top-level key where ``config`` with ``overrides`` builds another ART
    config than ``record/config.yaml`` holds (a config file changed since the record ran); [] when they agree."""
    import dataclasses

    from hardcse.art.config import ArtRunConfig

    built = dataclasses.asdict(load_config(ArtRunConfig, config, overrides))
    recorded = dataclasses.asdict(load_config(ArtRunConfig, record / "config.yaml"))
    return [f"{key}: {recorded.get(key)!r} -> {value!r}" for key, value in built.items() if value != recorded.get(key)]


def model_digest(source: str | None) -> str | None:
    """The SHA-256 of a model folder's files (``source/model`` for a run folder); None where there is none."""
    import hashlib

    from hardcse.fingerprint import files_digest

    folder = Path(source) / "model" if source and (Path(source) / "model").is_dir() else Path(source or "")
    if not source or not folder.is_dir():
        return None
    digest = hashlib.sha256()
    files_digest(folder, digest)
    return digest.hexdigest()


def minutes(run_dir: Path) -> float:
    stages = json.loads((run_dir / "manifest.json").read_text())["stages"]
    return sum(s.get("seconds", 0.0) for s in stages.values()) / 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", default="runs")
    parser.add_argument("--skip-runs", action="store_true", help="only read finished run folders")
    parser.add_argument("--only", nargs="+", choices=list(RUNS), help="run these (default: all, in this order)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[DEFAULT_SEED], help="one run of each per seed")
    parser.add_argument(
        "--linked-nli",
        action="store_true",
        help="use runs/nli-minilm and runs/nli-judge as linked, without training them for this code's cache key "
        "(the records name their weights' digests: runs compare only where those agree)",
    )
    args = parser.parse_args()
    runs_dir = Path(args.runs_dir)
    names = [(name, seed) for seed in args.seeds for name in args.only or list(RUNS)]
    if not args.skip_runs:
        nli_models(runs_dir, args.linked_nli)
        for name, seed in names:
            if is_finished(record_dir(name, seed)):
                if changed := config_changes(RUNS[name], seed_overrides(name, seed), record_dir(name, seed)):
                    sys.exit(
                        f"error: {record_dir(name, seed)} ran another config than {RUNS[name]} builds today "
                        f"({'; '.join(changed)}); remove that record (git rm -r) to run the setting again"
                    )
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
    plots = EVIDENCE
    plots.mkdir(parents=True, exist_ok=True)
    comparison = final_comparison(setting_groups(folders))
    # the records' own dates, not today's: a rebuild from the records is byte-identical on any day
    made = sorted({json.loads((f / "manifest.json").read_text(encoding="utf-8"))["created"][:10] for f in folders})
    lines = [
        f"# ART on a 2-core CPU: adaptive rounds, baselines and ablations ({', '.join(made)})",
        "",
        recorded_machines({f.name: f for f in folders}),  # the runs' own machines, never today's
        "",
        "Commands:",
        "",
        "```",
        *(
            " ".join(["hardcse art run --config", RUNS[n], "--out", str(run_folder(Path("runs"), n, s))])
            + "".join(f" {o}" for o in seed_overrides(n, s))
            for n, s in names
            if is_finished(record_dir(n, s))
        ),
        rebuild_command(args.only, args.seeds) + "   # this file",
        "```",
        "",
        *per_seed_tables(folders),
        *evidence_lines(folders, comparison, plots / "evidence.png"),
        "Wall time (sum of stages): " + ", ".join(f"{f.name} {minutes(f):.1f} min" for f in folders),
        "",
        *seed_groups(comparison),
    ]
    for folder in folders:
        report = write_report(folder).read_text(encoding="utf-8")
        for png in sorted((folder / "plots").glob("*.png")):
            shutil.copy2(png, plots / f"{folder.name}-{png.name}")
        report = report.replace("](plots/", f"]({EVIDENCE.name}/{folder.name}-").replace("\n## ", "\n### ")
        lines += [report.replace("# ART run", "## ART run", 1), ""]
    (RESULTS / f"{EVIDENCE.name}.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines[: 12 + len(folders)]))


HELDOUT = {  # held-out measure: what it answers (heldout.json keys; tuned - raw)
    "reward": "reward",
    "parse_failure": "format: parse failures",
    "reward_parsed": "meaning: reward of parsed answers",
    "p_target_parsed": "meaning: P(target label) of parsed",
    "judged_correct": "judge accuracy",
}


def heldout_rows(folder: Path) -> list[tuple[str, dict]]:
    """(round, heldout.json) for every round of a run that compared the raw and the tuned generator."""
    return [
        (d.name, json.loads((d / "heldout.json").read_text()))
        for d in round_dirs(folder)
        if (d / "heldout.json").is_file()
    ]


def setting_groups(folders: list[Path]) -> dict[str, list[Result]]:
    """Each config's finished records (one per seed), named by the config: the groups of ``hardcse compare``."""
    groups: dict[str, list[Result]] = {}
    for folder in folders:
        groups.setdefault(setting(folder), []).append(load_result(str(folder)))
    return groups


def setting(folder: Path) -> str:
    """The config name of a record folder NAME-seed-S."""
    return folder.name.rsplit("-seed-", 1)[0]


def seed_of(folder: Path) -> str:
    """The seed of a record folder NAME-seed-S."""
    return folder.name.rsplit("-seed-", 1)[1]


def final_comparison(groups: dict[str, list[Result]]) -> Comparison:
    """Every setting's final encoders against the raw-LLM baseline's and cpu-full's, and ART's (PPO, GRPO) against
    the mined-negative baseline's (the references present): group means with paired bootstrap intervals over test
    pairs and seeds (paired by seed where both ran it)."""
    pairs = [(BASELINE, name) for name in groups if BASELINE in groups and name != BASELINE]
    pairs += [(MAIN, name) for name in groups if MAIN in groups and name not in (MAIN, BASELINE)]
    pairs += [(MINED, name) for name in ART if MINED in groups and name in groups]
    return compare_groups(groups, pairs)


def per_seed_tables(folders: list[Path]) -> list[str]:
    """One `art compare` table per seed: each run against its round 0 and the same seed's raw-LLM baseline."""
    lines = []
    seeds = list(dict.fromkeys(seed_of(f) for f in folders))
    for seed in seeds:
        members = [f for f in folders if seed_of(f) == seed]
        baseline = next((f for f in members if setting(f) == BASELINE), None)
        title = [f"Seed {seed}:", ""] if len(seeds) > 1 else []
        lines += [*title, compare_runs(members, baseline=baseline), ""]
    return lines


def evidence_lines(folders: list[Path], comparison: Comparison, png: Path) -> list[str]:
    """ART's questions in one table each (held-out tuned - raw per round; final encoders - the raw-LLM baseline's
    and - cpu-full's, ART's also - the mined-negative baseline's) and one plot of both."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [3, 2]})
    lines = [*heldout_evidence(folders, left), *final_evidence(comparison, right)]
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return [*lines, f"![evidence]({EVIDENCE.name}/{png.name})", ""]


def heldout_evidence(folders: list[Path], ax) -> list[str]:
    """The held-out table (every run that tunes, every round) and its panel: reward, format and meaning."""
    lines = [
        "Held-out anchors, tuned - raw generator per round (95% bootstrap intervals over anchors, paired; * excludes"
        " zero): is the tuned generator's data better, and is the gain format or meaning?",
        "",
        "| run | round | " + " | ".join(HELDOUT.values()) + " |",
        "|---|---|" + "---:|" * len(HELDOUT),
    ]
    keys = {"reward": "reward", "parse_failure": "parse fail", "p_target_parsed": "P(target)"}  # panel: short names
    tuned = [(f, rows) for f in folders if (rows := heldout_rows(f))]
    n_rounds = max((len(rows) for _, rows in tuned), default=0)
    width = 0.8 / max(1, len(tuned))
    # one colour per setting, one marker per seed
    colours = {name: f"C{i}" for i, name in enumerate(dict.fromkeys(setting(f) for f, _ in tuned))}
    markers = {seed: "osD^v"[i % 5] for i, seed in enumerate(dict.fromkeys(seed_of(f) for f, _ in tuned))}
    for i, (folder, rows) in enumerate(tuned):
        for r, (name, record) in enumerate(rows):
            diff = {key: Interval(**record[key]["difference"]) for key in HELDOUT}
            cells = [interval_cell(diff[key], digits=3) for key in HELDOUT]
            lines.append(f"| {folder.name} | {name} | " + " | ".join(cells) + " |")
            for k, key in enumerate(keys):
                d = diff[key]
                x = k * (n_rounds + 1) + r + (i - (len(tuned) - 1) / 2) * width
                label = folder.name if (k, r) == (0, 0) else None
                style = {"fmt": markers[seed_of(folder)], "color": colours[setting(folder)]}
                ax.errorbar(x, d.estimate, yerr=_error_bar(d), capsize=3, label=label, **style)
    ax.axis("on" if tuned else "off")
    if tuned:
        ticks = [k * (n_rounds + 1) + r for k in range(len(keys)) for r in range(n_rounds)]
        ax.set_xticks(ticks, [f"{name}\nround {r + 1}" for name in keys.values() for r in range(n_rounds)], fontsize=7)
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_title("held-out: tuned - raw generator (95% CI; P(target): of parsed answers)")
        ax.legend(fontsize=7)
    return [*lines, ""]


def final_evidence(c: Comparison, ax) -> list[str]:
    """The final-encoder table (avg7 and STS-B dev against each reference) and its panel (the first reference)."""
    references = list(dict.fromkeys(a for a, _ in c.pairs))
    ax.axis("on" if c.pairs else "off")
    if not c.pairs:
        return []
    header = " | ".join(f"{what} - {ref}" for ref in references for what in ("avg7", "STS-B dev"))
    lines = [
        "Final encoders, mean over each setting's seeds (paired bootstrap 95% intervals over test pairs and seeds;"
        " * excludes zero):",
        "",
        f"| run | seeds | {header} |",
        "|---|---|" + "---:|" * (2 * len(references)),
    ]
    for name, members in c.groups.items():
        diffs = [c.differences.get((ref, name)) for ref in references]
        if not any(diffs):
            continue
        cells = [interval_cell(d[col] if d else None) for d in diffs for col in ("avg7", DEV_TASK)]
        seeds = ", ".join(str(m.seed) for m in members)
        lines.append(f"| {name} | {seeds} | " + " | ".join(cells) + " |")
    shown = [(b, diff) for (a, b), diff in c.differences.items() if a == references[0]]
    for j, (_, diff) in enumerate(shown):
        for k, (what, column) in enumerate((("avg7", "avg7"), ("STS-B dev", DEV_TASK))):
            d = diff[column]
            y = len(shown) - j + (0.15 if k else -0.15)
            label = what if j == 0 else None
            ax.errorbar(d.estimate, y, xerr=_error_bar(d), fmt="os"[k], color=f"C{k}", capsize=3, label=label)
    ax.set_yticks(range(len(shown), 0, -1), [f"{b} ({len(c.groups[b])})" for b, _ in shown], fontsize=7)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_title(f"final encoder - {references[0]} (95% CI; seeds)")
    ax.legend(fontsize=7)
    return [*lines, ""]


def _error_bar(d: Interval) -> list[list[float]]:
    """matplotlib's asymmetric error bar of one interval."""
    return [[d.estimate - d.low], [d.high - d.estimate]]


DEFAULT_SEED = 42


def rebuild_command(only: list[str] | None, seeds: list[int]) -> str:
    """The command that rebuilds this file from the same records."""
    command = "python benchmarks/art_rounds.py --skip-runs"
    command += f" --only {' '.join(only)}" if only else ""
    return command + (f" --seeds {' '.join(map(str, seeds))}" if seeds != [DEFAULT_SEED] else "")


def run_folder(runs_dir: Path, name: str, seed: int) -> Path:
    return runs_dir / (name if seed == DEFAULT_SEED else f"{name}-seed-{seed}")


def seed_overrides(name: str, seed: int) -> list[str]:
    """Every ``seed`` key of the setting's config set to ``seed`` (none for the configs' own 42)."""
    return config_seed_overrides(RUNS[name], seed)


def config_seed_overrides(config: str, seed: int, overrides: list[str] | None = None) -> list[str]:
    """Every ``seed`` key of ``config`` (with ``overrides``) set to ``seed``; none for the configs' own 42."""
    if seed == DEFAULT_SEED:
        return []
    from hardcse.art.config import ArtRunConfig

    # seed_keys names each seed by the block that holds it ("seed" for the top level)
    keys = seed_keys(load_config(ArtRunConfig, config, overrides or []))
    return [f"{'' if key == 'seed' else key + '.'}seed={seed}" for key in keys]


def seed_groups(c: Comparison) -> list[str]:
    """With several seeds of a setting: the full `hardcse compare` tables (scores per task as mean ± sd)."""
    if all(len(members) < 2 for members in c.groups.values()):
        return []
    return ["Across seeds (`hardcse compare`, final round of each run):", "", comparison_markdown(c), ""]


def run(argv: list[str]) -> None:
    print("$ hardcse " + " ".join(argv), flush=True)
    code = hardcse(argv)
    if code:
        sys.exit(code)


if __name__ == "__main__":
    main()
