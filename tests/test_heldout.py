"""Raw vs tuned on held-out anchors: per-anchor measures checked by hand, paired intervals, the table."""

import numpy as np
import pytest

from hardcse.art.synthesis.heldout import compare, compare_markdown, per_anchor
from hardcse.data.nli import LABEL_ID
from hardcse.encoder.encode import pair_cosines


class KeywordJudge:
    """A judge whose label is written in the output: "ent" entailment, "con" contradiction, else neutral."""

    def predict_proba(self, anchors, outputs):
        probs = np.zeros((len(outputs), 3))
        for i, text in enumerate(outputs):
            label = "entailment" if "ent" in text else "contradiction" if "con" in text else "neutral"
            probs[i, LABEL_ID[label]] = 1.0
        return probs


def record(anchor, positive, negative, rewards):
    """A synthetic.jsonl record; the discriminator's P(target) of a parsed response is 0.5 + its reward / 2, its
    correctness reward r1 a fifth of its reward and its difficulty reward r2 a tenth."""

    def probs(text, reward, target):
        return None if text is None else [(0.5 + reward / 2) if i == LABEL_ID[target] else 0.0 for i in range(3)]

    return {"anchor": anchor, "positive": positive, "negative": negative} | {
        "positive_reward": rewards[0],
        "negative_reward": rewards[1],
        "positive_probs": probs(positive, rewards[0], "entailment"),
        "negative_probs": probs(negative, rewards[1], "contradiction"),
        "positive_r1": None if positive is None else rewards[0] / 5,
        "negative_r1": None if negative is None else rewards[1] / 5,
        "positive_r2": None if positive is None else rewards[0] / 10,
        "negative_r2": None if negative is None else rewards[1] / 10,
    }


RAW = [
    record("the cat runs", "a cat ent", "a dog con", (0.2, -0.4)),  # both judged as asked
    record("a dog sleeps", "a dog con", None, (0.3, -1.0)),  # positive judged wrong, negative rejected
    record("the dog runs", None, None, (-1.0, -1.0)),  # nothing parsed: judged_correct undefined
]
TUNED = [
    record("the cat runs", "a cat ent", "a dog con", (0.4, 0.0)),
    record("a dog sleeps", "a dog ent", "a cat con", (0.3, 0.1)),
    record("the dog runs", "the dog neutral", None, (0.1, -1.0)),
]


def test_per_anchor_measures_by_hand(tiny_encoder):
    m = per_anchor(RAW, KeywordJudge(), tiny_encoder)
    assert m["reward"].tolist() == pytest.approx([-0.1, -0.35, -1.0])
    assert m["parse_failure"].tolist() == [0.0, 0.5, 1.0]
    assert m["judged_correct"][:2].tolist() == [1.0, 0.0] and np.isnan(m["judged_correct"][2])
    cos = pair_cosines(tiny_encoder, ["the cat runs", "a dog sleeps"], ["a cat ent", "a dog con"])
    assert m["positive_cosine"][:2] == pytest.approx(cos) and np.isnan(m["positive_cosine"][2])
    assert np.isnan(m["negative_cosine"][1:]).all()
    assert np.isnan(per_anchor(RAW, None, tiny_encoder)["judged_correct"]).all()  # no judge: undefined
    # Table 4's accuracy counts a rejected answer as wrong: anchor 2's negative and anchor 3's two
    assert m["synthetic_accuracy_positive"].tolist() == [1.0, 0.0, 0.0]
    assert m["synthetic_accuracy_negative"].tolist() == [1.0, 0.0, 0.0]
    assert m["synthetic_accuracy"].tolist() == [1.0, 0.0, 0.0]
    assert np.isnan(per_anchor(RAW, None, tiny_encoder)["synthetic_accuracy"]).all()
    reasons = [None, "negative_cut_off", "positive_empty"]
    kept = [r | {"drop_reason": reason} for r, reason in zip(RAW, reasons, strict=True)]
    assert per_anchor(kept, None, tiny_encoder)["kept"].tolist() == [1.0, 0.0, 0.0]
    # format set aside: the parsed responses alone (anchor 2's rejected negative and anchor 3 drop out)
    assert m["reward_parsed"][:2].tolist() == pytest.approx([-0.1, 0.3]) and np.isnan(m["reward_parsed"][2])
    assert m["p_target_parsed"][:2].tolist() == pytest.approx([0.45, 0.65]) and np.isnan(m["p_target_parsed"][2])
    assert m["r2_parsed"][:2].tolist() == pytest.approx([-0.01, 0.03]) and np.isnan(m["r2_parsed"][2])
    assert m["r1_parsed"][:2].tolist() == pytest.approx([-0.02, 0.06])


def test_compare_pairs_the_same_anchors(tiny_encoder):
    result = compare(RAW, TUNED, KeywordJudge(), tiny_encoder)
    reward = result["reward"]
    assert reward["raw"]["estimate"] == pytest.approx(np.mean([-0.1, -0.35, -1.0]), abs=1e-4)
    assert reward["tuned"]["estimate"] == pytest.approx(np.mean([0.2, 0.2, -0.45]), abs=1e-4)
    assert reward["difference"]["estimate"] == pytest.approx(np.mean([0.3, 0.55, 0.55]), abs=1e-4)
    # every anchor improves by 0.3-0.55: every resample of anchors does too
    assert 0.3 - 1e-9 <= reward["difference"]["low"] <= reward["difference"]["high"] <= 0.55 + 1e-9
    assert result["judged_correct"]["tuned"]["n"] == 3 and result["judged_correct"]["raw"]["n"] == 2
    same = compare(RAW, RAW, KeywordJudge(), tiny_encoder)["reward"]["difference"]
    assert same == {"estimate": 0.0, "low": 0.0, "high": 0.0, "n": 3}
    assert compare(RAW, TUNED, None, tiny_encoder)["judged_correct"] is None
    table = compare_markdown(result)
    assert "| reward | -0.483 [" in table and " * |" in table and "| judged_correct |" in table
    with pytest.raises(ValueError, match="same anchors"):
        compare(RAW, TUNED[::-1], None, tiny_encoder)


