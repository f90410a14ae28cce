"""Does the raw generator write what it wrote before the speed work? Its held-out texts under each OpenVINO
generation setting the speed work changed, and from the code before it.

    python benchmarks/raw_generator_drift.py --discriminator PATH [--before-rev f4d327c] [--seeds 5 6]
        [--anchors 500] [--cache-before DIR] [--cache-after DIR]

For each side and seed, a fresh process writes a positive and a negative for cpu-full's first ``--anchors``
held-out anchors (anchors.seed 5) with the bundled generator at the synthesis temperature in OpenVINO, no
generation cache, and scores them with cpu-full's reward (``--discriminator``, the bundled encoder). Sides:

- ``before``: the code of ``--before-rev`` (a git worktree, through PYTHONPATH): bfloat16, keys and values in
  OpenVINO's 8-bit default, every prompt prefilled whole, one random stream a call;
- ``after``: this checkout: keys and values in bfloat16, each group's shared prompt prefix prefilled once, a random
  stream per row;
- ``after, 8-bit cache`` and ``after, no prefix prefill``: this checkout with one of those two settings back;
- ``after, float32``: this checkout with ``generator.dtype: float32`` (keys and values in f32).

Per anchor, each side's parse failures (the share of its two answers the parser rejects) and reward, averaged
over the seeds; each side against ``before`` with 95% paired bootstrap intervals over anchors. Writes
benchmarks/results/raw_generator_drift.{md,json}.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SIDES = {  # name -> (code, overrides, module settings set before generation)
    "before": ("before", [], {}),
    "after": ("after", [], {}),
    "after, 8-bit cache": ("after", [], {"KV_CACHE_IN_MODEL_PRECISION": False}),
    "after, no prefix prefill": ("after", [], {"PREFIX_CACHING": False}),
    "after, float32": ("after", ["generator.dtype=float32"], {}),
}


def child(args: argparse.Namespace) -> None:
    """One side and seed, in this process: write, score, and save the per-anchor measures to ``args.child``."""
    import dataclasses

    from hardcse.art.config import ArtRunConfig
    from hardcse.art.generator import openvino as ov_generator
    from hardcse.art.reward.dual import Reward
    from hardcse.art.synthesis.anchors import split_anchors
    from hardcse.art.synthesis.triplets import synthesize
    from hardcse.config import load_config
    from hardcse.data.jsonl import read_jsonl
    from hardcse.discriminator.nli import NLIDiscriminator
    from hardcse.encoder.build import load_encoder
    from hardcse.engines import Engine

    for name, value in json.loads(args.settings).items():
        setattr(ov_generator, name, value)
    overrides = [f"generator.seed={args.seed}", "anchors.seed=5", *json.loads(args.overrides)]
    config = load_config(ArtRunConfig, str(args.code / "configs" / "cpu-full.yaml"), overrides)
    engine = Engine.resolve("openvino")
    anchors = split_anchors(config.anchors).held_out[: args.anchors]
    generation = dataclasses.replace(config.generator, sampling_temperature=config.synthesis_temperature)
    discriminator = NLIDiscriminator.load(args.discriminator, device="cpu")
    reward = Reward(discriminator, load_encoder(config.encoder, config.pooling, device="cpu"), config.reward, engine)
    with tempfile.TemporaryDirectory() as tmp:
        synthesize(config.generator.model, anchors, generation, reward, config.filter, tmp, engine=engine)
        rows = read_jsonl(Path(tmp) / "synthetic.jsonl")
    result = {
        "anchors": [r["anchor"] for r in rows],
        "parse_failure": [((r["positive"] is None) + (r["negative"] is None)) / 2 for r in rows],
        "reward": [(r["positive_reward"] + r["negative_reward"]) / 2 for r in rows],
    }
    args.child.write_text(json.dumps(result))


def commit(code: Path) -> str:
    """The commit checked out at ``code``, with ``+dirty`` where its src differs from it."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=code, capture_output=True, text=True, check=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "src"], cwd=code, capture_output=True, text=True).stdout
    return head.strip() + ("+dirty" if dirty.strip() else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--discriminator", required=True)
    parser.add_argument("--before-rev", default="f4d327c")
    parser.add_argument("--seeds", type=int, nargs="+", default=[5, 6])
    parser.add_argument("--anchors", type=int, default=500)
    parser.add_argument("--cache-before", help="HARDCSE_CACHE of the before code (default: the usual cache)")
    parser.add_argument("--cache-after", help="HARDCSE_CACHE of this checkout (default: the usual cache)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/raw_generator_drift"), help="per-run results")
    # the child's own arguments
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--code", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--settings", default="{}", help=argparse.SUPPRESS)
    parser.add_argument("--overrides", default="[]", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    sys.path.insert(0, str(HERE))
    from art_before_after import worktree
    from hardcse.stats import paired_bootstrap
    from lib.provenance import machine_line
    from lib.record import write_record

    before_code = worktree(args.before_rev)
    codes = {"before": (before_code, args.cache_before), "after": (ROOT, args.cache_after)}
    args.out.mkdir(parents=True, exist_ok=True)
    values: dict[str, dict[str, np.ndarray]] = {}
    anchors = None
    seed_means: dict[str, list[tuple[float, float]]] = {}  # a side's means over anchors, seed by seed
    for side, (code_name, overrides, settings) in SIDES.items():
        code, cache = codes[code_name]
        per_seed = []
        for seed in args.seeds:
            # a run's result is kept under what decides it (its code's commit, the anchors, the discriminator, the
            # side's settings and the seed), so a rerun with other arguments or code writes anew
            key = [commit(code), args.anchors, str(Path(args.discriminator).resolve()), settings, overrides, seed]
            digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:12]
            path = args.out / f"{side.replace(', ', '-').replace(' ', '_')}-seed-{seed}-{digest}.json"
            if not path.is_file():
                env = dict(os.environ)
                env |= {"PYTHONPATH": str(code / "src")} if code_name == "before" else {}
                env |= {"HARDCSE_CACHE": cache} if cache else {}
                command = [sys.executable, str(Path(__file__).resolve()), "--discriminator", args.discriminator]
                command += ["--anchors", str(args.anchors), "--child", str(path), "--code", str(code)]
                command += [
                    "--seed",
                    str(seed),
                    "--settings",
                    json.dumps(settings),
                    "--overrides",
                    json.dumps(overrides),
                ]
                print(f"{side}, seed {seed}", flush=True)
                subprocess.run(command, check=True, env=env, cwd=code)
            per_seed.append(json.loads(path.read_text()))
        if anchors is None:
            anchors = per_seed[0]["anchors"]
        if any(r["anchors"] != anchors for r in per_seed):
            raise SystemExit(f"error: {side}: the runs wrote for other anchors than the first run")
        values[side] = {m: np.mean([r[m] for r in per_seed], axis=0) for m in ("parse_failure", "reward")}
        seed_means[side] = [(float(np.mean(r["parse_failure"])), float(np.mean(r["reward"]))) for r in per_seed]
    result: dict = {"anchors": len(anchors), "seeds": args.seeds, "before_rev": args.before_rev, "sides": {}}
    lines = [
        f"`python benchmarks/raw_generator_drift.py --seeds {' '.join(map(str, args.seeds))} --anchors "
        f"{args.anchors}`: the bundled generator, raw, on cpu-full's first {len(anchors)} held-out anchors at the "
        f"synthesis temperature in OpenVINO, each side a fresh process a seed, per anchor averaged over the "
        f"{len(args.seeds)} seeds; scored by cpu-full's reward with the discriminator {args.discriminator}. "
        f"`before` is the code of {args.before_rev}.",
        "",
        "| side | parse failures, reward: each seed | parse failures | reward | parse failures - before | "
        "reward - before | parse failures - after | reward - after |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for side, v in values.items():
        result["sides"][side] = {"seed_means": dict(zip(map(str, args.seeds), seed_means[side], strict=True))}
        by_seed = "; ".join(
            f"seed {s}: {pf:.3f}, {r:.3f}" for s, (pf, r) in zip(args.seeds, seed_means[side], strict=True)
        )
        cells = []
        for reference in ("before", "after"):  # each side against the code before, and against today's defaults
            for measure in ("parse_failure", "reward"):
                if side == reference:
                    cells.append("-")
                    continue
                intervals = paired_bootstrap(values[reference][measure], v[measure])
                result["sides"][side][f"{measure}_minus_{reference}"] = {k: i.to_dict() for k, i in intervals.items()}
                d = intervals["difference"]
                mark = " *" if d.excludes_zero() else ""
                cells.append(f"{d.estimate:+.3f} [{d.low:+.3f}, {d.high:+.3f}]{mark}")
        lines.append(
            f"| {side} | {by_seed} | {v['parse_failure'].mean():.3f} | {v['reward'].mean():.3f} | "
            + " | ".join(cells)
            + " |"
        )
    lines += [
        "",
        "\\* the interval excludes zero (95% paired bootstrap over anchors, after the seeds' average: it does not hold "
        "the spread between seeds, which the per-seed means show).",
        "",
    ]
    print(
        write_record(
            "raw_generator_drift",
            "The raw generator's texts before and after the speed work",
            lines,
            result,
            machine=machine_line(),
        )
    )


if __name__ == "__main__":
    main()
