"""What ART names in its logs and records, said once: the dual reward's parts, and the keys of an RL step's log line.

The reward (hardcse/art/reward/dual.py), the RL loop and its algorithms (hardcse/art/rl/), the curves, the reports
and the held-out comparison import these; a reward term may not take any of these names (:data:`RESERVED_NAMES`),
since a term NAME is logged as NAME, reward_NAME and share_NAME and recorded as KIND_NAME and NAME_parsed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Part:
    key: str
    label: str
    meaning: str


# the paper's dual reward r = w1 * r1 + w2 * r2, in its order
DUAL_PARTS = (
    Part("r1", "correctness", "P(target | x, y) - Omega, by the NLI discriminator"),
    Part("r2", "difficulty", "a positive's distance from its anchor, a negative's closeness, by the current encoder"),
)
DUAL_KEYS = tuple(part.key for part in DUAL_PARTS)

# the reward's numbers of a batch (RewardParts.summary, and the score function's mean reward of each kind)
REWARD_KEYS = (
    *("reward", "p_target", "cosine", "parse_failure_rate", "reward_format", "reward_parsed", "reward_std"),
    *("reward_parsed_std", "reward_positive", "reward_negative"),
)
# the fields a synthetic.jsonl record keeps of each answer besides the terms, as KIND_FIELD (best of k adds passing
# and others, each other candidate's text as its sentence: hardcse/art/synthesis/filter.py)
RECORD_FIELDS = ("raw", "reason", "probs", "source", "passing", "others", "sentence")

# an RL step's log line (hardcse/art/rl/loop.py): the loop's own numbers, the seconds of each phase, the
# algorithm's minibatch means and what it logs after the update
STEP_KEYS = ("step", "score", "response_tokens", "truncated", "skipped", "skipped_batches")
PHASES = ("generation", "scoring", "policy_forward", "reference", "optimisation")  # logged as PHASE_s
MINIBATCH_KEYS = {
    "ppo": ("policy_loss", "value_loss", "clipfrac", "entropy", "approx_kl"),
    "grpo": ("policy_loss", "clipfrac", "entropy", "kl_token"),
}
AFTER_UPDATE_KEYS = {"ppo": ("kl", "kl_coef"), "grpo": ("kl", "reward_std_in_group")}
LOSS_KEYS = ("loss", "returns")  # the loss the update minimises and PPO's returns: tensors, not logged


def _reserved() -> frozenset[str]:
    logged = {
        *REWARD_KEYS,
        *STEP_KEYS,
        *(f"{phase}_s" for phase in PHASES),
        *(key for keys in MINIBATCH_KEYS.values() for key in keys),
        *(key for keys in AFTER_UPDATE_KEYS.values() for key in keys),
    }
    # a term named "parsed" would log reward_parsed: the suffixes of reward_* are taken too
    suffixes = {key.removeprefix("reward_") for key in logged if key.startswith("reward_")}
    return frozenset(logged | suffixes | set(DUAL_KEYS) | set(RECORD_FIELDS) | set(LOSS_KEYS))


RESERVED_NAMES = _reserved()