def test_correctness_per_kind_difficulty_of_correct_answers_and_shortcuts_by_hand(tiny_encoder):
    from hardcse.art.config import GeneratorConfig

    generator = GeneratorConfig(
        few_shot=[
            {
                "anchor": "The committee approved the new budget.",
                "positive": "The new budget was approved by the committee.",
                "negative": "The committee rejected the new budget.",
            }
        ]
    )
    x = "the gentle old man reads a long book in the garden"
    records = [
        # a deletion positive judged entailment ("ent" in gentle); a negative that adds "not", judged contradiction
        record(x, "the gentle man reads a book in the garden", "the old man does not read a long book con", (0, 0)),
        # a positive judged neutral (wrong); a negative with the demonstration's "rejected", judged neutral
        record(x, "an old man is reading in a garden", "the old man rejected the long book in the garden", (0, 0)),
        record(x, None, None, (-1.0, -1.0)),
    ]
    m = per_anchor(records, KeywordJudge(), tiny_encoder, generator=generator)
    assert m["positive_judged"][:2].tolist() == [1.0, 0.0] and np.isnan(m["positive_judged"][2])
    assert m["negative_judged"][:2].tolist() == [1.0, 0.0]
    # the difficulty of correct answers: the cosine where the judge agrees, undefined elsewhere
    assert m["positive_cosine_judged"][0] == pytest.approx(m["positive_cosine"][0])
    assert np.isnan(m["positive_cosine_judged"][1:]).all() and np.isnan(m["negative_cosine_judged"][1:]).all()
    assert m["negative_cosine_judged"][0] == pytest.approx(m["negative_cosine"][0])
    assert m["positive_deletion"][:2].tolist() == [1.0, 0.0] and np.isnan(m["positive_deletion"][2])
    assert m["negative_added_negation"][:2].tolist() == [1.0, 0.0]
    assert m["negative_leak"][:2].tolist() == [0.0, 1.0] and m["positive_leak"][:2].tolist() == [0.0, 0.0]
    assert np.isnan(per_anchor(records, KeywordJudge(), tiny_encoder)["negative_leak"]).all()  # no prompts known
    assert np.isnan(per_anchor(records, None, tiny_encoder)["positive_judged"]).all()  # no judge: undefined


def test_the_reports_first_line_states_rls_effect_or_why_there_is_none():
    """The last round with a held-out comparison speaks, each measure with its verdict; a raw-generator run, a run
    with the comparison off, and one that has not compared yet each say so plainly."""
    from hardcse.art.synthesis.heldout import effect_line

    def measure(low: float, estimate: float, high: float) -> dict:
        return {"difference": {"estimate": estimate, "low": low, "high": high, "n": 12}}

    config = {"tune_generator": True, "heldout_anchors": 12}
    not_yet = "not measured yet: no round has compared the raw and the tuned generator."
    assert effect_line(config, []).endswith(not_yet)
    assert effect_line({"tune_generator": True}, []).endswith(not_yet)  # a folder from before heldout_anchors
    assert "the held-out comparison is off (`heldout_anchors: 0`)" in effect_line(config | {"heldout_anchors": 0}, [])
    assert "without RL" in effect_line({"tune_generator": False}, [])
    first = ("round_1", {"anchors": 12, "reward": measure(0.01, 0.05, 0.09)})
    nan = float("nan")
    empty = {"anchors": 12, "reward": measure(-0.1, 0.02, 0.14), "p_target_parsed": measure(nan, nan, nan)}
    assert "P(target) of parsed answers not measured" in effect_line(config, [first, ("round_2", empty)])
    last = {"anchors": 12, "reward": measure(-0.1, 0.02, 0.14), "p_target_parsed": measure(0.011, 0.03, 0.049)}
    assert effect_line(config, [first, ("round_2", last)]) == (
        "**What RL did** (round_2: the tuned against the raw generator on 12 held-out anchors, 95% intervals): "
        "reward no detectable difference (+0.020 [-0.100, +0.140]); the discriminator's P(target) of parsed "
        "answers higher by 0.030 (+0.030 [+0.011, +0.049])."
    )
    # the judge's accuracy first, both generators' and the difference; without a judge it says so
    accuracy = measure(0.01, 0.04, 0.07) | {"raw": {"estimate": 0.41}, "tuned": {"estimate": 0.45}}
    assert effect_line(config, [("round_1", last | {"synthetic_accuracy": accuracy})]).startswith(
        "**What RL did** (round_1: the tuned against the raw generator on 12 held-out anchors, 95% intervals): "
        "synthetic accuracy (by the judge) 0.450 tuned against 0.410 untuned, higher by 0.040 (+0.040 [+0.010, "
        "+0.070]); reward no detectable difference"
    )
    no_judge = effect_line(config, [("round_1", last | {"synthetic_accuracy": None})])
    assert "synthetic accuracy (by the judge) not measured (no `judge`); reward" in no_judge
