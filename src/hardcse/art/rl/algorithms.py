"""The two RL algorithms of ART's generator tuning, each its maths as pure functions and its part of the loop
(:mod:`hardcse.art.rl.loop`, which calls :class:`PPO` or :class:`GRPO` at its steps 4 and 5 and after the update).

**PPO** (the paper's; TRL removed its PPOTrainer, so it is written here). One episode = one prompt, one sampled
response, one scalar score. Symbols as in Ziegler et al. (2019) and CleanRL: per-token reward
r_t = -beta * (log pi(y_t) - log pi_ref(y_t)), plus the score at the last token; GAE with gamma and lambda; clipped
surrogate policy loss and clipped value loss. The value V(s_t) is a linear head on the policy's last hidden state.

**GRPO** (Shao et al. 2024, DeepSeekMath, eq. 3): PPO's clipped objective without a value head. Each prompt is
sampled G times (``rl.group_size``; the caller lays the rows out group after group, ``RLConfig.rows_per_prompt``);
a completion's advantage is its reward standardised within its group,

    A_i = (r_i - mean(r_1..r_G)) / (std(r_1..r_G) + eps)        (std with Bessel's correction, eps 1e-4, as TRL)

the same for every token of it. The loss, per completion the mean over its tokens and then the mean over
completions, is

    L = -mean_i 1/|o_i| sum_t [ min(rho_t A_i, clip(rho_t, 1 - eps_c, 1 + eps_c) A_i) - beta * D_t ]
    D_t = pi_ref / pi - log(pi_ref / pi) - 1                      (the unbiased k3 estimator of KL(pi || pi_ref))

with rho_t = pi(o_t) / pi_old(o_t) and the reference the LM with the adapter disabled.

What differs between the two is all here: a value head or none, the advantages, the losses, the numbers logged
after the update and what a checkpoint keeps; and the rows per prompt (``RLConfig.rows_per_prompt``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from hardcse.art.config import RLConfig
from hardcse.art.log_keys import MINIBATCH_KEYS
from hardcse.distributed import mean_over_ranks
from hardcse.seeding import seeded_torch

if TYPE_CHECKING:
    from hardcse.art.rl.loop import PolicyOutputs, Rollout


# ----- PPO's maths -------------------------------------------------------------------------------------------------
def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (x * mask).sum() / mask.sum().clamp(min=1)


def masked_whiten(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    mean = masked_mean(x, mask)
    var = masked_mean((x - mean) ** 2, mask)
    return (x - mean) * torch.rsqrt(var + 1e-8) * mask


def kl_shaped_rewards(
    scores: torch.Tensor, logprobs: torch.Tensor, ref_logprobs: torch.Tensor, mask: torch.Tensor, kl_coef: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token rewards -beta * KL_t, with the score added at each sequence's last valid token; and KL_t."""
    kl = (logprobs - ref_logprobs) * mask
    rewards = -kl_coef * kl
    last = (mask.cumsum(dim=1) == mask.sum(dim=1, keepdim=True)) & (mask > 0)
    rewards = rewards + last.float() * scores.unsqueeze(1)
    return rewards, kl


def gae(
    rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimates and returns over the valid tokens (the episode ends at the last one).

    delta_t = r_t + gamma * V_{t+1} - V_t;  A_t = delta_t + gamma * lam * A_{t+1}
    """
    advantages = torch.zeros_like(rewards)
    next_value = torch.zeros(rewards.shape[0], dtype=rewards.dtype, device=rewards.device)
    next_advantage = torch.zeros_like(next_value)
    for t in reversed(range(rewards.shape[1])):
        m = mask[:, t]
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        advantage = delta + gamma * lam * next_advantage
        advantages[:, t] = advantage * m
        # past the end (m = 0) nothing flows back
        next_value = values[:, t] * m
        next_advantage = advantage * m
    return advantages, (advantages + values) * mask


def clipped_policy_loss(
    logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, clip: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO's clipped surrogate: mean of max(-A * ratio, -A * clip(ratio, 1 - eps, 1 + eps)); and the clip fraction."""
    ratio = torch.exp(logprobs - old_logprobs)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1 - clip, 1 + clip)
    loss = masked_mean(torch.maximum(unclipped, clipped), mask)
    clipfrac = masked_mean((clipped > unclipped).float(), mask)
    return loss, clipfrac


def clipped_value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor, clip: float
) -> torch.Tensor:
    """0.5 * mean of max((V - R)^2, (clip(V, V_old +- eps) - R)^2)."""
    clipped = old_values + torch.clamp(values - old_values, -clip, clip)
    return 0.5 * masked_mean(torch.maximum((values - returns) ** 2, (clipped - returns) ** 2), mask)


