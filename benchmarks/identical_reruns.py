"""Each shipped smoke config run twice on the bundled models: are the outputs byte-identical (timings aside)?

    python benchmarks/identical_reruns.py --out runs/identical-reruns

Runs `hardcse art run --config smoke`, `hardcse datacube train --config datacube-smoke` and
`hardcse diffaug train --config diffaug-smoke` twice each into fresh folders, then compares every output file byte
for byte, except files that record time (manifest.json, run.log, report.md, training.json's and ppo_log.jsonl's
timing fields, which are compared with those fields removed) and plots (PNG metadata). Writes
benchmarks/results/identical_reruns.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from hardcse.cli import main as hardcse
from lib.provenance import recorded_machines
from lib.record import write_record

RUNS = {
    "art": ["art", "run", "--config", "smoke", "keep_discriminator=false"],  # both runs train the discriminator
    "datacube": ["datacube", "train", "--config", "datacube-smoke"],
    "diffaug": ["diffaug", "train", "--config", "diffaug-smoke"],
}
SKIPPED = {"manifest.json", "run.log", "run.lock", "report.md"}  # what records when, not what was computed
TIMING_KEYS = ("seconds", "_s", "per_step", "samples_per_second", "steps_per_second", "runtime")


def _without_timings(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if not any(t in k for t in TIMING_KEYS)}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def _same(a: Path, b: Path, first: Path, second: Path) -> bool:
    """Equal once the run's own folder name is the same in both (a record names the model it evaluated) and
    timing fields (JSON) or timing lines (the model card's "Training: 11.3 seconds") are left out."""
    if a.read_bytes() == b.read_bytes():
        return True
    texts = [a.read_text(), b.read_text().replace(str(second), str(first))]
    if a.suffix == ".json":
        return _without_timings(json.loads(texts[0])) == _without_timings(json.loads(texts[1]))
    if a.suffix == ".jsonl":
        rows = [[json.loads(line) for line in t.split("\n") if line] for t in texts]
        return _without_timings(rows[0]) == _without_timings(rows[1])
    lines = [[line for line in t.split("\n") if not line.rstrip().endswith((" seconds", " s)"))] for t in texts]
    return lines[0] == lines[1]


def compare(first: Path, second: Path) -> dict:
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    compared, differing, exact = [], [], 0
    for rel in files:
        if rel.name in SKIPPED or rel.suffix == ".png":
            continue
        other = second / rel
        compared.append(str(rel))
        if not other.is_file() or not _same(first / rel, other, first, second):
            differing.append(str(rel))
        elif (first / rel).read_bytes() == other.read_bytes():
            exact += 1
    return {"files_compared": len(compared), "byte_identical": exact, "differing": differing}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/identical-reruns")
    parser.add_argument("--compare-only", action="store_true", help="compare the folders of an earlier run")
    args = parser.parse_args()
    out = Path(args.out)
    if not args.compare_only:
        shutil.rmtree(out, ignore_errors=True)
    results = {}
    for name, command in RUNS.items():
        start = time.perf_counter()
        for copy in ("first", "second"):
            if not args.compare_only and hardcse([*command, "--out", str(out / name / copy)]) != 0:
                sys.exit(f"{name} ({copy}) failed")
        results[name] = {
            "command": " ".join(["hardcse", *command]),
            **compare(out / name / "first", out / name / "second"),
        }
        if not args.compare_only:
            results[name]["minutes_for_both"] = round((time.perf_counter() - start) / 60, 1)
    record = {"results": results}
    if args.compare_only:  # the folders were made earlier: their manifests name the machine, not this one
        record["machine"] = None
    lines = [
        "| run | files compared | byte-identical | same but timings and folder name | differing |",
        "|---|---:|---:|---:|---|",
    ]
    for r in results.values():
        timing_only = r["files_compared"] - r["byte_identical"] - len(r["differing"])
        lines.append(
            f"| `{r['command']}` | {r['files_compared']} | {r['byte_identical']} | {timing_only} | "
            f"{', '.join(r['differing']) or 'none'} |"
        )
    text = write_record(
        "identical_reruns",
        "Identical reruns of the smoke configs",
        [*lines, ""],
        record,
        about=" (files that record time, and plots, are left out"
        + ("; the folders were made by the same script without --compare-only)." if args.compare_only else ")."),
        machine=recorded_machines(
            {f"{name}/{copy}": out / name / copy for name in RUNS for copy in ("first", "second")}
        ),
    )
    print(text)
    if any(r["differing"] for r in results.values()):
        sys.exit("some outputs differ")


if __name__ == "__main__":
    main()
