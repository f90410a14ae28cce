"""The paired STS bootstrap: the vectorised interval equals a plain loop over the same resamples with scipy's
spearmanr, identical encoders give exactly zero, a missing cosine list is a clear error."""

import warnings

import numpy as np
import pytest
from scipy.stats import spearmanr

from hardcse.data.sts import STSPairs
from hardcse.errors import HardcseError
from hardcse.evaluation import paired
from hardcse.evaluation.paired import paired_sts_bootstrap

GOLD = {"T1": [5.0, 4.0, 3.0, 2.0, 1.0, 0.5], "T2": [1.0, 2.0, 3.0, 4.0]}
A = {"cosines": {"T1": [0.9, 0.8, 0.3, 0.6, 0.1, 0.2], "T2": [0.1, 0.3, 0.2, 0.4]}}
B = {"cosines": {"T1": [0.9, 0.8, 0.6, 0.3, 0.1, 0.2], "T2": [0.1, 0.2, 0.3, 0.4]}}


@pytest.fixture(autouse=True)
def tiny_tasks(monkeypatch):
    def load(task):
        n = len(GOLD[task])
        return STSPairs(task, [f"a{i}" for i in range(n)], [f"b{i}" for i in range(n)], np.array(GOLD[task]))

    monkeypatch.setattr(paired, "load_sts_task", load)


def test_interval_equals_a_loop_of_spearmanr_over_the_same_resamples():
    result = paired_sts_bootstrap(A, B, tasks=["T1", "T2"], resamples=200, seed=3)
    rng = np.random.default_rng(3)
    per_task = {}
    for task in ("T1", "T2"):
        gold, a, b = (np.array(x) for x in (GOLD[task], A["cosines"][task], B["cosines"][task]))
        idx = rng.integers(0, len(gold), size=(200, len(gold)))
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            per_task[task] = np.array(
                [100 * (spearmanr(b[i], gold[i]).statistic - spearmanr(a[i], gold[i]).statistic) for i in idx]
            )
        expected = 100 * (spearmanr(b, gold).statistic - spearmanr(a, gold).statistic)
        assert result[task].estimate == pytest.approx(expected)
        finite = per_task[task][np.isfinite(per_task[task])]  # a resample of one repeated pair has no Spearman
        assert 150 < len(finite) <= 200
        assert result[task].low == pytest.approx(np.percentile(finite, 2.5))
        assert result[task].high == pytest.approx(np.percentile(finite, 97.5))
    # by hand, rho = 1 - 6 sum(d^2) / (n (n^2 - 1)): T1 sum d^2 4 -> 2 (n 6), T2 2 -> 0 (n 4)
    assert result["T1"].estimate == pytest.approx(100 * (6 * 4 / 210 - 6 * 2 / 210))
    assert result["T2"].estimate == pytest.approx(100 * (6 * 2 / 60))
    assert result["average"].estimate == pytest.approx((result["T1"].estimate + result["T2"].estimate) / 2)


def test_identical_encoders_give_exactly_zero():
    result = paired_sts_bootstrap(A, A, tasks=["T1", "T2"], resamples=100)
    for interval in result.values():
        assert (interval.estimate, interval.low, interval.high) == (0.0, 0.0, 0.0)


def test_an_eval_without_cosines_names_the_fix():
    with pytest.raises(HardcseError, match="old: its eval.json has no per-pair cosines for T1; evaluate it again"):
        paired_sts_bootstrap({"scores": {}}, B, tasks=["T1"], names=("old", "new"))
