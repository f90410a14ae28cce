"""A whole faithful ART run before and after the speed work, one after the other on one machine, and whether the
faster code learns what the slower one did.

    python benchmarks/art_before_after.py --out /tmp/exp/before-after --discriminator PATH [--before-rev f4d327c]
        [--seed 5]

Runs ``hardcse art run --config configs/cpu-full.yaml`` twice with the same discriminator (``--discriminator``, so
neither run trains one), no judge and every seed key at ``--seed``: first the code of ``--before-rev`` (a git
worktree, imported through PYTHONPATH, its own cpu-full.yaml), then this checkout's. Each run starts from its own
empty model cache, as a user's first run on a machine does: both pay their exports and the raw generator's
held-out texts, and neither reads a round the other tuned. A killed run is resumed, a finished one only read.

Reads each run's manifest.json (minutes by kind of stage, as art_run_time.py), its RL steps' median parts, each
round's synthesis (generated tokens a second, kept triplets, kept triplets a minute of synthesis) and compares, per
round, on the same anchors (95% paired bootstrap intervals over anchors, hardcse.stats):

- the held-out effect, tuned - raw reward per held-out anchor, after - before;
- the kept fraction (the paper's filter keeps an anchor's triplet or not), after - before.

Writes benchmarks/results/art_before_after.{md,json} and keeps both runs' records (art_rounds.RECORD_FILES) in
benchmarks/results/art_before_after/{before,after}. Run it alone on the machine: it times.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RECORDS = HERE / "results" / "art_before_after"
WALL_FILE = "wall_seconds.json"  # the run's wall time, beside its manifest, so a rerun of the page reads it back


def worktree(rev: str) -> Path:
    """A detached git worktree of ``rev`` (made once, reused)."""
    path = Path("/tmp") / f"hardcse-worktree-{rev}"
    if not (path / "src" / "hardcse").is_dir():
        subprocess.run(["git", "worktree", "add", "--detach", str(path), rev], cwd=ROOT, check=True)
    return path


def run(code: Path, out: Path, cache: Path, overrides: list[str], python_path: Path | None) -> None:
    """``hardcse art run`` of the code in ``code`` into ``out`` with its own model cache ``cache``."""
    if (out / "report.md").is_file():
        return
    env = dict(os.environ, HARDCSE_CACHE=str(cache))
    if python_path is not None:
        env["PYTHONPATH"] = str(python_path)
    command = [shutil.which("hardcse") or "hardcse", "art", "run", "--config", str(code / "configs" / "cpu-full.yaml")]
    command += ["--out", str(out), *overrides]
    resume = ["--resume"] if (out / "config.yaml").is_file() else []
    print("$ " + " ".join(command + resume), flush=True)
    start = time.perf_counter()
    subprocess.run(command + resume, check=True, cwd=code, env=env)
    earlier = out / WALL_FILE  # a resumed run adds the time its killed part recorded (none if it was not recorded)
    spent = time.perf_counter() - start + (json.loads(earlier.read_text()) if resume and earlier.is_file() else 0.0)
    (out / WALL_FILE).write_text(json.dumps(round(spent, 1)))


def synthetic(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def heldout_effect(round_dir: Path) -> tuple[list[str], np.ndarray]:
    """(anchors, tuned - raw reward per held-out anchor): each side's reward of an anchor is the mean of its
    positive's and its negative's (hardcse.art.synthesis.heldout.per_anchor)."""
    sides = {side: synthetic(round_dir / "heldout" / side / "synthetic.jsonl") for side in ("raw", "tuned")}
    anchors = [r["anchor"] for r in sides["raw"]]
    if anchors != [r["anchor"] for r in sides["tuned"]]:
        raise SystemExit(f"error: {round_dir}/heldout: the raw and tuned records are not for the same anchors")

    def reward(rows: list[dict]) -> np.ndarray:
        return np.array([(r["positive_reward"] + r["negative_reward"]) / 2 for r in rows])

    return anchors, reward(sides["tuned"]) - reward(sides["raw"])


def kept(round_dir: Path) -> tuple[list[str], np.ndarray]:
    """(anchors, 1 where the round's filter kept the anchor's triplet, else 0)."""
    rows = synthetic(round_dir / "synthetic.jsonl")
    return [r["anchor"] for r in rows], np.array([r["drop_reason"] is None for r in rows], dtype=float)


def paired(before: tuple[list[str], np.ndarray], after: tuple[list[str], np.ndarray], what: str) -> dict:
    """Before's and after's means and after - before, paired over the same anchors."""
    from hardcse.stats import paired_bootstrap

    if before[0] != after[0]:
        raise SystemExit(f"error: the two runs' {what} are not for the same anchors; compare runs of one seed")
    intervals = paired_bootstrap(before[1], after[1])
    return {"anchors": len(before[0]), **{k: v.to_dict() for k, v in intervals.items()}}


def summary(out: Path) -> dict:
    """One run's minutes by kind, wall time, RL step parts and synthesis speeds, from its folder."""
    from art_run_time import by_kind, rl_step_parts

    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    minutes = by_kind(manifest)
    synthesis = {}
    for path in sorted(out.glob("round_*/synthesis.json")):
        s = json.loads(path.read_text(encoding="utf-8"))
        synthesis[path.parent.name] = {
            "tokens_per_second": s["tokens_per_second"],
            "kept": s["kept"],
            "kept_fraction": s["kept_fraction"],
            "seconds": s["seconds"],
            "kept_per_minute": round(s["kept"] / (s["seconds"] / 60), 1),
        }
    return {
        "code": manifest["git_commit"][:10],
        "minutes": {k: round(v, 2) for k, v in minutes.items()},
        "total_minutes": round(sum(minutes.values()), 2),
        "wall_minutes": round(json.loads((out / WALL_FILE).read_text()) / 60, 2),
        "rl_step_parts": rl_step_parts(out),
        "synthesis": synthesis,
    }


