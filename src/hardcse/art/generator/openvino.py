"""The generator in OpenVINO GenAI: exported once per model, sampled by GenAI's continuous-batching pipeline.

Export (:func:`export_generator`). optimum-intel, the usual exporter, pins transformers below the 5.x line this
project needs, so the export is written here on OpenVINO's own API, following the layout GenAI reads (the one
``optimum-cli export openvino`` writes): the causal LM is traced by ``openvino.convert_model`` with its key/value
cache as explicit inputs and outputs (``past_key_values.{i}.key`` -> ``present.{i}.key``), the cache is then hidden
inside the model as state (``apply_make_stateful_transformation``, each state starting as a zero-length tensor
of the batch's size), and a ``beam_idx`` input gathers the state's rows, as GenAI expects. The causal mask is
built in the traced function from the 2-D attention mask (so no length is frozen into the graph).
``generator.openvino_weights: int8`` compresses the weights to 8 bits (NNCF's data-free INT8_ASYM) after export.
The tokenizer goes along as OpenVINO tokenizer models (``openvino_tokenizers``), which the pipeline loads although
hardcse hands it token ids.

A tuned generator (a generator folder: base + LoRA adapter) samples from its base model's export, with its saved
adapter fused into the weights by GenAI as the pipeline is built (:mod:`hardcse.art.generator.adapters`): no
export a round, and no float copy of the model in the cache a round (a synthesis stage of 1,024 anchors took 90.3
s against 98.8 with the export: benchmarks/results/tuned_synthesis.md). For the bundled generator the base's export
is the one ``hardcse prepare`` made. An adapter GenAI would not apply
as PEFT does (for example one on another product than the decoder's projections, DoRA, ranks by module) or int8
weights (nothing to fuse into) go the old way: PEFT merges the adapter into the base weights and that model is
exported.

The export lives in the cache (``<cache>/openvino/<key>``), keyed by the export format, the weight format, every
byte of the model's files, hardcse's code, the libraries' versions and the CPU (:func:`export_key`); it is built in
a temporary folder and renamed into place under a lock (:func:`hardcse.cache.publish_dir`), so a kill leaves either
a whole export or none, and two processes export once.

Sampling (:class:`OpenVINOGenerator`). The prompts of a call are prefilled together, so GenAI's prefix cache
cannot share a prefix between them by itself: each would compute it. The prefix each group of prompts shares
(synthesis: the system prompt, the demonstrations and the instruction, ~100 of ~135 tokens) is therefore prefilled
once first, in whole cache blocks, alone (one greedy token), and the call's prompts then read those blocks from the
cache. In one run on 512 anchors the stage took 0.65x the time, and what it wrote showed no detectable difference
(benchmarks/results/synthesis_prefix.md). The warm-up prompt is exactly the shared tokens cut to whole blocks, each
prefilled once per generator, so batches whose groups share the same prefix read the same blocks whichever batches
came before. The blocks stay in the cache, and the key/value cache is not freed between calls while the generator
lives (GenAI frees it only without prefix caching). A probe of 2,048 rows in batches of 256 held ~2.6 GB resident
(this machine, 2026-11-28; no record).

A LoRA adapter that changes at every call (RL's rollouts, :mod:`hardcse.art.rl.rollouts`). Built with ``adapter``
(:func:`hardcse.art.generator.adapters.lora_adapter`: the PEFT model's current LoRA weights and scaling), the
pipeline applies the adapter each call hands it to the base model's export, so a policy changed by an update
samples without a new export. The prefix cache is then off: GenAI keys its blocks by tokens alone, and keys and
values computed under one adapter would be read under the next.

Prompts go in as token ids (the chat template is applied by hardcse, the same ids as the PyTorch path). Precision
follows ``generator.dtype``: float32 computes (and caches keys and values) in float32, and greedy decoding then
writes the PyTorch path's tokens; ``auto`` lets the CPU plugin choose (bfloat16 on CPUs with AVX512-BF16 or AMX),
and the key/value cache is kept in the model's precision (:func:`kv_cache_precision`).
Randomness: GenAI gives each request a random stream of its own, seeded with its ``rng_seed`` (two requests with
one seed write the same tokens), so hardcse gives every row its own seed: a row's draws do not depend on the rows
beside it, and the same batches give byte-identical texts on every rerun with the same number of processes. Another
``generator.openvino_batch_size`` or number of processes can still give other texts through rounding: a batch
computes its rows together (other shapes, other bfloat16 rounding), a batch with a group of one prompt reads the
prefix blocks an earlier batch of its process prefilled (a rank whose first batch it is computes them inside the
row), and a batch whose group shares more than whole prefix blocks of another's. Runs that must keep texts across
these changes use ``engine=torch``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hardcse.art.config import GeneratorConfig
from hardcse.cache import EntryDescription, environment_digest, publish_dir
from hardcse.devices import supports_bfloat16
from hardcse.engines import openvino_precision, quiet_tracing
from hardcse.paths import cache_dir

log = logging.getLogger(__name__)

# the tokens of a block of GenAI's key/value cache on a CPU (GenAI 2026.4, pinned in constraints.txt): only whole
# blocks of a shared prefix are prefilled first.
# A warm-up prompt that ended inside a block left a partial block that later prompts read as theirs: their answers
# broke (positives 53% unparsed against 15%: the first run of benchmarks/synthesis_prefix.py, commit 704f430)
CACHE_BLOCK = 32
PREFIX_CACHING = True  # benchmarks/synthesis_prefix.py turns it off in its own process to measure what it gains
# keys and values cached in the precision the model computes in where that is bfloat16 (kv_cache_precision);
# turned off in its own process, it measured what it gains (benchmarks/results/synthesis_settings.md)
KV_CACHE_IN_MODEL_PRECISION = True
EXPORT_FORMAT = 1  # bump when the exported graph changes: older exports are then made again
MODEL_FILE = "openvino_model.xml"


def export_key(source: str, weights: str = "float") -> str:
    """The cache key of ``source``'s export (a model source or a generator folder) with ``weights``: the model's
    files, the export format and what else decides the exported graph (hardcse's code, the libraries' versions,
    the CPU: hardcse/cache.py)."""
    return _keyed_export(source, weights)[0]


def _keyed_export(source: str, weights: str) -> tuple[str, EntryDescription]:
    """:func:`export_key` and the description of its entry (its sidecar: hardcse/cache.py)."""
    from hardcse.art.generator.model import source_digest

    digest = hashlib.sha256(f"format {EXPORT_FORMAT}\0{weights}\0".encode())
    found = environment_digest(digest, torch.device("cpu"))
    source_digest(source, digest)
    described = EntryDescription("openvino", f"{source}, {weights} weights, export format {EXPORT_FORMAT}", found)
    return digest.hexdigest()[:24], described


class _WithExplicitCache(torch.nn.Module):
    """The traced function: (input_ids, attention_mask, position_ids, past keys/values...) -> (logits, presents)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model
        self.layers = model.config.num_hidden_layers

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor, *past: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        for i, layer in enumerate(cache.layers[: self.layers]):
            # set, not update(): update() concatenates onto an empty tensor, which the trace cannot type
            layer.keys, layer.values = past[2 * i], past[2 * i + 1]
            layer.dtype, layer.device, layer.is_initialized = past[2 * i].dtype, past[2 * i].device, True
        # causal mask over [past, new] from the 2-D padding mask: query i (at position past + i) sees key j <= past+i
        q, kv = input_ids.shape[1], attention_mask.shape[1]
        query = torch.arange(q, device=input_ids.device).unsqueeze(1) + (kv - q)
        causal = torch.arange(kv, device=input_ids.device).unsqueeze(0) <= query
        mask = causal[None, None] & attention_mask.bool()[:, None, None, :]
        out = self.model(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=position_ids,
            past_key_values=cache,
            use_cache=True,
        )
        presents = [t for layer in out.past_key_values.layers[: self.layers] for t in (layer.keys, layer.values)]
        return (out.logits, *presents)


