"""Hard and correct (issue 41) by hand: the demonstration pool, the shortcut measures, the gated and smoothed
difficulty reward and the penalty terms beside the paper's reward."""

import dataclasses
import math

import numpy as np
import pytest

from hardcse.art.analysis.judge import shortcut_measures
from hardcse.art.config import GeneratorConfig
from hardcse.art.generator.prompts import messages, shown_demonstrations
from hardcse.art.reward.config import RewardConfig
from hardcse.art.reward.dual import dual_reward, reward_terms
from hardcse.art.reward.shortcuts import added_negations, is_deletion, leaked_words
from hardcse.art.reward.terms import TermContext
from hardcse.config import ConfigValueError

POOL = [
    {"anchor": f"anchor number {i} here.", "positive": f"positive {i}.", "negative": f"negative {i}."} for i in range(6)
]
BUDGET = {
    "anchor": "The committee approved the new budget after a long debate.",
    "positive": "The new budget was approved by the committee following a lengthy discussion.",
    "negative": "The committee rejected the new budget without any debate.",
}


def test_all_demonstrations_by_default_and_a_seeded_draw_from_a_pool():
    config = GeneratorConfig(few_shot=POOL)
    assert shown_demonstrations("a cat sleeps.", "positive", config) == POOL  # the paper's way: all, in order
    pool = dataclasses.replace(config, demonstrations=2)
    first = shown_demonstrations("a cat sleeps.", "positive", pool)
    assert len(first) == 2 and all(d in POOL for d in first)
    assert shown_demonstrations("a cat sleeps.", "positive", pool) == first  # the same anchor, the same draw
    draws = {tuple(d["anchor"] for d in shown_demonstrations(f"anchor {i}.", "negative", pool)) for i in range(20)}
    assert len(draws) > 5  # other anchors, other demonstrations
    shown = [m["content"] for m in messages("a cat sleeps.", "positive", pool) if m["role"] == "assistant"]
    assert shown == [d["positive"] for d in first]
    with pytest.raises(ConfigValueError, match="demonstrations: 7 drawn per anchor but few_shot has 6"):
        GeneratorConfig(few_shot=POOL, demonstrations=7)


def test_shortcuts_by_hand():
    anchor = "The old man walked slowly to the station in the rain."
    assert is_deletion(anchor, "The old man walked to the station.")  # 7 words, all the anchor's
    assert not is_deletion(anchor, "An elderly man strolled to the station in the rain.")  # new words
    assert not is_deletion("A cat sleeps.", "A cat sleeps on the sofa.")  # longer
    assert added_negations(anchor, "The old man did not walk to the station.") == {"not"}
    assert added_negations(anchor, "The old man didn't walk.") == {"didn't"}
    assert added_negations("He is not here.", "He is not there.") == set()  # the anchor's own
    answer = "The council rejected the plan without any vote."
    assert leaked_words("The council approved the plan.", answer, [BUDGET], "negative") == {"rejected", "without"}
    assert leaked_words("The council approved the plan.", answer, [BUDGET], "positive") == set()


def test_shortcut_rates_of_records_by_hand():
    records = [
        {
            "anchor": "The old man walked to the station.",
            "positive": "The man walked to the station.",
            "negative": "The old man never walked to the station.",
        },
        {
            "anchor": "A dog barks at the mailman.",
            "positive": "The mailman is barked at by a dog.",
            "negative": "The committee rejected a dog.",
        },
        {"anchor": "Kids play football.", "positive": None, "negative": "Kids play football."},
    ]
    out = shortcut_measures(records, GeneratorConfig(few_shot=[BUDGET]))
    assert out["positive_deletion_rate"] == pytest.approx(1 / 2)
    assert out["negative_added_negation_rate"] == pytest.approx(1 / 3)
    assert out["negative_demonstration_leak_rate"] == pytest.approx(1 / 3)  # "rejected"
    assert out["positive_demonstration_leak_rate"] == 0.0
    assert out["positive_is_negative_rate"] == 0.0
    # word overlap anchor-negative: 6/7, 3/8 ("a", "dog", "the" of 8 distinct words), 1
    assert out["anchor_negative_overlap"] == pytest.approx((6 / 7 + 3 / 8 + 1) / 3)


