"""A whole faithful ART run before and after the speed work, one after the other on one machine, and whether the
faster code learns what the slower one did.

    python benchmarks/art_before_after.py --out /tmp/exp/before-after --discriminator PATH [--before-rev f4d327c]
        [--seed 5]

Runs ``hardcse art run --config configs/cpu-full.yaml`` twice with the same discriminator (``--discriminator``, so
neither run trains one; its training.json and weights' digest go in the record), no judge and every seed key at
``--seed``: first the code of ``--before-rev`` (a git
worktree, imported through PYTHONPATH, its own cpu-full.yaml), then this checkout's. Each run starts from its own
empty model cache, as a user's first run on a machine does: both pay their exports and the raw generator's
held-out texts, and neither reads a round the other tuned. A killed run is resumed, a finished one only read.

Reads each run's manifest.json (minutes by kind of stage, as art_run_time.py), its RL steps' median parts, each
round's synthesis (generated tokens a second, kept triplets, kept triplets a minute of synthesis) and compares, per
round, on the same anchors (95% paired bootstrap intervals over anchors, hardcse.stats):

- the held-out reward of the raw and of the tuned generator, and the effect (tuned - raw), after - before;
- the kept fraction (the paper's filter keeps an anchor's triplet or not), after - before.

One run a side: the times have no interval, and the intervals cover the anchors, not the spread between runs.

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

from hardcse.data.jsonl import read_jsonl

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
    earlier = out / WALL_FILE  # a resumed run adds the time its stopped part recorded
    before = json.loads(earlier.read_text()) if resume and earlier.is_file() else 0.0
    start = time.perf_counter()
    try:
        subprocess.run(command + resume, check=True, cwd=code, env=env)
    finally:  # a failed or interrupted run keeps its time for the resume (a killed one cannot: its resume says so)
        earlier.write_text(json.dumps(round(before + time.perf_counter() - start, 1)))


def heldout_rewards(round_dir: Path) -> dict[str, tuple[list[str], np.ndarray]]:
    """The raw's, the tuned's and the effect's (tuned - raw) reward per held-out anchor, each with the anchors: a
    side's reward of an anchor is the mean of its positive's and its negative's (heldout.per_anchor)."""
    sides = {side: read_jsonl(round_dir / "heldout" / side / "synthetic.jsonl") for side in ("raw", "tuned")}
    anchors = [r["anchor"] for r in sides["raw"]]
    if anchors != [r["anchor"] for r in sides["tuned"]]:
        raise SystemExit(f"error: {round_dir}/heldout: the raw and tuned records are not for the same anchors")

    def reward(rows: list[dict]) -> np.ndarray:
        return np.array([(r["positive_reward"] + r["negative_reward"]) / 2 for r in rows])

    raw, tuned = reward(sides["raw"]), reward(sides["tuned"])
    return {"raw": (anchors, raw), "tuned": (anchors, tuned), "effect": (anchors, tuned - raw)}


def kept(round_dir: Path) -> tuple[list[str], np.ndarray]:
    """(anchors, 1 where the round's filter kept the anchor's triplet, else 0)."""
    rows = read_jsonl(round_dir / "synthetic.jsonl")
    return [r["anchor"] for r in rows], np.array([r["drop_reason"] is None for r in rows], dtype=float)


HELDOUT = ("raw", "tuned", "effect")  # the held-out rewards compared: each generator's, and tuned - raw


def discriminator_line(run_dir: Path) -> str:
    """What the runs' discriminator is: the pairs it trained on and its weights' digest (the record's NLI_RECORD)."""
    from lib.provenance import NLI_RECORD

    models = json.loads((RECORDS / run_dir.name / NLI_RECORD).read_text(encoding="utf-8"))
    training = json.loads((Path(models["discriminator"]["source"]) / "training.json").read_text(encoding="utf-8"))
    return (
        f"an NLI model trained on {training['rows']:,} pairs for {training['steps']} steps (dev accuracy "
        f"{training['best_dev']}%), weights sha256 {models['discriminator']['weights_sha256'][:12]}"
    )


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
        "wall_minutes": round(json.loads((out / WALL_FILE).read_text()) / 60, 2)
        if (out / WALL_FILE).is_file()
        else None,
        "resumed": len(manifest["runs"]) > 1,  # then the wall time may miss a killed part
        "rl_step_parts": rl_step_parts(out),
        "synthesis": synthesis,
    }


