"""Prompts that begin alike: the shared beginning is computed once, as a key/value cache every row continues.

ART's prompts of one kind share everything up to the anchor (system prompt, few-shot turns, the instruction),
about four fifths of their tokens. A :class:`PromptBatch` splits each tokenised prompt into the longest token
prefix it shares with its group (one group per kind, or per prompt for GRPO's repeated prompts) and the rest.
The prefixes go through the model once, as a batch of G rows, and each of the B rows continues from its
group's cache: the same numbers as the full prompt (left padding sits before each part and is masked),
at a fraction of the cost of a forward over every prompt. Forwards of one unchanged model may share the prefixes'
cache (:func:`prefix_cache`'s ``computed``): RL's log pi_old and log pi_ref compute a minibatch's prefixes once a
step where minibatches continue the same prefixes (PPO's: both kinds), not once a minibatch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from transformers import DynamicCache, PreTrainedTokenizerBase

from hardcse.errors import HardcseError


@dataclass
class PromptBatch:
    prefix_ids: torch.Tensor  # (G, P) left-padded: the distinct shared beginnings
    prefix_mask: torch.Tensor  # (G, P)
    group: torch.Tensor  # (B,) the prefix each row continues
    suffix_ids: torch.Tensor  # (B, S) left-padded: the rest of each prompt (at least one token)
    suffix_mask: torch.Tensor  # (B, S)

    def __len__(self) -> int:
        return int(self.group.shape[0])

    def to(self, device: torch.device) -> PromptBatch:
        # fields(), not astuple(): astuple deep-copies every tensor before it is moved
        return PromptBatch(*(getattr(self, f.name).to(device) for f in dataclasses.fields(self)))

    def select(self, rows: torch.Tensor) -> PromptBatch:
        """The batch of ``rows`` only: the prefixes they continue and their suffixes (columns that are padding
        in every row go)."""
        used, group = torch.unique(self.group[rows], return_inverse=True)
        prefix_mask = self.prefix_mask[used]
        start = int((prefix_mask.sum(dim=0) > 0).nonzero()[0]) if prefix_mask.any() else prefix_mask.shape[1]
        mask = self.suffix_mask[rows]
        first = int((mask.sum(dim=0) > 0).nonzero()[0])
        return PromptBatch(
            self.prefix_ids[used, start:], prefix_mask[:, start:], group, self.suffix_ids[rows, first:], mask[:, first:]
        )

    def prompt_ids(self, row: int) -> list[int]:
        """The whole prompt of ``row`` as token ids (prefix and suffix without padding)."""
        g = int(self.group[row])
        prefix = self.prefix_ids[g][self.prefix_mask[g].bool()]
        suffix = self.suffix_ids[row][self.suffix_mask[row].bool()]
        return torch.cat([prefix, suffix]).tolist()


def _left_pad(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            ids[i, width - len(r) :] = torch.tensor(r, dtype=torch.long)
            mask[i, width - len(r) :] = 1
    return ids, mask


def _common_prefix_length(rows: Sequence[Sequence[int]]) -> int:
    shortest = min(len(r) for r in rows)
    n = 0
    while n < shortest and all(r[n] == rows[0][n] for r in rows):
        n += 1
    return n


def encode_prompts(
    tokenizer: PreTrainedTokenizerBase, prompts: Sequence[str], groups: Sequence[Hashable] | None = None
) -> PromptBatch:
    """Tokenise ``prompts`` and split each at the longest token prefix shared within its group (default: one
    group for all). Every row keeps at least its last token as suffix: that is where generation continues."""
    if not prompts:
        raise HardcseError("no prompts to encode")
    groups = list(groups) if groups is not None else [0] * len(prompts)
    if len(groups) != len(prompts):
        raise HardcseError(f"{len(prompts)} prompts but {len(groups)} groups")
    ids = tokenizer(list(prompts), add_special_tokens=False)["input_ids"]
    if any(len(r) == 0 for r in ids):
        raise HardcseError("a prompt is empty after tokenisation")
    keys = list(dict.fromkeys(groups))
    members = {k: [ids[i] for i, g in enumerate(groups) if g == k] for k in keys}
    length = {k: min(_common_prefix_length(rows), min(len(r) for r in rows) - 1) for k, rows in members.items()}
    prefix_ids, prefix_mask = _left_pad([members[k][0][: length[k]] for k in keys], tokenizer.pad_token_id)
    index = {k: i for i, k in enumerate(keys)}
    suffix_ids, suffix_mask = _left_pad(
        [r[length[g] :] for r, g in zip(ids, groups, strict=True)], tokenizer.pad_token_id
    )
    group = torch.tensor([index[g] for g in groups], dtype=torch.long)
    return PromptBatch(prefix_ids, prefix_mask, group, suffix_ids, suffix_mask)


def positions(mask: torch.Tensor) -> torch.Tensor:
    """Position ids under left padding, as ``generate`` computes them: the count of real tokens before each."""
    return (mask.cumsum(dim=1) - 1).clamp(min=0)


# the G prefixes' key/value cache by their token ids and mask: a forward's shared work (hardcse.art.rl.forward)
PrefixCaches = dict[tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]], DynamicCache]


def prefix_cache(decoder: nn.Module, batch: PromptBatch, computed: PrefixCaches | None = None) -> DynamicCache:
    """The key/value cache of the G prefixes, one forward of G rows (with gradients when they are enabled: LoRA
    changes them). ``computed``: the caches that this model, unchanged since, computed already, by the prefixes'
    token ids and mask (the same rows, the same forward, the same numbers); one not in it is computed and added."""
    key = (tuple(map(tuple, batch.prefix_ids.tolist())), tuple(map(tuple, batch.prefix_mask.tolist())))
    if computed is not None and key in computed:
        return computed[key]
    cache = DynamicCache()
    if batch.prefix_ids.shape[1] > 0:
        decoder(
            input_ids=batch.prefix_ids,
            attention_mask=batch.prefix_mask,
            position_ids=positions(batch.prefix_mask),
            past_key_values=cache,
            use_cache=True,
        )
    if computed is not None:
        computed[key] = cache
    return cache


def rows_cache(cache: DynamicCache, group: torch.Tensor) -> DynamicCache:
    """A new cache with row i holding the prefix of ``group[i]`` (differentiable; the prefix cache is kept)."""
    rows = DynamicCache()
    for layer, cached in enumerate(cache.layers):
        if cached.keys is not None and cached.keys.numel():
            rows.update(cached.keys[group], cached.values[group], layer)
    return rows
