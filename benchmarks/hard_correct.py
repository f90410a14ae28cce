"""Issue 41 item 5: which reward, filter and data variant writes training data worth the most, at equal cost.

    python benchmarks/hard_correct.py [--only NAME ...] [--seeds 42 ...] [--train-seeds 1 2 3 4 5] [--skip-runs]
    python benchmarks/hard_correct.py --check        # build every variant's config, run nothing

Each variant is one ART round at cpu-full's RL size (25 steps x 16 rollouts, 1,000 synthesis anchors, 300 held-out
anchors; NLI models trained once per machine, as benchmarks/art_rounds.py does), from cpu-full.yaml or a baseline's
config with the overrides below: the paper's reward and the threshold filter of the recorded runs, each option of
issue 41 alone, all of them (hard-correct.yaml), the raw generator, mined negatives, and generated with mined. A
finished run leaves a compact record in benchmarks/results/hard_correct/records/NAME-seed-S/ (art_rounds.py's
RECORD_FILES). Then one `hardcse assay` trains the bundled encoder on each run's first ROWS kept triplets (the same
number for every variant: the fewest any run kept, at most 270) at every training seed, and
benchmarks/results/hard_correct.md tables, per variant: the held-out tuned - raw generator (reward, P(target) of
parsed answers, judge accuracy), the shortcut rates of its kept data (deletions, added negations, demonstration
leaks, positive = negative), and the assay against the paper's reward, the raw generator and mined negatives
(STS-B dev to choose, avg7 to report). Not yet run (2026-11-26): the session that built it had no NLI models.
"""

import argparse
import json
import sys
from pathlib import Path

from art_rounds import HELDOUT, NLI_MODELS, NLI_RECORD, heldout_rows, nli_model, run, write_record
from hardcse.art.analysis.heldout import SHORTCUT_AND_DIFFICULTY
from hardcse.art.analysis.judge import SHORTCUT_LABELS, triplet_shortcuts
from hardcse.art.config import ArtRunConfig
from hardcse.config import load_config
from hardcse.data.triplets import read_triplets
from hardcse.evaluation.compare import interval_cell
from hardcse.stats import Interval
from machine_line import machine_line, recorded_runs

RESULTS = Path(__file__).parent / "results"
RECORDS = RESULTS / "hard_correct" / "records"
ONE_ROUND = ["rounds=1", "triplets_per_round=null"]  # every kept triplet stays in the record; the assay equalises
POOL = "hard-correct"
# name -> (config, overrides): one round each; hard-correct.yaml holds the pool of demonstrations
VARIANTS = {
    "paper": ("cpu-full", []),
    "filter-argmax": ("cpu-full", ["filter.rule=argmax"]),
    "demonstration-pool": (
        POOL,
        ["filter.rule=threshold", "reward.r2_gate=none", "reward.alpha_neg=0.98", "reward.terms=[]"],
    ),
    "r2-gated": ("cpu-full", ["reward.r2_gate=judged", "reward.alpha_neg=1.0"]),
    "r2-smooth": ("cpu-full", ["reward.r2_smoothing=0.02"]),
    "shortcut-penalties": (
        "cpu-full",
        [
            "reward.terms=[{fn: 'hardcse.art.reward.shortcuts:deletion_positive', weight: -0.3}, "
            "{fn: 'hardcse.art.reward.shortcuts:cue_word_negative', weight: -0.3}]"
        ],
    ),
    "hard-correct": (POOL, []),
    "raw-llm": ("baseline-raw-llm", ["synthesis_anchors=1000"]),
    "mined": ("baseline-mined-negatives", ["synthesis_anchors=1000"]),
    "art-mined-negatives": ("art-mined-negatives", []),
    "art-two-negatives": ("art-two-negatives", []),
}
REFERENCES = ("paper", "raw-llm", "mined")


def overrides(name: str, seed: int) -> list[str]:
    """The variant's overrides, and every ``seed`` key of its config set to ``seed`` (none for the configs' 42)."""
    from hardcse.run_folder import seeds as seed_keys

    config, extra = VARIANTS[name]
    keys = seed_keys(load_config(ArtRunConfig, config, [*ONE_ROUND, *extra])) if seed != 42 else {}
    return [*ONE_ROUND, *extra, *(f"{'' if k == 'seed' else k + '.'}seed={seed}" for k in keys)]


def check() -> None:
    """Every variant's config builds (a mistake in an override fails here, not an hour into a run)."""
    for name, (config, _) in VARIANTS.items():
        built = load_config(ArtRunConfig, config, overrides(name, 1))
        print(
            f"{name}: {config} rounds={built.rounds} filter={built.filter.rule} r2_gate={built.reward.r2_gate} "
            f"terms={[t.fn for t in built.reward.terms]} demonstrations={built.generator.demonstrations} "
            f"negatives={built.negatives}"
        )


def data_rows(records: list[Path]) -> list[str]:
    """Per recorded run: its kept triplets, their shortcut rates (hardcse/art/reward/shortcuts.py; the leak by the
    run's own demonstrations) and the round's held-out tuned - raw generator (where it tuned one)."""
    lines = [
        "| run | kept | " + " | ".join(SHORTCUT_LABELS.values()) + " | " + " | ".join(HELDOUT.values()) + " |",
        "|---|---:|" + "---:|" * (len(SHORTCUT_LABELS) + len(HELDOUT)),
    ]
    for record in records:
        triplets = read_triplets(record / "round_1" / "triplets.csv")
        rates = triplet_shortcuts(triplets, load_config(ArtRunConfig, record / "config.yaml").generator)
        cells = [f"{rates[k]:.3f}" if rates.get(k) is not None else "-" for k in SHORTCUT_LABELS]
        held = dict(heldout_rows(record)).get("round_1")
        cells += [interval_cell(Interval(**held[k]["difference"]), digits=3) if held else "-" for k in HELDOUT]
        lines.append(f"| {record.name} | {len(triplets)} | " + " | ".join(cells) + " |")
    return lines


