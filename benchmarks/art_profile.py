"""Where ART's time goes, against what the machine can do: an RL step's parts and synthesis, with their FLOP/s.

    python benchmarks/art_profile.py [--steps 3] [--anchors 64] [--tag before] [--variants [NAME ...]]

One process, nothing else running. At cpu-full's sizes (configs/cpu-full.yaml: 16 rollouts a step in minibatches
of 4, the bundled SmolLM2-135M, its stop and length rules) with a random-head NLI cross-encoder on the bundled
MiniLM in place of the trained discriminator (the same cost; its numbers are unused):

- **RL**: ``--steps`` timed steps after one warm-up step; each part's median seconds (the loop's own timer), then
  one more step run under ``torch.utils.flop_counter.FlopCounterMode``, which counts every matrix product's FLOPs
  (forward and backward) per part. Achieved FLOP/s = the counted step's FLOPs over the median seconds of the
  timed steps, scaled by their response tokens (the counted step's lengths differ).
- **Synthesis**: ``synthesize`` on ``--anchors`` held-out anchors (a positive and a negative each) with the
  config's engine (``auto``: OpenVINO where installed), generated tokens per second of the whole stage; its FLOPs
  are estimated as 2 x the generator's parameters x (prompt + generated tokens), OpenVINO's kernels being out of
  the counter's sight.
- **The machine's limit**: the best a large matrix product reaches here in torch (2,048 x 2,048 x 2,048, bf16 and
  fp32, the median of 10), beside the instruction set's peak per cycle (AMX-BF16 1,024 bf16 FLOP a core a cycle,
  AVX-512-BF16 128, AVX-512 fp32 64, AVX2 fp32 32) at the clock /proc/cpuinfo reports (a lower bound of turbo).

Writes benchmarks/results/art_profile[_TAG].{md,json}: a before/after pair of one issue is two tags on one machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from hardcse.art.log_keys import PHASES as PARTS  # the RL step's parts, each logged as PART_s in rl_log.jsonl

ROLLOUTS = {
    "torch": "PyTorch by the policy itself",
    "openvino": "OpenVINO (whose kernels the FLOP counter does not see)",
}
# FLOPs a core does in a cycle at the best of each instruction set (two FMA ports where AVX has them)
PER_CYCLE = {"amx_bf16": ("AMX-BF16", 1024), "avx512_bf16": ("AVX-512-BF16", 128), "avx512f": ("AVX-512 fp32", 64)}


def median_seconds(rows: list[dict]) -> tuple[dict[str, float], float]:
    """Each part's median seconds over ``rows`` (rl_log.jsonl lines), and the median step (the sum of its parts)."""
    parts = {p: statistics.median(r[f"{p}_s"] for r in rows) for p in PARTS}
    return parts, statistics.median(sum(r[f"{p}_s"] for p in PARTS) for r in rows)


def matmul_gflops(dtype_name: str, n: int = 2048, repeats: int = 10) -> float:
    """The median GFLOP/s of an n x n x n matrix product in torch, in ``dtype_name``."""
    import torch

    dtype = getattr(torch, dtype_name)
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    a @ b  # warm-up: the kernel chosen, the memory touched
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        seconds.append(time.perf_counter() - start)
    return 2 * n**3 / statistics.median(seconds) / 1e9


def machine_peak() -> dict:
    """The instruction set's peak at the reported clock, and what torch's matrix products reach."""
    import os

    flags, mhz = set(), 0.0
    with open("/proc/cpuinfo", encoding="utf-8") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key.strip() == "flags" and not flags:
                flags = set(value.split())
            if key.strip() == "cpu MHz":
                mhz = max(mhz, float(value))
    name, per_cycle = next((PER_CYCLE[f] for f in PER_CYCLE if f in flags), ("AVX2 fp32", 32))
    cores = os.cpu_count() or 1
    return {
        "instruction_set": name,
        "flop_per_core_cycle": per_cycle,
        "clock_ghz": round(mhz / 1000, 2),
        "cores": cores,
        "peak_gflops": round(per_cycle * cores * mhz / 1000, 1),
        "matmul_gflops_bf16": round(matmul_gflops("bfloat16"), 1),
        "matmul_gflops_fp32": round(matmul_gflops("float32"), 1),
    }


