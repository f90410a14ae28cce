"""Issue 42 item 4: where an ART run's time goes, read from the records of runs already made.

    python benchmarks/run_time.py

From benchmarks/results/hard_correct/records/ (one round each at cpu-full's RL size, 1,000 synthesis anchors, 300
held-out anchors; runs of 2026-11-26, machine in their manifests): each stage's seconds (the run's manifest.json)
and, for a run that tuned its own generator, the mean seconds of an RL step's parts (round_1/generator/rl_log.jsonl:
sampling, scoring, the policy's and the reference's forwards, the optimisation). A run that reused a tuned
generator (reuse: true) shows its copy's seconds for the generator stage. Then issue 42's evidence runs
(benchmarks/results/art_evidence/records/): each run's stages summed over its rounds, so what the caches saved shows
(a round tuned before from the same inputs is copied; the raw generator's held-out texts are generated once).
Writes benchmarks/results/run_time.md. No run is made: the figures are what those runs logged (they ran one at a
time; short table previews and small test files ran beside some of them, as their records' commits say).
"""

import json
from pathlib import Path

from lib.provenance import recorded_runs
from lib.record import RESULTS, write_record
from lib.record_files import exists, read_text

RECORDS = RESULTS / "hard_correct" / "records"
EVIDENCE = RESULTS / "art_evidence" / "records"
# what shared the cores with an evidence run (written down as each record was committed; its commit says the same)
SHARED = {
    "cpu-full-seed-42": "round 1's synthesis shared the cores with a 7.6-min table rebuild (nice 10)",
    "cpu-full-grpo-seed-42": "all but its first ~6 min (~35 min) shared the cores with a fresh-clone `make test`",
    "art-two-negatives-seed-42": "its first ~19 min shared the cores with the end of a fresh-clone `make test`",
    "art-two-negatives-seed-1": "round 1 (its generator reused from cpu-full-seed-1's) and round 2's RL shared the "
    "cores with a 5-min page rebuild, three 35-s page builds and tests (~7 min in all)",
    "cpu-full-seed-2": "two processes: the first (its first ~20 min beside a `make demo`, paused 4 min) was stopped "
    "at a session's end in round 1's RL after step 21 of 25 (~29 min of wall time); the second resumed from the "
    "step-20 checkpoint (step 21 gave the same reward again) 14 min later, so the generator column counts of "
    "round 1's RL only the second process's 48 s",
    "cpu-full-seed-3": "two processes: the first ran ~8 min alone, then beside a 4.4-min page rebuild and ~1 min of "
    "tests, from 20:24 beside a fresh-clone `make test` (nice 5), was paused (SIGSTOP) 20:50-21:01 and from 21:01 "
    "for another fresh-clone `make test`, and was stopped at a session's end in round 3's synthesis; the second "
    "resumed it in the next session (the manifest counts round 3's synthesis from then: the second process's part) "
    "beside ~1 min of tests and a 3.8-min page rebuild (nice 5)",
    "cpu-full-grpo-seed-3": "its first ~24 min shared the cores with a 7-min benchmark (engine_selection.py, nice 5) "
    "and a 16-min `make test-fast` (nice 5)",
    "cpu-full-seed-1": "two processes (round 1's encoder on resumed 30 min later); round 3's RL (~12 min) shared "
    "the cores with three page rebuilds (~11 min)",
    "art-two-negatives-seed-4": "round 1 (reused from cpu-full-seed-4's) shared the cores with a ~2-min duplicate-code "
    "scan (nice 10)",
    "cpu-full-seed-5": "~1 min of short tests and file edits beside it; its page failed at the end (the process had "
    "read the page code before its fix for runs without a judge) after the record and the assay were written",
    "ablation-one-round-seed-5": "its last ~14 min (the end of synthesis, then held-out, training, evaluation and "
    "measures) shared the cores with a fresh-clone `make test`",
    "ablation-no-difficulty-seed-5": "~1 min of a page rebuild (nice 19) in round 1's RL and ~40 s of short tests "
    "beside it",
    "cpu-full-seed-6": "~1.5 min of a page rebuild and run_time.py (nice 19) in round 1's RL, then ~19 min (its "
    "rounds 1 and 2) beside the main page's rebuild (nice 19) and ~20 s of doc tests",
    "ablation-no-filter-seed-6": "~1.5 min of a page rebuild and run_time.py (nice 19) in round 2's RL; from "
    "round 2's synthesis on (its last ~22 min) beside a fresh-clone `make test` (nice 10)",
    "ablation-one-round-seed-6": "all but its last ~3 min beside a fresh-clone `make test` (nice 10), and ~3 min of a "
    "page rebuild and run_time.py (nice 19)",
    "ablation-no-difficulty-seed-6": "~2 min of a page rebuild and run_time.py (nice 19) and ~1 min of tests in "
    "round 1's RL; from round 2's end (~10:18) a fresh-clone `make test-fast` (nice 5) beside it, until the first "
    "process was stopped by hand at 10:29 in round 3's RL; the second (10:49-11:00, resumed in round 3's RL) beside "
    "~1 min of a review's page rebuild, seconds of tests and from 10:55 a page rebuild (all nice 19)",
    "cpu-full-seed-7": "its first ~16 min (round 1's synthesis and RL) beside two page rebuilds (nice 19)",
    "ablation-no-filter-seed-7": "~4 min of a page rebuild and run_time.py (nice 19), then from 11:45 a fresh-clone "
    "`make test` (nice 10)",
    "ablation-one-round-seed-7": "its first ~28 min (12:09-12:37) beside a fresh-clone `make test` (nice 10), and "
    "~5 min of a page rebuild and run_time.py (nice 19) and ~2 min of a review's (nice 19)",
    "ablation-no-difficulty-seed-7": "~4 min of a page rebuild and run_time.py (nice 19)",
    "cpu-full-seed-4": "two processes: the first from 00:08, from 00:13 ~20 min beside a `make demo` (nice 5), was "
    "stopped at a session's end in round 2's synthesis; the second resumed it in the next session (the manifest "
    "counts round 2's synthesis from then: the second process's part) beside ~1 min of tests (nice 10)",
}
STEP_PARTS = {  # rl_log.jsonl key: what it times
    "generation_s": "sampling",
    "scoring_s": "scoring (reward)",
    "policy_forward_s": "policy forward",
    "reference_s": "reference forward",
    "optimisation_s": "optimisation",
}


