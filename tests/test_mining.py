"""Mined negatives (the baseline a user tries first): the library's choice checked against a hand-written
ranking of the same cosines, anchors never mined, missing positives give no negative."""

import numpy as np
import pytest

from hardcse.art.config import FilterConfig, MiningConfig
from hardcse.art.synthesis.filter import drop_reason
from hardcse.art.synthesis.mining import mine_negatives
from hardcse.config import ConfigValueError

ANCHORS = ["A man plays a guitar on stage.", "The child is reading a book.", "A cat sleeps on the sofa."]
POSITIVES = ["On stage a man is playing guitar.", "A kid reads a book.", None]
CORPUS = [
    "A woman plays a violin in a hall.",
    "The boy is writing a letter.",
    "Dogs run in the park.",
    "A man sings a song on stage.",
    "The child is reading a book.",  # an anchor: never a candidate
    "Stock prices fell sharply on Monday.",
    "The girl reads a magazine.",
]


def expected(encoder, anchor: str, positive: str, config: MiningConfig) -> str | None:
    """The top candidate by cosine among the corpus (anchors removed) and every positive but the anchor's own,
    within the top range_max, whose cosine is at least relative_margin x |cos(anchor, positive)| below it."""
    candidates = [s for s in dict.fromkeys(CORPUS + [p for p in POSITIVES if p]) if s not in ANCHORS and s != positive]
    emb = encoder.encode([anchor, positive, *candidates], normalize_embeddings=True)
    pos = float(emb[0] @ emb[1])
    scores = emb[2:] @ emb[0]
    threshold = pos - abs(pos) * config.relative_margin
    for i in np.argsort(-scores)[config.range_min : config.range_max]:
        if scores[i] <= threshold:
            return candidates[i]
    return None


def test_mined_negative_is_the_top_candidate_below_the_margin(tiny_encoder):
    config = MiningConfig(relative_margin=0.0005)  # the tiny random encoder's cosines are all close to 1
    mined = mine_negatives(ANCHORS, POSITIVES, CORPUS, tiny_encoder, config)
    assert mined[2] is None  # no positive, no negative
    for anchor, positive, negative in zip(ANCHORS[:2], POSITIVES[:2], mined[:2], strict=True):
        assert negative == expected(tiny_encoder, anchor, positive, config)
        assert negative not in ANCHORS and negative != positive
    assert mine_negatives(ANCHORS, [None] * 3, CORPUS, tiny_encoder, config) == [None] * 3


def test_a_margin_nothing_passes_gives_no_negative(tiny_encoder):
    """relative_margin 1: only candidates with cosine <= 0 qualify; the tiny encoder has none."""
    config = MiningConfig(relative_margin=1.0)
    assert expected(tiny_encoder, ANCHORS[0], POSITIVES[0], config) is None
    assert mine_negatives(ANCHORS[:1], POSITIVES[:1], CORPUS, tiny_encoder, config) == [None]


def test_mined_negatives_skip_the_contradiction_check_only():
    probs = [0.1, 0.6, 0.3]  # (entailment, neutral, contradiction): neutral
    probs_pos = [0.9, 0.05, 0.05]
    record = {"anchor": "a", "positive": "p", "positive_probs": probs_pos, "negative": "n", "negative_probs": probs}
    strict = FilterConfig(rule="threshold", min_entailment=0.5, min_contradiction=0.5)
    assert drop_reason(record, strict) == "negative_not_contradiction"
    assert drop_reason(record | {"negative_source": "mined"}, strict) is None
    assert (
        drop_reason(record | {"negative_source": "mined", "positive_probs": probs}, strict) == "positive_not_entailed"
    )
    missing = record | {"negative": None, "negative_reason": "not_mined", "negative_source": "mined"}
    assert drop_reason(missing, strict) == "negative_not_mined"


def test_mining_config_errors_name_the_key():
    with pytest.raises(ConfigValueError, match="range_max"):
        MiningConfig(range_min=5, range_max=5)
    with pytest.raises(ConfigValueError, match="sampling_strategy"):
        MiningConfig(sampling_strategy="best")
