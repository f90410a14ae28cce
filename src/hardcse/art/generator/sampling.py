"""Sampling responses: the shared prompt prefix once, then token by token, finished rows leaving the batch.

A hand-written decoding loop rather than ``generate``: it continues from the prefix cache of
:mod:`hardcse.art.generator.prefix`, computes the LM head only at the last position, and drops a row from the
batch (and its cache) as soon as it has written a stop token or spent its token budget
(:mod:`hardcse.art.generator.stopping`), so a batch costs what its rows write, not what its longest row writes.
Sampling is softmax(logits / temperature) with optional top-k and top-p (transformers' logits warpers). Log-probs
for RL are not taken here: the trainer recomputes them with the same forward it trains with, so the PPO ratio is
exactly 1 before the first update.

Random streams: by default the draws come from torch's global generator (RL: a step's rollouts). With
``row_seeds`` each row draws its t-th token from its own stream (``row_seed``: the run seed and the row's key,
e.g. the anchor), so a row's text does not depend on which rows share its batch, their order, the batch size or
the process that wrote it: synthesis can be batched and sharded freely.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoConfig, GenerationConfig, PreTrainedModel, PreTrainedTokenizerBase
from transformers.generation.logits_process import TopKLogitsWarper, TopPLogitsWarper

from hardcse.art.config import GeneratorConfig
from hardcse.art.generator.prefix import PromptBatch, encode_prompts, positions, prefix_cache, rows_cache
from hardcse.art.generator.stopping import stop_ids


@dataclass
class Samples:
    prompts: PromptBatch
    response_ids: torch.Tensor  # (B, T), padded after the end-of-sequence token
    response_mask: torch.Tensor  # (B, T) float: 1 up to and including the first end-of-sequence token
    texts: list[str]
    truncated: list[bool]  # the row reached max_new_tokens without an end-of-sequence token

    def select(self, rows: torch.Tensor) -> Samples:
        idx = rows.tolist()
        return Samples(
            self.prompts.select(rows),
            self.response_ids[rows],
            self.response_mask[rows],
            [self.texts[i] for i in idx],
            [self.truncated[i] for i in idx],
        )


def _eos_ids(eos: int | list[int] | None, tokenizer: PreTrainedTokenizerBase) -> list[int]:
    ids = set(eos if isinstance(eos, list) else [eos]) if eos is not None else set()
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return sorted(ids)


def eos_token_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> list[int]:
    """The tokens that end a response: the generation config's end-of-sequence ids and the tokenizer's."""
    return _eos_ids(model.generation_config.eos_token_id, tokenizer)


def generation_eos_ids(model_dir: Path, tokenizer: PreTrainedTokenizerBase) -> list[int]:
    """:func:`eos_token_ids` of the causal LM in ``model_dir``, read from its files without loading its weights."""
    if (model_dir / "generation_config.json").is_file():
        generation = GenerationConfig.from_pretrained(model_dir)
    else:  # what from_pretrained derives for a model without one
        generation = GenerationConfig.from_model_config(AutoConfig.from_pretrained(model_dir))
    return _eos_ids(generation.eos_token_id, tokenizer)


def decoder_and_head(model: PreTrainedModel) -> tuple[torch.nn.Module, torch.nn.Module]:
    """The transformer body and the LM head (of the base model under a PEFT wrapper: LoRA layers live inside)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.get_decoder(), base.get_output_embeddings()


