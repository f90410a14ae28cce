"""ART's speed on this machine, before and after, in one run: synthesis tokens/s and seconds per RL step.

    python benchmarks/art_speed.py [--before 9a34d62] [--anchors 64] [--steps 4]

"before" is the code of a git commit (default: the last commit before the speed work), checked out into a
temporary worktree and measured by the same script in a subprocess, one after the other (never at the same
time). Each side uses the quickstart config of its own tree, the bundled generator and encoder, and the same
random-head NLI cross-encoder on the bundled MiniLM (the discriminator's cost is that of a trained one; its
numbers are meaningless and unused). RL: before at its 16 rollouts a step (minibatch 8), after at ``--rl-batch``
rollouts a step (PPO and GRPO), both reported as seconds per 16 rollouts (a step's seconds x 16 / batch), the
median over ``--steps`` steps after one warm-up step, with the time of each phase. Synthesis counts the
generated tokens (up to and including the end-of-sequence token) per second of the whole synthesis stage:
generation, parsing and scoring.
Writes benchmarks/results/art_speed.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from lib.stand_ins import random_discriminator

REPO = Path(__file__).resolve().parent.parent
BEFORE = "9a34d62"
PHASES = ("generation_s", "scoring_s", "policy_forward_s", "reference_s", "optimisation_s")


def measure(tree: Path, work: Path, anchors: int, steps: int, algorithm: str, batch: int, minibatch: int) -> dict:
    """Run in the tree under test (its src/ first on the path): the numbers of one side."""
    import statistics
    import time

    import torch

    from hardcse.art.config import ArtRunConfig
    from hardcse.art.reward.dual import Reward
    from hardcse.art.rl.tuning import tune_generator
    from hardcse.art.synthesis.anchors import split_anchors
    from hardcse.art.synthesis.triplets import synthesize
    from hardcse.config import load_config
    from hardcse.discriminator.nli import NLIDiscriminator
    from hardcse.encoder.build import load_encoder

    config_path = tree / "configs" / "quickstart.yaml"
    new_api = hasattr(ArtRunConfig(), "rl")
    section = "rl" if new_api else "ppo"
    overrides = [f"{section}.steps={steps + 1}", f"{section}.save_every={steps + 1}"]
    overrides += [f"{section}.batch_size={batch}", f"{section}.minibatch_size={minibatch}"]
    if new_api:
        overrides.append(f"rl.algorithm={algorithm}")
    config = load_config(ArtRunConfig, config_path, overrides)
    discriminator = NLIDiscriminator.load(str(work / "nli"))
    result: dict = {"torch_threads": torch.get_num_threads()}
    if new_api:
        from hardcse.devices import resolve_device, resolve_dtype

        dtype = resolve_dtype(config.generator.dtype, resolve_device(config.generator.device))
        result["generator_dtype"] = str(dtype).removeprefix("torch.")
    if algorithm == "ppo":  # synthesis does not depend on the RL algorithm: measured once per side
        reward = Reward(discriminator, load_encoder(config.encoder), config.reward)
        texts = split_anchors(config.anchors).held_out[:anchors]
        report = synthesize(config.generator.model, texts, config.generator, reward, config.filter, work / "synthesis")
        result |= {
            "synthesis_tokens_per_second": round(report.tokens_per_second, 1),
            "synthesis_seconds": round(report.seconds, 1),
            "synthesis_anchors": len(texts),
            "synthesis_batch_size": config.generator.batch_size,
        }
    start = time.perf_counter()
    final = tune_generator(config, work / f"tune-{algorithm}", work / f"gen-{algorithm}", discriminator=discriminator)
    log_name = "rl_log.jsonl" if new_api else "ppo_log.jsonl"
    rows = [json.loads(line) for line in (final / log_name).read_text().splitlines()][1:]  # step 1 warms up
    per_16 = 16 / batch  # seconds per 16 rollouts
    seconds = [per_16 * sum(r.get(p, 0.0) for p in PHASES) for r in rows]
    result |= {
        "rl_algorithm": algorithm,
        "rl_step_seconds_median": round(statistics.median(seconds), 2),
        "rl_step_seconds": [round(s, 2) for s in seconds],
        "rl_phase_seconds_median": {
            p: round(per_16 * statistics.median(r.get(p, 0.0) for r in rows), 2) for p in PHASES
        },
        "rl_rollouts_per_step": batch,
        "rl_minibatch_size": minibatch,
        "rl_response_tokens_mean": round(statistics.mean(r["response_tokens"] for r in rows), 1),
        "rl_wall_seconds_incl_loading": round(time.perf_counter() - start, 1),
    }
    return result


def side(tree: Path, work: Path, args: argparse.Namespace, algorithm: str, batch: int, minibatch: int) -> dict:
    """``measure`` in a subprocess that imports hardcse from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "TQDM_DISABLE": "1"}
    code = (
        "import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import art_speed; "
        "print('RESULT ' + json.dumps(art_speed.measure(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), "
        "int(sys.argv[5]), sys.argv[6], int(sys.argv[7]), int(sys.argv[8]))))"
    )
    argv = [sys.executable, "-c", code, str(REPO / "benchmarks"), str(tree), str(work)]
    argv += [str(args.anchors), str(args.steps), algorithm, str(batch), str(minibatch)]
    out = subprocess.run(argv, env=env, cwd=tree, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"measuring {tree} failed:\n{out.stderr[-3000:]}")
    return json.loads(next(line for line in out.stdout.splitlines() if line.startswith("RESULT "))[7:])


