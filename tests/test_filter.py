"""ART's NLI filter by hand: the paper's argmax rule, the threshold rule, none; entailed negatives and a positive
that is its negative are never kept (issue 41)."""

import pytest

from hardcse.art.config import FilterConfig
from hardcse.art.reward.dual import judged
from hardcse.art.reward.shortcuts import word_overlap
from hardcse.art.synthesis.filter import chosen_candidate, drop_reason
from hardcse.config import ConfigValueError

ENTAILED, NEUTRAL, CONTRADICTED = [0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7]
ANCHOR = "A young man plays a red guitar on the stage."


def record(positive_probs, negative_probs, positive="A man plays a guitar.", negative="Nobody plays anything."):
    return {
        "anchor": ANCHOR,
        "positive": positive,
        "positive_probs": positive_probs,
        "negative": negative,
        "negative_probs": negative_probs,
    }


def test_argmax_is_the_predicted_label_and_a_margin_asks_for_more():
    entailment, contradiction = 0, 2
    assert judged(ENTAILED, entailment)[0] and not judged(ENTAILED, contradiction)[0]
    assert judged([0.34, 0.33, 0.33], entailment)[0]  # predicted, however narrowly
    assert not judged([0.34, 0.33, 0.33], entailment, 0.05)[0]  # 0.34 - 0.33 < 0.05
    assert judged([0.5, 0.44, 0.06], entailment, 0.05)[0] and not judged([0.5, 0.46, 0.04], entailment, 0.05)[0]
    # rows at once, a NaN row (a rejected answer) never judged
    nan = float("nan")
    assert judged([ENTAILED, CONTRADICTED, [nan] * 3], entailment).tolist() == [True, False, False]
    assert judged([ENTAILED, [nan] * 3], entailment, 0.05).tolist() == [True, False]


def test_the_papers_rule_keeps_only_judged_pairs():
    paper = FilterConfig()  # rule: argmax, margin 0
    assert drop_reason(record(ENTAILED, CONTRADICTED), paper) is None
    assert drop_reason(record(NEUTRAL, CONTRADICTED), paper) == "positive_not_entailed"
    assert drop_reason(record(ENTAILED, NEUTRAL), paper) == "negative_not_contradiction"
    # P(target) 0.4 each, under the threshold rule's 0.31 both pass; argmax: the positive is contradicted
    split = [0.35, 0.25, 0.4]
    assert drop_reason(record(split, split), paper) == "positive_not_entailed"
    loose = FilterConfig(rule="threshold", min_entailment=0.31, min_contradiction=0.31)
    assert drop_reason(record(split, split, negative="A woman sings."), loose) is None


def test_an_entailed_negative_is_never_kept_not_even_mined():
    loose = FilterConfig(rule="threshold", min_entailment=0.31, min_contradiction=0.31)
    both = [0.45, 0.2, 0.35]  # passes 0.31 as a contradiction, but the discriminator says entailment
    assert drop_reason(record(ENTAILED, both), loose) == "negative_entailed"
    mined = record(ENTAILED, ENTAILED) | {"negative_source": "mined"}  # not asked to contradict, but entailed
    assert drop_reason(mined, FilterConfig()) == "negative_entailed"
    assert drop_reason(mined | {"negative_probs": NEUTRAL}, FilterConfig()) is None


def test_a_positive_that_is_its_negative_is_never_kept():
    assert word_overlap("The cat sat.", "the CAT sat") == 1.0
    assert word_overlap("a b c d", "a b c e") == pytest.approx(3 / 5)
    same = record(ENTAILED, CONTRADICTED, positive="The cat sat on the mat.", negative="The cat sat on the mat!")
    assert drop_reason(same, FilterConfig()) == "positive_is_negative"
    # 9 shared words of 10: overlap 0.9, at the default bound
    near = record(
        ENTAILED,
        CONTRADICTED,
        positive="one two three four five six seven eight nine",
        negative="one two three four five six seven eight nine ten",
    )
    assert drop_reason(near, FilterConfig()) == "positive_is_negative"
    assert drop_reason(near, FilterConfig(max_pair_overlap=0.95)) is None


def test_none_keeps_every_parsed_pair_and_rejections_come_first():
    none = FilterConfig(rule="none")
    same = record(NEUTRAL, ENTAILED, positive="Same words.", negative="Same words.")
    assert drop_reason(same, none) is None
    rejected = same | {"negative": None, "negative_reason": "cut_off"}
    assert drop_reason(rejected, none) == "negative_cut_off"


def test_filter_mistakes_name_their_key():
    with pytest.raises(ConfigValueError, match="rule"):
        FilterConfig(rule="majority")
    with pytest.raises(ConfigValueError, match="margin"):
        FilterConfig(margin=1.5)
    with pytest.raises(ConfigValueError, match="max_pair_overlap"):
        FilterConfig(max_pair_overlap=-0.1)
    with pytest.raises(ConfigValueError, match="candidates"):
        FilterConfig(candidates=0)


def test_a_mined_negative_beside_the_generated_one_must_be_mined_and_not_entailed():
    both = record(ENTAILED, CONTRADICTED) | {"mined_negative": "A dog barks.", "mined_negative_probs": NEUTRAL}
    assert drop_reason(both, FilterConfig()) is None
    assert drop_reason(both | {"mined_negative_probs": ENTAILED}, FilterConfig()) == "mined_negative_entailed"
    missing = both | {"mined_negative": None, "mined_negative_reason": "not_mined"}
    assert drop_reason(missing, FilterConfig()) == "mined_negative_not_mined"


