"""ART's NLI filter: which synthesised triplets are kept for training (``filter`` in the config).

``filter.rule`` (every record of ``synthetic.jsonl`` gets the first check it fails as its ``drop_reason``; None:
kept):
- ``argmax``, the paper's: a positive is kept when the discriminator's predicted label (the most probable of
  entailment, neutral, contradiction) is entailment, a negative when it is contradiction; with ``margin`` > 0
  the target's probability must exceed every other label's by at least the margin;
- ``threshold``: P(entailment | x, y+) >= ``min_entailment`` and P(contradiction | x, y-) >= ``min_contradiction``
  (this project's earlier rule: with bounds summing below 1 one sentence can pass as both positive and negative);
- ``none``: every parsed pair is kept (the paper's "w/o filter" ablation).
Under ``argmax`` and ``threshold`` a triplet is also never kept when its negative is labelled entailment (a false
negative, mined ones included) or when its positive and negative are the same sentence or nearly
(``max_pair_overlap``: the share of their distinct lowercased words they have in common, Jaccard). A mined negative
is not asked to be a contradiction (hardcse/art/synthesis/mining.py): it is a corpus sentence, not an edit; beside
a generated negative (``negatives: both``) it must be mined and not labelled entailment.
"""

from __future__ import annotations

from hardcse.art.config import FilterConfig
from hardcse.art.reward.dual import TARGET_LABEL, judged
from hardcse.art.reward.shortcuts import word_overlap

POSITIVE, NEGATIVE = TARGET_LABEL["positive"], TARGET_LABEL["negative"]  # entailment, contradiction


def drop_reason(record: dict, config: FilterConfig) -> str | None:
    """Why a record's triplet is not kept (the first failing check), or None when it is kept."""
    for kind in ("positive", "negative", "mined_negative"):  # mined_negative: beside a generated one
        if kind in record and record[kind] is None:
            return f"{kind}_{record[f'{kind}_reason']}"
    if config.rule == "none":
        return None
    positive, negative = record["positive_probs"], record["negative_probs"]
    mined = record.get("negative_source") == "mined"
    if config.rule == "argmax":
        if not judged(positive, POSITIVE, config.margin)[0]:
            return "positive_not_entailed"
        if not mined and not judged(negative, NEGATIVE, config.margin)[0]:
            return "negative_not_contradiction"
    else:
        if positive[POSITIVE] < config.min_entailment:
            return "positive_not_entailed"
        if not mined and negative[NEGATIVE] < config.min_contradiction:
            return "negative_not_contradiction"
    if judged(negative, POSITIVE)[0]:  # a negative labelled entailment
        return "negative_entailed"
    if "mined_negative" in record and judged(record["mined_negative_probs"], POSITIVE)[0]:
        return "mined_negative_entailed"  # a second, mined negative (negatives: both) is not asked to contradict
    if word_overlap(record["positive"], record["negative"]) >= config.max_pair_overlap:
        return "positive_is_negative"
    return None
