"""What a LoRA adapter handed at every call costs OpenVINO GenAI's rollouts, by GenAI's adapter modes, and whether
each mode computes the adapter.

    python benchmarks/rollout_adapter_modes.py [--steps 5] [--tokens 48] [--repeats 2]

RL's rollouts in OpenVINO (``rl.rollout_engine: openvino`` or ``auto``: hardcse/art/rl/rollouts.py) hand GenAI the
policy's current LoRA weights at every call, in GenAI's default mode (``MODE_AUTO``). Here the prompts of cpu-full's
first ``--steps`` RL steps (16 rows a step) go through pipelines built as hardcse builds them
(:class:`hardcse.art.generator.openvino.OpenVINOGenerator`, the CPU's precision), one pipeline a way:

- **no adapter**: the base model, the floor of what an adapter can cost;
- **MODE_AUTO** (hardcse's), **MODE_DYNAMIC**, **MODE_STATIC_RANK**: the same LoRA weights, handed as a new adapter
  at each call as hardcse's rollouts hand the policy's (its making is timed with the call).

Timing: greedy, every row writes exactly ``--tokens`` tokens (end-of-sequence and stop tokens ignored), so every way
makes the same number of decode steps, and again one token (the prompts' prefill); a decode step's milliseconds are
the difference over ``--tokens`` - 1 steps. Medians over ``--repeats`` passes of the steps (a first pass warms each
pipeline and is not kept). Without an adapter GenAI's prefix cache is on (hardcse turns it off under a per-call
adapter), so that way's prefill reads prompts computed before: compare decode steps. The adapter is cpu-full's LoRA
(q_proj, v_proj, r 16) with its B drawn from N(0, 0.05), so that greedy decoding writes other tokens than the base
model.

Whether a mode computes the adapter: in float32, each way's greedy tokens against PyTorch's greedy tokens of the
same policy (PEFT) on step 1's prompts: rows whose first ``--check-tokens`` tokens are PyTorch's, with the base
model's (the adapter disabled) beside them; in float32 GenAI and PyTorch agree token for token where they compute
the same model (tests/test_rollouts.py). In the run's precision (bfloat16 where the CPU computes it), each way's
timed rows against MODE_AUTO's (hardcse's), and the rows whose first line is blank (under cpu-full's ``generator.stop:
line`` such a row ends there without an answer). Run it alone on the machine: it times.

Writes benchmarks/results/rollout_adapter_modes.{md,json}.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import numpy as np
import torch

MODES = ("no adapter", "MODE_AUTO", "MODE_DYNAMIC", "MODE_STATIC_RANK")


def policy(dtype: str):  # noqa: ANN201
    """cpu-full's generator with a LoRA adapter whose B is drawn (seeded), its tokenizer and config."""
    from hardcse.art.config import ArtRunConfig
    from hardcse.art.generator.model import load_generator
    from hardcse.config import load_config

    config = load_config(ArtRunConfig, "configs/cpu-full.yaml", [])
    generation = dataclasses.replace(config.generator, dtype=dtype)
    torch.manual_seed(0)
    model, tokenizer = load_generator(generation.model, generation, trainable=True)
    model.eval()  # LoRA's dropout off: the policy as RL samples it
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)
    return config, generation, model, tokenizer


def step_prompt_ids(config, tokenizer, steps: int) -> list[list[list[int]]]:  # noqa: ANN001
    from hardcse.art.generator.prompts import render_prompts
    from hardcse.art.rl.tuning import step_prompts
    from hardcse.art.synthesis.anchors import split_anchors

    anchors = split_anchors(config.anchors).train
    calls = []
    for step in range(1, steps + 1):
        step_anchors, kinds, _ = step_prompts(config.rl, anchors, step)
        prompts = render_prompts(tokenizer, step_anchors, kinds, config.generator)
        calls.append(tokenizer(prompts, add_special_tokens=False)["input_ids"])
    return calls


def adapter_for(name: str, model):  # noqa: ANN001, ANN201
    """A new GenAI adapter of ``model``'s current LoRA weights in mode ``name``, as hardcse's rollouts make one at
    every call (GenAI then applies it anew: it tells adapters apart by object); None for no adapter."""
    import openvino_genai as genai

    from hardcse.art.generator.adapters import lora_adapter

    if name == "no adapter":
        return None
    adapter = lora_adapter(model)  # MODE_AUTO, as hardcse hands it
    if name == "MODE_AUTO":
        return adapter
    weights = adapter.get_adapters()[0]
    return genai.AdapterConfig(weights, adapter.get_alpha(weights), getattr(genai.AdapterConfig.Mode, name))


def pipeline(name: str, model, tokenizer, generation):  # noqa: ANN001, ANN201
    """A GenAI pipeline built as hardcse builds RL's, with an adapter in mode ``name`` (or none)."""
    from hardcse.art.generator.openvino import OpenVINOGenerator, export_generator
    from hardcse.art.generator.sampling import eos_token_ids
    from hardcse.art.generator.stopping import stop_ids

    folder = export_generator(generation.model, dataclasses.replace(generation, openvino_weights="float"))
    eos = eos_token_ids(model, tokenizer)
    adapter = adapter_for(name, model)
    return OpenVINOGenerator(folder, eos, stop_ids(tokenizer, eos, generation), generation, adapter=adapter)


def greedy(generator, adapter, prompt_ids: list[list[int]], tokens: int) -> list[list[int]]:  # noqa: ANN001
    """Each row's greedy tokens, exactly ``tokens`` of them (no token ends a row)."""
    import openvino as ov
    import openvino_genai as genai

    c = genai.GenerationConfig()
    c.max_new_tokens, c.do_sample, c.ignore_eos, c.stop_token_ids = tokens, False, True, set()
    if adapter is not None:
        c.adapters = adapter
    inputs = [ov.Tensor(np.asarray([ids], dtype=np.int64)) for ids in prompt_ids]
    return [list(r.m_generation_ids[0]) for r in generator.pipeline.generate(inputs, [c] * len(inputs))]


