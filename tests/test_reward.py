import numpy as np
import pytest

from hardcse.art.reward.config import RewardConfig
from hardcse.art.reward.dual import dual_reward

CONFIG = RewardConfig(w1=0.5, w2=0.5, omega=0.6, alpha_pos=0.7, alpha_neg=0.8, invalid_penalty=-1)


def test_positive_reward_by_hand():
    # P = 0.9, s = 0.75 (inside the band): r1 = 0.3, r2 = (1 - .75) * +1 = 0.25, r = 0.275
    r, r1, r2 = dual_reward(np.array([0.9]), np.array([0.75]), np.array([True]), CONFIG)
    assert (r[0], r1[0], r2[0]) == pytest.approx((0.275, 0.3, 0.25))
    # s = 0.5 < alpha_pos: noise, r2 = (1 - .5) * -1 = -0.5
    r, _, r2 = dual_reward(np.array([0.9]), np.array([0.5]), np.array([True]), CONFIG)
    assert r2[0] == pytest.approx(-0.5) and r[0] == pytest.approx(0.5 * 0.3 - 0.25)


def test_negative_reward_by_hand():
    # s = 0.6 <= alpha_neg: r2 = 0.6; P = 0.2 -> r1 = -0.4; r = 0.1
    r, r1, r2 = dual_reward(np.array([0.2]), np.array([0.6]), np.array([False]), CONFIG)
    assert (r[0], r1[0], r2[0]) == pytest.approx((0.1, -0.4, 0.6))
    # s = 0.95 > alpha_neg: near copy, r2 = -0.95
    assert dual_reward(np.array([0.2]), np.array([0.95]), np.array([False]), CONFIG)[2][0] == pytest.approx(-0.95)


def test_sign_of_zero_is_zero():
    _, _, r2 = dual_reward(np.array([0.5, 0.5]), np.array([0.7, 0.8]), np.array([True, False]), CONFIG)
    assert r2.tolist() == [0.0, 0.0]


def test_harder_valid_positive_scores_higher():
    p = np.array([0.9, 0.9])
    r, _, _ = dual_reward(p, np.array([0.95, 0.72]), np.array([True, True]), CONFIG)
    assert r[1] > r[0]


def test_the_summary_splits_the_reward_into_format_r1_and_r2():
    from hardcse.art.reward.dual import RewardParts

    nan = float("nan")
    # two parsed responses (r1, r2) = (0.2, 0.4) and (-0.1, 0.0) with w = (0.5, 0.5), one rejected at -1
    parts = RewardParts(
        reward=np.array([0.3, -0.05, -1.0]),
        terms={"r1": np.array([0.2, -0.1, nan]), "r2": np.array([0.4, 0.0, nan])},
        weights={"r1": 0.5, "r2": 0.5},
        p_target=np.array([0.51, 0.21, nan]),
        cosine=np.array([0.8, 0.9, nan]),
        valid=np.array([True, True, False]),
        probs=np.full((3, 3), nan),
    )
    s = parts.summary()
    assert s["reward_format"] == pytest.approx(-1 / 3)
    assert s["reward_r1"] == pytest.approx(0.5 * 0.1 / 3) and s["reward_r2"] == pytest.approx(0.5 * 0.4 / 3)
    assert s["reward_format"] + s["reward_r1"] + s["reward_r2"] == pytest.approx(s["reward"])
    assert (s["r1"], s["r2"]) == pytest.approx((0.05, 0.2))  # unweighted, over parsed responses
    # shares of |parts| = 1/3 + 1/60 + 1/15 = 5/12: format 0.8, r1 0.04, r2 0.16
    assert (s["share_format"], s["share_r1"], s["share_r2"]) == pytest.approx((0.8, 0.04, 0.16))
    assert s["reward_parsed"] == pytest.approx(0.125) and s["p_target"] == pytest.approx(0.36)
    assert s["reward_parsed_std"] == pytest.approx(0.175)  # population std of 0.3 and -0.05
    assert s["reward_std"] == pytest.approx(np.std([0.3, -0.05, -1.0]))