def row_seed(seed: int, *key: str) -> int:
    """A row's stream seed from the run seed and its key: the same on every machine, process and Python run."""
    digest = hashlib.sha256("\0".join([str(seed), *key]).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1  # torch seeds are below 2**63


def _row_uniforms(row_seeds: Sequence[int], steps: int) -> torch.Tensor:
    """(rows, steps) uniforms in [0, 1): row i's from its own generator."""
    return torch.stack([torch.rand(steps, generator=torch.Generator().manual_seed(s)) for s in row_seeds])


def _draw(logits: torch.Tensor, config: GeneratorConfig, u: torch.Tensor | None = None) -> torch.Tensor:
    """A token per row; ``u`` ((rows,) uniforms) or torch's global generator."""
    scores = logits / config.sampling_temperature
    if config.top_k:
        scores = TopKLogitsWarper(config.top_k)(None, scores)
    if config.top_p < 1.0:
        scores = TopPLogitsWarper(config.top_p)(None, scores)
    # inverse-CDF draw: the distribution of torch.multinomial at a thirtieth of its cost on a 49k vocabulary
    cdf = scores.softmax(-1).cumsum(-1)
    u = (torch.rand(cdf.shape[0]) if u is None else u).to(cdf.device).unsqueeze(1) * cdf[:, -1:]
    return torch.searchsorted(cdf, u, right=True).squeeze(1).clamp(max=cdf.shape[1] - 1)


@torch.no_grad()
def sample(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    prompts: Sequence[str],
    config: GeneratorConfig,
    groups: Sequence[Hashable] | None = None,
    row_seeds: Sequence[int] | None = None,
    limits: Sequence[int] | None = None,
) -> Samples:
    """Sample one response per prompt. ``groups``: prompts with the same key share a prefix (default: all);
    ``row_seeds``: a random stream per prompt (:func:`row_seed`; default: torch's global generator); ``limits``:
    each row's new-token budget (:func:`hardcse.art.generator.stopping.token_limits`; default: max_new_tokens).
    A row ends at a stop token (:func:`hardcse.art.generator.stopping.stop_ids`), included in its response."""
    for name, values in (("row seeds", row_seeds), ("limits", limits)):
        if values is not None and len(values) != len(prompts):
            raise ValueError(f"{len(values)} {name} for {len(prompts)} prompts")
    limits = list(limits) if limits is not None else [config.max_new_tokens] * len(prompts)
    was_training = model.training
    model.eval()  # no dropout: the trainer's forwards run in eval mode too
    try:
        batch = encode_prompts(tokenizer, prompts, groups).to(model.device)  # no prompts: refused here
        uniforms = None if row_seeds is None else _row_uniforms(row_seeds, max(limits))
        return _sample(model, tokenizer, batch, config, uniforms, limits)
    finally:
        model.train(was_training)


def _sample(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    batch: PromptBatch,
    config: GeneratorConfig,
    uniforms: torch.Tensor | None,
    limits: list[int],
) -> Samples:
    decoder, head = decoder_and_head(model)
    device, n = batch.suffix_ids.device, len(batch)  # every tensor below lives where the model does
    stop = torch.tensor(stop_ids(tokenizer, eos_token_ids(model, tokenizer), config), device=device)
    budget = torch.tensor(limits, dtype=torch.long, device=device)
    cache = rows_cache(prefix_cache(decoder, batch), batch.group)
    attention = torch.cat([batch.prefix_mask[batch.group], batch.suffix_mask], dim=1)
    input_ids, position_ids = batch.suffix_ids, positions(attention)[:, -batch.suffix_ids.shape[1] :]
    alive = torch.arange(n, device=device)
    steps = max(limits)
    written = torch.full((n, steps), tokenizer.pad_token_id, dtype=torch.long, device=device)
    lengths = torch.zeros(n, dtype=torch.long, device=device)  # tokens each row wrote, its stop token included
    ended = torch.zeros(n, dtype=torch.bool, device=device)  # the row wrote a stop token (not cut off)
    uniforms = None if uniforms is None else uniforms.to(device)
    for t in range(steps):
        if len(alive) == 0:
            break
        hidden = decoder(
            input_ids=input_ids,
            attention_mask=attention,
            position_ids=position_ids,
            past_key_values=cache,
            use_cache=True,
        ).last_hidden_state[:, -1]
        token = _draw(head(hidden).float(), config, None if uniforms is None else uniforms[alive, t])
        written[alive, t] = token
        lengths[alive] = t + 1
        stopped = torch.isin(token, stop)
        ended[alive[stopped]] = True
        leaving = stopped | (budget[alive] <= t + 1)  # a stop token, or the row's budget is spent
        if leaving.any():  # finished rows leave the batch and its cache
            keep = (~leaving).nonzero().squeeze(1)
            if len(keep):
                cache.batch_select_indices(keep)
            alive, token, attention, position_ids = alive[keep], token[keep], attention[keep], position_ids[keep]
        attention = torch.cat([attention, torch.ones_like(token).unsqueeze(1)], dim=1)
        input_ids, position_ids = token.unsqueeze(1), position_ids[:, -1:] + 1
    return as_samples(tokenizer, batch, written, lengths, (~ended).tolist())


def as_samples(
    tokenizer: PreTrainedTokenizerBase,
    batch: PromptBatch,
    written: torch.Tensor,
    lengths: torch.Tensor,
    truncated: list[bool],
) -> Samples:
    """The samples of ``batch``'s rows: ``written`` (rows, >= the longest length) holds each row's tokens, its stop
    token included, then anything; ``lengths`` how many are its own."""
    response_ids = written[:, : int(lengths.max())]
    mask = (torch.arange(response_ids.shape[1], device=written.device).unsqueeze(0) < lengths.unsqueeze(1)).float()
    texts = tokenizer.batch_decode(
        response_ids * mask.long() + tokenizer.pad_token_id * (1 - mask.long()), skip_special_tokens=True
    )
    return Samples(batch, response_ids, mask, texts, truncated)