def cell(i: dict) -> str:
    mark = " *" if i["low"] > 0 or i["high"] < 0 else ""
    return f"{i['estimate']:+.4f} [{i['low']:+.4f}, {i['high']:+.4f}]{mark}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="holds the two run folders and their model caches")
    parser.add_argument("--discriminator", required=True, help="the NLI discriminator folder both runs use")
    parser.add_argument("--before-rev", default="f4d327c", help="the code before (default: before the speed work)")
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from art_rounds import config_seed_overrides, keep_run
    from provenance import machine_line
    from record import write_record

    overrides = [f"discriminator={Path(args.discriminator).resolve()}", "judge=null"]
    overrides += config_seed_overrides(str(ROOT / "configs" / "cpu-full.yaml"), args.seed, overrides)
    before_code = worktree(args.before_rev)
    runs = {"before": (before_code, before_code / "src"), "after": (ROOT, None)}
    for side, (code, python_path) in runs.items():
        run(code, args.out / side, args.out / f"cache-{side}", overrides, python_path)
        keep_run(args.out / side, RECORDS / side)

    result = {
        "overrides": overrides,
        **{side: summary(args.out / side) for side in runs},
        "heldout_effect": {},
        "kept_fraction": {},
        "per_anchor": {},  # what the intervals are computed from (the records keep no synthetic.jsonl)
    }
    for round_dir in sorted((args.out / "after").glob("round_[1-9]*")):
        name, before_dir = round_dir.name, args.out / "before" / round_dir.name
        effects = heldout_effect(before_dir), heldout_effect(round_dir)
        kept_ = kept(before_dir), kept(round_dir)
        result["heldout_effect"][name] = paired(*effects, "held-out anchors")
        result["kept_fraction"][name] = paired(*kept_, "synthesis anchors")
        result["per_anchor"][name] = {
            "heldout_effect": {side: np.round(v, 5).tolist() for side, (_, v) in zip(runs, effects, strict=True)},
            "kept": {side: v.astype(int).tolist() for side, (_, v) in zip(runs, kept_, strict=True)},
        }
    print(
        write_record(
            "art_before_after",
            "A faithful ART run before and after the speed work",
            page(result),
            result,
            machine=machine_line(),
        )
    )


def page(result: dict) -> list[str]:
    before, after = result["before"], result["after"]
    lines = [
        f"`hardcse art run --config configs/cpu-full.yaml {' '.join(result['overrides'])}`, first from the code of "
        f"{before['code']} (before the speed work, with its own cpu-full.yaml), then from the code of {after['code']} "
        "(the manifests' commits); each run with an empty model cache, one after the other.",
        "",
        f"The whole run: **{before['total_minutes']:.1f} min before, {after['total_minutes']:.1f} min after** "
        f"({after['total_minutes'] / before['total_minutes']:.2f}x; wall time {before['wall_minutes']:.1f} and "
        f"{after['wall_minutes']:.1f} min with loading and the report).",
        "",
        "| stage (minutes) | before | after | after / before |",
        "|---|---:|---:|---:|",
    ]
    for kind in dict.fromkeys([*before["minutes"], *after["minutes"]]):
        b, a = before["minutes"].get(kind, 0.0), after["minutes"].get(kind, 0.0)
        lines.append(f"| {kind} | {b:.1f} | {a:.1f} | {a / b:.2f} |" if b else f"| {kind} | {b:.1f} | {a:.1f} | - |")
    ratio = after["total_minutes"] / before["total_minutes"]
    lines.append(
        f"| **all** | **{before['total_minutes']:.1f}** | **{after['total_minutes']:.1f}** | **{ratio:.2f}** |"
    )
    lines += ["", "An RL step's median parts per round, seconds (rl_log.jsonl):", ""]
    for side, summary_ in (("before", before), ("after", after)):
        for name, parts in summary_["rl_step_parts"].items():
            total = sum(parts.values())
            lines.append(f"- {side}, {name}: {total:.2f} s: " + ", ".join(f"{p} {s}" for p, s in parts.items()))
    lines += [
        "",
        "Synthesis per round: generated tokens a second, kept triplets, and kept triplets a minute of synthesis:",
        "",
        "| round | before tokens/s | after tokens/s | before kept | after kept | before kept/min | after kept/min |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, a in after["synthesis"].items():
        b = before["synthesis"][name]
        lines.append(
            f"| {name} | {b['tokens_per_second']:.0f} | {a['tokens_per_second']:.0f} | {b['kept']} | {a['kept']} | "
            f"{b['kept_per_minute']:.1f} | {a['kept_per_minute']:.1f} |"
        )
    lines += [
        "",
        "Does the faster code learn what the slower one did? Per round, on the same anchors, 95% paired bootstrap "
        "intervals over anchors (one run a side, so the intervals hold the anchors' spread, not the seeds'):",
        "",
        "| round | held-out tuned - raw reward, before | after | after - before | kept fraction, before | after | "
        "after - before |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, effect in result["heldout_effect"].items():
        kept_ = result["kept_fraction"][name]
        lines.append(
            f"| {name} | {cell(effect['a'])} | {cell(effect['b'])} | {cell(effect['difference'])} | "
            f"{cell(kept_['a'])} | {cell(kept_['b'])} | {cell(kept_['difference'])} |"
        )
    lines += [
        "",
        "\\* the interval excludes zero. The records: benchmarks/results/art_before_after/{before,after} "
        "(art_rounds.RECORD_FILES).",
        "",
    ]
    return lines


if __name__ == "__main__":
    main()
