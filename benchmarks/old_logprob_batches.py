"""log pi_old by one forward a minibatch (as the RL loop does) or by one forward over all the other rows: how far
the rows' company moves a token's log-prob, and what the one forward would save.

    python benchmarks/old_logprob_batches.py [--steps 3]

The loop (hardcse/art/rl/loop.py) computes each first-epoch minibatch's log pi_old by a forward of exactly that
minibatch, the rows the update's forward will take. One forward over the rows of minibatches 2..K would be fewer,
larger products. But the rows in a forward change its shapes (padding, the prefixes it continues), and in bfloat16
other shapes round otherwise: PPO's ratio pi / pi_old would then carry the rounding beside the policy's change.
This measures that at cpu-full's sizes (16 rollouts, minibatches of 4) on the bundled SmolLM2 with a small random
LoRA update, for the CPU's precision (``auto``: bfloat16 where native) and float32: per response token, the
difference between the two ways' log-probs, and the share of tokens whose ratio exp(difference) falls outside PPO's
clip range [1 - eps, 1 + eps] (cpu-full's ``rl.cliprange``). Seconds: the no-grad forwards of minibatches 2..K, each
way, median of 3 after a warm-up.

Writes benchmarks/results/old_logprob_batches.{md,json}. Run it alone on the machine: it times.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import torch


def measure(dtype: str, steps: int) -> dict:
    from hardcse.art.config import ArtRunConfig
    from hardcse.art.generator.model import load_generator
    from hardcse.art.generator.prompts import render_prompts
    from hardcse.art.generator.stopping import token_limits
    from hardcse.art.rl.loop import RLTrainer
    from hardcse.art.rl.tuning import step_prompts
    from hardcse.art.synthesis.anchors import split_anchors
    from hardcse.config import load_config

    config = load_config(ArtRunConfig, "configs/cpu-full.yaml", [])
    generation = dataclasses.replace(config.generator, dtype=dtype)
    torch.manual_seed(0)  # the adapter's random start
    model, tokenizer = load_generator(generation.model, generation, trainable=True)
    torch.manual_seed(1)
    with torch.no_grad():  # a small adapter update: the policy is not the reference
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.01)
    trainer = RLTrainer(model, tokenizer, generation, config.rl)
    anchors = split_anchors(config.anchors).train
    clip = config.rl.cliprange
    differences, per_minibatch_s, together_s = [], [], []
    for step in range(1, steps + 1):
        step_anchors, kinds, groups = step_prompts(config.rl, anchors, step)
        prompts = render_prompts(tokenizer, step_anchors, kinds, generation)
        torch.manual_seed(config.rl.seed + step)
        samples = trainer.sample(prompts, groups, token_limits(tokenizer, step_anchors, generation))
        minibatches = trainer.minibatches(len(prompts))[0]
        rest = torch.cat(minibatches[1:])
        valid = samples.response_mask[rest].bool()

        def each(samples=samples, minibatches=minibatches) -> torch.Tensor:  # noqa: ANN001
            return torch.cat([trainer.policy_outputs(samples.select(rows)).logprobs for rows in minibatches[1:]])

        def together(samples=samples, rest=rest) -> torch.Tensor:  # noqa: ANN001
            return trainer.policy_outputs(samples.select(rest)).logprobs

        with torch.no_grad():
            differences.append((together() - each())[valid])
            for fn, seconds in ((each, per_minibatch_s), (together, together_s)):
                fn()
                runs = []
                for _ in range(3):
                    start = time.perf_counter()
                    fn()
                    runs.append(time.perf_counter() - start)
                seconds.append(statistics.median(runs))
        trainer.step_count += 1  # the next step's minibatches
    d = torch.cat(differences).float()
    ratio = d.exp()
    return {
        "weights": str(next(model.parameters()).dtype).removeprefix("torch."),
        "tokens": int(d.numel()),
        "mean_abs_difference": float(d.abs().mean()),
        "max_abs_difference": float(d.abs().max()),
        "outside_clip_range": float(((ratio < 1 - clip) | (ratio > 1 + clip)).float().mean()),
        "cliprange": clip,
        "per_minibatch_s": statistics.median(per_minibatch_s),
        "together_s": statistics.median(together_s),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3, help="RL steps' rollouts to measure on")
    args = parser.parse_args()
    from lib.record import write_record

    result = {"steps": args.steps, "precisions": {dtype: measure(dtype, args.steps) for dtype in ("auto", "float32")}}
    title = "log pi_old by one forward a minibatch or by one forward over the other rows"
    print(write_record("old_logprob_batches", title, markdown(result), result))


def markdown(result: dict) -> list[str]:
    rows = result["precisions"]
    clip = next(iter(rows.values()))["cliprange"]
    bf16 = rows["auto"]
    return [
        f"{result['steps']} RL steps' rollouts at cpu-full's sizes (16 rows, minibatches of 4), the bundled SmolLM2 "
        "with a small random LoRA update. Per response token of minibatches 2-4: log pi by one forward over those "
        "12 rows - log pi by one forward a minibatch (the loop's way).",
        "",
        f"| generator.dtype | weights | tokens | mean abs difference (nats) | largest | ratio outside [{1 - clip:.1f}, "
        f"{1 + clip:.1f}] | seconds a minibatch at a time | seconds in one forward |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {dtype} | {r['weights']} | {r['tokens']} | {r['mean_abs_difference']:.3g} | "
            f"{r['max_abs_difference']:.3g} | {100 * r['outside_clip_range']:.1f}% | {r['per_minibatch_s']:.2f} | "
            f"{r['together_s']:.2f} |"
            for dtype, r in rows.items()
        ),
        "",
        f"In bfloat16 the rows' company moved a token's log-prob by {bf16['mean_abs_difference']:.3f} nats on "
        f"average and by up to {bf16['max_abs_difference']:.2f}; {100 * bf16['outside_clip_range']:.1f}% of the "
        "tokens' ratios would leave PPO's clip range with no update at all. One forward would have saved "
        f"{bf16['per_minibatch_s'] - bf16['together_s']:.2f} s a step; the loop keeps one forward a minibatch, so "
        "that its ratio moves with the policy only.",
        "",
    ]


if __name__ == "__main__":
    main()
