"""The generator's RL settings: what the loop reads of every algorithm (:class:`RLConfig`), and each algorithm's
own block, ``rl.ppo`` (:class:`PPOConfig`, hardcse/art/rl/ppo.py) and ``rl.grpo`` (:class:`GRPOConfig`,
hardcse/art/rl/grpo.py). The keys that moved into the blocks still load from the top of ``rl`` (a config or run
folder written before), with a warning that names their new place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from hardcse.config import Checked, ConfigValueError, check_choice, check_nonnegative, check_positive, check_range


@dataclass
class PPOConfig(Checked):
    """PPO's own settings (a bandit environment: one prompt, one response, one reward, CleanRL-style, with TRL's
    PPO values as used by the ART authors' code)."""

    kl_coef: float = 0.2  # beta: per-token KL penalty against the reference
    adaptive_kl: bool = True
    kl_target: float = 0.1
    kl_horizon: int = 10000
    gamma: float = 1.0
    lam: float = 0.95
    cliprange_value: float = 0.2
    vf_coef: float = 0.1
    whiten_advantages: bool = True

    def check(self) -> None:
        for key in ("kl_target", "kl_horizon", "cliprange_value"):
            check_positive(key, getattr(self, key))
        check_nonnegative("kl_coef", self.kl_coef)
        check_nonnegative("vf_coef", self.vf_coef)
        check_range("gamma", self.gamma, 0.0, 1.0)
        check_range("lam", self.lam, 0.0, 1.0)


@dataclass
class GRPOConfig(Checked):
    """GRPO's own settings: completions per prompt (G) and the weight of the k3 KL term (DeepSeekMath: 0.04)."""

    group_size: int = 4  # batch_size / G prompts a step, positive and negative alternating
    beta: float = 0.04

    def check(self) -> None:
        check_positive("group_size", self.group_size)
        check_nonnegative("beta", self.beta)


# the keys each algorithm's block took from the top of rl: (old key, its new place)
MOVED_TO_BLOCKS = {
    **{key: f"ppo.{key}" for key in ("kl_coef", "adaptive_kl", "kl_target", "kl_horizon", "gamma", "lam")},
    **{key: f"ppo.{key}" for key in ("cliprange_value", "vf_coef", "whiten_advantages")},
    "group_size": "grpo.group_size",
    "grpo_beta": "grpo.beta",
}


@dataclass
class RLConfig(Checked):
    """The generator's RL: PPO (the paper's) or GRPO (no value head, group-normalised advantages), the loop's
    settings here and each algorithm's own in its block (``ppo``, ``grpo``)."""

    RENAMED: ClassVar[dict[str, str]] = {"ppo_epochs": "epochs"}
    MOVED: ClassVar[dict[str, str]] = MOVED_TO_BLOCKS
    algorithm: str = "ppo"  # ppo | grpo
    steps: int = 30
    batch_size: int = 16  # rollouts per step; PPO: half positive and half negative prompts
    minibatch_size: int = 8
    epochs: int = 4  # optimisation passes over each step's rollouts (TRL: ppo_epochs / num_iterations)
    learning_rate: float = 1.41e-5
    cliprange: float = 0.2  # the policy ratio's clip, both algorithms' (GRPO's epsilon)
    # The reference policy of the KL penalty: "base", the LM with the adapter disabled (the paper's, as TRL does with
    # PEFT); a generator folder (base + LoRA adapter, the same base and adapter shape as the policy), that adapter;
    # "auto": the run's warm-started generator where it has one (RL then stays near what the warm start taught, as
    # RLHF keeps near its SFT model), else "base"
    reference: str = "auto"
    max_grad_norm: float = 1.0
    # recompute each decoder layer's activations in the backward pass instead of keeping them: far less memory
    # for a large generator at about one more forward of compute; the policy then runs every forward over whole
    # prompts (no shared prompt cache: transformers' checkpointed layers drop caches)
    gradient_checkpointing: bool = False
    # who samples the rollouts (hardcse/art/rl/rollouts.py): torch, the policy itself (the paper's way), or
    # openvino, OpenVINO GenAI with the policy's current LoRA adapter (on a CPU; other random draws and rounding,
    # the same update: log pi_old is always the policy's own forward), or auto: openvino where the run's engine
    # runs the generator's work in OpenVINO and GenAI can apply its LoRA, else torch
    rollout_engine: str = "torch"
    save_every: int = 10
    # every save_every steps, this many of the step's rollouts (a seeded draw) go to completions.jsonl with their
    # response, parsed answer, reward and each term's value; 0: none
    log_completions: int = 4
    seed: int = 42
    ppo: PPOConfig = field(default_factory=PPOConfig)
    grpo: GRPOConfig = field(default_factory=GRPOConfig)

    @property
    def rows_per_prompt(self) -> int:
        """How many rollouts share one prompt: GRPO's group (G), PPO's one. The step's prompts and minibatches
        follow it (hardcse/art/rl/tuning.py, loop.py); a minibatch holds whole groups."""
        return self.grpo.group_size if self.algorithm == "grpo" else 1

    @property
    def minibatch_unit(self) -> int:
        """The rows a minibatch draw keeps together: a whole group where the minibatch holds whole groups (fewer
        prompt prefixes a minibatch), else single rows (GRPO's advantages are computed over the step's groups before
        any minibatch, so a group split across minibatches changes no number but the cost)."""
        return self.rows_per_prompt if self.minibatch_size % self.rows_per_prompt == 0 else 1

    @property
    def anchors_per_step(self) -> int:
        """Distinct anchors a step reads."""
        return self.batch_size // self.rows_per_prompt

    def check(self) -> None:
        check_choice("algorithm", self.algorithm, ("ppo", "grpo"))
        check_choice("rollout_engine", self.rollout_engine, ("auto", "torch", "openvino"))
        positive = ("steps", "batch_size", "minibatch_size", "epochs", "learning_rate", "cliprange", "max_grad_norm")
        for key in (*positive, "save_every"):
            check_positive(key, getattr(self, key))
        check_nonnegative("log_completions", self.log_completions)
        if self.minibatch_size > self.batch_size:
            raise ConfigValueError("minibatch_size", f"{self.minibatch_size} is larger than batch_size")
        if self.batch_size % self.rows_per_prompt:  # a step holds whole groups
            raise ConfigValueError(
                "batch_size", f"{self.batch_size} is not a multiple of grpo.group_size {self.grpo.group_size}"
            )
