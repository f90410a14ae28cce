"""ART's reward: the dual reward, correctness from an NLI discriminator and difficulty from the current encoder,
plus the terms a user adds (hardcse/art/reward/terms.py), all summed the same way.

    r  = w1 * r1 + w2 * r2 (+ sum_k weight_k * term_k)
    r1 = P(t | x, y) - Omega          t = entailment for a positive prompt, contradiction for a negative one
    r2 = (1 - s) * sgn(s - alpha_pos)  for positives: dissimilar is hard, but below alpha_pos it is noise
    r2 = s * sgn(alpha_neg - s)        for negatives: similar is hard, but above alpha_neg it is a near copy
with s = cos(f(x), f(y)). r1 and r2 are two built-in terms (dropped with ``reward.dual: false``). A response the
parser rejects gets ``invalid_penalty`` and no term.

Beside the paper's r2, two options (``reward.r2_gate``, ``reward.r2_smoothing``; the paper's is the default):
    gated:    r2 x [argmax P(. | x, y) = t]          difficulty earns only for an answer judged correct
    smooth:   sgn(z) -> tanh(z / w)                  no cliff at alpha_pos and alpha_neg
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from sentence_transformers import SentenceTransformer

from hardcse.art.generator.parsing import Parsed
from hardcse.art.log_keys import DUAL_KEYS
from hardcse.art.reward.config import RewardConfig
from hardcse.art.reward.terms import Term, TermContext, config_terms, evaluate_terms
from hardcse.data.nli import LABEL_ID
from hardcse.discriminator.nli import NLIDiscriminator
from hardcse.encoder.encode import encode, pair_cosines
from hardcse.engines import Engine

TARGET_LABEL = {"positive": LABEL_ID["entailment"], "negative": LABEL_ID["contradiction"]}


def judged(probs: Sequence[float] | np.ndarray, label: int | np.ndarray, margin: float = 0.0) -> np.ndarray:
    """Per row of P(entailment, neutral, contradiction) (one row or (n, 3); a NaN row: never), whether the
    discriminator's predicted label is ``label`` (at margin 0 also one label per row); with ``margin`` > 0, by at
    least that much over every other label. At margin 0 a tie goes to the first of the tied labels (argmax)."""
    p = np.atleast_2d(np.asarray(probs, dtype=float))
    scored = np.isfinite(p).all(axis=1)
    p = np.nan_to_num(p, nan=-1.0)
    if margin == 0:
        return scored & (np.argmax(p, axis=1) == label)
    return scored & (p[:, label] - np.delete(p, label, axis=1).max(axis=1) >= margin)


@dataclass
class RewardParts:
    """Per response: the reward and what it is made of (NaN where a part does not apply)."""

    reward: np.ndarray
    terms: dict[str, np.ndarray]  # each term's (unweighted) value, NaN for rejected responses
    weights: dict[str, float]  # each term's weight in the reward that made these parts
    p_target: np.ndarray
    cosine: np.ndarray
    valid: np.ndarray  # bool: the parser accepted the response
    probs: np.ndarray  # (n, 3) NLI probabilities in LABELS order, NaN rows for invalid responses

    def summary(self) -> dict[str, float]:
        """Means for logs; p_target, cosine and each term NAME over valid responses only.

        Where the reward comes from: ``reward = reward_format + sum of reward_NAME`` exactly, with
        ``reward_format`` the invalid penalties' share (sum over rejected responses / n) and ``reward_NAME`` =
        weight x sum of the term over parsed responses / n; ``share_NAME`` (and ``share_format``) is that part's
        absolute value over the sum of all parts' absolute values (how much of the reward's size it makes).
        ``reward_parsed`` is the mean reward of the parsed responses alone (what the policy earns for meaning,
        format set aside). ``reward_std`` and ``reward_parsed_std``: the spread the policy can learn from, over all
        responses and the parsed ones."""

        def mean(x: np.ndarray) -> float | None:
            return float(np.nanmean(x)) if np.isfinite(x).any() else None

        n = len(self.reward)
        out = {
            "reward": float(self.reward.mean()),
            "p_target": mean(self.p_target),
            "cosine": mean(self.cosine),
            "parse_failure_rate": float(1 - self.valid.mean()),
            "reward_format": float(self.reward[~self.valid].sum() / n),
            "reward_parsed": mean(np.where(self.valid, self.reward, np.nan)),
            "reward_std": float(self.reward.std()),
            "reward_parsed_std": float(self.reward[self.valid].std()) if self.valid.any() else None,
        }
        parts = {"format": out["reward_format"]}
        for name, values in self.terms.items():
            out[name] = mean(values)
            out[f"reward_{name}"] = parts[name] = float(self.weights[name] * np.nansum(values[self.valid]) / n)
        size = sum(abs(v) for v in parts.values())
        for name, value in parts.items():
            out[f"share_{name}"] = abs(value) / size if size else None
        return out


def dual_reward(
    p_target: np.ndarray, cosine: np.ndarray, is_positive: np.ndarray, config: RewardConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(r, r1, r2) for valid responses, exactly the paper's formulas (sgn(0) = 0); with ``r2_smoothing`` w > 0
    the sign is tanh(. / w). (``r2_gate`` needs every label's probability: :func:`reward_terms` applies it.)"""
    w = config.r2_smoothing

    def sign(z: np.ndarray) -> np.ndarray:
        return np.tanh(z / w) if w > 0 else np.sign(z)

    r1 = p_target - config.omega
    r2 = np.where(
        is_positive,
        (1 - cosine) * sign(cosine - config.alpha_pos),
        cosine * sign(config.alpha_neg - cosine),
    )
    return config.w1 * r1 + config.w2 * r2, r1, r2


