"""hardcse's own GRPO against TRL's GRPOTrainer: seconds per RL step on the same prompts, reward and adapter.

    pip install --no-deps --target /tmp/trl trl      # TRL is not a hardcse dependency
    PYTHONPATH=/tmp/trl python benchmarks/grpo_vs_trl.py [--steps 3]

Both sides: the bundled SmolLM2-135M in the dtype hardcse picks for this CPU, a fresh LoRA adapter (r 16,
alpha 32, q/v), the quickstart's prompts (chat template, one demonstration), 4 anchors x 4 completions = 16
rollouts a step, one optimizer update a step (hardcse: minibatch 16; TRL: per-device batch 16, no
accumulation), at most 40 new tokens, sampling temperature 1, GRPO beta 0.04, lr 5e-4; the reward is hardcse's
dual reward with a random-head NLI cross-encoder (its cost is a trained one's). Seconds per step are the median
over ``--steps`` steps after one warm-up step, one side after the other. TRL's completions are scored with
``truncated=False`` (its reward function does not see whether a completion hit the limit).
Writes benchmarks/results/grpo_vs_trl.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()

    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    from hardcse.art.config import ArtRunConfig
    from hardcse.art.generator.model import load_tokenizer
    from hardcse.art.generator.prompts import render_prompts
    from hardcse.art.reward.dual import Reward
    from hardcse.art.rl.tuning import ArtScore, step_prompts, tune_generator
    from hardcse.config import load_config
    from hardcse.devices import resolve_device, resolve_dtype
    from hardcse.discriminator.nli import NLIDiscriminator
    from hardcse.encoder.build import load_encoder
    from hardcse.resources import resolve_model
    from hardcse.training import StepTimer
    from lib.record import this_command, write_record
    from lib.stand_ins import random_discriminator

    steps = args.steps + 1
    overrides = ["rl.algorithm=grpo", "rl.batch_size=16", "rl.minibatch_size=16", "rl.grpo.group_size=4"]
    overrides += [f"rl.steps={steps}", f"rl.save_every={steps}", "rl.learning_rate=5e-4", "rl.grpo.beta=0.04"]
    config = load_config(ArtRunConfig, "configs/quickstart.yaml", overrides)
    dtype = resolve_dtype(config.generator.dtype, resolve_device(config.generator.device))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        random_discriminator(tmp / "nli")
        discriminator = NLIDiscriminator.load(str(tmp / "nli"))

        # hardcse's GRPO
        final = tune_generator(config, tmp / "own", tmp / "own-final", discriminator=discriminator)
        rows = [json.loads(line) for line in (final / "rl_log.jsonl").read_text().splitlines()][1:]
        own = [sum(v for k, v in r.items() if k.endswith("_s")) for r in rows]

        # TRL's GRPOTrainer on the same anchors and prompts
        from hardcse.art.synthesis.anchors import split_anchors

        model_dir = resolve_model(config.generator.model)
        tokenizer = load_tokenizer(model_dir)
        train = split_anchors(config.anchors).train
        prompts, anchors, kinds = [], [], []
        for step in range(1, steps + 1):
            a, k, _ = step_prompts(config, train, step)
            step_rows = range(0, len(a), config.rl.grpo.group_size)  # TRL repeats each prompt num_generations times
            anchors += [a[i] for i in step_rows]
            kinds += [k[i] for i in step_rows]
            prompts += render_prompts(tokenizer, [a[i] for i in step_rows], [k[i] for i in step_rows], config.generator)
        dataset = Dataset.from_dict({"prompt": prompts, "anchor": anchors, "kind": kinds})
        reward = Reward(discriminator, load_encoder(config.encoder, config.pooling), config.reward)

        def trl_reward(prompts, completions, anchor, kind, **_):
            scores, _stats = ArtScore(reward, list(anchor), list(kind))(list(completions), [False] * len(anchor))
            return [float(s) for s in scores]

        timer = StepTimer()  # hardcse's training job times its steps the same way
        generation = config.generator
        trl_config = GRPOConfig(
            output_dir=str(tmp / "trl"),
            per_device_train_batch_size=16,
            gradient_accumulation_steps=1,
            num_generations=4,
            max_completion_length=generation.max_new_tokens,
            temperature=generation.sampling_temperature,
            top_p=1.0,
            top_k=0,
            learning_rate=5e-4,
            beta=0.04,
            max_steps=steps,
            num_train_epochs=1,
            logging_steps=1,
            save_strategy="no",
            report_to=[],
            use_cpu=True,
            bf16=dtype == torch.bfloat16,
            shuffle_dataset=False,
            seed=config.rl.seed,
        )
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype)
        lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=["q_proj", "v_proj"])
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=trl_reward,
            args=trl_config,
            train_dataset=dataset,
            processing_class=tokenizer,
            peft_config=lora,
            callbacks=[timer],
        )
        trainer.train()
        trl = timer.seconds[1:]

    import trl as trl_module

    result = {
        "platform": platform.platform(),
        "cpu_bfloat16": dtype == torch.bfloat16,
        "trl_version": trl_module.__version__,
        "rollouts_per_step": 16,
        "hardcse_step_seconds": [round(s, 2) for s in own],
        "trl_step_seconds": [round(s, 2) for s in trl],
        "hardcse_step_seconds_median": round(statistics.median(own), 2),
        "trl_step_seconds_median": round(statistics.median(trl), 2),
    }
    text = write_record(
        "grpo_vs_trl",
        "GRPO: hardcse's own vs TRL's GRPOTrainer (seconds per step of 16 rollouts)",
        [
            "| | median | steps |",
            "|---|---:|---|",
            f"| hardcse GRPO | **{result['hardcse_step_seconds_median']}** | {result['hardcse_step_seconds']} |",
            f"| TRL GRPOTrainer | **{result['trl_step_seconds_median']}** | {result['trl_step_seconds']} |",
            "",
        ],
        result,
        command=f"PYTHONPATH=/tmp/trl {this_command()}",
        about=f", {result['platform']}, TRL {result['trl_version']}, generator in "
        f"{'bfloat16' if result['cpu_bfloat16'] else 'float32'}.",
    )
    print(text)


if __name__ == "__main__":
    main()