def markdown(result: dict) -> list[str]:
    """The page's lines under the record's header."""
    before, after = result["before"], result
    lines = [
        "| | before | after | target |",
        "|---|---:|---:|---:|",
        f"| synthesis, generated tokens/s | {before['synthesis_tokens_per_second']} "
        f"| **{after['synthesis_tokens_per_second']}** | >= 150 |",
        f"| synthesis batch (rows) | {before['synthesis_batch_size']} | {after['synthesis_batch_size']} | |",
        f"| RL rollouts per step / minibatch | 16 / 8 | {after['rl_rollouts_per_step']} / "
        f"{after['rl_minibatch_size']} | |",
        f"| RL seconds per 16 rollouts (PPO, median) | {before['rl_step_seconds_median']} "
        f"| **{after['rl_step_seconds_median']}** | <= 10 |",
        f"| RL seconds per 16 rollouts (GRPO, median) | - | {after['grpo']['rl_step_seconds_median']} | <= 10 |",
        f"| generator weights | float32 | {after.get('generator_dtype', '')} | |",
        "",
        "RL phases (median seconds per step of 16 rollouts):",
        "",
        "| phase | before (PPO) | after (PPO) | after (GRPO) |",
        "|---|---:|---:|---:|",
    ]
    for p in PHASES:
        cells = [before["rl_phase_seconds_median"][p], after["rl_phase_seconds_median"][p]]
        cells.append(after["grpo"]["rl_phase_seconds_median"][p])
        lines.append(f"| {p.removesuffix('_s')} | " + " | ".join(str(c) for c in cells) + " |")
    lines += [
        "",
        "Before, the policy forward happened inside generation (log-probs and hidden states kept by `generate`); "
        "after, generation keeps nothing and the update's own forward gives pi_old and V_old (the ratio is exactly "
        "1 before the first update).",
        "",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default=BEFORE, help="git commit of the code to compare with")
    parser.add_argument("--anchors", type=int, default=64, help="held-out anchors to synthesise for (x2 generations)")
    parser.add_argument("--steps", type=int, default=4, help="RL steps to time after one warm-up step")
    parser.add_argument("--rl-batch", type=int, default=32, help="rollouts per RL step of the new code")
    parser.add_argument("--rl-minibatch", type=int, default=8, help="rollouts per minibatch of the new code")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        random_discriminator(tmp / "nli")
        tree = tmp / "before-tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), args.before], cwd=REPO, check=True)
        try:
            (tmp / "before").mkdir()
            (tmp / "before" / "nli").symlink_to(tmp / "nli")
            before = side(tree, tmp / "before", args, "ppo", 16, 8)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, check=True)
        for name in ("after", "after-grpo"):
            (tmp / name).mkdir()
            (tmp / name / "nli").symlink_to(tmp / "nli")
        after = side(REPO, tmp / "after", args, "ppo", args.rl_batch, args.rl_minibatch)
        after["grpo"] = side(REPO, tmp / "after-grpo", args, "grpo", args.rl_batch, args.rl_minibatch)
    from lib.record import write_record  # not at the top: the before side imports this file with its own hardcse

    result = after | {"before": before, "before_commit": args.before, "platform": platform.platform()}
    text = write_record(
        "art_speed",
        "ART speed on this machine (2 cores)",
        markdown(result),
        result,
        about=f", {result['platform']}. Before = commit `{args.before}`; after = this tree. Both sides ran one after "
        "the other in the same run, nothing else on the machine.",
    )
    print(text)


if __name__ == "__main__":
    main()
