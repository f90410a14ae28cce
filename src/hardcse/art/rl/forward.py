"""The policy's training forward: the last-layer hidden states that predict each response token of a step's
samples, from which the loop (:mod:`hardcse.art.rl.loop`) takes log pi, the entropy and PPO's values.

:func:`continue_rows` runs each row's prompt suffix and response on top of its group's shared prefix cache
(:mod:`hardcse.art.generator.prefix`, the same mechanics sampling uses); :func:`whole_rows` runs every row's whole
prompt, what gradient checkpointing needs. Both pack a row's real tokens together, left-padded, so a batch is as wide
as its longest row.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import DynamicCache

from hardcse.art.generator.prefix import PrefixCaches, PromptBatch, positions, prefix_cache, rows_cache


def _packed_states(
    decoder: nn.Module,
    rows: list[torch.Tensor],
    response_len: torch.Tensor,
    max_response: int,
    cache: DynamicCache | None = None,
    cache_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Left-pad ``rows`` (each ending with its response), run them after ``cache`` (when given) and return the
    last-layer states that predict each response token, (B, max_response, H)."""
    width, device = max(len(r) for r in rows), rows[0].device
    input_ids = torch.full((len(rows), width), int(rows[0][0]), dtype=torch.long, device=device)
    mask = torch.zeros((len(rows), width), dtype=torch.long, device=device)
    for i, r in enumerate(rows):
        input_ids[i, width - len(r) :] = r
        mask[i, width - len(r) :] = 1
    attention = mask if cache_mask is None else torch.cat([cache_mask, mask], dim=1)
    hidden = decoder(
        input_ids=input_ids,
        attention_mask=attention,
        position_ids=positions(attention)[:, -width:],
        past_key_values=cache,
        use_cache=cache is not None,
    ).last_hidden_state
    # response token t of row i sits at column width - len_i + t; the state before it predicts it
    t = torch.arange(max_response, device=device)
    column = (width - response_len.unsqueeze(1) + t - 1).clamp(max=width - 2)
    return torch.gather(hidden, 1, column.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))


def continue_rows(
    decoder: nn.Module,
    batch: PromptBatch,
    response_ids: torch.Tensor,
    response_mask: torch.Tensor,
    computed: PrefixCaches | None = None,
) -> torch.Tensor:
    """Each row's suffix and response on top of its prefix's cache (``computed``: as :func:`prefix_cache`),
    packed: the row's real tokens (suffix, then the response up to its end) are left-padded together, so a batch is
    as wide as its longest row, not as its longest suffix plus its longest response.

    Returns the last-layer hidden states that predict each response token, (B, T, H); past a row's end they
    repeat a state of the row (mask them)."""
    suffix_len = batch.suffix_mask.sum(dim=1)
    response_len = response_mask.sum(dim=1).long()
    width = batch.suffix_ids.shape[1]
    rows = [
        torch.cat([batch.suffix_ids[i, width - int(suffix_len[i]) :], response_ids[i, : int(response_len[i])]])
        for i in range(len(batch))
    ]
    cache = rows_cache(prefix_cache(decoder, batch, computed), batch.group)
    return _packed_states(decoder, rows, response_len, response_ids.shape[1], cache, batch.prefix_mask[batch.group])


def whole_rows(
    decoder: nn.Module, batch: PromptBatch, response_ids: torch.Tensor, response_mask: torch.Tensor
) -> torch.Tensor:
    """:func:`continue_rows` without a cache: every row's whole prompt and response in one forward. The same
    numbers (to float rounding) at more compute; what gradient checkpointing needs, since transformers' checkpointed
    layers drop any ``past_key_values`` they are given."""
    response_len = response_mask.sum(dim=1).long()
    rows = [
        torch.cat([torch.tensor(batch.prompt_ids(i), device=response_ids.device), response_ids[i, : int(n)]])
        for i, n in enumerate(response_len)
    ]
    return _packed_states(decoder, rows, response_len, response_ids.shape[1])
