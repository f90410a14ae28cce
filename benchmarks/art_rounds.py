"""ART's evidence on the bundled models (issue 42): the three-round CPU run (PPO and GRPO) against the raw-LLM
baseline, the mined-negative baseline, generated + mined negatives and the three ablations, all on the same
anchors, reward, discriminator and judge.

    python benchmarks/art_rounds.py --linked-nli --only NAME ... --seeds 42 1 2 3 4 [--train-seeds 1 2 3]
    python benchmarks/art_rounds.py --skip-runs --only NAME ... --seeds 42 1 2 3 4      # the page, from the records

Trains the two NLI models first, once per machine and code (`hardcse nli train --config
configs/nli-discriminator.yaml --out CACHE/nli/nli-minilm-KEY`, `hardcse nli train --config configs/nli-judge.yaml
--out CACHE/nli/nli-judge-KEY`, KEY the key of a discriminator trained in a run (hardcse/discriminator/kept.py: the
training config, the NLI pairs it reads, the base model, hardcse's shared code (not art/ and the other upper layers,
which NLI training never runs), the number of processes, the libraries' versions and the machine's kind):
the same inputs find the same model again; a second process waits for the first's training) and links
runs/nli-minilm and runs/nli-judge to them (a real folder of that name is used as it is; with --linked-nli the
linked models are used as they are, so a change of the shared code does not retrain them: each record names their
weights' digests). Then, for each NAME and seed, runs (or resumes) `hardcse art run --config configs/NAME.yaml --out
runs/NAME` (runs/NAME-seed-S for seeds other than 42, every `seed` key of the config set to S) and assays the
triplets the run trained on (`hardcse assay`: ASSAY_STEPS steps from the bundled encoder at each training seed, no
dev gating; lib/record_assay.py), one run at a time.

Each finished run leaves a compact record in the repository, benchmarks/results/art_evidence/records/NAME-seed-S/
(``RECORD_FILES``: config, manifest, log, every round's eval.json with per-pair cosines, held-out comparison,
synthesis, measures, training, kept triplets and RL log, the large ones gzipped by lib/record_files.py; no weights, no
full generations, no plots: a page rebuild draws them again), and each assay its
evaluations in benchmarks/results/art_evidence/assay/, so evidence outlives a session: a plain run skips what is
recorded (and refuses a record whose config differs from what its config builds today), and ``--skip-runs``
rebuilds benchmarks/results/art_evidence.md and its plots (lib/art_evidence_tables.py) from the records alone: the
answers to issue 42's questions, the assay (hierarchical bootstrap over generation runs and training seeds), the
held-out tuned - raw generator per round and the adaptive runs' own final encoders (art_evidence/evidence.png),
one `art compare` table per seed, wall times, and every run's report. Issue 28's withdrawn records, which these
replace, are in git history only (`git show a27875d:benchmarks/results/art_rounds.md`).
"""

import argparse
import json
import shutil
import sys
from pathlib import Path

from hardcse.art.analysis.report import write_report
from hardcse.cli import main as hardcse
from hardcse.config import load_config
from hardcse.data.triplets import write_triplets
from hardcse.run_folder import seeds as seed_keys
from lib.art_answers import ABLATION_SEEDS, answer_lines
from lib.art_evidence_tables import (
    BASELINE,
    assay_groups,
    assay_lines,
    evidence_comparison,
    evidence_lines,
    per_seed_tables,
    seed_groups,
    seed_of,
    setting_groups,
)
from lib.digests import model_digest, weights_digest
from lib.provenance import (
    NLI_RECORD,
    code_line_by_seed,
    nli_line,
    recorded_machines,
    refuse_mixed_machines,
    refuse_mixed_nli,
    refuse_uncommitted_code,
)
from lib.record import RESULTS, write_record
from lib.record_assay import assay_record, refuse_mixed_assays, training_triplets
from lib.record_files import compress, unpacked

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
# What the settings ran that their config files no longer build (cpu-full's rollouts were torch's when the records
# were made; the files have since taken `auto`): every setting pins it, so a rerun runs what the records ran, and
# tests/test_evidence_configs.py fails when a config change would orphan a record (pin the old value here then)
AS_RUN = ["rl.rollout_engine=torch"]
NLI_MODELS = {"nli-minilm": "configs/nli-discriminator.yaml", "nli-judge": "configs/nli-judge.yaml"}
JUDGE = "nli-judge"


