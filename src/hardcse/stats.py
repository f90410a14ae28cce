"""Bootstrap confidence intervals: one statistic, or a paired difference of two on the same items.

Percentile intervals (Efron): resample the n items with replacement R times (a fixed seed, so a table is
reproducible), compute the statistic on each resample, and take the 2.5th and 97.5th percentiles. Paired:
both sides are computed on the *same* resampled items, so what the items have in common (an anchor that is
hard for every generator) cancels out of the difference. Items where a side is undefined (NaN, e.g. the
cosine of an answer the parser rejected) are left out of that side's mean on each resample. Vectorised: an
(R, n) index matrix, no Python loop over resamples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
SEED = 0


@dataclass(frozen=True)
class Interval:
    estimate: float  # the statistic on the items themselves
    low: float
    high: float
    n: int  # items with a defined value
    # where the interval is estimate +- quantiles x SE rather than percentiles (paired.py's clustered difference):
    # its standard error and the degrees of freedom of its sampling distribution (None: normal), for the power
    se: float | None = None
    df: float | None = None

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def to_dict(self, digits: int = 4) -> dict:
        known = {key: None if v is None else round(v, digits) for key, v in (("se", self.se), ("df", self.df))}
        return {
            "estimate": round(self.estimate, digits),
            "low": round(self.low, digits),
            "high": round(self.high, digits),
            "n": self.n,
        } | {key: value for key, value in known.items() if value is not None}

    def signed(self, digits: int = 2) -> str:
        """'+0.40 [-0.10, +0.90]': a difference with its interval, signs shown."""
        return f"{self.estimate:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}]"

    def __str__(self) -> str:
        return f"{self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}]"


def _indices(n: int, resamples: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def _nanmean_rows(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    taken = values[idx]
    defined = np.isfinite(taken)
    counts = defined.sum(axis=1)
    sums = np.where(defined, taken, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def _interval(estimate: float, draws: np.ndarray, n: int, confidence: float) -> Interval:
    draws = draws[np.isfinite(draws)]
    if not len(draws):
        return Interval(float("nan"), float("nan"), float("nan"), n)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    return Interval(float(estimate), float(low), float(high), n)


def bootstrap_mean(
    values: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED, confidence: float = 0.95
) -> Interval:
    """The mean of ``values`` (NaN = undefined, left out) with its percentile bootstrap interval."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or not len(values):
        raise ValueError("bootstrap_mean needs a non-empty 1-d array")
    idx = _indices(len(values), resamples, seed)
    estimate = float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
    return _interval(estimate, _nanmean_rows(values, idx), int(np.isfinite(values).sum()), confidence)


def paired_bootstrap(
    a: np.ndarray, b: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED, confidence: float = 0.95
) -> dict[str, Interval]:
    """Means of ``a`` and ``b`` over the same items and the difference b - a, each with its interval; the
    difference is computed on the same resampled items for both sides."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or not len(a):
        raise ValueError(f"paired_bootstrap needs two 1-d arrays over the same items, got {a.shape} and {b.shape}")
    idx = _indices(len(a), resamples, seed)
    draws_a, draws_b = _nanmean_rows(a, idx), _nanmean_rows(b, idx)

    def mean(x: np.ndarray) -> float:
        return float(np.nanmean(x)) if np.isfinite(x).any() else float("nan")

    both = int((np.isfinite(a) & np.isfinite(b)).sum())
    return {
        "a": _interval(mean(a), draws_a, int(np.isfinite(a).sum()), confidence),
        "b": _interval(mean(b), draws_b, int(np.isfinite(b).sum()), confidence),
        "difference": _interval(mean(b) - mean(a), draws_b - draws_a, both, confidence),
    }


def clustered_half_width(runs: float, tests: float, clusters: int, q: float = 0.975) -> float:
    """sqrt(t_{G-1}(q)^2 x V_runs + z(q)^2 x V_pairs): a clustered interval's half-width at the two-sided level
    2q - 1 (q 0.975: 95%) from its two variances, the runs' (G clusters: t with G - 1 degrees of freedom) and the
    test items' (normal) (hardcse/evaluation/paired.py's module doc)."""
    from scipy.stats import norm, t

    return float(np.sqrt(t.ppf(q, clusters - 1) ** 2 * runs + norm.ppf(q) ** 2 * tests))


def seeds_by_items_mean(values: np.ndarray, confidence: float = 0.95) -> Interval:
    """The mean of a (G seeds, n items) table (NaN: undefined, left out), the same items under every seed (e.g.
    per anchor, tuned - untuned of each RL seed): the mean of the seeds' means, each seed weighing the same, with
    an interval that counts both spreads: estimate +- sqrt(t_{G-1}^2 x V_seeds + z^2 x V_items), V_seeds =
    var(the seeds' means) / G, V_items = var(the items' means over the seeds) / n (sample variances). The
    seed-by-item interplay is in both parts (about its variance / (nG) each), so the interval is conservative. One
    seed: the items' percentile bootstrap (:func:`bootstrap_mean`)."""
    table = np.asarray(values, dtype=np.float64)
    if table.ndim != 2 or not table.size:
        raise ValueError(f"seeds_by_items_mean needs a (seeds, items) table, got shape {table.shape}")
    if len(table) == 1:
        return bootstrap_mean(table[0], confidence=confidence)
    if not np.isfinite(table).any(axis=1).all():
        raise ValueError("seeds_by_items_mean: a seed has no defined item; leave that seed out")
    table = table[:, np.isfinite(table).any(axis=0)]  # an item undefined under every seed is left out
    seeds, items = np.nanmean(table, axis=1), np.nanmean(table, axis=0)
    v_seeds, v_items = np.var(seeds, ddof=1) / len(seeds), np.var(items, ddof=1) / len(items)
    half = clustered_half_width(v_seeds, v_items, len(seeds), q=1 - (1 - confidence) / 2)
    se = float(np.sqrt(v_seeds + v_items))
    df = (len(seeds) - 1) * (v_seeds + v_items) ** 2 / v_seeds**2 if v_seeds > 0 else None
    estimate = float(seeds.mean())
    return Interval(estimate, estimate - half, estimate + half, int(np.isfinite(table).sum()), se, df)


def detectable_difference(interval: Interval, power: float = 0.8, confidence: float = 0.95) -> float:
    """The smallest true difference a comparison with ``interval``'s spread finds (its interval excludes zero) with
    probability ``power``: the interval's half-width plus q_power x SE. Where the interval keeps its SE and degrees
    of freedom (paired.py's clustered difference), q is t's with those (the normal's with none) and the half-width
    is the interval's own, whatever quantiles built it; otherwise the interval is read as normal, SE = (high - low)
    / (2 z_{1-a/2}), which gives (z_{1-a/2} + z_power) x SE. Issue 42's "power" of a comparison."""
    from scipy.stats import norm, t

    half = (interval.high - interval.low) / 2
    if interval.se is not None:
        quantile = float(norm.ppf(power) if interval.df is None else t(interval.df).ppf(power))
        return half + quantile * interval.se
    z = float(norm.ppf(1 - (1 - confidence) / 2))
    return (z + float(norm.ppf(power))) * half / z