class AdaptiveKLController:
    """Ziegler et al.: beta <- beta * (1 + clip(KL / target - 1, -0.2, 0.2) * n / horizon)."""

    def __init__(self, init: float, target: float, horizon: int) -> None:
        self.value = init
        self.target = target
        self.horizon = horizon

    def update(self, kl: float, n_steps: int) -> None:
        error = float(np.clip(kl / self.target - 1, -0.2, 0.2))
        self.value *= 1 + error * n_steps / self.horizon


# ----- GRPO's maths ------------------------------------------------------------------------------------------------
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


# ----- each algorithm's part of the loop ---------------------------------------------------------------------------
class PPO:
    """PPO's part of the loop: a value head, the adaptive KL controller, GAE advantages and the clipped losses."""

    log_keys = MINIBATCH_KEYS["ppo"]  # averaged over the step's minibatches

    def __init__(self, config: RLConfig, hidden_size: int, device: torch.device) -> None:
        self.config = config
        # V(s_t), starting at 0 everywhere; built before the loop's optimizer, which takes the adapter's parameters
        # and then these. Its layer's random start (zeroed at once) is drawn in a seeded block: the caller's
        # generator is left as it was.
        with seeded_torch(config.seed):
            self.value_head = nn.Linear(hidden_size, 1)
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)
        self.value_head.to(device)
        self.kl = AdaptiveKLController(config.kl_coef, config.kl_target, config.kl_horizon)

    def parameters(self) -> list[nn.Parameter]:
        return list(self.value_head.parameters())

    def values(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.value_head(hidden.float()).squeeze(-1)

    def advantages(self, rollout: Rollout) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """KL-shaped per-token rewards, GAE, optionally whitened advantages; the returns and KL_t beside them."""
        mask = rollout.samples.response_mask
        rewards, kl = kl_shaped_rewards(rollout.scores, rollout.old_logprobs, rollout.ref_logprobs, mask, self.kl.value)
        advantages, returns = gae(rewards, rollout.old_values, mask, self.config.gamma, self.config.lam)
        advantages = masked_whiten(advantages, mask) if self.config.whiten_advantages else advantages
        return advantages, {"returns": returns, "kl": kl}

    def losses(self, rollout: Rollout, rows: torch.Tensor, outputs: PolicyOutputs) -> dict[str, torch.Tensor]:
        """The PPO losses of minibatch ``rows`` at the current policy: ``loss`` is what the update minimises, the
        others what is logged of it."""
        logprobs, entropy, values = outputs
        mask = rollout.samples.response_mask[rows]
        old_logprobs = rollout.old_logprobs[rows]
        pg_loss, clipfrac = clipped_policy_loss(
            logprobs, old_logprobs, rollout.advantages[rows], mask, self.config.cliprange
        )
        vf_loss = clipped_value_loss(
            values, rollout.old_values[rows], rollout.extra["returns"][rows], mask, self.config.cliprange_value
        )
        return {
            "loss": pg_loss + self.config.vf_coef * vf_loss,
            "policy_loss": pg_loss,
            "value_loss": vf_loss,
            "clipfrac": clipfrac,
            "entropy": masked_mean(entropy, mask),
            "approx_kl": masked_mean(old_logprobs - logprobs, mask),
        }

    def after_update(self, rollout: Rollout, n_rollouts: int) -> dict:
        """The step's KL (every rank's mean: one controller), then beta's adaptive update over ``n_rollouts``."""
        mean_kl = mean_over_ranks({"kl": float(rollout.extra["kl"].sum(dim=1).mean())})["kl"]
        if self.config.adaptive_kl:
            self.kl.update(mean_kl, n_rollouts)
        return {"kl": mean_kl, "kl_coef": self.kl.value}

    # what a checkpoint keeps besides the adapter and the optimizer
    def state_dict(self) -> dict:
        return {"value_head": self.value_head.state_dict()}

    def meta(self) -> dict:
        return {"kl_coef": self.kl.value}

    def load_state(self, state: dict, meta: dict) -> None:
        self.value_head.load_state_dict(state["value_head"])
        self.kl.value = meta["kl_coef"]


class GRPO:
    """GRPO's part of the loop: group-standardised advantages and the clipped loss with the k3 KL; no value head."""

    log_keys = MINIBATCH_KEYS["grpo"]  # averaged over the step's minibatches

    def __init__(self, config: RLConfig, hidden_size: int, device: torch.device) -> None:
        self.config = config

    def parameters(self) -> list[nn.Parameter]:
        return []

    def values(self, hidden: torch.Tensor) -> None:
        return None

    def advantages(self, rollout: Rollout) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """A_i of every completion (its rows come group after group); nothing beside it."""
        return group_advantages(rollout.scores, self.config.group_size), {}

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
            self.config.grpo_beta,
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
        spread = rollout.scores.view(-1, self.config.group_size).std(dim=1) if self.config.group_size > 1 else None
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


ALGORITHMS = {"ppo": PPO, "grpo": GRPO}