def nli_line(records: list[Path]) -> str:
    """Which NLI models the runs used (their records' NLI_RECORD): one pair for all, or each run's."""
    used = {}
    for record in records:
        path = record / NLI_RECORD
        models = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        used[record.name] = (
            "not recorded"
            if models is None
            else " / ".join(f"{k} {(v['sha256'] or '-')[:12]}" for k, v in models.items())
        )
    if len(set(used.values())) == 1:
        return f"NLI models of every run (SHA-256 of their weights): {next(iter(used.values()))}."
    return "NLI models differ between runs: " + "; ".join(f"{n}: {u}" for n, u in used.items()) + "."


def heldout_detail_rows(records: list[Path]) -> list[str]:
    """Per recorded run that tuned: the held-out tuned - raw generator of issue 41's measures (correctness per kind,
    the cosine of judged-correct answers, the shortcuts; hardcse/art/analysis/heldout.py), where its round has them."""
    lines = [
        "Held-out, tuned - raw generator (300 anchors; paired 95% intervals):",
        "",
        "| run | " + " | ".join(SHORTCUT_AND_DIFFICULTY) + " |",
        "|---|" + "---:|" * len(SHORTCUT_AND_DIFFICULTY),
    ]
    for record in records:
        held = dict(heldout_rows(record)).get("round_1")
        if held is None or SHORTCUT_AND_DIFFICULTY[0] not in held:
            continue
        cells = [
            interval_cell(Interval(**held[k]["difference"]), digits=3) if held[k] else "-"
            for k in SHORTCUT_AND_DIFFICULTY
        ]
        lines.append(f"| {record.name} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", default="runs")
    parser.add_argument("--only", nargs="+", choices=list(VARIANTS), help="these variants (default: all)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[42], help="generation seeds (a run each)")
    parser.add_argument("--train-seeds", nargs="+", type=int, default=[1, 2, 3, 4, 5], help="assay seeds")
    parser.add_argument("--skip-runs", action="store_true", help="only the assay and tables, from the records")
    parser.add_argument("--check", action="store_true", help="build every variant's config and stop")
    parser.add_argument(
        "--linked-nli",
        action="store_true",
        help="use runs/nli-minilm and runs/nli-judge as linked, without training them for this code's cache key "
        "(the records name their weights' digests: runs compare only where those agree)",
    )
    parser.add_argument("--records", type=Path, default=RECORDS, help=argparse.SUPPRESS)  # tables of other records
    args = parser.parse_args()
    if args.check:
        check()
        return
    runs_dir = Path(args.runs_dir)
    names = args.only or list(VARIANTS)
    if not args.skip_runs:
        for name, config in NLI_MODELS.items():
            if args.linked_nli and (runs_dir / name).is_dir():
                print(f"NLI model as linked: {runs_dir / name} (its digest goes into each record)", flush=True)
                continue
            nli_model(runs_dir, name, config)
        for name in names:
            for seed in args.seeds:
                record = RECORDS / f"{name}-seed-{seed}"
                if (record / "round_1" / "triplets.csv").is_file():
                    print(f"recorded: {record}", flush=True)
                    continue
                folder = runs_dir / "hard-correct" / f"{name}-seed-{seed}"
                resume = ["--resume"] if (folder / "config.yaml").is_file() else []
                run(
                    ["art", "run", "--config", VARIANTS[name][0], "--out", str(folder), *resume, *overrides(name, seed)]
                )
                write_record(folder, record)
    recorded = [args.records / f"{n}-seed-{s}" for n in names for s in args.seeds]
    files = [r / "round_1" / "triplets.csv" for r in recorded if (r / "round_1" / "triplets.csv").is_file()]
    if not files:
        sys.exit(f"error: no variant recorded in {RECORDS} yet; run without --skip-runs first")
    kept = {f.parent.parent.name: sum(1 for _ in f.open(encoding="utf-8")) - 1 for f in files}
    rows = min(270, *kept.values())
    print(json.dumps({"kept": kept, "rows": rows}), flush=True)
    assay = runs_dir / "hard-correct" / "assay"
    names_of = [f.parent.parent.name for f in files]
    run(
        [
            "assay",
            "--data",
            *map(str, files),
            "--names",
            *names_of,
            "--seeds",
            *map(str, args.train_seeds),
            "--out",
            str(assay),
            f"rows={rows}",
            *(["--resume"] if (assay / "config.yaml").is_file() else []),
        ]
    )
    lines = [
        "# Hard and correct: ART's data variants at equal cost (issue 41)",
        "",
        f"`python benchmarks/hard_correct.py {' '.join(sys.argv[1:])}`. One round a variant (module doc); the assay:"
        f" each run's first {rows} kept triplets, training seeds {', '.join(map(str, args.train_seeds))}"
        f" ({machine_line()}).",
        "",
        recorded_runs({f.parent.parent.name: f.parent.parent for f in files}),  # the runs' own, not today's
        nli_line([f.parent.parent for f in files]),
        "",
        *data_rows([f.parent.parent for f in files]),
        "",
        *heldout_detail_rows([f.parent.parent for f in files]),
        "",
        (assay / "assay.md").read_text(encoding="utf-8"),
    ]
    (RESULTS / "hard_correct.md").write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    main()
