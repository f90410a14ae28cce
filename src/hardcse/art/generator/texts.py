"""Texts from the generator where nothing trains (synthesis, ``art generate``, the held-out comparison, the raw-LLM
baseline), in the engine the config picks: PyTorch (:mod:`hardcse.art.generator.sampling`) or OpenVINO GenAI
(:mod:`hardcse.art.generator.openvino`). RL's rollouts are not written here: the policy changes every update
(:mod:`hardcse.art.rl.rollouts`).

With ``cache`` a call's texts are kept in ``<cache>/generations/`` under a key of everything they depend on
(the model's files, the engine and device, the generator config, the prompts, row seeds and budgets, and through
:func:`hardcse.cache.environment_digest` hardcse's code, the libraries' versions and the machine's kind), and the
same call later reads them back instead of generating: the raw generator's held-out texts are written once per
machine and reused by every round and run (their rewards are computed again, by each round's reward)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from hardcse.art.config import GeneratorConfig
from hardcse.art.generator.model import (
    base_model_source,
    is_generator_folder,
    load_generator,
    load_tokenizer,
    source_digest,
)
from hardcse.atomic import write_text_atomic
from hardcse.cache import EntryDescription, environment_digest, read_file_entry, write_sidecar
from hardcse.devices import resolve_device, supports_bfloat16
from hardcse.engines import Engine
from hardcse.paths import cache_dir
from hardcse.resources import resolve_model

if TYPE_CHECKING:
    from hardcse.art.generator.openvino import OpenVINOGenerator


@dataclass
class GeneratedTexts:
    texts: list[str]
    truncated: list[bool]  # the row spent its token budget without a stop token (cut off)
    tokens: int  # tokens written, end-of-sequence tokens included
    from_cache: bool = False  # read from the cache: no token was written now (never stored in the cache itself)


class TextGenerator:
    """The generator in ``engine`` (``self.engine``: torch or openvino on the generator's device); ``generate`` writes
    one response per prompt. The tokenizer loads at once, the model at the first call that is not read from the
    cache (so a fully cached generation loads none)."""

    def __init__(self, source: str, config: GeneratorConfig, engine: Engine, cache: bool = False) -> None:
        self.source, self.config = source, config
        device = resolve_device(config.device, "generator.device")
        self.engine = engine.on(device)
        self.tokenizer: PreTrainedTokenizerBase = load_tokenizer(resolve_model(base_model_source(source)))
        self._cache_key, self._environment = None, None
        if cache:  # what every cached call's texts depend on besides its own prompts, seeds and budgets
            digest = hashlib.sha256(f"{self.engine}\0{device}\0bfloat16 {supports_bfloat16(device)}\0".encode())
            self._environment = environment_digest(digest, device)
            digest.update(json.dumps(dataclasses.asdict(config), sort_keys=True).encode())
            source_digest(source, digest)
            self._cache_key = digest

    @functools.cached_property
    def _openvino(self) -> OpenVINOGenerator:
        from hardcse.art.generator.adapters import saved_adapter
        from hardcse.art.generator.openvino import OpenVINOGenerator, export_generator
        from hardcse.art.generator.sampling import generation_eos_ids
        from hardcse.art.generator.stopping import stop_ids

        # a tuned generator: the base model's export with the saved adapter fused in, where GenAI applies it as PEFT
        # does; else (and for int8 weights) the merged model exported (hardcse/art/generator/adapters.py)
        base = base_model_source(self.source)
        tuned = is_generator_folder(self.source) and self.config.openvino_weights == "float"
        fused = saved_adapter(Path(self.source)) if tuned else None
        folder = export_generator(base if fused is not None else self.source, self.config)
        eos_ids = generation_eos_ids(resolve_model(base), self.tokenizer)
        stops = stop_ids(self.tokenizer, eos_ids, self.config)
        return OpenVINOGenerator(folder, eos_ids, stops, self.config, fused=fused)

    @functools.cached_property
    def _model(self) -> PreTrainedModel:
        return load_generator(self.source, self.config)[0]

    def generate(
        self,
        prompts: Sequence[str],
        groups: Sequence[Hashable] | None = None,
        row_seeds: Sequence[int] | None = None,
        limits: Sequence[int] | None = None,
    ) -> GeneratedTexts:
        """One response per rendered prompt (``top_k: 1``: greedy). ``groups``: prompts sharing a prefix (computed
        once); ``row_seeds``: the rows' random streams (one per row in both engines);
        ``limits``: each row's new-token budget (default: ``max_new_tokens``). Both engines stop a row at the same
        tokens (:mod:`hardcse.art.generator.stopping`)."""
        cached = None
        if self._cache_key is not None and row_seeds is not None:  # unseeded rows follow the global RNG: not cached
            digest = self._cache_key.copy()
            rows = [list(prompts), row_seeds, limits, None if groups is None else [str(g) for g in groups]]
            digest.update(json.dumps(rows).encode())
            cached = cache_dir() / "generations" / f"{digest.hexdigest()[:32]}.json"
            text = read_file_entry(cached)
            if text is not None:
                return GeneratedTexts(**json.loads(text) | {"from_cache": True})
        if self.engine == "openvino":
            out = self._generate_openvino(prompts, groups, row_seeds, limits)
        else:
            from hardcse.art.generator.sampling import sample

            samples = sample(self._model, self.tokenizer, prompts, self.config, groups, row_seeds, limits)
            out = GeneratedTexts(samples.texts, samples.truncated, int(samples.response_mask.sum()))
        if cached is not None:
            stored = {key: value for key, value in dataclasses.asdict(out).items() if key != "from_cache"}
            write_text_atomic(cached, json.dumps(stored))
            what = f"{self.source} in {self.engine}: {len(prompts)} texts"
            write_sidecar(cached, EntryDescription("generations", what, self._environment))
        return out

    def _generate_openvino(
        self,
        prompts: Sequence[str],
        groups: Sequence[Hashable] | None,
        row_seeds: Sequence[int] | None,
        limits: Sequence[int] | None,
    ) -> GeneratedTexts:
        ids = self.tokenizer(list(prompts), add_special_tokens=False)["input_ids"]
        from hardcse.art.generator.sampling import row_seed

        # a stream per row: its own seed, or (unseeded rows) the generator's seed and its place in the call
        seeds = row_seeds if row_seeds is not None else [row_seed(self.config.seed, str(i)) for i in range(len(ids))]
        rows = self._openvino.generate(ids, seeds, limits, groups)
        eos = set(self._openvino.eos_ids)
        texts = self.tokenizer.batch_decode([[t for t in r if t not in eos] for r, _ in rows], skip_special_tokens=True)
        return GeneratedTexts(texts, [truncated for _, truncated in rows], sum(len(r) for r, _ in rows))
