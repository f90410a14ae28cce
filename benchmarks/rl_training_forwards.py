"""The RL step's training parts (log pi_old, log pi_ref, the minibatch updates) on the same rollouts, three ways:
how much the shared prompt prefixes and the eager attention of the trainer's forwards save, with intervals.

    python benchmarks/rl_training_forwards.py [--steps 4] [--repeats 3]

At cpu-full's sizes (configs/cpu-full.yaml: 16 rollouts a step in minibatches of 4, one epoch; the bundled
SmolLM2-135M at the CPU's precision), ``--steps`` steps' rollouts are sampled once (the policy itself, seeded) and
then trained on ``--repeats`` times by each way in turn, each pass one ``RLTrainer.step`` on them (its sampler
handing back the step's rollouts) timed by the loop's own timer, the LoRA adapter, PPO's value head and beta and
AdamW's state put back before each pass, so every way does the same arithmetic on the same rows:

- **per minibatch, SDPA**: each forward computes the prefixes its rows continue (the loop before shared prefixes)
  and attends by PyTorch's SDPA;
- **shared prefixes, SDPA**: log pi_old's forwards compute each prefix once, as do log pi_ref's;
- **as the loop runs**: shared prefixes, and in bfloat16 on a CPU the trainer's forwards attend eagerly.

Per pass: the seconds of log pi_old (the policy's forwards), log pi_ref and the four updates. The ways' differences
are paired by (step, repeat), with a bootstrap interval (hardcse.stats.paired_bootstrap). Run it alone on the
machine: it times.

Writes benchmarks/results/rl_training_forwards.{md,json}.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import statistics

import numpy as np
import torch

WAYS = ("per minibatch, SDPA", "shared prefixes, SDPA", "as the loop runs")
PARTS = ("policy_forward", "reference", "optimisation")


def way(trainer, name: str) -> None:  # noqa: ANN001
    """Set ``trainer`` to compute as ``name`` says (instance attributes over the class's methods)."""
    for attribute in ("forward", "training_attention"):
        trainer.__dict__.pop(attribute, None)
    forward = trainer.forward
    if name == WAYS[0]:
        trainer.forward = lambda samples, prefixes=None: forward(samples)  # every forward its own prefixes
    if name != WAYS[2]:
        trainer.training_attention = contextlib.nullcontext  # the model's own attention (SDPA)


def one_pass(trainer, samples, scores: np.ndarray) -> dict[str, float]:  # noqa: ANN001
    """One ``RLTrainer.step`` on ``samples``, already sampled (``scores``: their rewards): the loop's own seconds of
    its training parts."""
    sample, trainer.sample = trainer.sample, lambda *_: samples
    try:
        rows = len(samples.texts)
        stats = trainer.step([""] * rows, [0] * rows, lambda texts, truncated: (scores, {}))
    finally:
        trainer.sample = sample
    return {part: stats[f"{part}_s"] for part in PARTS}


def measure(steps: int, repeats: int) -> dict:
    from hardcse.art.config import ArtRunConfig
    from hardcse.art.generator.model import load_generator
    from hardcse.art.generator.prompts import render_prompts
    from hardcse.art.generator.stopping import token_limits
    from hardcse.art.rl.loop import RLTrainer
    from hardcse.art.rl.tuning import step_prompts
    from hardcse.art.synthesis.anchors import split_anchors
    from hardcse.config import load_config

    config = load_config(ArtRunConfig, "configs/cpu-full.yaml", [])
    rl = dataclasses.replace(config.rl, rollout_engine="torch")
    torch.manual_seed(0)
    model, tokenizer = load_generator(config.generator.model, config.generator, trainable=True)
    trainer = RLTrainer(model, tokenizer, config.generator, rl)
    anchors = split_anchors(config.anchors).train
    trained = [p for group in trainer.optimizer.param_groups for p in group["params"]]  # LoRA and the value head
    start_weights = [p.detach().clone() for p in trained]
    start_optimizer = trainer.optimizer.state_dict()
    start_algorithm = copy.deepcopy((trainer.algorithm.state_dict(), trainer.algorithm.meta()))  # PPO's beta
    rollouts = []
    for step in range(1, steps + 1):
        step_anchors, kinds, groups = step_prompts(rl, anchors, step)
        prompts = render_prompts(tokenizer, step_anchors, kinds, config.generator)
        torch.manual_seed(rl.seed + step)
        samples = trainer.sample(prompts, groups, token_limits(tokenizer, step_anchors, config.generator))
        scores = np.linspace(-1, 1, len(prompts))  # any scores: the updates' arithmetic does not depend on them
        rollouts.append((samples, scores))
    seconds = {name: [] for name in WAYS}  # one dict of PARTS a (step, repeat), in that order
    for repeat in range(repeats + 1):  # the first pass of each way warms it up and is not kept
        for name in WAYS if repeat % 2 == 0 else reversed(WAYS):
            way(trainer, name)
            for step, (samples, scores) in enumerate(rollouts):
                with torch.no_grad():
                    for p, start in zip(trained, start_weights, strict=True):
                        p.copy_(start)
                trainer.optimizer.load_state_dict(start_optimizer)
                trainer.algorithm.load_state(*copy.deepcopy(start_algorithm))
                trainer.step_count = step  # the step's minibatches
                timed = one_pass(trainer, samples, scores)
                if repeat:
                    seconds[name].append(timed)
    way(trainer, WAYS[2])
    return {
        "weights": str(next(model.get_base_model().parameters()).dtype).removeprefix("torch."),
        "response_tokens_mean": float(np.mean([s.response_mask.sum(1).mean().item() for s, _ in rollouts])),
        "seconds": seconds,
    }


def summary(result: dict) -> dict:
    from hardcse.stats import paired_bootstrap

    seconds = result["seconds"]

    def column(name: str, part: str | None) -> np.ndarray:
        return np.array([sum(p.values()) if part is None else p[part] for p in seconds[name]])

    out = {}
    for part in (*PARTS, None):
        key = part or "training parts"
        base = column(WAYS[0], part)
        out[key] = {name: statistics.median(column(name, part)) for name in WAYS}
        for name in WAYS[1:]:
            d = paired_bootstrap(base, column(name, part))["difference"]
            out[key][f"{name} - {WAYS[0]}"] = [d.estimate, d.low, d.high]
    return out


def markdown(result: dict) -> list[str]:
    table = result["summary"]
    lines = [
        f"{result['steps']} RL steps' rollouts at cpu-full's sizes (16 rows, minibatches of 4, one epoch; "
        f"{result['response_tokens_mean']:.1f} response tokens a row), the bundled SmolLM2 in {result['weights']}, "
        f"each trained on {result['repeats']} times by each way (after a warm-up pass), the ways in turn. Median "
        "seconds a step; the differences are means over the paired (step, repeat) passes with 95% bootstrap "
        "intervals.",
        "",
        f"| part | {' | '.join(WAYS)} | shared prefixes - per minibatch | as the loop runs - per minibatch |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for part, row in table.items():
        diffs = [row[f"{name} - {WAYS[0]}"] for name in WAYS[1:]]
        lines.append(
            f"| {part} | {' | '.join(f'{row[name]:.2f}' for name in WAYS)} | "
            + " | ".join(f"{d[0]:+.2f} [{d[1]:+.2f}, {d[2]:+.2f}]" for d in diffs)
            + " |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=4, help="RL steps' rollouts to train on")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes of each way over each step")
    args = parser.parse_args()
    from lib.record import write_record

    result = {"steps": args.steps, "repeats": args.repeats, **measure(args.steps, args.repeats)}
    result["summary"] = summary(result)
    title = "The RL step's training parts: shared prompt prefixes and eager attention, on the same rollouts"
    print(write_record("rl_training_forwards", title, markdown(result), result))


if __name__ == "__main__":
    main()