def torch_greedy(model, prompt_ids: list[list[int]], tokens: int) -> list[list[int]]:  # noqa: ANN001
    out = []
    with torch.no_grad():
        for ids in prompt_ids:
            x = torch.tensor([ids])
            written = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=tokens, do_sample=False)
            out.append(written[0, len(ids) :].tolist())
    return out


def agreement(rows: list[list[int]], reference: list[list[int]], n: int) -> float:
    return float(np.mean([a[:n] == b[:n] for a, b in zip(rows, reference, strict=True)]))


def measure(steps: int, tokens: int, repeats: int, check_tokens: int) -> dict:
    # which mode computes the adapter: float32, against PyTorch's greedy tokens
    config, generation, model, tokenizer = policy("float32")
    check = step_prompt_ids(config, tokenizer, 1)[0]
    with_adapter = torch_greedy(model, check, check_tokens)
    with model.disable_adapter():
        base = torch_greedy(model, check, check_tokens)
    agrees = {}
    for name in MODES:
        generator = pipeline(name, model, tokenizer, generation)
        rows = greedy(generator, adapter_for(name, model), check, check_tokens)
        agrees[name] = {"policy": agreement(rows, with_adapter, check_tokens)}
        agrees[name]["base"] = agreement(rows, base, check_tokens)
        del generator
    # what each costs: the run's precision, every row the same length
    config, generation, model, tokenizer = policy("auto")
    calls = step_prompt_ids(config, tokenizer, steps)
    built = {name: pipeline(name, model, tokenizer, generation) for name in MODES}
    seconds = {name: {"prefill": [], "whole": []} for name in MODES}
    written = {}
    for repeat in range(repeats + 1):
        for name in MODES if repeat % 2 == 0 else reversed(MODES):
            generator = built[name]
            for prompt_ids in calls:
                for part, n in (("prefill", 1), ("whole", tokens)):
                    start = time.perf_counter()  # a new adapter each call, as RL's rollouts hand one (timed too)
                    rows = greedy(generator, adapter_for(name, model), prompt_ids, n)
                    if repeat:
                        seconds[name][part].append(time.perf_counter() - start)
                written.setdefault(name, []).extend(rows if repeat == 0 else [])
    for name in MODES:
        agrees[name]["as MODE_AUTO"] = agreement(written[name], written["MODE_AUTO"], tokens)
        # under generator.stop: line (cpu-full's) a row ends at its first line break: blank there, no answer
        first_lines = [tokenizer.decode(r).split("\n")[0] for r in written[name]]
        agrees[name]["blank"] = float(np.mean([not line.strip() for line in first_lines]))
    weights = str(next(model.get_base_model().parameters()).dtype).removeprefix("torch.")
    return {"weights": weights, "rows": len(calls[0]), "seconds": seconds, "agreement": agrees}


def decode_ms(seconds: dict, tokens: int) -> float:
    """A decode step's milliseconds: the median of (whole call - its prefill) / (tokens - 1) over the calls."""
    steps = [(w - p) / (tokens - 1) for w, p in zip(seconds["whole"], seconds["prefill"], strict=True)]
    return 1000 * statistics.median(steps)


def markdown(result: dict) -> list[str]:
    tokens = result["tokens"]
    base = decode_ms(result["seconds"]["no adapter"], tokens)
    lines = [
        f"Prompts of cpu-full's first {result['steps']} RL steps ({result['rows']} rows a call), greedy, every row "
        f"writing {result['tokens']} tokens; the generator in {result['weights']}; {result['repeats']} timed passes "
        "after a warm-up, the ways in turn. Agreement: rows of step 1 whose first "
        f"{result['check_tokens']} greedy tokens (float32) are PyTorch's with the adapter (policy) or without it "
        f"(base); in {result['weights']}, the timed rows that are MODE_AUTO's, and those whose first line is blank (no "
        "answer under stop: line). The prefill without an adapter reads GenAI's prefix cache.",
        "",
        "| way | seconds a call (median) | prefill (median) | ms a decode step | x no adapter | float32: rows as the "
        f"policy | float32: rows as the base | {result['weights']}: rows as MODE_AUTO | {result['weights']}: rows "
        "whose first line is blank |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in MODES:
        seconds, agree = result["seconds"][name], result["agreement"][name]
        ms = decode_ms(seconds, tokens)
        lines.append(
            f"| {name} | {statistics.median(seconds['whole']):.2f} | {statistics.median(seconds['prefill']):.2f} | "
            f"{ms:.1f} | {ms / base:.2f} | {agree['policy']:.2f} | {agree['base']:.2f} | "
            f"{agree['as MODE_AUTO']:.2f} | {agree['blank']:.2f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=5, help="RL steps' prompts to sample from")
    parser.add_argument("--tokens", type=int, default=48, help="tokens every row writes in the timed calls")
    parser.add_argument("--repeats", type=int, default=2, help="timed passes of each way over the steps")
    parser.add_argument("--check-tokens", type=int, default=8, help="greedy tokens compared with PyTorch's")
    args = parser.parse_args()
    from lib.record import write_record

    settings = {"steps": args.steps, "tokens": args.tokens, "repeats": args.repeats, "check_tokens": args.check_tokens}
    result = settings | measure(args.steps, args.tokens, args.repeats, args.check_tokens)
    title = "RL's rollouts in OpenVINO GenAI: what the per-call LoRA adapter costs, by adapter mode"
    print(write_record("rollout_adapter_modes", title, markdown(result), result))


if __name__ == "__main__":
    main()
