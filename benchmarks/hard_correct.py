"""Issue 41 item 5: which reward, filter and data variant writes training data worth the most, at equal cost.

    python benchmarks/hard_correct.py [--only NAME ...] [--seeds 42 ...] [--train-seeds 1 2 3 4 5] [--skip-runs]
    python benchmarks/hard_correct.py --check        # build every variant's config, run nothing

Each variant is one ART round at cpu-full's RL size (25 steps x 16 rollouts, 1,000 synthesis anchors, 300 held-out
anchors; NLI models trained once per machine, as benchmarks/art_rounds.py does), from cpu-full.yaml or a baseline's
config with the overrides below: "paper" is the paper's reward with cpu-full's threshold rule (and, since issue 41,
the filter's guards against an entailed negative and a positive that is its negative, under every rule); then each
option of issue 41 alone ("r2-gated" is r2 for judged-correct answers only with no alpha_neg cap, one option as
hard-correct.yaml uses it; "demonstration-pool" draws one of hard-correct.yaml's ten demonstrations per anchor, in
place of cpu-full's one), hard-correct.yaml (every option but r2_smoothing, moot without the alpha_neg cap), the
raw generator, mined negatives, and generated with mined. A
finished run leaves a compact record in benchmarks/results/hard_correct/records/NAME-seed-S/ (art_rounds.py's
RECORD_FILES). Once every listed variant is recorded, `hardcse assay` trains the bundled encoder on each run's first
ROWS kept triplets (the same number for every variant: the fewest any run kept, at most 270) for ASSAY_STEPS steps
at every training seed, one variant at a time; each evaluation is kept in benchmarks/results/hard_correct/assay/
(so an interrupted assay, or one continued in another session, redoes only what is missing). Then
benchmarks/results/hard_correct.md tables, per variant: the shortcut rates of its kept data (deletions, added
negations, demonstration leaks, positive = negative), the independent judge's verdict on its kept data (the false
negatives the filter lets through), the held-out tuned - raw generator, and the assay against the paper's reward,
the raw generator and mined negatives (STS-B dev to choose, avg7 to report), with one sentence per question of
issue 41 (hard_correct_assay.png: the intervals). One generation run a variant: the intervals cover test pairs and
training seeds, not the spread between generation runs (issue 42 runs several seeds a setting).
"""

import argparse
import json
import shlex
import sys
from pathlib import Path

from art_rounds import AS_RUN as ART_ROUNDS_AS_RUN
from art_rounds import config_changes, config_seed_overrides, keep_run, nli_models, run
from hardcse.art.config import ArtRunConfig
from hardcse.config import load_config
from hardcse.data.triplets import write_triplets
from hardcse.evaluation.compare import compare_groups, write_comparison
from hardcse.evaluation.results import Result
from lib.hard_correct_tables import (
    GUARD_DROPPED,
    GUARDS,
    answers,
    assay_pairs,
    data_rows,
    heldout_detail_rows,
    judged_kept,
    judged_rows,
    variant_of,
)
from lib.provenance import machine_line, nli_line, recorded_runs
from lib.record import RESULTS, write_record
from lib.record_assay import assay_record, assayed, read_stored_triplets
from lib.record_files import exists, plain_file

