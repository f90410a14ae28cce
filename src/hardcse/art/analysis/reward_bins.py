"""What a reward pays for: parsed answers grouped by kind and by their cosine to the anchor, with the mean reward,
P(target), and the share an NLI model judges correct (issue 41: "the reward pays for easy"). A reward for hard
*and* correct pays most where the cosine is far from the anchor's (positives) or close to it (negatives) and the
answer is still judged correct; the paper's pays for closeness whatever the label (its r2 is ``s`` for a negative).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hardcse.art.reward.dual import TARGET_LABEL, RewardParts, judged

# bin edges of cos(f(x), f(y)): the upper ones around alpha_neg (0.98), where the paper's r2 turns for negatives
COSINE_EDGES = (-1.0, 0.6, 0.75, 0.9, 0.95, 0.98, 1.0)


@dataclass(frozen=True)
class CosineBin:
    """The parsed answers of one kind whose cosine lies in [low, high) (the last bin holds 1.0 too)."""

    kind: str
    low: float
    high: float
    n: int
    reward: float | None  # mean reward
    p_target: float | None  # mean P(target) by the reward's discriminator
    judged_correct: float | None  # share whose judge's argmax is the target (None without a judge)

    @property
    def label(self) -> str:
        return f"{self.low:.2f}-{self.high:.2f}" if self.low > -1 else f"< {self.high:.2f}"


def reward_by_cosine_bin(
    parts: RewardParts,
    kinds: Sequence[str],
    judge_probs: np.ndarray | None = None,
    edges: Sequence[float] = COSINE_EDGES,
) -> list[CosineBin]:
    """Per kind (positive, negative) and cosine bin of ``edges``: the parsed answers' count, mean reward, mean
    P(target) and, with ``judge_probs`` ((n, 3) in LABELS order, NaN rows where unparsed), the share judged the
    target. Rejected responses (no cosine) are left out: they earn the invalid penalty whatever they say."""
    kind_of = np.asarray(kinds)
    target = np.array([TARGET_LABEL[k] for k in kinds])
    judged_target = None if judge_probs is None else judged(judge_probs, target)
    out = []
    for kind in ("positive", "negative"):
        for i, (low, high) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
            last = i == len(edges) - 2
            inside = (parts.cosine >= low) & ((parts.cosine <= high) if last else (parts.cosine < high))
            mask = parts.valid & (kind_of == kind) & inside
            n = int(mask.sum())

            def mean(values: np.ndarray, m: np.ndarray = mask, count: int = n) -> float | None:
                return float(values[m].mean()) if count else None

            out.append(
                CosineBin(
                    kind,
                    low,
                    high,
                    n,
                    mean(parts.reward),
                    mean(parts.p_target),
                    mean(judged_target.astype(float)) if judged_target is not None else None,
                )
            )
    return out
