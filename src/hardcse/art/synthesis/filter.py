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

``filter.candidates`` k > 1 (best of k, beside the paper): of an anchor's k responses of a kind, synthesis keeps the
hardest one that passes :func:`kind_reason` (:func:`chosen_candidate`), then the triplet faces every check above.

``filter.reject_shortcuts`` (beside the paper, which has no such check), under argmax and threshold: a generated
answer that takes a shortcut (hardcse/art/reward/shortcuts.py) fails its kind: a positive that only deletes words of
its anchor (``positive_deletion``), a generated negative that adds a negation word (``negative_added_negation``).
With best of k another candidate may pass instead. A mined negative is a corpus sentence, not an edit: never
checked for it.
"""

from __future__ import annotations

import math

from hardcse.art.config import FilterConfig
from hardcse.art.reward.dual import TARGET_LABEL, judged
from hardcse.art.reward.shortcuts import added_negations, is_deletion, word_overlap

POSITIVE, NEGATIVE = TARGET_LABEL["positive"], TARGET_LABEL["negative"]  # entailment, contradiction


def drop_reason(record: dict, config: FilterConfig) -> str | None:
    """Why a record's triplet is not kept (the first failing check), or None when it is kept."""
    kinds = [kind for kind in ("positive", "negative", "mined_negative") if kind in record]  # mined: beside one
    for kind in kinds:
        if record[kind] is None:
            return f"{kind}_{record[f'{kind}_reason']}"
    mined = record.get("negative_source") == "mined"
    for kind in kinds:
        mined_kind = mined or kind == "mined_negative"
        reason = kind_reason(kind, (record["anchor"], record[kind]), record[f"{kind}_probs"], config, mined=mined_kind)
        if reason is not None:
            return reason
    if config.rule != "none" and word_overlap(record["positive"], record["negative"]) >= config.max_pair_overlap:
        return "positive_is_negative"
    return None


def kind_reason(
    kind: str, texts: tuple[str, str], probs: list[float], config: FilterConfig, mined: bool = False
) -> str | None:
    """Why one parsed response of ``kind`` (``texts``: its anchor and itself) fails the filter's checks of its kind
    alone (the pair's overlap aside), or None: a positive must be judged entailment; a negative contradiction (a
    mined one is not asked to: a corpus sentence, not an edit) and, mined or not, never entailment (a false
    negative); with ``reject_shortcuts``, a deletion positive and a generated negative adding a negation fail first."""
    if config.rule == "none":
        return None
    if config.reject_shortcuts:
        anchor, answer = texts
        if kind == "positive" and is_deletion(anchor, answer):
            return "positive_deletion"
        if kind != "positive" and not mined and added_negations(anchor, answer):
            return f"{kind}_added_negation"
    if kind == "positive":
        if config.rule == "argmax":
            entailed = judged(probs, POSITIVE, config.margin)[0]
        else:
            entailed = probs[POSITIVE] >= config.min_entailment
        return None if entailed else "positive_not_entailed"
    if not mined:
        if config.rule == "argmax":
            contradiction = judged(probs, NEGATIVE, config.margin)[0]
        else:
            contradiction = probs[NEGATIVE] >= config.min_contradiction
        if not contradiction:
            return f"{kind}_not_contradiction"
    if judged(probs, POSITIVE)[0]:
        return f"{kind}_entailed"
    return None


def chosen_candidate(kind: str, anchor: str, candidates: list[dict], config: FilterConfig) -> dict:
    """Of one anchor's candidates of ``kind`` (each its record fields, ``kind`` prefixed), the one synthesis keeps:
    of those parsed and passing :func:`kind_reason`, the hardest by the difficulty term r2 (the reward where the
    reward has no r2), the first of equals; none passing: the first candidate (its reason becomes the record's).
    The record also says how many passed (``KIND_passing``) and holds the others (``KIND_others``)."""
    if len(candidates) == 1:
        return candidates[0]
    passing = [
        c
        for c in candidates
        if c[kind] is not None and kind_reason(kind, (anchor, c[kind]), c[f"{kind}_probs"], config) is None
    ]
    difficulty = f"{kind}_r2" if f"{kind}_r2" in candidates[0] else f"{kind}_reward"
    best = max(passing, key=lambda c: -math.inf if c[difficulty] is None else c[difficulty], default=candidates[0])
    prefix = f"{kind}_"
    others = [
        {"sentence" if key == kind else key.removeprefix(prefix): value for key, value in c.items()}
        for c in candidates
        if c is not best
    ]
    return best | {f"{kind}_passing": len(passing), f"{kind}_others": others}