def candidate(kind: str, sentence: str | None, probs, r2: float | None, reward: float = 0.0) -> dict:
    return {
        kind: sentence,
        f"{kind}_reason": None if sentence else "empty",
        f"{kind}_probs": probs,
        f"{kind}_r2": r2,
        f"{kind}_reward": reward,
    }


def test_best_of_k_keeps_the_hardest_candidate_that_passes_its_kind():
    paper = FilterConfig(candidates=4)
    negatives = [
        candidate("negative", "A near copy.", NEUTRAL, 0.9),  # the hardest, but not a contradiction
        candidate("negative", "Nobody sleeps.", CONTRADICTED, 0.4),
        candidate("negative", "A cat never sleeps.", CONTRADICTED, 0.6),  # the hardest that passes
        candidate("negative", None, None, None),  # rejected by the parser
    ]
    best = chosen_candidate("negative", ANCHOR, negatives, paper)
    assert best["negative"] == "A cat never sleeps." and best["negative_passing"] == 2
    assert [o["sentence"] for o in best["negative_others"]] == ["A near copy.", "Nobody sleeps.", None]
    near_copy = {"sentence": "A near copy.", "reason": None, "probs": NEUTRAL, "r2": 0.9, "reward": 0.0}
    assert best["negative_others"][0] == near_copy
    # an entailed negative never passes, however hard; of equals the first
    equals = [candidate("negative", s, CONTRADICTED, 0.5) for s in ("First.", "Second.")]
    entailed = [candidate("negative", "Same thing.", ENTAILED, 0.95), *equals]
    assert chosen_candidate("negative", ANCHOR, entailed, paper)["negative"] == "First."


def test_best_of_k_without_a_passing_candidate_keeps_the_first_and_its_reason():
    positives = [candidate("positive", "Not entailed.", NEUTRAL, 0.3), candidate("positive", None, None, None)]
    first = chosen_candidate("positive", ANCHOR, positives, FilterConfig(candidates=2))
    assert first["positive"] == "Not entailed." and first["positive_passing"] == 0
    triplet = record(ENTAILED, CONTRADICTED) | first
    assert drop_reason(triplet, FilterConfig()) == "positive_not_entailed"
    # one candidate: the record as it was, no count, no others
    assert chosen_candidate("positive", ANCHOR, positives[:1], FilterConfig()) == positives[0]


def test_best_of_k_ranks_by_the_reward_where_the_reward_has_no_r2():
    scored = [candidate("positive", s, ENTAILED, None, reward) for s, reward in (("Low.", 0.1), ("High.", 0.8))]
    without_r2 = [{k: v for k, v in c.items() if k != "positive_r2"} for c in scored]
    assert chosen_candidate("positive", ANCHOR, without_r2, FilterConfig(candidates=3))["positive"] == "High."
    # under rule none every parsed candidate passes: the hardest by r2
    loose = [candidate("positive", "Neutral.", NEUTRAL, 0.7), candidate("positive", "Entailed.", ENTAILED, 0.2)]
    assert (
        chosen_candidate("positive", ANCHOR, loose, FilterConfig(rule="none", candidates=2))["positive"] == "Neutral."
    )


def test_rejecting_shortcuts_fails_deletion_positives_and_added_negations_but_not_mined_negatives():
    strict = FilterConfig(reject_shortcuts=True)
    fair = record(ENTAILED, CONTRADICTED, positive="A man performs music.", negative="A woman sings in a choir.")
    assert drop_reason(fair, strict) is None
    # 6 words, every one the anchor's, fewer than its 10: a deletion
    deletion = fair | {"positive": "A young man plays a guitar."}
    assert drop_reason(deletion, FilterConfig()) is None  # the paper's filter keeps it
    assert drop_reason(deletion, strict) == "positive_deletion"
    negated = fair | {"negative": "A young man does not play a guitar."}
    assert drop_reason(negated, FilterConfig()) is None
    assert drop_reason(negated, strict) == "negative_added_negation"
    # a mined negative is a corpus sentence, not an edit: its negation words are its own
    assert drop_reason(negated | {"negative_source": "mined"}, strict) is None
    both = fair | {"mined_negative": "Nobody was there.", "mined_negative_probs": NEUTRAL}
    assert drop_reason(both, strict) is None
    # the shortcut comes before the discriminator's verdict: one reason, the first check failed
    assert drop_reason(negated | {"negative_probs": NEUTRAL}, strict) == "negative_added_negation"


def test_best_of_k_rejecting_shortcuts_keeps_the_hardest_candidate_without_one():
    strict = FilterConfig(candidates=3, reject_shortcuts=True)
    negatives = [
        candidate("negative", "A young man never plays a red guitar.", CONTRADICTED, 0.9),  # hardest, a negation
        candidate("negative", "A woman sings in a choir.", CONTRADICTED, 0.5),
        candidate("negative", "A young man plays no music.", CONTRADICTED, 0.7),
    ]
    best = chosen_candidate("negative", ANCHOR, negatives, strict)
    assert best["negative"] == "A woman sings in a choir." and best["negative_passing"] == 1
    assert (
        chosen_candidate("negative", ANCHOR, negatives, FilterConfig(candidates=3))["negative"]
        == negatives[0]["negative"]
    )
