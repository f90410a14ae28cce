"""Bootstrap intervals against cases whose answer is known by hand."""

import numpy as np
import pytest

from hardcse.stats import bootstrap_mean, paired_bootstrap, seeds_by_items_mean


def test_two_values_give_the_three_possible_means():
    # resampling (0, 1): means 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4 -> the 95% interval is [0, 1]
    interval = bootstrap_mean(np.array([0.0, 1.0]))
    assert (interval.estimate, interval.low, interval.high, interval.n) == (0.5, 0.0, 1.0, 2)
    assert not interval.excludes_zero()


def test_undefined_items_are_left_out_of_the_mean():
    interval = bootstrap_mean(np.array([1.0, np.nan, 3.0, np.nan]))
    assert interval.estimate == 2.0 and interval.n == 2 and 1.0 <= interval.low <= interval.high <= 3.0


def test_identical_sides_differ_by_exactly_zero_and_a_shift_by_exactly_the_shift():
    a = np.random.default_rng(1).normal(size=300)
    same = paired_bootstrap(a, a.copy())["difference"]
    assert (same.estimate, same.low, same.high) == (0.0, 0.0, 0.0)
    shifted = paired_bootstrap(a, a + 0.25)["difference"]
    assert shifted.estimate == pytest.approx(0.25) and shifted.low == pytest.approx(0.25)
    assert shifted.high == pytest.approx(0.25) and shifted.excludes_zero()


def test_pairing_removes_what_the_items_share():
    rng = np.random.default_rng(2)
    item = rng.normal(scale=5.0, size=400)  # per-item difficulty, shared by both sides
    a, b = item + rng.normal(scale=0.1, size=400), item + 0.1 + rng.normal(scale=0.1, size=400)
    result = paired_bootstrap(a, b)
    width = result["difference"].high - result["difference"].low
    assert width < 0.05 and result["difference"].excludes_zero()
    # each side alone is uncertain by the spread of the items: its interval is ~20x wider
    assert result["a"].high - result["a"].low > 10 * width


def test_mismatched_sides_are_refused():
    with pytest.raises(ValueError, match="same items"):
        paired_bootstrap(np.zeros(3), np.zeros(4))


def test_detectable_difference_from_an_intervals_width():
    from hardcse.stats import Interval, detectable_difference

    # SE 1 (a 95% interval of half-width 1.96): 1.96 + 0.8416 at 80% power; 1.96 + 0 at 50%
    assert detectable_difference(Interval(0.3, 0.3 - 1.959964, 0.3 + 1.959964, 10)) == pytest.approx(2.801585, abs=1e-5)
    assert detectable_difference(Interval(0.0, -0.98, 0.98, 10), power=0.5) == pytest.approx(0.98, abs=1e-4)


def test_detectable_difference_from_a_kept_se_and_degrees_of_freedom():
    from hardcse.stats import Interval, detectable_difference

    # half-width 1 (however built) + the power quantile x SE 0.4: t_4 at 80% 0.940965, the normal's 0.841621
    kept = Interval(0.3, -0.7, 1.3, 10, se=0.4, df=4)
    assert detectable_difference(kept) == pytest.approx(1 + 0.940965 * 0.4, abs=1e-5)
    assert detectable_difference(Interval(0.3, -0.7, 1.3, 10, se=0.4)) == pytest.approx(1 + 0.841621 * 0.4, abs=1e-5)
    assert detectable_difference(kept, power=0.5) == pytest.approx(1.0)
    # to_dict names them only where they are known: a percentile interval's dict is as before
    assert kept.to_dict() == {"estimate": 0.3, "low": -0.7, "high": 1.3, "n": 10, "se": 0.4, "df": 4}
    assert set(Interval(0.3, 0.1, 0.5, 10).to_dict()) == {"estimate", "low", "high", "n"}


def test_a_seeds_by_items_mean_counts_the_seeds_spread_with_t_and_the_items_with_z():
    # seeds' means 0.5 and 1.0: V_seeds = 0.125 / 2; items' means 1, 0.5, 1, 0.5: V_items = (1 / 12) / 4;
    # half-width sqrt(t_1(0.975)^2 x 0.0625 + z(0.975)^2 x 0.0208333) = sqrt(12.7062^2 x 0.0625 + 1.95996^2 x ...)
    table = np.array([[1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    interval = seeds_by_items_mean(table)
    assert interval.estimate == 0.75 and interval.n == 8
    assert interval.high - 0.75 == pytest.approx(3.189123, abs=1e-5) and interval.low == pytest.approx(0.75 - 3.189123)
    assert interval.se == pytest.approx(np.sqrt(0.0625 + 1 / 48)) and interval.df == pytest.approx(
        (0.0625 + 1 / 48) ** 2 / 0.0625**2
    )
    # an item undefined under every seed is left out; one seed is the items' bootstrap
    with_undefined = np.column_stack([table, [np.nan, np.nan]])
    assert seeds_by_items_mean(with_undefined) == interval
    assert seeds_by_items_mean(table[:1]) == bootstrap_mean(table[0])
    with pytest.raises(ValueError, match="seeds, items"):
        seeds_by_items_mean(np.zeros(3))
    with pytest.raises(ValueError, match="a seed has no defined item"):
        seeds_by_items_mean(np.vstack([table, np.full(4, np.nan)]))
    # each seed weighs the same, whatever its undefined items: seeds' means 1 and 0.5
    uneven = np.array([[1.0, np.nan, np.nan, np.nan], [1.0, 0.0, 1.0, 0.0]])
    assert seeds_by_items_mean(uneven).estimate == 0.75
