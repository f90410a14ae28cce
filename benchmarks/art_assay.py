"""The data assay of ART's evidence runs: is one setting's training data better than another's, with no
checkpoint selection at all (issue 40: the runs' own encoders were chosen on stale in-run scores).

    python benchmarks/art_assay.py [--seeds 1 2 3] [--runs-dir runs] [--skip-runs]

For every recorded run of the four main settings (raw-LLM baseline, mined-negative baseline, ART with PPO, ART
with GRPO; generation seeds 42, 1, 2) it rebuilds the exact triplets the run trained on (each round's first
``triplets_per_round`` kept triplets, rounds in order: 270 a run) from benchmarks/results/art_rounds/records, then
runs one `hardcse assay` over the twelve files (configs/assay.yaml: cpu-full's encoder training block, batch 32,
lr 2e-5; one pass over 270 triplets = 9 steps; no dev gating; the bundled encoder as the start of every training;
training seeds --seeds). Each setting is then a group of 3 x seeds encoders (generation seed x training seed),
compared with the raw-LLM baseline and with the mined-negative baseline through `hardcse compare`'s paired bootstrap
(test pairs and members resampled, members paired by generation and training seed).

Writes benchmarks/results/art_assay.md (the table, the command, date, minutes and machine) and
benchmarks/results/art_assay/ (every encoder's eval.json.gz with its per-pair cosines, the assay's manifest): with
--skip-runs the tables are rebuilt from those records alone.
"""

import argparse
import gzip
import json
import shlex
import shutil
import sys
import time
from datetime import date
from pathlib import Path

from hardcse.cli import main as hardcse
from hardcse.data.triplets import write_triplets
from hardcse.evaluation.compare import compare_groups, comparison_markdown
from hardcse.evaluation.results import Result
from hardcse.machine import machine_record
from record_assay import training_triplets

RESULTS = Path(__file__).parent / "results"
RECORDS = RESULTS / "art_rounds" / "records"  # issue 28's (art_rounds.ISSUE_28_RECORDS)
OUT = RESULTS / "art_assay"
SETTINGS = {  # label -> the art_rounds record name
    "raw-llm": "baseline-raw-llm",
    "mined": "baseline-mined-negatives",
    "ppo": "cpu-full",
    "grpo": "cpu-full-grpo",
}
GENERATION_SEEDS = (42, 1, 2)


def build_files(data_dir: Path) -> dict[str, Path]:
    """name -> the triplet file of each recorded run (SETTING.sSEED)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for label, setting in SETTINGS.items():
        for seed in GENERATION_SEEDS:
            record = RECORDS / f"{setting}-seed-{seed}"
            if not record.is_dir():
                sys.exit(f"error: {record}: no record of this run; run benchmarks/art_rounds.py first")
            path = data_dir / f"{label}.s{seed}.csv"
            write_triplets(path, training_triplets(record))
            files[f"{label}.s{seed}"] = path
    return files


def keep_records(run: Path, names: list[str], seeds: list[int]) -> None:
    """The compact record: every encoder's eval.json (gzipped) and the assay's manifest and config."""
    OUT.mkdir(parents=True, exist_ok=True)
    for name in names:
        for seed in seeds:
            data = (run / name / f"seed-{seed}" / "eval.json").read_bytes()
            (OUT / f"{name}.t{seed}.eval.json.gz").write_bytes(gzip.compress(data, mtime=0))
    for file in ("manifest.json", "config.yaml", "assay.md"):
        shutil.copy2(run / file, OUT / file)


def grouped(seeds: list[int]) -> dict[str, list[Result]]:
    """Each setting's encoders from the records, a member's seed = generation seed x 100 + training seed."""
    groups: dict[str, list[Result]] = {}
    for label in SETTINGS:
        for generation in GENERATION_SEEDS:
            for seed in seeds:
                name = f"{label}.s{generation}.t{seed}"
                record = json.loads(gzip.decompress((OUT / f"{name}.eval.json.gz").read_bytes()))
                groups.setdefault(label, []).append(Result(name, record, {"seed": generation * 100 + seed}))
    return groups


PAIRS = [("raw-llm", "mined"), ("raw-llm", "ppo"), ("raw-llm", "grpo"), ("mined", "ppo"), ("mined", "grpo")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3], help="training seeds (default 1 2 3)")
    parser.add_argument("--runs-dir", default="runs", help="where the assay's run folder goes (default runs/)")
    parser.add_argument("--skip-runs", action="store_true", help="only rebuild the tables from the records")
    args = parser.parse_args()
    run = Path(args.runs_dir) / "art-assay"
    names = [f"{label}.s{seed}" for label in SETTINGS for seed in GENERATION_SEEDS]
    seeds = " ".join(map(str, args.seeds))
    if not args.skip_runs:
        files = build_files(Path(args.runs_dir) / "art-assay-data")
        assay = ["assay", "--data", *map(str, files.values()), "--names", *files, "--seeds", *map(str, args.seeds)]
        start = time.perf_counter()
        status = hardcse([*assay, "--out", str(run), *(["--resume"] if (run / "config.yaml").is_file() else [])])
        if status:
            sys.exit(status)
        keep_records(run, names, args.seeds)
        facts = {
            "command": shlex.join(["python", "benchmarks/art_assay.py", *sys.argv[1:]]),
            "date": str(date.today()),
            "minutes": round((time.perf_counter() - start) / 60, 1),
            "machine": machine_record(),
        }
        (OUT / "run.json").write_text(json.dumps(facts, indent=2) + "\n", encoding="utf-8")
    facts = json.loads((OUT / "run.json").read_text(encoding="utf-8"))
    groups = grouped(args.seeds)
    comparison = compare_groups(groups, PAIRS)
    machine = facts["machine"]
    engines = sorted({m.record.get("engine", "torch") for members in groups.values() for m in members})
    lines = [
        "# The data assay of ART's evidence runs (issue 40)",
        "",
        f"`{facts['command']}` ({facts['date']}, {facts['minutes']} min for {len(names) * len(args.seeds)} trainings "
        f"and evaluations{'; ' + facts['note'] if facts.get('note') else ''}; {machine['cpu']}, "
        f"{machine['cores']} cores, flags "
        f"{' '.join(machine['cpu_flags'])}; evaluations by {', '.join(engines)}). Rebuilt from the records by "
        f"`python benchmarks/art_assay.py --skip-runs --seeds {seeds}`.",
        "",
        "Each recorded run's 270 training triplets (raw-LLM and mined baselines, ART with PPO and with GRPO; "
        "generation seeds 42, 1, 2) train the bundled encoder with `configs/assay.yaml` (supervised SimCSE, batch "
        f"32, lr 2e-5, 9 steps, no dev gating) at training seeds {seeds}: a group is 3 generation seeds x "
        f"{len(args.seeds)} training seeds. Intervals: paired bootstrap 95% over test pairs and members (paired by "
        "generation and training seed); a difference is a finding only when its interval excludes zero.",
        "",
        comparison_markdown(comparison),
    ]
    (RESULTS / "art_assay.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
