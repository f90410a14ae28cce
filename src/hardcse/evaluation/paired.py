"""Paired bootstrap of two encoders' STS scores: is B better than A, beyond the luck of which pairs were tested?

Within each task the test pairs are resampled with replacement (the same resample for both encoders, so what
the pairs have in common cancels), Spearman x 100 of cosine against gold is computed on each resample for both,
and avg7 is the mean over the seven tasks of a resample. The 2.5th and 97.5th percentiles of B - A give the
95% interval. Vectorised: ranks of an (R, n) matrix per task (scipy's ``rankdata``, average ranks for ties, as
``spearmanr`` uses), no loop over resamples. Works from the per-pair cosines hardcse writes into
``eval.json``, so no model is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import rankdata

from hardcse.data.sts import SEVEN_TASKS, load_sts_task
from hardcse.errors import HardcseError
from hardcse.stats import SEED, Interval

RESAMPLES = 1000


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman x 100 of each row of x against the same row of y, both (R, n)."""
    rx, ry = rankdata(x, axis=1), rankdata(y, axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 100 * (rx * ry).sum(axis=1) / np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))


def _cosines(record: dict, task: str, name: str) -> np.ndarray:
    cosines = record.get("cosines", {}).get(task)
    if cosines is None:
        raise HardcseError(
            f"{name}: its eval.json has no per-pair cosines for {task}; evaluate it again with this version "
            "(`hardcse eval MODEL --out DIR`) to compare it with intervals"
        )
    return np.asarray(cosines, dtype=np.float64)


def paired_sts_bootstrap(
    a: dict,
    b: dict,
    tasks: Sequence[str] = SEVEN_TASKS,
    names: tuple[str, str] = ("A", "B"),
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> dict[str, Interval]:
    """B - A per task and for their average ("avg7" when ``tasks`` are the seven), from two ``eval.json``
    records; each an :class:`Interval` (estimate = the difference on the test pairs themselves)."""
    rng = np.random.default_rng(seed)
    draws, estimates, out = [], [], {}
    for task in tasks:
        gold = np.asarray(load_sts_task(task).scores, dtype=np.float64)
        cos_a, cos_b = _cosines(a, task, names[0]), _cosines(b, task, names[1])
        if not len(gold) == len(cos_a) == len(cos_b):
            raise HardcseError(f"{task}: {len(cos_a)} and {len(cos_b)} cosines for {len(gold)} gold pairs")
        idx = rng.integers(0, len(gold), size=(resamples, len(gold)))
        delta = _spearman_rows(cos_b[idx], gold[idx]) - _spearman_rows(cos_a[idx], gold[idx])
        estimate = float(_spearman_rows(cos_b[None], gold[None])[0] - _spearman_rows(cos_a[None], gold[None])[0])
        out[task] = _percentiles(estimate, delta, len(gold))
        draws.append(delta)
        estimates.append(estimate)
    average = "avg7" if list(tasks) == list(SEVEN_TASKS) else "average"
    out[average] = _percentiles(float(np.mean(estimates)), np.mean(draws, axis=0), sum(i.n for i in out.values()))
    return out


def _percentiles(estimate: float, draws: np.ndarray, n: int) -> Interval:
    # a resample that repeats one pair has no Spearman (NaN, as in scipy); it only happens on tiny tasks
    low, high = np.nanpercentile(draws, [2.5, 97.5])
    return Interval(estimate, float(low), float(high), n)
