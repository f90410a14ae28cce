"""Texts from the generator where nothing trains (synthesis, ``art generate``, the held-out comparison, the raw-LLM
baseline), in the engine the config picks: PyTorch (:mod:`hardcse.art.generator.sampling`) or OpenVINO GenAI
(:mod:`hardcse.art.generator.openvino`). RL rollouts stay in PyTorch: the policy changes every update, and
their log-probabilities come from the same forward the trainer differentiates."""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from transformers import PreTrainedTokenizerBase

from hardcse.art.config import GeneratorConfig
from hardcse.art.generator.model import base_model_source, load_generator, load_tokenizer
from hardcse.devices import resolve_device
from hardcse.engines import resolve_engine
from hardcse.resources import resolve_model


@dataclass
class GeneratedTexts:
    texts: list[str]
    truncated: list[bool]  # the row reached max_new_tokens without an end-of-sequence token
    tokens: int  # tokens written, end-of-sequence tokens included


class TextGenerator:
    """Loads the generator once in the chosen engine; ``generate`` writes one response per prompt."""

    def __init__(self, source: str, config: GeneratorConfig, engine: str = "auto") -> None:
        self.config = config
        self.engine = resolve_engine(engine, resolve_device(config.device, "generator.device"))
        if self.engine == "openvino":
            from hardcse.art.generator.openvino import OpenVINOGenerator, export_generator
            from hardcse.art.generator.sampling import generation_eos_ids
            from hardcse.art.generator.stopping import stop_ids

            base = resolve_model(base_model_source(source))
            self.tokenizer: PreTrainedTokenizerBase = load_tokenizer(base)
            folder = export_generator(source, config)
            eos_ids = generation_eos_ids(base, self.tokenizer)
            self._openvino = OpenVINOGenerator(folder, eos_ids, stop_ids(self.tokenizer, eos_ids, config), config)
        else:
            self.model, self.tokenizer = load_generator(source, config)

    def generate(
        self,
        prompts: Sequence[str],
        groups: Sequence[Hashable] | None = None,
        row_seeds: Sequence[int] | None = None,
        limits: Sequence[int] | None = None,
    ) -> GeneratedTexts:
        """One response per rendered prompt (``top_k: 1``: greedy). ``groups``: prompts sharing a prefix (PyTorch);
        ``row_seeds``: the rows' random streams (PyTorch: one per row; OpenVINO: one per call, seeded from all);
        ``limits``: each row's new-token budget (default: ``max_new_tokens``). Both engines stop a row at the same
        tokens (:mod:`hardcse.art.generator.stopping`)."""
        if self.engine == "openvino":
            return self._generate_openvino(prompts, row_seeds, limits)
        from hardcse.art.generator.sampling import sample

        samples = sample(self.model, self.tokenizer, prompts, self.config, groups, row_seeds, limits)
        return GeneratedTexts(samples.texts, samples.truncated, int(samples.response_mask.sum()))

    def _generate_openvino(
        self, prompts: Sequence[str], row_seeds: Sequence[int] | None, limits: Sequence[int] | None
    ) -> GeneratedTexts:
        ids = self.tokenizer(list(prompts), add_special_tokens=False)["input_ids"]
        key = "\0".join(str(s) for s in (row_seeds if row_seeds is not None else [self.config.seed]))
        seed = int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "little")
        rows = self._openvino.generate(ids, seed, limits)
        eos = set(self._openvino.eos_ids)
        texts = self.tokenizer.batch_decode([[t for t in r if t not in eos] for r, _ in rows], skip_special_tokens=True)
        return GeneratedTexts(texts, [truncated for _, truncated in rows], sum(len(r) for r, _ in rows))
