"""The RL score of sampled responses: each parsed (hardcse/art/generator/parsing.py), then rewarded (dual.py)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from hardcse.art.generator.parsing import REASONS, parse_response
from hardcse.art.generator.prompts import KINDS
from hardcse.art.reward.dual import Reward


class ArtScore:
    """The RL score function of one batch of prompts: parse each response, then score it with the reward; logs the
    reward's parts (each term's mean and share) and the rejection reasons, and keeps the batch's rows for
    :meth:`completions`."""

    def __init__(self, reward: Reward, anchors: list[str], kinds: list[str]) -> None:
        self.reward, self.anchors, self.kinds = reward, anchors, kinds
        self.rows: list[dict] = []

    def __call__(self, texts: list[str], truncated: list[bool]) -> tuple[np.ndarray, dict]:
        anchors, kinds = self.anchors, self.kinds
        parsed = [parse_response(t, a, truncated=c) for t, a, c in zip(texts, anchors, truncated, strict=True)]
        parts = self.reward(anchors, parsed, kinds)
        reasons = Counter(p.reason for p in parsed if not p.ok)
        stats = parts.summary() | {f"reject_{r}": reasons.get(r, 0) / len(texts) for r in REASONS}
        for kind in KINDS:
            rows = np.array([k == kind for k in kinds])
            stats[f"reward_{kind}"] = float(parts.reward[rows].mean())
        self.rows = [
            {
                "anchor": anchors[i],
                "kind": kinds[i],
                "response": texts[i],
                "answer": parsed[i].sentence if parsed[i].ok else None,
                "reason": parsed[i].reason,
                "reward": float(parts.reward[i]),
                "terms": {name: _finite(values[i]) for name, values in parts.terms.items()},
            }
            for i in range(len(texts))
        ]
        return parts.reward, stats

    def completions(self, step: int, k: int, seed: int) -> list[dict]:
        """``k`` of the last batch's rows, a seeded draw (the same on a resumed run), in batch order."""
        rng = np.random.default_rng([seed, step])
        picked = sorted(rng.choice(len(self.rows), size=min(k, len(self.rows)), replace=False))
        return [{"step": step, "row": int(i)} | self.rows[i] for i in picked]


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None
