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


def test_the_reward_by_cosine_bin_by_hand():
    from hardcse.art.analysis.reward_bins import reward_by_cosine_bin
    from hardcse.art.reward.dual import RewardParts

    nan = float("nan")
    # positives at cosines 0.5, 0.97, 0.99, 1.0; negatives at 0.99 and 0.5; one rejected positive
    cosine = np.array([0.5, 0.97, 0.99, 1.0, 0.99, 0.5, nan])
    kinds = ["positive"] * 4 + ["negative"] * 2 + ["positive"]
    parts = RewardParts(
        reward=np.array([0.1, 0.2, 0.3, 0.5, -0.4, 0.4, -1.0]),
        terms={},
        weights={},
        p_target=np.array([0.2, 0.6, 0.8, 0.9, 0.7, 0.1, nan]),
        cosine=cosine,
        valid=np.isfinite(cosine),
        probs=np.full((7, 3), nan),
    )
    # the judge (entailment, neutral, contradiction): entailment for all but the 0.99 positive; the negatives
    # at 0.99 contradiction, at 0.5 neutral
    judge = np.array([[0.8, 0.1, 0.1]] * 7)
    judge[2] = [0.1, 0.8, 0.1]
    judge[4] = [0.1, 0.1, 0.8]
    judge[5] = [0.1, 0.8, 0.1]
    bins = {(b.kind, b.label): b for b in reward_by_cosine_bin(parts, kinds, judge)}
    assert len(bins) == 12 and sum(b.n for b in bins.values()) == 6  # the rejected one is in no bin
    low = bins[("positive", "< 0.60")]
    assert (low.n, low.reward, low.p_target, low.judged_correct) == (1, 0.1, 0.2, 1.0)
    assert bins[("positive", "0.95-0.98")].n == 1
    top = bins[("positive", "0.98-1.00")]  # 0.99 and 1.0 (the last bin holds its upper edge)
    assert top.n == 2 and top.reward == pytest.approx(0.4) and top.p_target == pytest.approx(0.85)
    assert top.judged_correct == pytest.approx(0.5)
    close = bins[("negative", "0.98-1.00")]
    assert (close.n, close.reward, close.judged_correct) == (1, -0.4, 1.0)
    assert bins[("negative", "< 0.60")].judged_correct == 0.0
    empty = bins[("negative", "0.60-0.75")]
    assert (empty.n, empty.reward, empty.p_target) == (0, None, None)
    assert reward_by_cosine_bin(parts, kinds)[0].judged_correct is None  # no judge, no verdict


def test_the_rewards_cosines_run_in_the_engine_it_was_given_not_the_environments(monkeypatch):
    """A command passes its engine to the reward: the encoder's cosines (and a term's encode) run there whatever
    HARDCSE_ENGINE says, so the tuned generator's cache key (which names the command's engine) tells the truth."""
    import hardcse.art.reward.dual as dual
    from hardcse.art.generator.parsing import Parsed
    from hardcse.engines import Engine

    class Discriminator:
        def predict_proba(self, premises, hypotheses):
            return np.tile([0.8, 0.1, 0.1], (len(premises), 1))

    seen = []
    monkeypatch.setattr(
        dual, "pair_cosines", lambda model, xs, ys, engine=None: seen.append(engine) or np.ones(len(xs))
    )
    monkeypatch.setenv("HARDCSE_ENGINE", "openvino")
    reward = dual.Reward(Discriminator(), object(), RewardConfig(), Engine("torch"))
    parsed = [Parsed(sentence="A man sleeps.")]
    reward(["A man rests."], parsed, ["positive"])
    assert seen == [Engine("torch")]