RECORDS = RESULTS / "hard_correct" / "records"
ASSAY = RESULTS / "hard_correct" / "assay"  # NAME-seed-S.tT.eval.json.gz per training seed, NAME-seed-S.json
ASSAY_STEPS = 9  # as art_rounds.py (270 rows at batch 32): fewer kept rows are seen more than once
ONE_ROUND = ["rounds=1", "triplets_per_round=null"]  # every kept triplet stays in the record; the assay equalises
POOL = "hard-correct"
# cpu-full as these variants ran (2026-11-26): the threshold rule and 1,000 anchors a round. cpu-full has since
# taken the paper's argmax rule and 1,500 anchors (issue 41's choice), so each variant pins what it ran with
# (--check compares every built config with its record's)
AS_RUN = ["synthesis_anchors=1000", *ART_ROUNDS_AS_RUN]  # and the rollouts art_rounds.py pins
BOUNDS = ["filter.min_entailment=0.31", "filter.min_contradiction=0.31"]  # read by the threshold rule only
THRESHOLD = ["filter.rule=threshold", *BOUNDS]
# name -> (config, overrides): one round each; hard-correct.yaml holds the pool of demonstrations
VARIANTS = {
    "paper": ("cpu-full", [*AS_RUN, *THRESHOLD]),
    "filter-argmax": ("cpu-full", [*AS_RUN, "filter.rule=argmax", *BOUNDS]),
    "demonstration-pool": (
        POOL,
        [*AS_RUN, *THRESHOLD, "reward.r2_gate=none", "reward.alpha_neg=0.98", "reward.terms=[]"],
    ),
    "r2-gated": ("cpu-full", [*AS_RUN, *THRESHOLD, "reward.r2_gate=judged", "reward.alpha_neg=1.0"]),
    "r2-smooth": ("cpu-full", [*AS_RUN, *THRESHOLD, "reward.r2_smoothing=0.02"]),
    "shortcut-penalties": (
        "cpu-full",
        [
            *AS_RUN,
            *THRESHOLD,
            "reward.terms=[{fn: 'hardcse.art.reward.shortcuts:deletion_positive', weight: -0.3}, "
            "{fn: 'hardcse.art.reward.shortcuts:cue_word_negative', weight: -0.3}]",
        ],
    ),
    "hard-correct": (POOL, [*AS_RUN, *BOUNDS]),
    "raw-llm": ("baseline-raw-llm", [*AS_RUN, *THRESHOLD]),
    "mined": ("baseline-mined-negatives", [*AS_RUN, *THRESHOLD]),
    "art-mined-negatives": ("art-mined-negatives", [*AS_RUN, *THRESHOLD]),
    "art-two-negatives": ("art-two-negatives", [*AS_RUN, *THRESHOLD]),
}


def overrides(name: str, seed: int) -> list[str]:
    """The variant's overrides, and every ``seed`` key of its config set to ``seed`` (none for the configs' 42)."""
    config, extra = VARIANTS[name]
    return [*ONE_ROUND, *extra, *config_seed_overrides(config, seed, [*ONE_ROUND, *extra])]


def check() -> None:
    """Every variant's config builds (a mistake in an override fails here, not an hour into a run), and equals the
    config its record ran with, where there is one (a config file changed since would run something else)."""
    differ = []
    for name, (config, _) in VARIANTS.items():
        built = load_config(ArtRunConfig, config, overrides(name, 1))
        print(
            f"{name}: {config} rounds={built.rounds} filter={built.filter.rule} r2_gate={built.reward.r2_gate} "
            f"terms={[t.fn for t in built.reward.terms]} demonstrations={built.generator.demonstrations} "
            f"negatives={built.negatives}"
        )
        if (RECORDS / f"{name}-seed-42" / "config.yaml").is_file():
            differ += [f"{name}: {c}" for c in config_changes(config, overrides(name, 42), RECORDS / f"{name}-seed-42")]
    if differ:
        sys.exit("error: variants no longer build the config their record ran with:\n" + "\n".join(differ))


def write_guard_dropped(run_dir: Path, record: Path) -> None:
    """``record/GUARD_DROPPED``: the triplets of the run's synthesis that only the filter's guards dropped (an
    entailed negative, a positive that is its negative: the last checks, so these passed the rule and every format
    check), in synthesis order: with the kept ones, what the filter kept before the guards (issue 41 item 1)."""
    synthetic = run_dir / "round_1" / "synthetic.jsonl"
    if not synthetic.is_file():
        sys.exit(f"error: {synthetic} is missing: {record} needs its run folder once, to record {GUARD_DROPPED}")
    dropped = []
    for line in synthetic.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["drop_reason"] in GUARDS:
            mined = [row["mined_negative"]] if "mined_negative" in row else []
            dropped.append((row["anchor"], row["positive"], row["negative"], *mined))
    write_triplets(record / GUARD_DROPPED, dropped)