def reward_terms(config: RewardConfig) -> list[Term]:
    """The reward's terms in order: r1 and r2 (``config.dual``), then the config's own."""

    def part(k: int) -> Callable[[list[str], list[str | None], str, TermContext], np.ndarray]:
        """Term k of the dual reward: 1 for r1, 2 for r2 (:func:`dual_reward`'s outputs)."""

        def term(anchors: list[str], answers: list[str | None], kind: str, context: TermContext) -> np.ndarray:
            p_target = context.nli_probs[:, TARGET_LABEL[kind]]
            value = dual_reward(p_target, context.cosine, np.full(len(anchors), kind == "positive"), config)[k]
            if k == 2 and config.r2_gate == "judged":  # difficulty counts for an answer judged correct only
                value = np.where(judged(context.nli_probs, TARGET_LABEL[kind]), value, 0.0)
            return value

        return term

    r1, r2 = part(1), part(2)

    dual = [
        Term(key, weight, term, "built-in")
        for key, weight, term in zip(DUAL_KEYS, (config.w1, config.w2), (r1, r2), strict=True)
    ]
    return (dual if config.dual else []) + config_terms(config.terms)


class Reward:
    """Scores parsed responses with every term of the reward (the dual reward's: the discriminator and the
    current encoder)."""

    def __init__(
        self,
        discriminator: NLIDiscriminator,
        encoder: SentenceTransformer,
        config: RewardConfig,
        engine: Engine | None = None,
    ) -> None:
        self.discriminator = discriminator
        self.encoder = encoder
        self.config = config
        self.engine = engine or Engine.from_environment()  # the command's: where the encoder's cosines run
        self.terms = reward_terms(config)

    def __call__(self, anchors: Sequence[str], parsed: Sequence[Parsed], kinds: Sequence[str]) -> RewardParts:
        n = len(anchors)
        valid = np.array([p.ok for p in parsed], dtype=bool)
        p_target = np.full(n, np.nan)
        all_probs = np.full((n, 3), np.nan)
        cosine = np.full(n, np.nan)
        reward = np.full(n, self.config.invalid_penalty, dtype=np.float64)
        idx = np.flatnonzero(valid)
        if len(idx):
            xs = [anchors[i] for i in idx]
            ys = [parsed[i].sentence for i in idx]
            probs = self.discriminator.predict_proba(xs, ys)
            all_probs[idx] = probs
            p_target[idx] = probs[np.arange(len(idx)), [TARGET_LABEL[kinds[i]] for i in idx]]
            cosine[idx] = pair_cosines(self.encoder, xs, ys, self.engine)
        context = TermContext(
            nli_probs=all_probs,
            cosine=cosine,
            encode=lambda texts: encode(self.encoder, texts, engine=self.engine),
            nli=lambda premises, hypotheses: self.discriminator.predict_proba(premises, hypotheses),
        )
        answers = [p.sentence if p.ok else None for p in parsed]
        values = evaluate_terms(self.terms, anchors, answers, kinds, context)
        if len(idx) and self.terms:
            # the weighted sum in the terms' order: the dual reward alone adds exactly as w1 * r1 + w2 * r2
            total = self.terms[0].weight * values[self.terms[0].name][idx]
            for term in self.terms[1:]:
                total = total + term.weight * values[term.name][idx]
            reward[idx] = total
        weights = {term.name: term.weight for term in self.terms}
        return RewardParts(reward, values, weights, p_target, cosine, valid, all_probs)
