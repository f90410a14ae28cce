"""The in-batch contrastive loss of SimCSE, Data-CUBE and DiffAug (it equals sentence-transformers'
``MultipleNegativesRankingLoss`` on the same inputs: tests/test_contrastive.py).

SimCSE's supervised Eq. (5), Data-CUBE's in-batch loss and DiffAug's stage-2 loss, with the positives and hard
negatives of the whole batch as candidates:
    l_i = -log e^{sim(h_i, h_i+)/tau} / sum_j (e^{sim(h_i, h_j+)/tau} [+ e^{sim(h_i, h_j-)/tau}])
Under several processes each holds a slice of the batch: the candidates are gathered from every rank (in batch
order), so each l_i is the one-process value and the mean is over the whole batch (hardcse/distributed.py).
"""

from __future__ import annotations

import torch
from torch import nn

from hardcse.distributed import gather_rows, global_mean


def in_batch_contrastive_loss(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    negatives: torch.Tensor | list[torch.Tensor] | None,
    tau: float,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Mean of l_i over the rows (over the rows whose ``mask`` is 1, when given: a masked row adds no loss of its
    own, but its positive and negative stay candidates of every other row). sim is the cosine. ``negatives``: one
    column of hard negatives, several (each column adds B candidates), or None."""
    h = nn.functional.normalize(anchors, dim=-1)
    all_positives, first = gather_rows(positives)  # this rank's rows are all_positives[first : first + len(h)]
    columns = [] if negatives is None else [negatives] if isinstance(negatives, torch.Tensor) else list(negatives)
    candidates = torch.cat([all_positives, *(gather_rows(column)[0] for column in columns)])
    scores = h @ nn.functional.normalize(candidates, dim=-1).T / tau  # (B, B), (B, 2B), (B, 3B), ...
    targets = torch.arange(first, first + len(h), device=h.device)
    return global_mean(nn.functional.cross_entropy(scores, targets, reduction="none"), mask)


class InBatchContrastiveLoss(nn.Module):
    """:func:`in_batch_contrastive_loss` as a sentence-transformers loss over the columns (anchor, positive[,
    negative, ...]). ``labels_are_mask``: each row's label is its 0/1 loss mask (Data-CUBE's); otherwise labels are
    ignored (SimCSE's)."""

    def __init__(self, model: nn.Module, tau: float, labels_are_mask: bool = False) -> None:
        super().__init__()
        self.model = model
        self.tau = tau
        self.labels_are_mask = labels_are_mask

    def forward(self, sentence_features: list[dict[str, torch.Tensor]], labels: torch.Tensor | None) -> torch.Tensor:
        anchor, positive, *negatives = (self.model(f)["sentence_embedding"] for f in sentence_features)
        mask = labels if self.labels_are_mask else None
        return in_batch_contrastive_loss(anchor, positive, negatives or None, self.tau, mask=mask)
