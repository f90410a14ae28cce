"""benchmarks/results stays within a stated size budget (DESIGN.md, "Records"): every clone carries every record, so
a record keeps what computes its page's figures again, its large files compressed (benchmarks/lib/record_files.py), and
no plot that is drawn again from it (docs/development.md, "Adding a benchmark record")."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from lib.record_files import COMPRESSED  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
# The budget, in bytes of the files under benchmarks/results. 2026-11-27, once the run records' large files were
# compressed and their own plots and reports (drawn again by every page rebuild) dropped: 45.0 MB, down from 102.3 MB.
# 2026-12-07, once every plot was saved on a palette of 256 colours (hardcse/figures.py; 8.3 MB of plots became
# 3.1 MB): 42.8 MB. What is left computes a figure or is shown by a page: the assays' and seeded runs' per-pair
# cosines (about 17 MB, gzip), the ART runs' per-round cosines (about 12 MB, gzip), the kept triplets, measures and
# RL logs (about 6 MB, gzip), the plots the pages show (3.1 MB), the pages and small JSON. The aim of 35 MB
# would need the recorded cosines thinned (the intervals could not be computed again) or stored more tightly: the
# budget is today's size with room for a few more runs (about 1 MB each with their assay and plots).
BUDGET_MB = 45
RUN_RECORDS = [RESULTS / "art_evidence" / "records", RESULTS / "hard_correct" / "records"]


def results_bytes(folder: Path = RESULTS) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_benchmark_results_stay_within_their_budget():
    size = results_bytes()
    largest = sorted((p for p in RESULTS.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)[-5:]
    assert size <= BUDGET_MB * 10**6, (
        f"benchmarks/results holds {size / 10**6:.1f} MB, over its {BUDGET_MB} MB budget; the largest files: "
        + ", ".join(f"{p.relative_to(RESULTS)} ({p.stat().st_size / 10**6:.1f} MB)" for p in reversed(largest))
        + ". Keep what recomputes a figure, compressed; drop what is drawn again (docs/development.md)"
    )


def test_run_records_keep_their_large_files_compressed_and_no_plots():
    assert all(folder.is_dir() for folder in RUN_RECORDS)
    plain = [p for f in RUN_RECORDS for p in f.rglob("*") if p.is_file() and p.name in COMPRESSED]
    assert not plain, f"kept plain, not as NAME.gz (benchmarks/lib/record_files.py compress): {plain[:3]}"
    drawn = [p for f in RUN_RECORDS for p in [*f.rglob("plots"), *f.rglob("report.md")]]
    assert not drawn, f"drawn again by every page rebuild, not kept: {drawn[:3]}"
    packed = [p.read_bytes()[:8] for f in RUN_RECORDS for p in f.rglob("*.gz")]
    # gzip without a timestamp (bytes 4-7): the same record always gives the same bytes
    assert packed and all(head[:2] == b"\x1f\x8b" and head[4:8] == bytes(4) for head in packed)


def test_the_size_counts_every_file(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "b.json").write_bytes(b"x" * 10)
    (tmp_path / "c.md").write_bytes(b"y" * 5)
    assert results_bytes(tmp_path) == 15