def profile_rl(config, discriminator, work: Path, steps: int, variant: str = "as configured") -> dict:  # noqa: ANN001
    """Seconds per part over ``steps`` timed steps, each part's FLOPs in one more, counted, step, and the decode
    loop's length (its steps run until the longest row ends) against the rows' mean response length. ``variant``:
    a candidate measured beside the loop as it is (VARIANTS: a forward around the loop's, RL settings)."""
    from torch.utils.flop_counter import FlopCounterMode

    from hardcse.art.rl import loop, tuning
    from hardcse.art.rl.rollouts import resolve_rollout_engine
    from hardcse.data.jsonl import read_jsonl
    from hardcse.engines import Engine

    counted: dict[str, int] = {}
    calls = {"step": 0}
    decode_steps: list[int] = []
    timer, step, sampler, forward = (
        loop.RLTrainer.timer,
        loop.RLTrainer.step,
        tuning.rollout_sampler,
        loop.RLTrainer.forward,
    )
    around_forward, settings = VARIANTS[variant]
    config = dataclasses.replace(config, rl=dataclasses.replace(config.rl, **settings))

    def recording_sampler(*args):  # noqa: ANN002, ANN202
        sample = sampler(*args)

        def recording_sample(*call):  # noqa: ANN002, ANN202
            samples = sample(*call)
            decode_steps.append(samples.response_ids.shape[1])
            return samples

        return recording_sample

    def variant_forward(self, samples, *shared):  # noqa: ANN001, ANN002, ANN202 (shared: the prefixes, where taken)
        return around_forward(self, samples, lambda trainer, rows: forward(trainer, rows, *shared))

    @contextmanager
    def counting_timer(self, timings, name):  # noqa: ANN001, ANN202
        with timer(self, timings, name):
            if calls["step"] <= steps + 1:  # the warm-up and timed steps: the loop's own timer alone
                yield
                return
            with FlopCounterMode(display=False) as counter:
                yield
            counted[name] = counted.get(name, 0) + counter.get_total_flops()

    def counting_step(self, *args, **kwargs):  # noqa: ANN001, ANN202
        calls["step"] += 1
        return step(self, *args, **kwargs)

    loop.RLTrainer.timer, loop.RLTrainer.step, tuning.rollout_sampler = counting_timer, counting_step, recording_sampler
    loop.RLTrainer.forward = variant_forward
    try:
        final = tuning.tune_generator(config, work / "rl", work / "generator", discriminator=discriminator)
    finally:
        loop.RLTrainer.timer, loop.RLTrainer.step, tuning.rollout_sampler = timer, step, sampler
        loop.RLTrainer.forward = forward
    rows = read_jsonl(final / "rl_log.jsonl")
    timed, last = rows[1 : steps + 1], rows[-1]
    seconds, step_seconds = median_seconds(timed)
    tokens = statistics.mean(r["response_tokens"] for r in timed)
    scale = tokens / last["response_tokens"]  # the counted step's FLOPs at the timed steps' lengths
    engine = Engine.resolve(config.engine)
    return {
        "rollout_engine": resolve_rollout_engine(config.rl.rollout_engine, config.generator, engine),
        "steps_timed": steps,
        "step_seconds": round(step_seconds, 2),
        "response_tokens_mean": round(tokens, 1),
        "decode_steps_median": statistics.median(decode_steps[1 : steps + 1]),
        "counted_step_response_tokens": last["response_tokens"],
        "parts": {
            p: {
                "seconds": round(seconds[p], 3),
                "gflop": round(counted.get(p, 0) * scale / 1e9, 1),
                "gflops": round(counted.get(p, 0) * scale / 1e9 / seconds[p], 1) if seconds[p] else None,
            }
            for p in PARTS
        },
    }


def _with_attention(self, samples, forward, implementation: str):  # noqa: ANN001, ANN202
    """The training forward with the decoder's attention ``implementation`` (sampling keeps SDPA)."""
    import contextlib

    decoder = self.model.base_model.model
    decoder.set_attn_implementation(implementation)
    self.training_attention = contextlib.nullcontext  # not the loop's own choice (eager in bf16 on a CPU)
    try:
        return forward(self, samples)
    finally:
        del self.training_attention
        decoder.set_attn_implementation("sdpa")


def _eager_attention(self, samples, forward):  # noqa: ANN001, ANN202
    """The training forwards with eager attention."""
    return _with_attention(self, samples, forward, "eager")


def _autocast(self, samples, forward):  # noqa: ANN001, ANN202
    """The training forwards under bf16 autocast (the LoRA weights' products in bf16 too)."""
    import torch

    with torch.autocast("cpu", dtype=torch.bfloat16):
        return forward(self, samples)


def _float32_attention(self, samples, forward):  # noqa: ANN001, ANN202
    """The training forwards' attention in float32: q, k and v upcast, the output cast back (sampling keeps the
    model's bf16). transformers builds an attention function's mask by its registered name, hence both registries."""
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    def sdpa_float32(module, query, key, value, attention_mask, **kwargs):  # noqa: ANN001, ANN003, ANN202
        q, k, v = query.float(), key.float(), value.float()
        out, weights = sdpa_attention_forward(module, q, k, v, attention_mask, **kwargs)
        return out.to(query.dtype), weights

    AttentionInterface.register("sdpa_float32", sdpa_float32)
    AttentionMaskInterface.register("sdpa_float32", sdpa_mask)
    return _with_attention(self, samples, forward, "sdpa_float32")


