"""The dual reward of ART: correctness from an NLI discriminator, difficulty from the current encoder.

    r  = w1 * r1 + w2 * r2
    r1 = P(t | x, y) - Omega          t = entailment for a positive prompt, contradiction for a negative one
    r2 = (1 - s) * sgn(s - alpha_pos)  for positives: dissimilar is hard, but below alpha_pos it is noise
    r2 = s * sgn(alpha_neg - s)        for negatives: similar is hard, but above alpha_neg it is a near copy
with s = cos(f(x), f(y)). A response the parser rejects gets ``invalid_penalty`` and no r1/r2.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sentence_transformers import SentenceTransformer

from hardcse.art.config import RewardConfig
from hardcse.art.generator.parsing import Parsed
from hardcse.data.nli import LABEL_ID
from hardcse.discriminator.nli import NLIDiscriminator
from hardcse.encoder.encode import pair_cosines


@dataclass
class RewardParts:
    """Per response: the reward and what it is made of (NaN where a part does not apply)."""

    reward: np.ndarray
    r1: np.ndarray
    r2: np.ndarray
    p_target: np.ndarray
    cosine: np.ndarray
    valid: np.ndarray  # bool: the parser accepted the response
    probs: np.ndarray  # (n, 3) NLI probabilities in LABELS order, NaN rows for invalid responses
    weights: tuple[float, float]  # (w1, w2) of the reward that made these parts

    def summary(self) -> dict[str, float]:
        """Means for logs; r1, r2, p_target and cosine over valid responses only.

        Where the reward comes from: ``reward = reward_format + reward_r1 + reward_r2`` exactly, with
        ``reward_format`` the invalid penalties' share (sum over rejected responses / n), ``reward_r1`` =
        w1 * sum of r1 over parsed responses / n and ``reward_r2`` likewise; ``reward_parsed`` is the mean reward
        of the parsed responses alone (what the policy earns for meaning, format set aside). ``reward_std`` and
        ``reward_parsed_std``: the spread the policy can learn from, over all responses and the parsed ones."""

        def mean(x: np.ndarray) -> float | None:
            return float(np.nanmean(x)) if np.isfinite(x).any() else None

        n, (w1, w2) = len(self.reward), self.weights
        return {
            "reward": float(self.reward.mean()),
            "r1": mean(self.r1),
            "r2": mean(self.r2),
            "p_target": mean(self.p_target),
            "cosine": mean(self.cosine),
            "parse_failure_rate": float(1 - self.valid.mean()),
            "reward_format": float(self.reward[~self.valid].sum() / n),
            "reward_r1": float(w1 * np.nansum(self.r1[self.valid]) / n),
            "reward_r2": float(w2 * np.nansum(self.r2[self.valid]) / n),
            "reward_parsed": mean(np.where(self.valid, self.reward, np.nan)),
            "reward_std": float(self.reward.std()),
            "reward_parsed_std": float(self.reward[self.valid].std()) if self.valid.any() else None,
        }


def dual_reward(
    p_target: np.ndarray, cosine: np.ndarray, is_positive: np.ndarray, config: RewardConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(r, r1, r2) for valid responses, exactly the paper's formulas (sgn(0) = 0)."""
    r1 = p_target - config.omega
    r2 = np.where(
        is_positive,
        (1 - cosine) * np.sign(cosine - config.alpha_pos),
        cosine * np.sign(config.alpha_neg - cosine),
    )
    return config.w1 * r1 + config.w2 * r2, r1, r2


class DualReward:
    """Scores parsed responses with the discriminator and the current encoder."""

    def __init__(self, discriminator: NLIDiscriminator, encoder: SentenceTransformer, config: RewardConfig) -> None:
        self.discriminator = discriminator
        self.encoder = encoder
        self.config = config

    def __call__(self, anchors: Sequence[str], parsed: Sequence[Parsed], kinds: Sequence[str]) -> RewardParts:
        n = len(anchors)
        valid = np.array([p.ok for p in parsed], dtype=bool)
        is_positive = np.array([k == "positive" for k in kinds], dtype=bool)
        p_target = np.full(n, np.nan)
        all_probs = np.full((n, 3), np.nan)
        cosine = np.full(n, np.nan)
        reward = np.full(n, self.config.invalid_penalty, dtype=np.float64)
        r1 = np.full(n, np.nan)
        r2 = np.full(n, np.nan)
        idx = np.flatnonzero(valid)
        if len(idx):
            xs = [anchors[i] for i in idx]
            ys = [parsed[i].sentence for i in idx]
            probs = self.discriminator.predict_proba(xs, ys)
            all_probs[idx] = probs
            target = np.where(is_positive[idx], LABEL_ID["entailment"], LABEL_ID["contradiction"])
            p_target[idx] = probs[np.arange(len(idx)), target]
            cos = pair_cosines(self.encoder, xs, ys)
            cosine[idx] = cos
            reward[idx], r1[idx], r2[idx] = dual_reward(p_target[idx], cos, is_positive[idx], self.config)
        weights = (self.config.w1, self.config.w2)
        return RewardParts(reward, r1, r2, p_target, cosine, valid, all_probs, weights)
