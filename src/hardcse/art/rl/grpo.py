"""GRPO (Shao et al. 2024, DeepSeekMath, eq. 3), an option beside the paper's PPO: PPO's clipped objective without a
value head, its maths as pure functions and its part of the loop (:class:`GRPO`, the
:class:`hardcse.art.rl.algorithm.Algorithm` that :mod:`hardcse.art.rl.loop` calls).

Each prompt is sampled G times (``rl.grpo.group_size``; the caller lays the rows out group after group,
``RLConfig.rows_per_prompt``); a completion's advantage is its reward standardised within its group,

    A_i = (r_i - mean(r_1..r_G)) / (std(r_1..r_G) + eps)        (std with Bessel's correction, eps 1e-4, as TRL)

the same for every token of it. The loss, per completion the mean over its tokens and then the mean over
completions, is

    L = -mean_i 1/|o_i| sum_t [ min(rho_t A_i, clip(rho_t, 1 - eps_c, 1 + eps_c) A_i) - beta * D_t ]
    D_t = pi_ref / pi - log(pi_ref / pi) - 1                      (the unbiased k3 estimator of KL(pi || pi_ref))

with rho_t = pi(o_t) / pi_old(o_t) and the reference the LM with the adapter disabled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from hardcse.art.log_keys import MINIBATCH_KEYS
from hardcse.art.rl.algorithm import masked_mean
from hardcse.art.rl.config import RLConfig

if TYPE_CHECKING:
    from hardcse.art.rl.algorithm import PolicyOutputs, Rollout


def group_advantages(rewards: torch.Tensor, group_size: int, eps: float = 1e-4) -> torch.Tensor:
    """(r_i - group mean) / (group std + eps) for rewards laid out group after group."""
    if rewards.numel() % group_size:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {group_size}")
    grouped = rewards.view(-1, group_size)
    std = grouped.std(dim=1, keepdim=True) if group_size > 1 else torch.zeros_like(grouped[:, :1])
    return ((grouped - grouped.mean(dim=1, keepdim=True)) / (std + eps)).view(-1)


def k3_kl(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token exp(ref - logp) - (ref - logp) - 1: non-negative, zero where the policy is the reference."""
    delta = ref_logprobs - logprobs
    return torch.exp(delta) - delta - 1


def grpo_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip: float,
    beta: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(loss, clip fraction, mean per-token KL); ``advantages`` (B,) one per completion."""
    ratio = torch.exp(logprobs - old_logprobs)
    a = advantages.unsqueeze(1)
    surrogate = torch.minimum(ratio * a, torch.clamp(ratio, 1 - clip, 1 + clip) * a)
    kl = k3_kl(logprobs, ref_logprobs)
    per_token = -(surrogate - beta * kl)
    per_completion = (per_token * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
    clipped = (ratio * a > torch.clamp(ratio, 1 - clip, 1 + clip) * a).float()
    return per_completion.mean(), masked_mean(clipped, mask), masked_mean(kl, mask)


class GRPO:
    """GRPO's part of the loop: group-standardised advantages and the clipped loss with the k3 KL; no value head."""

    log_keys = MINIBATCH_KEYS["grpo"]  # averaged over the step's minibatches

    def __init__(self, config: RLConfig, hidden_size: int, device: torch.device) -> None:
        self.config, self.grpo = config, config.grpo  # the loop's settings (the clip) and GRPO's own

    def parameters(self) -> list[nn.Parameter]:
        return []

    def values(self, hidden: torch.Tensor) -> None:
        return None

    def advantages(self, rollout: Rollout) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """A_i of every completion (its rows come group after group); nothing beside it."""
        return group_advantages(rollout.scores, self.grpo.group_size), {}

    def losses(self, rollout: Rollout, rows: torch.Tensor, outputs: PolicyOutputs) -> dict[str, torch.Tensor]:
        """The GRPO loss of minibatch ``rows`` (whole groups) at the current policy, and what is logged of it."""
        logprobs, entropy, _ = outputs
        mask = rollout.samples.response_mask[rows]
        old_logprobs = rollout.old_logprobs[rows]
        loss, clipfrac, kl = grpo_loss(
            logprobs,
            old_logprobs,
            rollout.ref_logprobs[rows],
            rollout.advantages[rows],
            mask,
            self.config.cliprange,
            self.grpo.beta,
        )
        return {
            "loss": loss,
            "policy_loss": loss,
            "clipfrac": clipfrac,
            "kl_token": kl,
            "entropy": masked_mean(entropy, mask),
        }

    def after_update(self, rollout: Rollout, n_rollouts: int) -> dict:
        """The step's KL to the reference (k3, per completion) and the reward's spread within a group."""
        mask = rollout.samples.response_mask
        kl = k3_kl(rollout.old_logprobs, rollout.ref_logprobs) * mask
        spread = rollout.scores.view(-1, self.grpo.group_size).std(dim=1) if self.grpo.group_size > 1 else None
        return {
            "kl": float(kl.sum(dim=1).mean()),
            "reward_std_in_group": float(spread.mean()) if spread is not None else 0.0,
        }

    def state_dict(self) -> dict:
        return {}

    def meta(self) -> dict:
        return {}

    def load_state(self, state: dict, meta: dict) -> None:
        pass
