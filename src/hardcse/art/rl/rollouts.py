"""Where an RL step's rollouts are sampled: ``rl.rollout_engine``.

``torch`` (the default; the paper's way): the policy samples itself (:func:`hardcse.art.generator.sampling.sample`).
``openvino``: OpenVINO GenAI samples from the base model's export (float weights) with the policy's current LoRA
adapter, handed over at every step (:func:`hardcse.art.generator.adapters.lora_adapter`), so an update needs no new
export. ``auto`` (configs/cpu-full.yaml's): openvino where the run's engine puts the generator's device on OpenVINO
and its LoRA adapts only what GenAI adapts, torch elsewhere (a GPU, ``engine: torch``, OpenVINO not installed):
:func:`resolve_rollout_engine`.

The sampler is then another engine than the policy. Its samples come from the same distribution up to the engines'
rounding (bfloat16 where the CPU computes it), and the update reads none of its numbers: log pi_old is the policy's
own forward in every step (:mod:`hardcse.art.rl.loop`), so PPO's ratio starts at exactly 1 here too. The samples
are therefore slightly off-policy (the sampler's rounding is not the policy's), and no correction is made for it:
TRL, when vLLM samples, also takes the ratio from the trainer's forward, and can in addition reweight by the
sampler's log-probs (its ``vllm_importance_sampling_correction``), which hardcse does not. What differs from
``torch`` is which tokens are drawn (another random stream, another engine's rounding), not the maths of the update.

Random streams: the caller seeds torch's global generator before each step; the OpenVINO sampler draws a seed per
row from it (GenAI gives each row a stream of its own), so a rerun or a resumed step samples the same texts (with
the same number of processes), and GRPO's copies of one prompt draw apart.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Sequence

import torch
from peft import PeftModel
from peft.tuners.lora import LoraLayer
from transformers import PreTrainedTokenizerBase

from hardcse.art.config import GeneratorConfig
from hardcse.art.generator.adapters import OPENVINO_TARGETS, lora_adapter, outside_openvino_targets
from hardcse.art.generator.prefix import encode_prompts
from hardcse.art.generator.sampling import Samples, as_samples, eos_token_ids, sample
from hardcse.art.generator.stopping import stop_ids
from hardcse.devices import resolve_device
from hardcse.engines import Engine
from hardcse.errors import HardcseError

# (prompts, prefix groups, each row's new-token budget or None) -> one sampled response per prompt
Sampler = Callable[[Sequence[str], Sequence[Hashable], Sequence[int] | None], Samples]


def resolve_rollout_engine(choice: str, generation: GeneratorConfig, engine: Engine) -> str:
    """What ``rl.rollout_engine: choice`` samples with, torch or openvino: ``auto`` is openvino where ``engine``
    (the run's) runs the generator's device's work in OpenVINO and ``generator.lora_target_modules`` names only
    products GenAI adapts, torch elsewhere; torch and openvino are themselves."""
    if choice != "auto":
        return choice
    targets = generation.lora_target_modules  # a list, or a pattern (a string) GenAI's names are not checked against
    adaptable = not isinstance(targets, str) and not outside_openvino_targets(targets)
    on_openvino = engine.on(resolve_device(generation.device, "generator.device")) == "openvino"
    return "openvino" if adaptable and on_openvino else "torch"


def rollout_sampler(
    engine: str,
    model: PeftModel,
    tokenizer: PreTrainedTokenizerBase,
    generation: GeneratorConfig,
    base_source: str | None = None,
) -> Sampler:
    """The sampler ``engine`` names (``rl.rollout_engine`` resolved: torch or openvino) for the policy ``model``;
    OpenVINO's exports the LM ``base_source`` (the policy's base model)."""
    if engine == "torch":
        return lambda prompts, groups, limits: sample(model, tokenizer, prompts, generation, groups, limits=limits)
    if base_source is None:
        raise ValueError("OpenVINO rollouts need the base model's source")
    return OpenVINORollouts(model, tokenizer, generation, base_source)


class OpenVINORollouts:
    """Rollouts sampled by OpenVINO GenAI from ``base_source``'s export with ``model``'s LoRA adapter as it is at
    each call."""

    def __init__(
        self, model: PeftModel, tokenizer: PreTrainedTokenizerBase, generation: GeneratorConfig, base_source: str
    ) -> None:
        from hardcse.art.generator.openvino import OpenVINOGenerator, export_generator

        Engine.resolve("openvino", "rl.rollout_engine")  # refused with the install hint where OpenVINO is missing
        check_openvino_policy(model)
        self.model, self.tokenizer, self.lora_adapter = model, tokenizer, lora_adapter
        eos = eos_token_ids(model, tokenizer)
        # float weights: the adapter is added to them as they are (generator.openvino_weights: int8 is synthesis')
        folder = export_generator(base_source, dataclasses.replace(generation, openvino_weights="float"))
        self.generator = OpenVINOGenerator(
            folder, eos, stop_ids(tokenizer, eos, generation), generation, adapter=lora_adapter(model)
        )

    def __call__(self, prompts: Sequence[str], groups: Sequence[Hashable], limits: Sequence[int] | None) -> Samples:
        batch = encode_prompts(self.tokenizer, prompts, groups)  # what the update's forwards continue from
        ids = self.tokenizer(list(prompts), add_special_tokens=False)["input_ids"]  # whole prompts, for GenAI
        # a seed per row (GenAI: one seed, one stream; GRPO's copies of a prompt must draw apart), drawn from the
        # step's seeded global stream (module doc)
        seeds = torch.randint(2**62, (len(ids),)).tolist()
        rows = self.generator.generate(ids, seeds, limits, adapter=self.lora_adapter(self.model))
        written = torch.full((len(rows), max(1, *(len(r) for r, _ in rows))), self.tokenizer.pad_token_id)
        for i, (tokens, _) in enumerate(rows):
            written[i, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
        lengths, truncated = torch.tensor([len(r) for r, _ in rows]), [t for _, t in rows]
        device = self.model.device
        return as_samples(self.tokenizer, batch.to(device), written.to(device), lengths.to(device), truncated)


def check_openvino_policy(model: PeftModel) -> None:
    """OpenVINO rollouts need a policy on the CPU whose LoRA adapts only the decoder layers' projections (what
    GenAI applies an adapter to); else a one-line error naming the key."""
    if model.device.type != "cpu":
        raise HardcseError(
            f"rl.rollout_engine: openvino samples on the CPU, but the generator trains on {model.device}; "
            "set rl.rollout_engine: torch"
        )
    names = {name.rsplit(".", 1)[-1] for name, m in model.named_modules() if isinstance(m, LoraLayer)}
    if other := outside_openvino_targets(names):
        raise HardcseError(
            f"rl.rollout_engine: openvino applies LoRA to the decoder's {', '.join(OPENVINO_TARGETS)} only, but "
            f"generator.lora_target_modules adapts {', '.join(other)}; set rl.rollout_engine: torch"
        )