def _as_it_is(self, samples, forward):  # noqa: ANN001, ANN202
    return forward(self, samples)


# candidates for the RL step, each measured as a whole tuning beside the loop as configured: a forward around the
# loop's, and RL settings
VARIANTS = {
    "as configured": (_as_it_is, {}),
    "eager attention in the training forwards": (_eager_attention, {}),
    "bf16 autocast in the training forwards": (_autocast, {}),
    "float32 attention in the training forwards": (_float32_attention, {}),
    "OpenVINO rollouts": (_as_it_is, {"rollout_engine": "openvino"}),
    "PyTorch rollouts": (_as_it_is, {"rollout_engine": "torch"}),
}


def profile_synthesis(config, discriminator, work: Path, anchors: int, parameters: int) -> dict:  # noqa: ANN001
    """Synthesis on ``anchors`` held-out anchors: tokens/s, kept triplets a minute, FLOP/s estimated."""
    from transformers import AutoTokenizer

    from hardcse.art.generator.prompts import render_prompts
    from hardcse.art.reward.dual import Reward
    from hardcse.art.synthesis.anchors import split_anchors
    from hardcse.art.synthesis.triplets import synthesize
    from hardcse.devices import resolve_device
    from hardcse.encoder.build import load_encoder
    from hardcse.engines import Engine
    from hardcse.resources import resolve_model

    engine = Engine.resolve(config.engine)
    reward = Reward(discriminator, load_encoder(config.encoder), config.reward, engine)
    texts = split_anchors(config.anchors).held_out[:anchors]
    report = synthesize(
        config.generator.model, texts, config.generator, reward, config.filter, work / "synthesis", engine=engine
    )
    tokenizer = AutoTokenizer.from_pretrained(str(resolve_model(config.generator.model)))
    kinds = ["positive"] * len(texts) + ["negative"] * len(texts)
    prompts = render_prompts(tokenizer, texts * 2, kinds, config.generator)
    prompt_tokens = sum(len(ids) for ids in tokenizer(prompts, add_special_tokens=False)["input_ids"])
    generated = report.tokens_per_second * report.seconds
    gflop = 2 * parameters * (prompt_tokens + generated) / 1e9
    return {
        "engine": engine.on(resolve_device(config.generator.device)),
        "anchors": len(texts),
        "seconds": round(report.seconds, 1),
        "generated_tokens": round(generated),
        "tokens_per_second": round(report.tokens_per_second, 1),
        "kept": report.kept,
        "kept_per_minute": round(report.kept / report.seconds * 60, 1),
        "prompt_tokens": prompt_tokens,
        "gflop_estimate": round(gflop, 1),
        "gflops_estimate": round(gflop / report.seconds, 1),
    }


