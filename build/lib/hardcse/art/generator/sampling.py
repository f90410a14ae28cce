"""Batched sampling with left padding; optionally the per-token log-probs and hidden states PPO needs.

Log-probs are those of the sampling distribution softmax(logits / temperature) (top-k/top-p truncation, when
set, is not reflected, as in TRL). They and the last-layer hidden states come from ``generate`` itself, so a
rollout needs no second forward pass of the policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from hardcse.art.config import GeneratorConfig


@dataclass
class Samples:
    prompt_ids: torch.Tensor  # (B, P), left-padded
    prompt_mask: torch.Tensor  # (B, P)
    response_ids: torch.Tensor  # (B, T), padded after the end-of-sequence token
    response_mask: torch.Tensor  # (B, T) float: 1 up to and including the first end-of-sequence token
    texts: list[str]
    logprobs: torch.Tensor | None = None  # (B, T) log pi(y_t | x, y_<t)
    hidden: torch.Tensor | None = None  # (B, T, H) the hidden state that produced y_t


def response_mask(response_ids: torch.Tensor, eos_ids: Sequence[int]) -> torch.Tensor:
    """1 for every token up to and including the first end-of-sequence token, 0 after it."""
    is_eos = torch.isin(response_ids, torch.tensor(list(eos_ids), device=response_ids.device))
    after_eos = (is_eos.cumsum(dim=1) - is_eos.long()) > 0
    return (~after_eos).float()


def eos_token_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> list[int]:
    eos = model.generation_config.eos_token_id
    ids = set(eos if isinstance(eos, list) else [eos]) if eos is not None else set()
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return sorted(ids)


@torch.no_grad()
def sample(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    prompts: Sequence[str],
    config: GeneratorConfig,
    with_rollout_stats: bool = False,
) -> Samples:
    """Sample one response per prompt. ``with_rollout_stats`` also returns log-probs and hidden states."""
    encoded = tokenizer(list(prompts), return_tensors="pt", padding=True, add_special_tokens=False)
    encoded = {k: v.to(model.device) for k, v in encoded.items()}
    was_training = model.training
    model.eval()
    out = model.generate(
        **encoded,
        do_sample=True,
        temperature=config.sampling_temperature,
        top_k=config.top_k,
        top_p=config.top_p,
        max_new_tokens=config.max_new_tokens,
        pad_token_id=tokenizer.pad_token_id,
        return_dict_in_generate=True,
        output_logits=with_rollout_stats,
        output_hidden_states=with_rollout_stats,
    )
    model.train(was_training)
    prompt_len = encoded["input_ids"].shape[1]
    response_ids = out.sequences[:, prompt_len:]
    mask = response_mask(response_ids, eos_token_ids(model, tokenizer))
    texts = tokenizer.batch_decode(
        response_ids * mask.long() + tokenizer.pad_token_id * (1 - mask.long()), skip_special_tokens=True
    )
    samples = Samples(encoded["input_ids"], encoded["attention_mask"], response_ids, mask, texts)
    if with_rollout_stats:
        logits = torch.stack(out.logits, dim=1).float() / config.sampling_temperature  # (B, T, V)
        samples.logprobs = torch.gather(logits.log_softmax(-1), 2, response_ids.unsqueeze(-1)).squeeze(-1)
        # hidden_states[t][-1] is the last layer at step t: the whole prompt at t = 0, one position later.
        samples.hidden = torch.stack([step[-1][:, -1, :] for step in out.hidden_states], dim=1)
    return samples
