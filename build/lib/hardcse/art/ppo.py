"""PPO for a language model with a Python reward, written out because TRL removed its PPOTrainer.

One episode = one prompt, one sampled response, one scalar score. Symbols as in Ziegler et al. (2019) and
CleanRL: per-token reward r_t = -beta * (log pi(y_t) - log pi_ref(y_t)), plus the score at the last token;
GAE with gamma and lambda; clipped surrogate policy loss and clipped value loss. The policy is the LM with a
LoRA adapter, the reference the same LM with the adapter disabled, the value a linear head on the policy's
last hidden state.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from peft import PeftModel
from torch import nn

from hardcse.art.config import GeneratorConfig, PPOConfig
from hardcse.art.generator.sampling import Samples, sample

log = logging.getLogger(__name__)

# texts of the responses -> (scores, numbers to log); the caller's closure knows the batch's anchors and kinds
RewardFn = Callable[[list[str]], tuple[np.ndarray, dict]]


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
    next_value = torch.zeros(rewards.shape[0], dtype=rewards.dtype)
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


@dataclass
class Rollout:
    samples: Samples
    scores: torch.Tensor
    old_logprobs: torch.Tensor
    ref_logprobs: torch.Tensor
    old_values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    kl: torch.Tensor


def _decoder_and_head(model: PeftModel) -> tuple[nn.Module, nn.Module]:
    base = model.get_base_model()
    return base.get_decoder(), base.get_output_embeddings()


class PPOTrainer:
    """Holds policy (LoRA), value head, optimizer and KL controller; ``step`` runs one PPO iteration."""

    def __init__(self, model: PeftModel, tokenizer: object, generation: GeneratorConfig, config: PPOConfig) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.generation = generation
        self.config = config
        hidden = model.get_base_model().config.hidden_size
        torch.manual_seed(config.seed)
        self.value_head = nn.Linear(hidden, 1)
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)
        params = [p for p in model.parameters() if p.requires_grad] + list(self.value_head.parameters())
        self.optimizer = torch.optim.AdamW(params, lr=config.learning_rate)
        self.kl = AdaptiveKLController(config.kl_coef, config.kl_target, config.kl_horizon)
        self.step_count = 0
        self.skipped_batches = 0

    # ----- forward passes -------------------------------------------------------------------------
    def _response_hidden(self, samples: Samples, rows: torch.Tensor | slice) -> torch.Tensor:
        """Last-layer hidden states at the positions that predict each response token."""
        decoder, _ = _decoder_and_head(self.model)
        prompt_ids, prompt_mask = samples.prompt_ids[rows], samples.prompt_mask[rows]
        response_ids = samples.response_ids[rows]
        input_ids = torch.cat([prompt_ids, response_ids], dim=1)
        attention = torch.cat([prompt_mask, torch.ones_like(response_ids)], dim=1)
        position_ids = (attention.cumsum(dim=1) - 1).clamp(min=0)  # as generate() does with left padding
        hidden = decoder(
            input_ids=input_ids, attention_mask=attention, position_ids=position_ids, use_cache=False
        ).last_hidden_state
        prompt_len, response_len = prompt_ids.shape[1], response_ids.shape[1]
        return hidden[:, prompt_len - 1 : prompt_len - 1 + response_len]

    def _logprobs(self, hidden: torch.Tensor, response_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _, head = _decoder_and_head(self.model)
        logits = head(hidden).float() / self.generation.sampling_temperature
        logp_all = logits.log_softmax(-1)
        logprobs = torch.gather(logp_all, 2, response_ids.unsqueeze(-1)).squeeze(-1)
        entropy = -(logp_all.exp() * logp_all).sum(-1)
        return logprobs, entropy

    @torch.no_grad()
    def _reference_logprobs(self, samples: Samples) -> torch.Tensor:
        with self.model.disable_adapter():
            hidden = self._response_hidden(samples, slice(None))
            return self._logprobs(hidden, samples.response_ids)[0]

    # ----- one iteration --------------------------------------------------------------------------
    def rollout(self, prompts: Sequence[str], reward_fn: RewardFn) -> tuple[Rollout, dict, dict]:
        timings = {}
        start = time.perf_counter()
        samples = sample(self.model, self.tokenizer, prompts, self.generation, with_rollout_stats=True)
        timings["generation_s"] = time.perf_counter() - start
        start = time.perf_counter()
        scores_np, reward_stats = reward_fn(samples.texts)
        timings["scoring_s"] = time.perf_counter() - start
        start = time.perf_counter()
        mask = samples.response_mask
        scores = torch.as_tensor(np.asarray(scores_np, dtype=np.float32))
        ref_logprobs = self._reference_logprobs(samples)
        with torch.no_grad():
            old_values = self.value_head(samples.hidden).squeeze(-1) * mask
        rewards, kl = kl_shaped_rewards(scores, samples.logprobs, ref_logprobs, mask, self.kl.value)
        advantages, returns = gae(rewards, old_values, mask, self.config.gamma, self.config.lam)
        if self.config.whiten_advantages:
            advantages = masked_whiten(advantages, mask)
        timings["reference_s"] = time.perf_counter() - start
        rollout = Rollout(samples, scores, samples.logprobs, ref_logprobs, old_values, advantages, returns, kl)
        return rollout, reward_stats, timings

    def step(self, prompts: Sequence[str], reward_fn: RewardFn) -> dict:
        """Sample, score, and optimise; returns the numbers to log (a skipped batch says so)."""
        rollout, reward_stats, timings = self.rollout(prompts, reward_fn)
        self.step_count += 1
        stats: dict = {"step": self.step_count, **reward_stats}
        tensors = (rollout.scores, rollout.old_logprobs, rollout.ref_logprobs, rollout.advantages)
        if not all(torch.isfinite(t).all() for t in tensors):
            self.skipped_batches += 1
            log.warning("step %d: non-finite rollout values, batch skipped", self.step_count)
            return {**stats, **timings, "skipped": True, "skipped_batches": self.skipped_batches}
        start = time.perf_counter()
        stats |= self._optimise(rollout)
        timings["optimisation_s"] = time.perf_counter() - start
        mask = rollout.samples.response_mask
        mean_kl = float(rollout.kl.sum(dim=1).mean())
        if self.config.adaptive_kl:
            self.kl.update(mean_kl, len(prompts))
        stats |= {
            "score": float(rollout.scores.mean()),
            "kl": mean_kl,
            "kl_coef": self.kl.value,
            "response_tokens": float(mask.sum(dim=1).mean()),
            "skipped": False,
            "skipped_batches": self.skipped_batches,
            **timings,
        }
        return stats

    def _optimise(self, rollout: Rollout) -> dict:
        config = self.config
        samples = rollout.samples
        n = samples.response_ids.shape[0]
        generator = torch.Generator().manual_seed(config.seed + self.step_count)
        totals = {"policy_loss": [], "value_loss": [], "clipfrac": [], "entropy": [], "approx_kl": []}
        self.model.train()
        for _ in range(config.ppo_epochs):
            for rows in torch.randperm(n, generator=generator).split(config.minibatch_size):
                mask = samples.response_mask[rows]
                hidden = self._response_hidden(samples, rows)
                logprobs, entropy = self._logprobs(hidden, samples.response_ids[rows])
                values = self.value_head(hidden).squeeze(-1)
                pg_loss, clipfrac = clipped_policy_loss(
                    logprobs, rollout.old_logprobs[rows], rollout.advantages[rows], mask, config.cliprange
                )
                vf_loss = clipped_value_loss(
                    values, rollout.old_values[rows], rollout.returns[rows], mask, config.cliprange_value
                )
                loss = pg_loss + config.vf_coef * vf_loss
                if not torch.isfinite(loss):
                    self.skipped_batches += 1
                    log.warning("step %d: non-finite loss, minibatch skipped", self.step_count)
                    self.optimizer.zero_grad(set_to_none=True)
                    continue
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                params = [p for group in self.optimizer.param_groups for p in group["params"]]
                torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
                self.optimizer.step()
                with torch.no_grad():
                    totals["policy_loss"].append(float(pg_loss))
                    totals["value_loss"].append(float(vf_loss))
                    totals["clipfrac"].append(float(clipfrac))
                    totals["entropy"].append(float(masked_mean(entropy, mask)))
                    totals["approx_kl"].append(float(masked_mean(rollout.old_logprobs[rows] - logprobs, mask)))
        self.model.eval()
        return {k: (float(np.mean(v)) if v else math.nan) for k, v in totals.items()}

    # ----- saving and resuming --------------------------------------------------------------------
    def save(self, path: str | Path, base_source: str) -> None:
        from hardcse.art.generator.model import save_generator

        path = Path(path)
        save_generator(self.model, base_source, path)
        torch.save(
            {"value_head": self.value_head.state_dict(), "optimizer": self.optimizer.state_dict()},
            path / "ppo_state.pt",
        )
        state = {"step": self.step_count, "kl_coef": self.kl.value, "skipped_batches": self.skipped_batches}
        (path / "ppo_state.json").write_text(json.dumps(state))

    def load_state(self, path: str | Path) -> None:
        """Restore value head, optimizer, KL coefficient and step count saved by :meth:`save`."""
        path = Path(path)
        state = torch.load(path / "ppo_state.pt", weights_only=True)
        self.value_head.load_state_dict(state["value_head"])
        self.optimizer.load_state_dict(state["optimizer"])
        meta = json.loads((path / "ppo_state.json").read_text())
        self.step_count = meta["step"]
        self.kl.value = meta["kl_coef"]
        self.skipped_batches = meta["skipped_batches"]
