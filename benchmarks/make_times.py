"""How long README's two commands take on this machine, from a fresh clone: `make test` (installs, then lint, every
test, the exact-number tests again on the AVX2 kernels and the wheel check; an empty model cache of its own), then
`make demo` twice (the second finds what the first kept), each timed, with the test counts pytest reports. The demos
use a model cache of their own, empty but for what the first `make demo` prepares on a user's machine (`hardcse
prepare`, timed apart before them): the discriminator counts, the bundled generator's conversion and export do not (a
tuned generator fuses its adapter into that export).

    python benchmarks/make_times.py [--repo .] [--skip-demo]

Run it alone on the cores: it is a timing. Writes benchmarks/results/make_times.md (command, date, machine,
commit, minutes, counts) and make_times.json; README's figures cite it. With ``--skip-demo`` only ``make test`` is
timed, into make_test_times.md and .json, so the record of both commands stays whole.
"""

import argparse
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lib.record import write_record

SUMMARY = re.compile(r"(\d+) passed(?:, (\d+) skipped)?.* in ([\d.]+)s")
DURATION = re.compile(r"^([\d.]+)s (call|setup|teardown) +(\S+)$", re.MULTILINE)  # pytest --durations' lines


def timed(command: list[str], cwd: Path, env: dict | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    minutes = (time.perf_counter() - start) / 60
    if done.returncode:
        sys.exit(
            f"error: {shlex.join(command)} failed (exit {done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return minutes, done.stdout + done.stderr


def main() -> None:
    import os

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default=".", help="the repository to clone (its HEAD)")
    parser.add_argument("--skip-demo", action="store_true", help="time make test only")
    args = parser.parse_args()
    repo = Path(args.repo).resolve()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as work:
        clone = Path(work) / "hardcse"
        subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
        # its own empty model cache, as on a fresh machine
        test_env = os.environ | {"HARDCSE_CACHE": str(Path(work) / "test-cache")}
        test_minutes, output = timed(["make", "test"], clone, test_env)
        # make test runs pytest twice: every test, then the exact-number tests on the AVX2 kernels (test-avx2)
        found = SUMMARY.findall(output)
        (passed, skipped, pytest_seconds), (avx2_passed, _, avx2_seconds) = (found + [("?", "0", "nan")] * 2)[:2]
        result = {
            "commit": commit,
            "make_test_minutes": round(test_minutes, 1),
            "pytest_minutes": round(float(pytest_seconds) / 60, 1),
            "passed": int(passed) if passed.isdigit() else None,
            "skipped": int(skipped or 0),
            "avx2_passed": int(avx2_passed) if avx2_passed.isdigit() else None,
            "avx2_minutes": round(float(avx2_seconds) / 60, 1),
            # the Makefile's --durations: the slowest tests of the first pytest (the AVX2 pass lists none)
            "slowest": [
                {"seconds": float(s), "phase": phase, "test": test} for s, phase, test in DURATION.findall(output)
            ],
        }
        if not args.skip_demo:
            env = os.environ | {"HARDCSE_CACHE": str(Path(work) / "cache")}  # a first run's cache
            prepare = [str(clone / ".venv" / "bin" / "hardcse"), "prepare"]
            result["prepare_minutes"] = round(timed(prepare, clone, env)[0], 1)  # what the first make demo does
            result["make_demo_minutes"] = round(timed(["make", "demo"], clone, env)[0], 1)
            # a second demo on the same cache: the discriminator and the raw generator's held-out texts are kept
            result["second_make_demo_minutes"] = round(timed(["make", "demo"], clone, env)[0], 1)
    lines = [
        "| command | minutes | what |",
        "|---|---:|---|",
        f"| `make test` | {result['make_test_minutes']} | install, lint, {result['passed']} passed and "
        f"{result['skipped']} skipped tests (pytest {result['pytest_minutes']} min), {result['avx2_passed']} "
        f"exact-number tests again on the AVX2 kernels ({result['avx2_minutes']} min), the wheel check |",
    ]
    if "make_demo_minutes" in result:
        lines.append(
            f"| `hardcse prepare` | {result['prepare_minutes']} | the bundled generator converted and exported, "
            "the bundled encoder evaluated, and the quickstart's discriminator and judge trained, into an empty model "
            "cache (the first `make demo` does it) |"
        )
        lines.append(
            f"| `make demo` | {result['make_demo_minutes']} | the install done, a cache with what it prepared and "
            "nothing else: its `hardcse prepare` finds everything kept, then one ART round (its discriminator and "
            "judge copied) |"
        )
        lines.append(
            f"| `make demo` again | {result['second_make_demo_minutes']} | the same cache: the raw generator's "
            "held-out texts, which the first wrote, are read back |"
        )
    if result["slowest"]:
        lines += ["", "The slowest tests of `make test`'s first pytest (its `--durations`):", "", "| seconds | test |",
                  "|---:|---|"]  # fmt: skip
        lines += [f"| {d['seconds']:.1f} | `{d['test']}` ({d['phase']}) |" for d in result["slowest"]]
    name, title = ("make_test_times", "`make test`") if args.skip_demo else ("make_times", "README's two commands")
    about = f", commit {commit[:10]}, alone on the cores."
    print(write_record(name, f"{title}, timed from a fresh clone", [*lines, ""], result, about=about))


if __name__ == "__main__":
    main()