def assay_groups(records: list[Path], train_seeds: list[int]) -> dict[str, list[Result]]:
    """Each variant's assayed encoders from ASSAY; a member's seed = generation seed x 100 + training seed."""
    groups: dict[str, list[Result]] = {}
    for record in records:
        variant, generation = variant_of(record.name)
        data = read_stored_triplets(record / "round_1" / "triplets.csv")
        groups.setdefault(variant, []).extend(assayed(record.name, ASSAY, train_seeds, generation, data))
    return groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", default="runs")
    parser.add_argument("--only", nargs="+", choices=list(VARIANTS), help="these variants (default: all)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[42], help="generation seeds (a run each)")
    parser.add_argument("--train-seeds", nargs="+", type=int, default=[1, 2, 3, 4, 5], help="assay seeds")
    parser.add_argument("--skip-runs", action="store_true", help="only the tables, from the records")
    parser.add_argument("--check", action="store_true", help="build every variant's config and stop")
    parser.add_argument(
        "--linked-nli",
        action="store_true",
        help="use runs/nli-minilm and runs/nli-judge as linked, without training them for this code's cache key "
        "(the records name their weights' digests: runs compare only where those agree)",
    )
    args = parser.parse_args()
    if args.check:
        check()
        return
    runs_dir = Path(args.runs_dir)
    names = args.only or list(VARIANTS)
    records = [RECORDS / f"{n}-seed-{s}" for n in names for s in args.seeds]
    if not args.skip_runs:
        nli_models(runs_dir, args.linked_nli)
        for record in records:
            folder = runs_dir / "hard-correct" / record.name
            if exists(record / "round_1" / "triplets.csv"):
                print(f"recorded: {record}", flush=True)
            else:
                name, seed = variant_of(record.name)
                resume = ["--resume"] if (folder / "config.yaml").is_file() else []
                run(
                    ["art", "run", "--config", VARIANTS[name][0], "--out", str(folder), *resume, *overrides(name, seed)]
                )
                keep_run(folder, record)
            if not (record / GUARD_DROPPED).is_file():  # records made before this file was: from their run folder
                write_guard_dropped(folder, record)
    missing = [r for r in records if not exists(r / "round_1" / "triplets.csv")]
    if missing:
        sys.exit(f"error: not recorded yet: {', '.join(r.name for r in missing)}; run without --skip-runs first")
    kept = {r.name: len(read_stored_triplets(r / "round_1" / "triplets.csv")) for r in records}
    rows = min(270, *kept.values())
    print(json.dumps({"kept": kept, "rows": rows}), flush=True)
    judged = judged_kept(records, runs_dir / "nli-judge")  # before the assay: a wrong judge fails at once
    if not args.skip_runs:
        for record in records:
            work = runs_dir / "hard-correct" / "assay"
            with plain_file(record / "round_1" / "triplets.csv") as triplets:  # `hardcse assay --data` reads it
                assay_record(record.name, triplets, ASSAY, work, args.train_seeds, rows, ASSAY_STEPS)
    groups = assay_groups(records, args.train_seeds)
    comparison = compare_groups(groups, assay_pairs(list(groups)))
    assays = [a for r in records for a in json.loads((ASSAY / f"{r.name}.json").read_text("utf-8"))["assays"]]
    stem = RESULTS / "hard_correct_assay"
    command = shlex.join(
        ["python", "benchmarks/hard_correct.py", "--linked-nli", "--only", *names, "--seeds", *map(str, args.seeds)]
        + ["--train-seeds", *map(str, args.train_seeds)]
    )
    assay_markdown = write_comparison(
        comparison,
        stem,
        "The assay of every variant's kept data (issue 41)",
        f"{command} --skip-runs",
        [
            f"Each run's first {rows} kept triplets, {ASSAY_STEPS} steps at batch 32 (configs/assay.yaml otherwise), "
            f"training seeds {', '.join(map(str, args.train_seeds))}; a member's seed is generation seed x 100 + "
            f"training seed. One generation run a variant: the intervals cover the test pairs and training seeds, not "
            f"the spread between generation runs. The assays ran {sum(a['minutes'] for a in assays):.1f} min in all "
            f"({'; '.join(sorted({machine_line(a['machine'], a['date']) for a in assays}))}); each one's command: "
            f"{ASSAY.relative_to(RESULTS.parent.parent)}/NAME.json."
        ],
        machine=list({json.dumps(a["machine"], sort_keys=True): a["machine"] for a in assays}.values()),  # the assays'
    )
    write_record(
        "hard_correct",
        "Hard and correct: ART's data variants at equal cost (issue 41)",
        [
            *data_rows(records),
            "",
            *judged_rows(judged),
            "",
            *heldout_detail_rows(records),
            "",
            *answers(comparison, judged, records),
            "",
            "## The assay",
            "",
            assay_markdown.split("\n", 2)[2],  # write_comparison's page without its title
        ],
        command=command,
        about=" (runs, then the assay; add `--skip-runs` to rebuild this page and hard_correct_assay.* from the "
        "records, which needs runs/nli-judge for the judge's table). One round a variant (module doc).",
        machine=[recorded_runs({r.name: r for r in records}), nli_line(records)],  # the runs' own, not today's
        date=False,
    )


if __name__ == "__main__":
    main()