def nli_model(runs_dir: Path, name: str, config: str) -> None:
    """``runs_dir/name``: the NLI model of ``config`` trained once per machine in the cache, linked here."""
    from hardcse.cache import locked
    from hardcse.discriminator.kept import discriminator_key
    from hardcse.discriminator.train import NLITrainConfig, nli_training_pairs
    from hardcse.paths import cache_dir

    loaded = load_config(NLITrainConfig, config)
    # the key of a discriminator trained in a run: the config, the pairs, the base model, the shared code, the machine
    target = cache_dir() / "nli" / f"{name}-{discriminator_key(loaded, nli_training_pairs(loaded))[:16]}"
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


def nli_models(runs_dir: Path, linked: bool, judge: bool = True) -> None:
    """The discriminator and (if ``judge``) the judge in ``runs_dir`` (``nli_model``); with ``linked``, a model
    already linked there is used as it is, not trained again for this code's cache key (each record names its
    weights' digest: runs compare only where those agree)."""
    for name, config in NLI_MODELS.items():
        if name == JUDGE and not judge:
            continue
        if linked and (runs_dir / name).is_dir():
            print(f"NLI model as linked: {runs_dir / name} (its digest goes into each record)", flush=True)
            continue
        nli_model(runs_dir, name, config)


# issue 42's evidence: the page art_evidence.md, the records and plots in art_evidence/
EVIDENCE = RESULTS / "art_evidence"
PAGE = EVIDENCE.name  # the main page; --page names another (the ablation seeds'), beside it in RESULTS
RECORDS = EVIDENCE / "records"
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


