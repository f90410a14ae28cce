"""How often a launched 2-process CPU command aborts at exit: the 2-process NLI training test run N times in a row,
optionally beside busy loops that take the cores (the abort needs a gloo thread preempted at the wrong moment,
so it showed under load only), counting passes, aborts and other failures.

    python benchmarks/launch_exit.py [--runs 20] [--busy 2] [--src PATH] [--label NAME]

``--src`` runs another checkout's code and tests (e.g. ``git worktree add /tmp/before COMMIT`` for the code
before a fix): its ``src`` goes first on PYTHONPATH of the test and of the processes torchrun starts, and
HARDCSE_TEST_NO_RETRY=1 turns off the retry that older tests made after an abort. Appends one row per call to
benchmarks/results/launch_exit.{json,md} (the command, the commit, the CPU flags).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from lib.record import RESULTS, stamp, write_json, write_record

ROOT = RESULTS.parents[1]
TEST = "tests/test_multiprocess.py::test_two_process_nli_training"
ABORT = "terminate called"


def run_once(tree: Path, env: dict) -> str:
    """One pytest run of the test: 'passed', 'aborted' (a child's C++ abort) or 'failed'."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", TEST],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode == 0:
        return "passed"
    return "aborted" if ABORT in done.stdout + done.stderr else "failed"


def commit(tree: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--busy", type=int, default=0, help="busy-loop processes beside the test (load)")
    parser.add_argument("--src", type=Path, default=ROOT, help="the checkout whose code and test run")
    parser.add_argument("--label", default="this checkout")
    args = parser.parse_args()
    tree = args.src.resolve()
    env = os.environ | {"PYTHONPATH": str(tree / "src"), "HARDCSE_TEST_NO_RETRY": "1"}
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    outcomes: list[str] = []
    start = time.perf_counter()
    try:
        for i in range(args.runs):
            outcomes.append(run_once(tree, env))
            print(f"run {i + 1}/{args.runs}: {outcomes[-1]}", flush=True)
    finally:
        for process in busy:
            process.kill()
    made = stamp()
    record = {
        "label": args.label,
        "commit": commit(tree),
        "runs": args.runs,
        "busy_loops": args.busy,
        **{k: outcomes.count(k) for k in ("passed", "aborted", "failed")},
        "minutes": round((time.perf_counter() - start) / 60, 1),
        # the table's columns: each row names its own command, date and machine (cores and CPU flags)
        "command": made["command"],
        "date": made["date"],
        "cpu_flags": " ".join(made["machine"]["cpu_flags"]),
        "cores": made["machine"]["cores"],
        "machine": made["machine"],
    }
    path = RESULTS / "launch_exit.json"
    records = json.loads(path.read_text()) if path.is_file() else []
    records.append(record)
    lines = [
        "| code | commit | runs | busy loops | passed | aborted | other failures | minutes | date "
        "| cores, CPU flags | command |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['label']} | {r['commit']} | {r['runs']} | {r['busy_loops']} | {r['passed']} | {r['aborted']} | "
            f"{r['failed']} | {r['minutes']} | {r['date']} | {r['cores']}: {r['cpu_flags']} | `{r['command']}` |"
        )
    write_record(
        "launch_exit",
        "A launched 2-process CPU command's exit, run after run",
        [*lines, ""],
        command="python benchmarks/launch_exit.py",
        about=f" (its docstring explains the options) runs `{TEST}` N times in a row; a row a call, with the command "
        "it ran.",
        machine="Machine: per row, in the table's date and cores, CPU flags columns.",
        date=False,
    )
    write_json("launch_exit", records)  # one record a call, each with its own command, date and machine
    print(json.dumps(record))


if __name__ == "__main__":
    main()