def _make_stateful(model: Any, kv_heads: int, head_dim: int, layers: int) -> None:
    """Hide the cache inputs/outputs as state, with a ``beam_idx`` row gather and zero-length initial states."""
    import openvino as ov
    import openvino.opset13 as ops
    from openvino._offline_transformations import apply_make_stateful_transformation

    names = [f"{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    beam_idx = ops.parameter([-1], ov.Type.i32, name="beam_idx")
    beam_idx.output(0).get_tensor().set_names({"beam_idx"})
    for parameter in model.get_parameters()[3:]:
        consumers = list(parameter.output(0).get_target_inputs())
        gathered = ops.gather(parameter, beam_idx, ops.constant(0))
        for consumer in consumers:
            consumer.replace_source_output(gathered.output(0))
    model.add_parameters([beam_idx])
    apply_make_stateful_transformation(model, {f"past_key_values.{n}": f"present.{n}" for n in names})
    batch = ops.gather(ops.shape_of(model.input("input_ids"), output_type="i64"), ops.constant([0]), ops.constant(0))
    for op in model.get_ops():
        if op.get_type_name() == "ReadValue":
            shape = ops.concat([batch, ops.constant(np.array([kv_heads, 0, head_dim], dtype=np.int64))], 0)
            op.set_arguments([ops.broadcast(ops.constant(0.0, dtype=op.get_output_element_type(0)), shape)])
    model.validate_nodes_and_infer_types()


def _export(source: str, config: GeneratorConfig, target: Path) -> None:
    import openvino as ov
    from openvino_tokenizers import convert_tokenizer

    from hardcse.art.generator.model import load_generator

    float_config = dataclasses.replace(config, dtype="float32", device="cpu")
    model, tokenizer = load_generator(source, float_config)
    if hasattr(model, "merge_and_unload"):  # a tuned generator: the LoRA update folded into the weights
        model = model.merge_and_unload()
    model.eval()
    cfg = model.config
    layers, kv_heads = cfg.num_hidden_layers, cfg.num_key_value_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    past = 4  # any example lengths: every dimension but heads and head size stays dynamic
    example = [
        torch.ones(2, 3, dtype=torch.long),
        torch.ones(2, 3 + past, dtype=torch.long),
        torch.arange(past, past + 3).repeat(2, 1),
    ] + [torch.zeros(2, kv_heads, past, head_dim) for _ in range(2 * layers)]
    shapes = [ov.PartialShape([-1, -1])] * 3 + [ov.PartialShape([-1, kv_heads, -1, head_dim])] * (2 * layers)
    with torch.no_grad(), quiet_tracing():
        converted = ov.convert_model(_WithExplicitCache(model), example_input=tuple(example), input=shapes)
    names = ["input_ids", "attention_mask", "position_ids"]
    names += [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    for port, name in zip(converted.inputs, names, strict=True):
        port.get_tensor().set_names({name})
    outputs = ["logits"] + [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    for port, name in zip(converted.outputs, outputs, strict=True):
        port.get_tensor().set_names({name})
    _make_stateful(converted, kv_heads, head_dim, layers)
    if config.openvino_weights == "int8":  # data-free 8-bit weights, one scale and zero point per output channel
        import nncf

        converted = nncf.compress_weights(converted, mode=nncf.CompressWeightsMode.INT8_ASYM)
    ov.save_model(converted, target / MODEL_FILE, compress_to_fp16=False)
    ov_tokenizer, ov_detokenizer = convert_tokenizer(tokenizer, with_detokenizer=True)
    ov.save_model(ov_tokenizer, target / "openvino_tokenizer.xml")
    ov.save_model(ov_detokenizer, target / "openvino_detokenizer.xml")
    cfg.save_pretrained(target)
    model.generation_config.save_pretrained(target)
    tokenizer.save_pretrained(target)


def export_generator(source: str, config: GeneratorConfig) -> Path:
    """The OpenVINO export of ``source`` (a model source or a generator folder), made once and cached (published
    atomically, once, however many processes ask at once: :func:`hardcse.cache.publish_dir`)."""
    key, described = _keyed_export(source, config.openvino_weights)
    target = cache_dir() / "openvino" / key
    if not _exported(target):
        log.info("exporting generator %s to OpenVINO in %s (once per model, ~10 s for 135M)", source, target)
    return publish_dir(target, lambda tmp: _export(source, config, tmp), _exported, described)


def _exported(folder: Path) -> bool:
    return (folder / MODEL_FILE).is_file()


class OpenVINOGenerator:
    """Samples responses for token-id prompts with GenAI's ContinuousBatchingPipeline."""

    def __init__(
        self,
        folder: Path,
        eos_ids: Sequence[int],
        stop_ids: Sequence[int],
        config: GeneratorConfig,
        adapter: Any = None,
        fused: Any = None,
    ) -> None:
        """``adapter`` (:mod:`hardcse.art.generator.adapters`' ``lora_adapter``): every call then applies the
        adapter it is given; ``fused`` (its ``saved_adapter``): an adapter fused into the weights once, here (module
        doc)."""
        import openvino_genai as genai

        scheduler = genai.SchedulerConfig()
        scheduler.cache_size = 0  # 0: the key/value cache grows as the rows need it (a batch of 256: ~2 GB resident)
        # prefill in chunks of up to 4,096 tokens, not GenAI's 256: 490 against 425 tokens/s for a batch of 64
        # on 2 cores (benchmarks/results/engine_speed.md)
        scheduler.max_num_batched_tokens = 4096
        # blocks of finished prompts are kept for later prompts; not under a changing adapter (module doc)
        self.with_adapter = adapter is not None
        self.prefix_caching = PREFIX_CACHING and not self.with_adapter
        scheduler.enable_prefix_caching = self.prefix_caching
        properties = openvino_precision(config.dtype)
        kv_precision = kv_cache_precision(config.dtype)
        if kv_precision is not None:
            properties["KV_CACHE_PRECISION"] = kv_precision
        if adapter is not None and fused is not None:
            raise ValueError("an adapter per call or a fused one, not both")
        if adapter is not None or fused is not None:
            properties["adapters"] = adapter if adapter is not None else fused
        self.pipeline = genai.ContinuousBatchingPipeline(str(folder), scheduler, "CPU", properties)
        self.eos_ids, self.stop_ids, self.config = sorted(eos_ids), sorted(stop_ids), config
        # the prefixes prefilled so far: each once, since a warm-up found whole in the cache recomputes its last
        # token in place (a pass of one token), which could move the block's last bits for the batches after it
        self._prefilled: set[tuple[int, ...]] = set()

    def _generation_config(self, seed: int, max_new_tokens: int, adapter: Any) -> Any:
        """One row's sampling settings: ``seed`` seeds its own random stream."""
        import openvino_genai as genai

        c = genai.GenerationConfig()
        if adapter is not None:
            c.adapters = adapter
        c.max_new_tokens = max_new_tokens
        c.stop_token_ids = set(self.stop_ids)  # the end-of-sequence tokens, and line breaks under stop: line
        if self.eos_ids:
            c.eos_token_id = self.eos_ids[0]
        c.do_sample = self.config.top_k != 1  # top_k 1 is greedy, as in the PyTorch sampler
        if c.do_sample:
            c.temperature = self.config.sampling_temperature
            c.top_p = self.config.top_p
            if self.config.top_k:
                c.top_k = self.config.top_k
            c.rng_seed = seed
        return c

    def generate(
        self,
        prompt_ids: Sequence[Sequence[int]],
        seeds: Sequence[int],
        limits: Sequence[int] | None = None,
        groups: Sequence[Hashable] | None = None,
        adapter: Any = None,
    ) -> list[tuple[list[int], bool]]:
        """Per prompt, the written token ids (the stop token included when written) and whether the row spent its
        budget (``limits``, default ``max_new_tokens``) without a stop token. ``seeds``: each row's random stream
        (below 2**64). ``groups``: prompts with the same key share a prefix, prefilled once first (default: all
        prompts one group). ``adapter``: the LoRA adapter to apply (:mod:`hardcse.art.generator.adapters`), which a
        generator built with one needs at every call (GenAI would otherwise keep the last one)."""
        import openvino as ov
        import openvino_genai as genai

        if len(seeds) != len(prompt_ids):
            raise ValueError(f"{len(seeds)} seeds for {len(prompt_ids)} prompts")
        if self.with_adapter and adapter is None:
            raise ValueError("a generator built with an adapter is given one at every call")
        if self.prefix_caching:
            self._prefill_shared_prefixes(prompt_ids, groups)
        inputs = [ov.Tensor(np.asarray([ids], dtype=np.int64)) for ids in prompt_ids]
        limits = limits if limits is not None else [self.config.max_new_tokens] * len(inputs)
        configs = [self._generation_config(seed, n, adapter) for seed, n in zip(seeds, limits, strict=True)]
        results = self.pipeline.generate(inputs, configs)
        out = []
        for result in results:
            ids = list(result.m_generation_ids[0])
            out.append((ids, result.finish_reasons[0] == genai.GenerationFinishReason.LENGTH))
        return out

    def _prefill_shared_prefixes(self, prompt_ids: Sequence[Sequence[int]], groups: Sequence[Hashable] | None) -> None:
        """Each group's shared prefix prefilled alone (one greedy token, no random draw), so that its blocks are in
        the prefix cache before the group's prompts are (module doc)."""
        import openvino as ov
        import openvino_genai as genai

        # whole blocks only (CACHE_BLOCK): a prefix that ends inside a block leaves a partial block in the cache
        prefixes = [p[: len(p) // CACHE_BLOCK * CACHE_BLOCK] for p in shared_prefixes(prompt_ids, groups)]
        prefixes = [p for p in prefixes if p and tuple(p) not in self._prefilled]
        self._prefilled.update(tuple(p) for p in prefixes)
        if prefixes:
            greedy = genai.GenerationConfig()
            greedy.max_new_tokens, greedy.do_sample = 1, False
            inputs = [ov.Tensor(np.asarray([p], dtype=np.int64)) for p in prefixes]
            self.pipeline.generate(inputs, [greedy] * len(inputs))


def kv_cache_precision(dtype: str) -> str | None:
    """The precision of GenAI's key/value cache for ``generator.dtype``: the model's own, f32 under float32 (greedy
    decoding then writes the PyTorch path's tokens) and bf16 where the model computes in bfloat16 (``auto`` or
    ``bfloat16`` on a CPU with AVX512-BF16 or AMX: the CPU is asked because OpenVINO runs there whatever
    ``generator.device`` says). OpenVINO's CPU default stores keys and values in 8 bits, quantised at every token:
    bf16 made the synthesis stage 1.10x as fast on the AMX Xeon, at the same peak memory
    (benchmarks/results/synthesis_settings.md). None (OpenVINO's default) on CPUs without native bfloat16 (not
    measured there)."""
    if dtype == "float32":
        return "f32"
    return "bf16" if KV_CACHE_IN_MODEL_PRECISION and supports_bfloat16(torch.device("cpu")) else None


def shared_prefixes(prompt_ids: Sequence[Sequence[int]], groups: Sequence[Hashable] | None) -> list[list[int]]:
    """The tokens that every prompt of a group begins with, for each group of two prompts or more (in the order
    the groups first appear; ``groups`` None: all prompts one group)."""
    by_group: dict[Hashable, list[Sequence[int]]] = {}
    for ids, group in zip(prompt_ids, groups if groups is not None else [None] * len(prompt_ids), strict=True):
        by_group.setdefault(group, []).append(ids)
    prefixes = []
    for rows in by_group.values():
        if len(rows) > 1:
            shortest = min(len(r) for r in rows)
            n = next((i for i in range(shortest) if len({r[i] for r in rows}) > 1), shortest)
            prefixes.append(list(rows[0][:n]))
    return prefixes