def keep_run(run_dir: Path, record: Path) -> None:
    """Copy ``RECORD_FILES`` of a finished run folder to ``record`` (written aside, then moved into place; the large
    ones compressed: record_files), with ``NLI_RECORD``: which NLI models the run used, by their weights' digest."""
    partial = record.with_name(record.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    for pattern in RECORD_FILES:
        for path in sorted(run_dir.glob(pattern)):
            target = partial / path.relative_to(run_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    write_nli_record(partial)
    compress(partial)
    shutil.rmtree(record, ignore_errors=True)
    partial.rename(record)


def write_nli_record(record: Path) -> None:
    """``record/NLI_RECORD``: the discriminator and judge of the record's config, each by the SHA-256 of its model
    folder's files and of its weights alone (runs from several sessions are comparable only where these agree: a
    model trained again, on another machine or code, may differ; the folder's digest differs even where the weights
    agree, since it holds the training's minutes)."""
    from hardcse.art.config import ArtRunConfig

    config = load_config(ArtRunConfig, record / "config.yaml")
    models = {
        role: {"source": source, "sha256": model_digest(source), "weights_sha256": weights_digest(source)}
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


def refuse_changed_configs(names: list[tuple[str, int]]) -> None:
    """Exit with an error where a finished record of (setting, seed) ran another config than the setting's config
    file with the seed's overrides builds today (:func:`config_changes`)."""
    for name, seed in names:
        record = record_dir(name, seed)
        if is_finished(record) and (changed := config_changes(RUNS[name], seed_overrides(name, seed), record)):
            sys.exit(
                f"error: {record} ran another config than {RUNS[name]} builds today "
                f"({'; '.join(changed)}); remove that record (git rm -r) to run the setting again"
            )


def minutes(run_dir: Path) -> float:
    stages = json.loads((run_dir / "manifest.json").read_text())["stages"]
    return sum(s.get("seconds", 0.0) for s in stages.values()) / 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", default="runs")
    parser.add_argument("--skip-runs", action="store_true", help="only read the records (runs and assays)")
    parser.add_argument("--only", nargs="+", choices=list(RUNS), help="run these (default: all, in this order)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[DEFAULT_SEED], help="one run of each per seed")
    parser.add_argument(
        "--train-seeds", nargs="+", type=int, default=[1, 2, 3], help="the assay's training seeds (default 1 2 3)"
    )
    parser.add_argument(
        "--linked-nli",
        action="store_true",
        help="use runs/nli-minilm and runs/nli-judge as linked, without training them for this code's cache key "
        "(the records name their weights' digests: runs compare only where those agree)",
    )
    parser.add_argument(
        "--page",
        default=PAGE,
        help=f"the page's name: benchmarks/results/NAME.md (default {PAGE}: the main settings' page); another page "
        "reads the same records (e.g. the ablation seeds' page beside the main one)",
    )
    args = parser.parse_args()
    if not args.page.replace("_", "").replace("-", "").isalnum():
        parser.error(f"--page {args.page!r}: a file name of letters, digits, - and _ (the page is results/NAME.md)")
    runs_dir = Path(args.runs_dir)
    names = [(name, seed) for seed in args.seeds for name in args.only or list(RUNS)]
    refuse_changed_configs(names)  # before any run: a record of another config is neither skipped nor compared
    if not args.skip_runs:
        refuse_uncommitted_code()
        nli_models(runs_dir, args.linked_nli, judge=any(seed not in ABLATION_SEEDS for _, seed in names))
        for name, seed in names:
            record = record_dir(name, seed)
            if is_finished(record):
                print(f"recorded: {record}", flush=True)
            else:
                folder = run_folder(runs_dir, name, seed)
                resume = ["--resume"] if (folder / "config.yaml").is_file() else []
                run(["art", "run", "--config", RUNS[name], "--out", str(folder), *resume, *seed_overrides(name, seed)])
                keep_run(folder, record)
            assay_run(record, runs_dir / "art-evidence-assay", args.train_seeds)
    # the tables read the records (a run folder is recorded when it finishes): every finished run, any session
    folders = [record_dir(*n) for n in names if is_finished(record_dir(*n))]
    if not folders:
        sys.exit(f"error: no finished run recorded in {RECORDS} yet; run without --skip-runs first")
    write_page(folders, names, args.only, args.seeds, args.train_seeds, args.page)


ASSAY = EVIDENCE / "assay"  # NAME-seed-S.tT.eval.json.gz per training seed, NAME-seed-S.json (lib/record_assay.py)
ASSAY_STEPS = 9  # one pass over a run's 270 training triplets at batch 32 (configs/assay.yaml)


def assay_run(record: Path, work: Path, train_seeds: list[int]) -> None:
    """`hardcse assay` of the triplets a recorded run trained on (every round's, record_assay.training_triplets)
    at the training seeds not yet kept in ASSAY: the same steps for every run, no dev gating."""
    triplets = training_triplets(record)
    data = work / "data" / f"{record.name}.csv"
    data.parent.mkdir(parents=True, exist_ok=True)
    write_triplets(data, triplets)
    assay_record(record.name, data, ASSAY, work, train_seeds, len(triplets), ASSAY_STEPS)


TITLE = "ART's evidence on a 2-core CPU: adaptive rounds, baselines and ablations"


def write_page(
    folders: list[Path],
    names: list[tuple[str, int]],
    only: list[str] | None,
    seeds: list[int],
    train_seeds: list[int],
    page: str = PAGE,
) -> None:
    """benchmarks/results/PAGE.md and its plots, from the records alone."""
    runs = {(n, s): record_dir(n, s) for n, s in names if record_dir(n, s) in folders}
    # settings are compared within a generation seed: its runs on one machine, judged by one pair of NLI models
    refuse_mixed_machines(runs)
    refuse_mixed_nli(runs)
    EVIDENCE.mkdir(parents=True, exist_ok=True)
    commands = [
        *(
            " ".join(["hardcse art run --config", RUNS[n], "--out", str(run_folder(Path("runs"), n, s))])
            + "".join(f" {o}" for o in seed_overrides(n, s))
            for n, s in names
            if is_finished(record_dir(n, s))
        ),
        rebuild_command(only, seeds, train_seeds, page) + "   # this file",
    ]
    with unpacked(folders) as plain:  # run folders as hardcse reads them; nothing is written into the records
        text = page_text(plain, commands, train_seeds, page)
    print("\n".join(text.splitlines()[: 12 + len(folders)]))


def page_text(folders: list[Path], commands: list[str], train_seeds: list[int], page: str) -> str:
    """Write the page ``page`` and its plots from ``folders`` (the records, unpacked) and the ``commands`` that
    made them; its text."""
    comparison = evidence_comparison(setting_groups(folders))
    assay = evidence_comparison(assay_groups(folders, ASSAY, train_seeds))
    metas = {f.name: json.loads((ASSAY / f"{f.name}.json").read_text("utf-8")) for f in folders}
    refuse_mixed_assays(metas, ASSAY)  # every assay ran one config (their commits are checked by seed below)
    assays = [a for meta in metas.values() for a in meta["assays"]]
    made = sorted({json.loads((f / "manifest.json").read_text(encoding="utf-8"))["created"][:10] for f in folders})
    # the records' own machines, NLI models and code, never today's
    provenance = [
        recorded_machines({f.name: f for f in folders}),
        nli_line(folders),
        # an error where runs, or assays, of other code would be compared within a seed (or assays of other configs)
        code_line_by_seed(
            {
                seed: (kept, refuse_mixed_assays({f.name: metas[f.name] for f in kept}, ASSAY))
                for seed in dict.fromkeys(map(seed_of, folders))
                if (kept := [f for f in folders if seed_of(f) == seed])
            }
        ),
    ]
    lines = [
        *answer_lines(assay, comparison),
        *assay_lines(assay, train_seeds, ASSAY_STEPS, assays, {name: meta["rows"] for name, meta in metas.items()}),
        *evidence_lines(folders, comparison, EVIDENCE / ("evidence.png" if page == PAGE else f"{page}.png")),
        *per_seed_tables(folders),
        "Wall time (sum of stages): " + ", ".join(f"{f.name} {minutes(f):.1f} min" for f in folders),
        "",
        *seed_groups(comparison),
    ]
    for folder in folders:
        report = write_report(folder).read_text(encoding="utf-8")
        for png in sorted((folder / "plots").glob("*.png")):
            shutil.copy2(png, EVIDENCE / f"{folder.name}-{png.name}")
        report = report.replace("](plots/", f"]({EVIDENCE.name}/{folder.name}-").replace("\n## ", "\n### ")
        lines += [report.replace("# ART run", "## ART run", 1), ""]
    # the records' own dates in the title, not today's: a rebuild from the records is byte-identical on any day
    return write_record(
        page, TITLE, lines, command=commands, machine=provenance, date=", ".join(made), machine_first=True
    )


DEFAULT_SEED = 42


def rebuild_command(only: list[str] | None, seeds: list[int], train_seeds: list[int], page: str = PAGE) -> str:
    """The command that rebuilds this file from the same records."""
    command = "python benchmarks/art_rounds.py --skip-runs" + (f" --page {page}" if page != PAGE else "")
    command += f" --only {' '.join(only)}" if only else ""
    command += f" --seeds {' '.join(map(str, seeds))}" if seeds != [DEFAULT_SEED] else ""
    return command + (f" --train-seeds {' '.join(map(str, train_seeds))}" if train_seeds != [1, 2, 3] else "")


def run_folder(runs_dir: Path, name: str, seed: int) -> Path:
    return runs_dir / (name if seed == DEFAULT_SEED else f"{name}-seed-{seed}")


def seed_overrides(name: str, seed: int) -> list[str]:
    """The setting's overrides at ``seed``: the AS_RUN pins, every ``seed`` key of its config set to ``seed`` (none
    for the configs' own 42), and at the ABLATION_SEEDS no judge. A finished record's seed keys are those its
    manifest names: a key the configs gained since (warm_start.seed, judge_training.seed) stays at the value the
    record ran with."""
    record = record_dir(name, seed)
    if seed == DEFAULT_SEED:
        seeded = []
    elif is_finished(record):
        keys = json.loads((record / "manifest.json").read_text())["seeds"]
        seeded = [f"{'' if key == 'seed' else key + '.'}seed={seed}" for key, value in keys.items() if value == seed]
    else:
        seeded = config_seed_overrides(RUNS[name], seed, AS_RUN)
    return [*AS_RUN, *seeded, *(["judge=null"] if seed in ABLATION_SEEDS else [])]


def config_seed_overrides(config: str, seed: int, overrides: list[str] | None = None) -> list[str]:
    """Every ``seed`` key of ``config`` (with ``overrides``) set to ``seed``; none for the configs' own 42."""
    if seed == DEFAULT_SEED:
        return []
    from hardcse.art.config import ArtRunConfig

    # seed_keys names each seed by the block that holds it ("seed" for the top level)
    keys = seed_keys(load_config(ArtRunConfig, config, overrides or []))
    return [f"{'' if key == 'seed' else key + '.'}seed={seed}" for key in keys]


def run(argv: list[str]) -> None:
    print("$ hardcse " + " ".join(argv), flush=True)
    code = hardcse(argv)
    if code:
        sys.exit(code)


if __name__ == "__main__":
    main()
