"""What the RL loop (:mod:`hardcse.art.rl.loop`) and its algorithm (:mod:`hardcse.art.rl.ppo`,
:mod:`hardcse.art.rl.grpo`) hand each other: one step's :class:`Rollout`, the :class:`PolicyOutputs` an update
differentiates, and the :class:`Algorithm` protocol, all that differs between PPO and GRPO. The loop calls the
algorithm at its steps 4 (advantages) and 5 (losses), after the update, and when it saves or loads a checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

import torch

if TYPE_CHECKING:
    from torch import nn

    from hardcse.art.generator.sampling import Samples


@dataclass
class Rollout:
    """One step's samples and what the update reads of them, (B,) or (B, T) over the response tokens."""

    samples: Samples
    scores: torch.Tensor  # the reward of each response
    old_logprobs: torch.Tensor  # log pi_old, by the update's own forward
    old_values: torch.Tensor | None  # V_old; None without a value head
    ref_logprobs: torch.Tensor  # log pi_ref (adapter disabled)
    advantages: torch.Tensor | None = None
    extra: dict[str, torch.Tensor] = field(default_factory=dict)  # the algorithm's own (PPO: returns, KL_t)


class PolicyOutputs(NamedTuple):
    """What an update differentiates, (B, T) over the response tokens."""

    logprobs: torch.Tensor  # log pi under the sampling temperature
    entropy: torch.Tensor
    values: torch.Tensor | None  # V (PPO's value head); None without one


class Algorithm(Protocol):
    """An RL algorithm's part of the loop, built as ``Algorithm(config, hidden_size, device)`` before the loop's
    optimizer (which takes the adapter's parameters and then :meth:`parameters`)."""

    log_keys: tuple[str, ...]  # the numbers of :meth:`losses` logged, averaged over the step's minibatches

    def parameters(self) -> list[nn.Parameter]:
        """Its own trained parameters (PPO's value head), beside the adapter's."""

    def values(self, hidden: torch.Tensor) -> torch.Tensor | None:
        """V(s_t) from the policy's last hidden state (None without a value head)."""

    def advantages(self, rollout: Rollout) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The rollout's advantages, and what else the losses read (``Rollout.extra``)."""

    def losses(self, rollout: Rollout, rows: torch.Tensor, outputs: PolicyOutputs) -> dict[str, torch.Tensor]:
        """Minibatch ``rows``' losses at the current policy: ``loss`` is minimised, :attr:`log_keys` logged."""

    def after_update(self, rollout: Rollout, n_rollouts: int) -> dict:
        """The numbers logged once the step's updates are done (and PPO's beta update over ``n_rollouts``)."""

    def state_dict(self) -> dict:
        """Its tensors a checkpoint keeps, beside the adapter and the optimizer."""

    def meta(self) -> dict:
        """Its numbers a checkpoint keeps (in rl_state.json)."""

    def load_state(self, state: dict, meta: dict) -> None:
        """Back to a checkpoint's :meth:`state_dict` and :meth:`meta`."""


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (x * mask).sum() / mask.sum().clamp(min=1)
