import numpy as np
import pytest
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

from conftest import SENTENCES
from hardcse.data.sts import STSPairs, load_sts_task
from hardcse.encoder.encode import encode, token_budget_batches
from hardcse.evaluation.sts import STSEvaluator, STSResult, evaluate_sts, exact_decimals, spearman_of_cosine


def test_token_budget_batches_cover_everything_once_shortest_first():
    lengths = [5, 1, 9, 3, 3, 40, 2]
    batches = token_budget_batches(lengths, tokens_per_batch=10)
    flat = [int(i) for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths)
    assert all(len(b) * max(lengths[i] for i in b) <= 10 or len(b) == 1 for b in batches)
    assert [len(b) for b in batches] == [3, 2, 1, 1]  # (1,2,3) (3,5) (9) (40)


def test_spearman_of_cosine_by_hand():
    e1 = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    e2 = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [-1.0, 0.1]])  # cosines 1, .71, 0, -.99
    assert spearman_of_cosine(e1, e2, np.array([4.0, 3.0, 2.0, 1.0])) == pytest.approx(100.0)
    assert spearman_of_cosine(e1, e2, np.array([1.0, 2.0, 3.0, 4.0])) == pytest.approx(-100.0)
    # ranks of gold (2,1,3,4) vs cosine ranks (4,3,2,1): rho = 1 - 6*sum(d^2)/(n(n^2-1)) = 1 - 6*18/60 = -0.8
    assert spearman_of_cosine(e1, e2, np.array([2.0, 1.0, 3.0, 4.0])) == pytest.approx(-80.0)


def test_eval_json_cosines_rank_as_the_scored_ones():
    """Cosines 1e-7 apart (float32 keeps them apart; six decimals would tie them): read back from the JSON, they
    give the stored score, and each equals the float32 that was scored."""
    import json

    from scipy.stats import spearmanr

    cosines = np.float32(0.5) + np.arange(6, dtype=np.float32) * np.float32(1.2e-7)
    gold = np.array([1.0, 3.0, 2.0, 5.0, 4.0, 6.0])
    result = STSResult({"T": float(spearmanr(cosines, gold).statistic * 100)}, 0.0, 12, cosines={"T": cosines})
    stored = json.loads(json.dumps(result.to_dict()))
    assert len(set(stored["cosines"]["T"])) == 6
    assert np.array_equal(np.float32(stored["cosines"]["T"]), cosines)
    assert spearmanr(stored["cosines"]["T"], gold).statistic * 100 == stored["scores"]["T"]
    assert exact_decimals(np.array([0.1, 1 / 3])) == [0.1, 1 / 3]  # float64 stays exact too
    assert max(len(repr(c)) for c in stored["cosines"]["T"]) <= 11  # "0.50000054": no float64 tail


def test_fast_encode_matches_sentence_transformers(tiny_encoder):
    sentences = SENTENCES + ["word", "A much longer sentence " * 8]
    ours = encode(tiny_encoder, sentences, tokens_per_batch=40)
    theirs = tiny_encoder.encode(sentences, batch_size=3)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    assert encode(tiny_encoder, []).shape == (0, 32)


def test_suite_agrees_with_sentence_transformers_evaluator(tiny_encoder):
    dev = load_sts_task("STS-B-dev")
    pairs = STSPairs("dev200", dev.sentences1[:200], dev.sentences2[:200], dev.scores[:200])
    ours = evaluate_sts(tiny_encoder, [pairs], show_progress=False).scores["dev200"]
    reference = EmbeddingSimilarityEvaluator(pairs.sentences1, pairs.sentences2, pairs.scores.tolist())
    theirs = reference(tiny_encoder)[reference.primary_metric] * 100
    # A random 32-dim model gives near-tied cosines: float noise between the two batchings can swap one pair of
    # ranks (one swap among 200 pairs moves rho by ~0.006); the embeddings themselves agree to 1e-5 (test above).
    assert ours == pytest.approx(theirs, abs=0.02)


def test_trainer_evaluator_restores_the_training_length(tiny_encoder):
    dev = load_sts_task("STS-B-dev")
    pairs = STSPairs("d", dev.sentences1[:50], dev.sentences2[:50], dev.scores[:50])
    tiny_encoder.max_seq_length = 8
    metrics = STSEvaluator(pairs, name="sts-dev", max_seq_length=64)(tiny_encoder)
    assert set(metrics) == {"sts-dev_spearman"} and tiny_encoder.max_seq_length == 8


def test_the_cls_mlp_head_is_drawn_from_its_seed_alone(tiny_encoder_dir):
    import torch

    from hardcse.encoder.build import load_encoder

    torch.manual_seed(123)
    before = torch.get_rng_state()
    heads = [load_encoder(str(tiny_encoder_dir), "cls_mlp", head_seed=s)[2] for s in (7, 7, 8)]
    assert torch.equal(torch.get_rng_state(), before)  # the global generator is untouched
    weights = [h.linear.weight for h in heads]
    assert torch.equal(weights[0], weights[1]) and not torch.equal(weights[0], weights[2])
