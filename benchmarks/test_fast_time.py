"""How long ``make test-fast`` takes in a fresh clone whose install is done (the loop while editing).

    git clone . /tmp/fresh && (cd /tmp/fresh && make install)
    python benchmarks/test_fast_time.py --clone /tmp/fresh

Runs ``make test-fast`` in the clone (nothing else should share the cores) and records the wall time, pytest's own
time and its counts, with the clone's commit, in benchmarks/results/test_fast_time.{md,json}.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import time
from pathlib import Path

from lib.record import write_record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clone", required=True, help="a fresh clone of the repository with make install done")
    args = parser.parse_args()
    clone = Path(args.clone)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True)
    start = time.perf_counter()
    done = subprocess.run(["make", "test-fast"], cwd=clone, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    counts = re.findall(r"(\d+) (passed|failed|skipped|deselected)", done.stdout)
    pytest_seconds = float(re.findall(r" in ([\d.]+)s", done.stdout)[-1])
    summary = {word: int(n) for n, word in counts[-4:]} if counts else {}
    if done.returncode:
        raise SystemExit(f"make test-fast failed (exit {done.returncode}): {done.stdout[-2000:]}")
    tests = ", ".join(f"{n} {word}" for word, n in summary.items())
    body = [
        "| clone | tests | pytest | make test-fast |",
        "|---|---|---:|---:|",
        f"| {commit.stdout.strip()} | {tests} | {pytest_seconds / 60:.1f} min | {seconds / 60:.1f} min |",
        "",
    ]
    payload = {"commit": commit.stdout.strip(), "tests": summary, "pytest_seconds": pytest_seconds}
    write_record("test_fast_time", "make test-fast in a fresh clone", body, payload | {"seconds": round(seconds, 1)})


if __name__ == "__main__":
    main()
