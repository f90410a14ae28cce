"""What ``rl.gradient_checkpointing`` saves and costs: one policy minibatch's forward and backward on the bundled
generator, three ways, in one run.

    python benchmarks/rl_memory.py [--config configs/paper-bert-large.yaml] [--rows 8] [--repeats 3]

The generator is the bundled SmolLM2-135M (whatever ``generator.model`` the config names is replaced by it: a 7B
cannot run here), with the config's LoRA, prompts and ``max_new_tokens``; ``--rows`` real ART prompts (anchors of
the vendored corpus, positive and negative alternating) get responses sampled once. Then, for the same rows:

- ``shared prefix``: the default forward (each kind's shared prompt beginning computed once, as a cache);
- ``whole rows``: every row's whole prompt and response, no cache, no checkpointing;
- ``whole rows, checkpointed``: what ``rl.gradient_checkpointing: true`` runs.

Activation memory is the bytes of the tensors autograd keeps for the backward pass (counted with
torch.autograd.graph.saved_tensors_hooks), which is what checkpointing changes; seconds are the median of
``--repeats`` forward+backward passes, the three settings interleaved (run it alone: two cores are little).
Writes benchmarks/results/rl_memory.{json,md}.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

import torch

from hardcse.art.config import ArtRunConfig
from hardcse.art.generator.model import load_generator
from hardcse.art.generator.prompts import render_prompts
from hardcse.art.generator.sampling import sample
from hardcse.art.rl.loop import RLTrainer, enable_checkpointing
from hardcse.art.synthesis.anchors import split_anchors
from hardcse.config import load_config
from hardcse.resources import BUNDLED_GENERATOR
from lib.record import write_record

BUNDLED = BUNDLED_GENERATOR
SETTINGS = ("shared prefix", "whole rows", "whole rows, checkpointed")


def disable_checkpointing(model: torch.nn.Module) -> None:
    if hasattr(model, "activation_checkpointing_disable"):
        model.activation_checkpointing_disable()
    else:
        model.gradient_checkpointing_disable()


def measure(trainer: RLTrainer, samples: object, setting: str) -> tuple[float, float]:
    """(GiB autograd saves, seconds) of one forward and backward of ``setting``."""
    # "whole rows" and "checkpointed" both take the policy's whole-prompt path; only the second checkpoints
    trainer.config = replace(trainer.config, gradient_checkpointing=setting != "shared prefix")
    if setting.endswith("checkpointed"):
        enable_checkpointing(trainer.model)
    else:
        disable_checkpointing(trainer.model)
    trainer.optimizer.zero_grad(set_to_none=True)
    saved: list[int] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append(t.numel() * t.element_size())
        return t

    start = time.perf_counter()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = (trainer.forward(samples)[0] * samples.response_mask).sum()
    loss.backward()
    return sum(saved) / 2**30, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/paper-bert-large.yaml")
    parser.add_argument("--rows", type=int, default=8, help="rows of a minibatch (the paper config's: 8)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    config = load_config(ArtRunConfig, args.config)
    generation = replace(config.generator, model=BUNDLED)
    torch.manual_seed(0)
    model, tokenizer = load_generator(BUNDLED, generation, trainable=True)
    trainer = RLTrainer(model, tokenizer, generation, config.rl)
    # the draws the recorded samples came from: the trainer's value head then reseeded the global generator
    torch.manual_seed(config.rl.seed)
    torch.nn.Linear(model.get_base_model().config.hidden_size, 1)
    anchors = split_anchors(replace(config.anchors, corpus=None)).train[: args.rows]
    kinds = ["positive" if i % 2 == 0 else "negative" for i in range(args.rows)]
    samples = sample(model, tokenizer, render_prompts(tokenizer, anchors, kinds, generation), generation, groups=kinds)
    measure(trainer, samples, SETTINGS[0])  # warm-up
    runs: dict[str, list[tuple[float, float]]] = {s: [] for s in SETTINGS}
    for _ in range(args.repeats):
        for setting in SETTINGS:
            runs[setting].append(measure(trainer, samples, setting))
    prompt_tokens = [len(samples.prompts.prompt_ids(i)) for i in range(args.rows)]
    result = {
        "generator": BUNDLED,
        "dtype": str(next(model.parameters()).dtype),
        "rows": args.rows,
        "mean_prompt_tokens": statistics.mean(prompt_tokens),
        "mean_response_tokens": float(samples.response_mask.sum(dim=1).mean()),
        "settings": {
            s: {"saved_gib": runs[s][0][0], "seconds": statistics.median(t for _, t in runs[s])} for s in SETTINGS
        },
    }
    base = result["settings"][SETTINGS[0]]
    lines = [
        f"Generator {BUNDLED} ({result['dtype']}, LoRA of {args.config}); one minibatch of "
        f"{args.rows} rows, {result['mean_prompt_tokens']:.0f} prompt + {result['mean_response_tokens']:.1f} "
        f"response tokens a row on average; median of {args.repeats} passes.",
        "",
        "| forward | activations kept (MiB) | x shared prefix | seconds | x shared prefix |",
        "|---|---:|---:|---:|---:|",
    ]
    for s in SETTINGS:
        r = result["settings"][s]
        lines.append(
            f"| {s} | {r['saved_gib'] * 1024:.1f} | {r['saved_gib'] / base['saved_gib']:.2f} | {r['seconds']:.2f} | "
            f"{r['seconds'] / base['seconds']:.2f} |"
        )
    title = "RL forward+backward with and without gradient checkpointing"
    print(write_record("rl_memory", title, [*lines, ""], result))


if __name__ == "__main__":
    main()
