"""The shared in-batch contrastive loss: by hand, and equal to sentence-transformers' MNRL (SimCSE's loss)."""

import math

import pytest
import torch
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

from conftest import SENTENCES
from hardcse.encoder.contrastive import in_batch_contrastive_loss


def test_by_hand_with_a_mask():
    h = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    pos = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    neg = torch.tensor([[0.0, 1.0], [0.0, -1.0]])
    tau = 0.5
    # row 0: sims to [pos0, pos1, neg0, neg1] = [1, 1, 0, 0]; row 1: [0, 0, 1, -1]
    l0 = -math.log(math.exp(2) / (2 * math.exp(2) + 2))
    l1 = -math.log(1 / (2 + math.exp(2) + math.exp(-2)))
    assert in_batch_contrastive_loss(h, pos, neg, tau).item() == pytest.approx((l0 + l1) / 2, rel=1e-6)
    assert in_batch_contrastive_loss(h, pos, neg, tau, mask=torch.tensor([1, 0])).item() == pytest.approx(l0)
    # without negatives: the positives of the batch only
    l0 = -math.log(math.exp(2) / (2 * math.exp(2)))
    assert in_batch_contrastive_loss(h[:1], pos[:1], None, tau).item() == pytest.approx(-math.log(1.0), abs=1e-6)
    assert in_batch_contrastive_loss(h, pos, None, tau, mask=torch.tensor([1, 0])).item() == pytest.approx(l0)


def test_two_negative_columns_by_hand():
    h = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    pos = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    neg = torch.tensor([[0.0, 1.0], [0.0, -1.0]])
    neg2 = torch.tensor([[-1.0, 0.0], [0.0, 1.0]])
    tau = 0.5
    # row 0: sims to [pos0, pos1, neg0, neg1, neg2_0, neg2_1] = [1, 1, 0, 0, -1, 0]; row 1: [0, 0, 1, -1, 0, 1]
    l0 = -math.log(math.exp(2) / (2 * math.exp(2) + 3 + math.exp(-2)))
    l1 = -math.log(1 / (3 + 2 * math.exp(2) + math.exp(-2)))
    loss = in_batch_contrastive_loss(h, pos, [neg, neg2], tau)
    assert loss.item() == pytest.approx((l0 + l1) / 2, rel=1e-6)
    assert in_batch_contrastive_loss(h, pos, [neg], tau).item() == in_batch_contrastive_loss(h, pos, neg, tau).item()


@pytest.mark.parametrize("negatives", [0, 1, 2])
def test_equals_mnrl_on_the_same_inputs(tiny_encoder, negatives):
    tiny_encoder.eval()  # no dropout: both losses see the same embeddings
    columns = [SENTENCES[:4], SENTENCES[2:6], SENTENCES[4:8], SENTENCES[1:5]][: 2 + negatives]
    features = [tiny_encoder.preprocess(c) for c in columns]
    tau = 0.05
    mnrl = MultipleNegativesRankingLoss(tiny_encoder, scale=1 / tau)(features, None)
    embeddings = [tiny_encoder(f)["sentence_embedding"] for f in features]
    ours = in_batch_contrastive_loss(embeddings[0], embeddings[1], embeddings[2:] or None, tau)
    assert ours.item() == pytest.approx(mnrl.item(), rel=1e-5)