def stage_seconds(record: Path) -> dict[str, float]:
    stages = json.loads((record / "manifest.json").read_text(encoding="utf-8"))["stages"]
    return {name: stage["seconds"] for name, stage in stages.items()}


def step_means(record: Path) -> dict[str, float] | None:
    """Mean seconds of each STEP_PARTS over the RL steps the run logged; None where it logged none."""
    path = record / "round_1" / "generator" / "rl_log.jsonl"
    steps = [json.loads(line) for line in read_text(path).splitlines()] if exists(path) else []
    steps = [s for s in steps if all(k in s for k in STEP_PARTS)]
    return {k: sum(s[k] for s in steps) / len(steps) for k in STEP_PARTS} if steps else None


def main() -> None:
    records = sorted(p for p in RECORDS.iterdir() if (p / "manifest.json").is_file())
    seconds = {r.name: stage_seconds(r) for r in records}
    stages = list(dict.fromkeys(s for run in seconds.values() for s in run))
    lines = [
        "Seconds per stage (manifest.json; a reused generator's stage is its copy):",
        "",
        *stage_table(seconds, stages, digits=0, per_minute=60),
    ]
    lines += [
        "",
        "An RL step's parts, mean seconds over the logged steps (rl_log.jsonl; runs that tuned their own generator):",
        "",
        "| run | " + " | ".join(STEP_PARTS.values()) + " | step |",
        "|---|" + "---:|" * (len(STEP_PARTS) + 1),
    ]
    for record in records:
        means = step_means(record)
        if means and seconds[record.name].get("round_1.generator", 0) > 60:  # not a copy of another run's tuning
            cells = [f"{means[k]:.2f} ({means[k] / sum(means.values()):.0%})" for k in STEP_PARTS]
            lines.append(f"| {record.name} | " + " | ".join(cells) + f" | {sum(means.values()):.2f} |")
    lines += evidence_lines(sorted(p for p in EVIDENCE.glob("*") if (p / "manifest.json").is_file()))
    text = write_record(
        "run_time",
        "Where an ART round's time goes (issue 42 item 4)",
        [*lines, ""],
        about=": read from the records of benchmarks/results/hard_correct/records/ (one\nround each at cpu-full's RL "
        "size: 25 steps x 16 rollouts, 1,000 synthesis anchors, 300 held-out anchors; no\nrun made here; the runs ran "
        "one at a time, with short table previews and small test files beside some of\nthem, r2-gated's and "
        "hard-correct's RL among them: compare the parts' shares across runs more than their\nseconds).",
        machine=recorded_runs({r.name: r for r in records}),  # the runs' own, not today's
        date=False,
    )
    print(text)


def evidence_lines(records: list[Path]) -> list[str]:
    """Issue 42's runs: minutes per kind of stage, summed over the rounds (round_N.KIND), and the whole run."""
    if not records:
        return []
    minutes = {r.name: {} for r in records}
    for record in records:
        for stage, seconds in stage_seconds(record).items():
            kind = stage.split(".", 1)[1] if stage.startswith("round_") and stage[6:7] != "0" else stage
            minutes[record.name][kind] = minutes[record.name].get(kind, 0.0) + seconds / 60
    order = ["round_0.eval", "generator", "synthesis", "heldout", "encoder", "eval", "measures"]  # a round's order
    present = list(dict.fromkeys(k for run in minutes.values() for k in run))
    kinds = [k for k in order if k in present] + [k for k in present if k not in order]
    lines = [
        "",
        "Issue 42's evidence runs (benchmarks/results/art_evidence/records/), minutes per kind of stage summed over"
        " the rounds (generator: RL, or its copy where a round tuned before from the same inputs was reused):",
        "",
        recorded_runs({r.name: r for r in records}),
        "",
        *stage_table(minutes, kinds, digits=1, per_minute=1),
        "",
        *(f"- {name}: {SHARED[name]}." for name in minutes if name in SHARED),
    ]
    return lines


def stage_table(runs: dict[str, dict[str, float]], stages: list[str], digits: int, per_minute: float) -> list[str]:
    """A Markdown table: one row per run, its time in each stage ('-' where it had none) and its total minutes."""
    lines = ["| run | " + " | ".join(stages) + " | total min |", "|---|" + "---:|" * (len(stages) + 1)]
    for name, run in runs.items():
        cells = [f"{run[s]:.{digits}f}" if s in run else "-" for s in stages]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {sum(run.values()) / per_minute:.1f} |")
    return lines


if __name__ == "__main__":
    main()
