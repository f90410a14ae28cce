"""The in-batch contrastive loss that Data-CUBE and DiffAug share (SimCSE itself uses sentence-transformers'
``MultipleNegativesRankingLoss``, which this function equals on the same inputs: tests/test_contrastive.py).

SimCSE's supervised Eq. (5), Data-CUBE's in-batch loss and DiffAug's stage-2 loss, with the positives and hard
negatives of the whole batch as candidates:
    l_i = -log e^{sim(h_i, h_i+)/tau} / sum_j (e^{sim(h_i, h_j+)/tau} [+ e^{sim(h_i, h_j-)/tau}])
"""

from __future__ import annotations

import torch
from torch import nn


def in_batch_contrastive_loss(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    negatives: torch.Tensor | None,
    tau: float,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Mean of l_i over the rows (over the rows whose ``mask`` is 1, when given: a masked row adds no loss of its
    own, but its positive and negative stay candidates of every other row). sim is the cosine."""
    h = nn.functional.normalize(anchors, dim=-1)
    candidates = positives if negatives is None else torch.cat([positives, negatives])
    scores = h @ nn.functional.normalize(candidates, dim=-1).T / tau  # (B, B) or (B, 2B)
    losses = nn.functional.cross_entropy(scores, torch.arange(len(h), device=h.device), reduction="none")
    if mask is None:
        return losses.mean()
    mask = mask.to(losses.dtype)
    return (losses * mask).sum() / mask.sum().clamp(min=1.0)
