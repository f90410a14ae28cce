"""PPO, the paper's RL algorithm (TRL removed its PPOTrainer, so it is written here): its maths as pure functions
and its part of the loop (:class:`PPO`, the :class:`hardcse.art.rl.algorithm.Algorithm` that
:mod:`hardcse.art.rl.loop` calls).

One episode = one prompt, one sampled response, one scalar score. Symbols as in Ziegler et al. (2019) and CleanRL:
per-token reward r_t = -beta * (log pi(y_t) - log pi_ref(y_t)), plus the score at the last token; GAE with gamma and
lambda; clipped surrogate policy loss and clipped value loss. The value V(s_t) is a linear head on the policy's last
hidden state. One row a prompt (``RLConfig.rows_per_prompt``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from hardcse.art.log_keys import MINIBATCH_KEYS
from hardcse.art.rl.algorithm import masked_mean
from hardcse.art.rl.config import RLConfig
from hardcse.distributed import mean_over_ranks
from hardcse.seeding import seeded_torch

if TYPE_CHECKING:
    from hardcse.art.rl.algorithm import PolicyOutputs, Rollout


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


class PPO:
    """PPO's part of the loop: a value head, the adaptive KL controller, GAE advantages and the clipped losses."""

    log_keys = MINIBATCH_KEYS["ppo"]  # averaged over the step's minibatches

    def __init__(self, config: RLConfig, hidden_size: int, device: torch.device) -> None:
        self.config, self.ppo = config, config.ppo  # the loop's settings (seed, the clip) and PPO's own
        # V(s_t), starting at 0 everywhere; built before the loop's optimizer, which takes the adapter's parameters
        # and then these. Its layer's random start (zeroed at once) is drawn in a seeded block: the caller's
        # generator is left as it was.
        with seeded_torch(config.seed):
            self.value_head = nn.Linear(hidden_size, 1)
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)
        self.value_head.to(device)
        self.kl = AdaptiveKLController(self.ppo.kl_coef, self.ppo.kl_target, self.ppo.kl_horizon)

    def parameters(self) -> list[nn.Parameter]:
        return list(self.value_head.parameters())

    def values(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.value_head(hidden.float()).squeeze(-1)

    def advantages(self, rollout: Rollout) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """KL-shaped per-token rewards, GAE, optionally whitened advantages; the returns and KL_t beside them."""
        mask = rollout.samples.response_mask
        rewards, kl = kl_shaped_rewards(rollout.scores, rollout.old_logprobs, rollout.ref_logprobs, mask, self.kl.value)
        advantages, returns = gae(rewards, rollout.old_values, mask, self.ppo.gamma, self.ppo.lam)
        advantages = masked_whiten(advantages, mask) if self.ppo.whiten_advantages else advantages
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
            values, rollout.old_values[rows], rollout.extra["returns"][rows], mask, self.ppo.cliprange_value
        )
        return {
            "loss": pg_loss + self.ppo.vf_coef * vf_loss,
            "policy_loss": pg_loss,
            "value_loss": vf_loss,
            "clipfrac": clipfrac,
            "entropy": masked_mean(entropy, mask),
            "approx_kl": masked_mean(old_logprobs - logprobs, mask),
        }

    def after_update(self, rollout: Rollout, n_rollouts: int) -> dict:
        """The step's KL (every rank's mean: one controller), then beta's adaptive update over ``n_rollouts``."""
        mean_kl = mean_over_ranks({"kl": float(rollout.extra["kl"].sum(dim=1).mean())})["kl"]
        if self.ppo.adaptive_kl:
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
