"""What the method benchmarks share: one run per (setting, seed), resumable, and a small record of each.

A run goes to OUT/NAME/seed-S (a hardcse run folder, resumed when it was cut off). Once it has its eval.json,
its record is kept under benchmarks/results/BENCH/NAME/seed-S: config.yaml, eval.json.gz (scores and per-pair
cosines, what `hardcse compare` resamples), manifest.json (the run's machine and date) and the small JSON files a
table needs. A run whose record exists is not repeated, so a benchmark cut off by a session's end goes on from the
records committed so far, and every table can be rebuilt from the records alone (`--skip-runs`).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from lib.record import RESULTS
from lib.record_files import compress

DEFAULT_SEEDS = [1, 2, 3]


def record_dir(bench: str, name: str, seed: int) -> Path:
    return RESULTS / bench / name / f"seed-{seed}"


def keep_record(run_dir: Path, dest: Path, files: list[str], eval_file: str = "eval.json") -> None:
    """config.yaml, ``eval_file`` (gzipped, as eval.json.gz: record_files.compress; an ART run's is in its last
    round's folder),
    manifest.json (the run's machine and date, for tables rebuilt on another day; benchmarks/lib/provenance.py) and
    ``files`` (paths inside the run folder, kept by their base name)."""
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    shutil.copyfile(run_dir / "config.yaml", partial / "config.yaml")
    shutil.copyfile(run_dir / eval_file, partial / "eval.json")
    for name in ["manifest.json", *files]:
        if (run_dir / name).is_file():
            shutil.copyfile(run_dir / name, partial / Path(name).name)
    compress(partial)
    shutil.rmtree(dest, ignore_errors=True)
    partial.rename(dest)


def run_seeded(
    bench: str,
    name: str,
    seed: int,
    out: Path,
    command: Callable[[Path, bool], int],
    files: list[str],
) -> Path:
    """Run ``command(run_folder, resume)`` (a hardcse CLI call; 0 = success) unless the record exists; keep the
    record; return the record folder."""
    dest = record_dir(bench, name, seed)
    if (dest / "eval.json.gz").is_file():
        return dest
    folder = out / name / f"seed-{seed}"
    resume = (folder / "config.yaml").is_file()
    print(f"== {bench}: {name}, seed {seed} -> {folder}{' (resumed)' if resume else ''}", flush=True)
    if command(folder, resume):
        raise SystemExit(f"{name} (seed {seed}) failed; rerun the benchmark to resume it")
    keep_record(folder, dest, files)
    return dest


def recorded_seeds(bench: str, names: list[str], seeds: list[int]) -> tuple[dict[str, list[int]], list[str]]:
    """The seeds of each setting whose record exists (settings with none left out), and the table's "Not run yet"
    lines (none when every run is recorded): a table can be built before every run has landed."""
    recorded = {name: [s for s in seeds if record_dir(bench, name, s).is_dir()] for name in names}
    missing = [f"{name} seed {s}" for name in names for s in seeds if s not in recorded[name]]
    not_run = [f"Not run yet: {', '.join(missing)}.", ""] if missing else []
    return {name: found for name, found in recorded.items() if found}, not_run