def markdown(result: dict) -> list[str]:
    peak, rl, synthesis = result["peak"], result["rl"], result["synthesis"]
    lines = [
        f"The limit here: {peak['instruction_set']} at {peak['flop_per_core_cycle']} FLOP a core a cycle x "
        f"{peak['cores']} cores x {peak['clock_ghz']} GHz = **{peak['peak_gflops']:,.0f} GFLOP/s**; a large "
        f"matrix product in torch reaches {peak['matmul_gflops_bf16']:,.0f} GFLOP/s in bf16 and "
        f"{peak['matmul_gflops_fp32']:,.0f} in fp32 (the practical limit). Generator weights: "
        f"{result['generator_dtype']}; torch threads: {result['torch_threads']}.",
        "",
        f"An RL step at cpu-full's sizes ({result['rollouts']} rollouts, minibatch {result['minibatch']}; median of "
        f"{rl['steps_timed']} steps after a warm-up; {rl['response_tokens_mean']} response tokens a rollout): "
        f"**{rl['step_seconds']} s**, its rollouts sampled in {ROLLOUTS[rl.get('rollout_engine', 'torch')]}. The "
        f"decode loop runs until its longest row ends: a median {rl['decode_steps_median']} decode steps for a mean "
        f"of {rl['response_tokens_mean']} tokens a row.",
        "",
        "| part | seconds | share | GFLOP (counted) | GFLOP/s | of the bf16 matmul limit |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    total = sum(part["seconds"] for part in rl["parts"].values())
    for name, part in rl["parts"].items():
        rate, gflop = part["gflops"], part["gflop"]
        if name == "generation" and rl.get("rollout_engine") == "openvino":
            rate = gflop = None  # OpenVINO's kernels: out of torch's counter's sight
        of_limit = f"{rate / peak['matmul_gflops_bf16']:.0%}" if rate is not None else "-"
        share = part["seconds"] / total
        cells = [f"{part['seconds']:.2f}", f"{share:.0%}", *("-" if c is None else c for c in (gflop, rate)), of_limit]
        lines.append(f"| {name} | " + " | ".join(str(c) for c in cells) + " |")
    if result.get("variants"):
        lines += [
            "",
            "Candidates, each a whole tuning of the same steps on the same anchors (the rollouts differ once the "
            "updates differ, so compare the training parts more than sampling):",
            "",
            "| variant | step s | generation | policy forward | reference | optimisation | decode steps |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for name, v in result["variants"].items():
            p = v["parts"]
            cells = [v["step_seconds"], *(p[k]["seconds"] for k in PARTS if k != "scoring"), v["decode_steps_median"]]
            lines.append(f"| {name} | " + " | ".join(str(c) for c in cells) + " |")
    lines += [
        "",
        f"Synthesis of {synthesis['anchors']} anchors (a positive and a negative each) in {synthesis['engine']}: "
        f"**{synthesis['tokens_per_second']} generated tokens/s**, {synthesis['seconds']} s for the whole stage "
        f"(generation, parsing, scoring, the filter), {synthesis['kept']} kept "
        f"({synthesis['kept_per_minute']} kept triplets a minute; a random discriminator judges here, so the kept "
        f"count is the stage's cost, not ART's yield). FLOPs estimated as 2 x {result['parameters'] / 1e6:.0f}M "
        f"parameters x ({synthesis['prompt_tokens']} prompt + {synthesis['generated_tokens']} generated tokens): "
        f"{synthesis['gflops_estimate']} GFLOP/s, {synthesis['gflops_estimate'] / peak['matmul_gflops_bf16']:.0%} "
        "of the bf16 matmul limit. In OpenVINO each kind's shared prompt prefix is computed once, not once a row, "
        "so this counts prompt tokens that were read from the cache: the rate is an upper bound.",
        "",
    ]
    return lines


def main() -> None:
    import torch

    from hardcse.art.config import ArtRunConfig
    from hardcse.config import load_config
    from hardcse.devices import resolve_device, resolve_dtype
    from hardcse.discriminator.nli import NLIDiscriminator
    from hardcse.resources import resolve_model
    from lib.record import write_record
    from lib.stand_ins import random_discriminator  # the same stand-in discriminator as the speed record's

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3, help="RL steps to time after one warm-up step")
    parser.add_argument("--anchors", type=int, default=64, help="held-out anchors to synthesise for")
    parser.add_argument("--tag", default="", help="the record's name: art_profile_TAG (e.g. before, after)")
    parser.add_argument(
        "--variants", nargs="*", choices=list(VARIANTS)[1:], help="also time these candidates (none named: all)"
    )
    args = parser.parse_args()
    peak = machine_peak()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        random_discriminator(work / "nli")
        overrides = [f"discriminator={work / 'nli'}", "judge=null", "reuse=false"]
        overrides += [f"rl.steps={args.steps + 2}", f"rl.save_every={args.steps + 2}"]
        config = load_config(ArtRunConfig, "configs/cpu-full.yaml", overrides)
        discriminator = NLIDiscriminator.load(str(work / "nli"))
        from transformers import AutoConfig

        generator = AutoConfig.from_pretrained(str(resolve_model(config.generator.model)))
        parameters = _llama_parameters(generator)
        rl = profile_rl(config, discriminator, work, args.steps)
        variants = {}
        for name in (args.variants or list(VARIANTS)[1:]) if args.variants is not None else []:
            variants[name] = profile_rl(config, discriminator, work / name.replace(" ", "-"), args.steps, name)
        synthesis = profile_synthesis(config, discriminator, work, args.anchors, parameters)
    result = {
        "peak": peak,
        "rl": rl,
        "variants": variants,
        "synthesis": synthesis,
        "parameters": parameters,
        "rollouts": config.rl.batch_size,
        "minibatch": config.rl.minibatch_size,
        "generator_dtype": str(resolve_dtype(config.generator.dtype, resolve_device("auto"))).removeprefix("torch."),
        "torch_threads": torch.get_num_threads(),
    }
    name = f"art_profile_{args.tag}" if args.tag else "art_profile"
    print(write_record(name, "Where ART's time goes, against the machine's limit", markdown(result), result))


def _llama_parameters(config) -> int:  # noqa: ANN001
    """A Llama-style decoder's parameters that multiply each token (the tied output layer counted once)."""
    d, ff, layers, vocab = config.hidden_size, config.intermediate_size, config.num_hidden_layers, config.vocab_size
    kv = config.num_key_value_heads * (d // config.num_attention_heads)
    per_layer = d * d * 2 + d * kv * 2 + 3 * d * ff  # q, o; k, v; gate, up, down
    return layers * per_layer + vocab * d


if __name__ == "__main__":
    main()