def cell(i: dict, difference: bool = False) -> str:
    """``mean [low, high]``; a difference whose interval excludes zero gets a star."""
    mark = " *" if difference and (i["low"] > 0 or i["high"] < 0) else ""
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
    from lib.provenance import machine_line
    from lib.record import write_record

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
        "discriminator": discriminator_line(args.out / "after"),
        "heldout": {},
        "kept_fraction": {},
        "per_anchor": {},  # what the intervals are computed from (the records keep no synthetic.jsonl)
    }
    for round_dir in sorted((args.out / "after").glob("round_[1-9]*")):
        name, before_dir = round_dir.name, args.out / "before" / round_dir.name
        rewards = heldout_rewards(before_dir), heldout_rewards(round_dir)
        kept_ = kept(before_dir), kept(round_dir)
        result["heldout"][name] = {m: paired(rewards[0][m], rewards[1][m], "held-out anchors") for m in HELDOUT}
        result["kept_fraction"][name] = paired(*kept_, "synthesis anchors")
        result["per_anchor"][name] = {
            **{
                f"heldout_{m}": {side: np.round(r[m][1], 5).tolist() for side, r in zip(runs, rewards, strict=True)}
                for m in ("raw", "tuned")
            },
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

    def wall(side: dict) -> str:
        minutes = "not recorded" if side["wall_minutes"] is None else f"{side['wall_minutes']:.1f} min"
        return minutes + (" (resumed: a killed part's time may be missing)" if side["resumed"] else "")

    ratio = after["total_minutes"] / before["total_minutes"]
    lines = [
        f"`hardcse art run --config configs/cpu-full.yaml {' '.join(result['overrides'])}`, first from the code of "
        f"{before['code']} (with its own cpu-full.yaml), then from the code of {after['code']} (the manifests' "
        "commits); each run with an empty model cache, one after the other.",
        "",
        f"The discriminator of both runs: {result['discriminator']}.",
        "",
        f"The whole run: **{before['total_minutes']:.1f} min before, {after['total_minutes']:.1f} min after** "
        f"({ratio:.2f}x; wall time with loading and the report: before {wall(before)}, after {wall(after)}). One run "
        "a side: the times have no interval, and the machine's speed may move between two runs.",
        "",
        "| stage (minutes) | before | after | after / before |",
        "|---|---:|---:|---:|",
    ]
    for kind in dict.fromkeys([*before["minutes"], *after["minutes"]]):
        b, a = before["minutes"].get(kind, 0.0), after["minutes"].get(kind, 0.0)
        lines.append(f"| {kind} | {b:.1f} | {a:.1f} | {a / b:.2f} |" if b else f"| {kind} | {b:.1f} | {a:.1f} | - |")
    lines.append(
        f"| **all** | **{before['total_minutes']:.1f}** | **{after['total_minutes']:.1f}** | **{ratio:.2f}** |"
    )
    lines += [
        "",
        "An RL step per round: the sum of its parts' medians over the round's steps, seconds (rl_log.jsonl):",
        "",
    ]
    for side, summary_ in (("before", before), ("after", after)):
        for name, parts in summary_["rl_step_parts"].items():
            total = sum(parts.values())
            lines.append(f"- {side}, {name}: {total:.2f} s: " + ", ".join(f"{p} {s}" for p, s in parts.items()))
    lines += [
        "",
        "Synthesis per round: generated tokens a second (the speed), kept triplets, and kept triplets a minute of "
        "synthesis (the speed times the kept fraction, whose difference is below):",
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
        "What the runs' generators wrote, per round, on the same anchors: the held-out reward of the raw and of the "
        "tuned generator and the effect (tuned - raw), and the kept fraction of the round's synthesis. Means with 95% "
        "paired bootstrap intervals over anchors; one run a side, so the intervals hold the anchors' spread, not the "
        "spread between runs.",
        "",
        "| round | measure | before | after | after - before |",
        "|---|---|---:|---:|---:|",
    ]
    labels = {"raw": "held-out reward, raw", "tuned": "held-out reward, tuned", "effect": "held-out tuned - raw"}
    for name, measures in result["heldout"].items():
        rows = [(labels[m], measures[m]) for m in HELDOUT] + [("kept fraction", result["kept_fraction"][name])]
        for label, r in rows:
            lines.append(
                f"| {name} | {label} | {cell(r['a'])} | {cell(r['b'])} | {cell(r['difference'], difference=True)} |"
            )
    lines += [
        "",
        "\\* the interval of the difference excludes zero. The records: "
        "benchmarks/results/art_before_after/{before,after} (art_rounds.RECORD_FILES).",
        "",
    ]
    return lines


if __name__ == "__main__":
    main()