def test_smoothed_difficulty_has_no_cliff_and_is_the_sign_far_from_it():
    paper = RewardConfig(alpha_pos=0.7, alpha_neg=0.8)
    smooth = dataclasses.replace(paper, r2_smoothing=0.02)
    s = np.array([0.799, 0.801, 0.5])
    negative = np.zeros(3, dtype=bool)
    r2_paper = dual_reward(np.full(3, 0.5), s, negative, paper)[2]
    r2_smooth = dual_reward(np.full(3, 0.5), s, negative, smooth)[2]
    assert r2_paper.tolist() == pytest.approx([0.799, -0.801, 0.5])  # the cliff: 0.002 apart, 1.6 apart
    expected = [0.799 * math.tanh(0.001 / 0.02), -0.801 * math.tanh(0.001 / 0.02), 0.5 * math.tanh(0.3 / 0.02)]
    assert r2_smooth.tolist() == pytest.approx(expected)
    assert abs(r2_smooth[0] - r2_smooth[1]) < 0.1 and r2_smooth[2] == pytest.approx(0.5, abs=1e-9)


def context(probs, cosine):
    probs, cosine = np.array(probs, dtype=float), np.array(cosine, dtype=float)
    return TermContext(probs, cosine, encode=lambda t: None, nli=lambda p, h: None)


def test_gated_difficulty_pays_only_a_judged_correct_answer():
    config = RewardConfig(alpha_pos=0.7, alpha_neg=0.8, r2_gate="judged")
    r2 = {t.name: t for t in reward_terms(config)}["r2"]
    # negatives at cosine 0.6: judged contradiction -> 0.6; judged entailment (an easy wrong one) -> 0
    values = r2.fn(["x", "x"], ["y", "y"], "negative", context([[0.1, 0.2, 0.7], [0.6, 0.3, 0.1]], [0.6, 0.6]))
    assert np.asarray(values).tolist() == pytest.approx([0.6, 0.0])
    # the paper's r2 pays both
    paper = {t.name: t for t in reward_terms(dataclasses.replace(config, r2_gate="none"))}["r2"]
    values = paper.fn(["x", "x"], ["y", "y"], "negative", context([[0.1, 0.2, 0.7], [0.6, 0.3, 0.1]], [0.6, 0.6]))
    assert np.asarray(values).tolist() == pytest.approx([0.6, 0.6])
    with pytest.raises(ConfigValueError, match="r2_gate"):
        RewardConfig(r2_gate="always")


def test_the_penalty_terms_through_the_reward_machinery():
    from hardcse.art.reward.config import RewardTermConfig

    config = RewardConfig(
        terms=[
            RewardTermConfig("hardcse.art.reward.shortcuts:deletion_positive", -0.5),
            RewardTermConfig("hardcse.art.reward.shortcuts:cue_word_negative", -0.25),
        ]
    )
    terms = {t.name: t for t in reward_terms(config)}
    anchors = ["The old man walked to the station.", "The old man walked to the station."]
    deletion = terms["deletion_positive"].fn(
        anchors, ["The man walked.", None], "positive", context([[1, 0, 0]] * 2, [0.9] * 2)
    )
    assert deletion == [1.0, 0.0]  # a rejected answer: no value used
    cue = terms["cue_word_negative"].fn(
        anchors, ["He never walked.", "He ran."], "negative", context([[0, 0, 1]] * 2, [0.5] * 2)
    )
    assert cue == [1.0, 0.0]
    assert terms["cue_word_negative"].fn(
        anchors, ["He never walked.", None], "positive", context([[0, 0, 1]] * 2, [0.5] * 2)
    ) == [0.0, 0.0]
