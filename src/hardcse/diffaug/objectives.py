"""DiffAug's two objectives, as sentence-transformers losses over tokenised columns.

- Stage 1, :class:`PrefixPairClassificationLoss` (stage-1 loss): u = f(premise; theta_1), v = f(hypothesis; theta_2),
  cross-entropy of a linear classifier on [u; v; |u - v|] (SBERT's SoftmaxLoss, with a prefix view per side).
- Stage 2, :class:`PrefixContrastiveLoss` (stage-2 loss): the SimCSE loss with tau, the anchor through theta_1 and the
  positive (and hard negative) through theta_2,
      l_i = -log e^{sim(h_i, h_i+)/tau} / sum_j (e^{sim(h_i, h_j+)/tau} [+ e^{sim(h_i, h_j-)/tau}]),
  plus ``aux_weight`` times the stage-1 cross-entropy on the NLI columns of the same rows (semi-supervised + aux).
On an encoder without prefixes the views do not exist and both losses are plain SimCSE / SoftmaxLoss. With a
``head`` (:class:`MLPHead`, SimCSE's and the released code's training-only MLP), every embedding passes through it
before the loss; the head belongs to the loss, so the saved encoder does not have it. Under several processes
every mean is over the whole batch (hardcse/distributed.py: global_mean).
"""

from __future__ import annotations

import torch
from sentence_transformers import SentenceTransformer
from torch import nn

from hardcse.diffaug.prefix import prefixed, with_view
from hardcse.distributed import global_mean
from hardcse.encoder.contrastive import in_batch_contrastive_loss


def embed(
    model: SentenceTransformer, features: dict[str, torch.Tensor], view: int | None, head: nn.Module | None = None
) -> torch.Tensor:
    """Sentence embeddings of tokenised ``features``; through prefix ``view`` when the model has prefixes, then
    through ``head`` when given."""
    if prefixed(model) is not None:
        features = with_view(features, view)
    embedding = model(features)["sentence_embedding"]
    return head(embedding) if head is not None else embedding


class MLPHead(nn.Module):
    """Linear + Tanh on the sentence embedding (SimCSE's MLP over [CLS]), used during training only."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dense = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(x))


class PairClassifier(nn.Module):
    """Logits from [u; v; |u - v|]: one linear layer, as SBERT's SoftmaxLoss and DiffAug's released code."""

    def __init__(self, dim: int, num_labels: int) -> None:
        super().__init__()
        self.linear = nn.Linear(3 * dim, num_labels)

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.linear(torch.cat([u, v, (u - v).abs()], dim=-1))


class PrefixPairClassificationLoss(nn.Module):
    """Columns (premise, hypothesis) + an integer label: cross-entropy, premise via view 0, hypothesis via view 1."""

    def __init__(self, model: SentenceTransformer, classifier: PairClassifier, head: MLPHead | None = None) -> None:
        super().__init__()
        self.model = model
        self.classifier = classifier
        self.head = head

    def forward(self, sentence_features: list[dict[str, torch.Tensor]], labels: torch.Tensor) -> torch.Tensor:
        premise, hypothesis = sentence_features
        u, v = embed(self.model, premise, 0, self.head), embed(self.model, hypothesis, 1, self.head)
        return global_mean(nn.functional.cross_entropy(self.classifier(u, v), labels.long(), reduction="none"))


class PrefixContrastiveLoss(nn.Module):
    """The first ``n_contrastive`` columns are (anchor, positive[, negative]); with an ``aux_classifier`` the next
    two are (premise, hypothesis) of an NLI pair whose integer label is the row's label."""

    def __init__(
        self,
        model: SentenceTransformer,
        tau: float,
        n_contrastive: int,
        aux_classifier: PairClassifier | None = None,
        aux_weight: float = 0.0,
        head: MLPHead | None = None,
    ) -> None:
        super().__init__()
        if n_contrastive not in (2, 3):
            raise ValueError("n_contrastive: 2 (anchor, positive) or 3 (anchor, positive, negative)")
        self.model = model
        self.tau = tau
        self.n_contrastive = n_contrastive
        self.aux_classifier = aux_classifier
        self.aux_weight = aux_weight
        self.head = head

    def forward(self, sentence_features: list[dict[str, torch.Tensor]], labels: torch.Tensor) -> torch.Tensor:
        anchor, positive, *negative = sentence_features[: self.n_contrastive]
        h = embed(self.model, anchor, 0, self.head)
        h_neg = embed(self.model, negative[0], 1, self.head) if negative else None
        loss = in_batch_contrastive_loss(h, embed(self.model, positive, 1, self.head), h_neg, self.tau)
        if self.aux_classifier is not None and self.aux_weight > 0:
            premise, hypothesis = sentence_features[self.n_contrastive : self.n_contrastive + 2]
            u, v = embed(self.model, premise, 0, self.head), embed(self.model, hypothesis, 1, self.head)
            logits = self.aux_classifier(u, v)
            aux = nn.functional.cross_entropy(logits, labels.long(), reduction="none")
            loss = loss + self.aux_weight * global_mean(aux)
        return loss
