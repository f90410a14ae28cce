"""The baseline a user tries first: positives as the LLM writes them, negatives mined from the corpus.

For each anchor with an accepted positive, sentence-transformers' ``mine_hard_negatives`` ranks the corpus by
the current encoder's cosine to the anchor and takes the top candidate that stays ``relative_margin`` below
the positive's score (the NV-Retriever "TopK-PercPos" setting its docs recommend: relative_margin 0.05,
sampling "top"). The anchors themselves are removed from the candidates; an anchor without a candidate that
passes the margin gets no negative (reason ``not_mined``), never a silent fallback.
"""

from __future__ import annotations

from collections.abc import Sequence

from sentence_transformers import SentenceTransformer

from hardcse.art.config import MiningConfig


def mine_negatives(
    anchors: Sequence[str],
    positives: Sequence[str | None],
    corpus: Sequence[str],
    encoder: SentenceTransformer,
    config: MiningConfig,
) -> list[str | None]:
    """One mined negative per anchor (None where its positive is missing or no candidate passes the margin)."""
    from datasets import Dataset
    from sentence_transformers.util import mine_hard_negatives

    pairs = [(a, p) for a, p in zip(anchors, positives, strict=True) if p is not None]
    if not pairs:
        return [None] * len(anchors)
    excluded = set(anchors)
    candidates = [s for s in dict.fromkeys(corpus) if s not in excluded]
    mined = mine_hard_negatives(
        Dataset.from_dict({"anchor": [a for a, _ in pairs], "positive": [p for _, p in pairs]}),
        encoder,
        corpus=candidates,
        range_min=config.range_min,
        range_max=config.range_max,
        relative_margin=config.relative_margin,
        sampling_strategy=config.sampling_strategy,
        num_negatives=1,
        output_format="triplet",
        batch_size=64,
        verbose=False,
    )
    found = dict(zip(mined["anchor"], mined["negative"], strict=True))
    return [found.get(a) if p is not None else None for a, p in zip(anchors, positives, strict=True)]
