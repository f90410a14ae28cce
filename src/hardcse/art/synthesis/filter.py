"""ART's NLI filter: which synthesised triplets are kept for training (``filter`` in the config).

The paper keeps a generated positive the discriminator judges entailed by its anchor and a negative it judges a
contradiction. Every record of ``synthetic.jsonl`` gets the first check it fails as its ``drop_reason`` (None: kept).
"""

from __future__ import annotations

from hardcse.art.config import FilterConfig
from hardcse.data.nli import LABEL_ID


def drop_reason(record: dict, config: FilterConfig) -> str | None:
    """Why a record's triplet is not kept (the first failing check), or None when it is kept. A mined negative
    is not checked for contradiction (see hardcse/art/synthesis/mining.py)."""
    for kind in ("positive", "negative"):
        if record[kind] is None:
            return f"{kind}_{record[f'{kind}_reason']}"
    if record["positive_probs"][LABEL_ID["entailment"]] < config.min_entailment:
        return "positive_not_entailed"
    mined = record.get("negative_source") == "mined"
    if not mined and record["negative_probs"][LABEL_ID["contradiction"]] < config.min_contradiction:
        return "negative_not_contradiction"
    return None
