import json

import numpy as np
import pytest
import torch
from sentence_transformers.cross_encoder import CrossEncoder

from hardcse.config import load_config
from hardcse.data.nli import LABELS
from hardcse.discriminator.nli import NLIDiscriminator, evaluate_nli, nli_metrics
from hardcse.discriminator.train import NLITrainConfig, nli_run
from hardcse.errors import HardcseError


def test_nli_metrics_by_hand():
    probs = np.eye(3)[[0, 0, 1, 2, 2, 1]]
    labels = [0, 1, 1, 2, 0, 1]
    metrics = nli_metrics(probs, labels)
    assert metrics["accuracy"] == pytest.approx(400 / 6)
    # entailment: tp 1, predicted 2, gold 2 -> P = R = 0.5 -> F1 50
    assert metrics["f1_entailment"] == pytest.approx(50.0)
    # neutral: tp 2, predicted 2, gold 3 -> P 1, R 2/3 -> F1 80
    assert metrics["f1_neutral"] == pytest.approx(80.0)


def test_probabilities_follow_the_fixed_label_order_whatever_the_model_order(tiny_bert_dir):
    order = ["contradiction", "entailment", "neutral"]
    model = CrossEncoder(str(tiny_bert_dir), num_labels=3, config_kwargs={"id2label": dict(enumerate(order))})
    discriminator = NLIDiscriminator(model)
    probs = discriminator.predict_proba(["A man sleeps."] * 2, ["A man rests.", "Nobody sleeps."])
    logits = np.asarray(model.predict([("A man sleeps.", "A man rests.")], activation_fn=lambda x: x))
    raw = np.exp(logits[0]) / np.exp(logits[0]).sum()
    assert probs.shape == (2, 3) and np.allclose(probs.sum(axis=1), 1)
    assert probs[0] == pytest.approx([raw[order.index(label)] for label in LABELS], abs=1e-5)


def test_a_model_without_nli_labels_is_refused(tiny_bert_dir):
    with pytest.raises(HardcseError, match="expected the three labels"):
        NLIDiscriminator(CrossEncoder(str(tiny_bert_dir), num_labels=2))


def test_training_refuses_evaluation_files():
    with pytest.raises(
        HardcseError, match=r"override train_files=\[.*\]: evaluation file\(s\) .* cannot be training data"
    ):
        load_config(NLITrainConfig, overrides=["train_files=[nli/SNLI/test.tsv]"])


def test_train_save_load_evaluate(tiny_bert_dir, tmp_path):
    small = tmp_path / "small.tsv"
    small.write_text(
        "premise\thypothesis\tlabel\nA man sleeps.\tA man rests.\tentailment\nA cat.\tA dog.\tcontradiction\n"
    )
    overrides = [
        f"base_model={tiny_bert_dir}",
        "max_examples=64",
        "training.batch_size=16",
        "training.eval_steps=2",
        f"dev_files=[{small}]",
    ]
    config = load_config(NLITrainConfig, overrides=overrides)
    nli_run(config, tmp_path / "nli", evaluate=False)
    reloaded = NLIDiscriminator.load(str(tmp_path / "nli"))  # the run folder stands for its model/
    training = json.loads((tmp_path / "nli" / "model" / "training.json").read_text())
    assert (
        training["steps"] == 4
        and training["best_step"] in (2, 4)
        and not (tmp_path / "nli" / "model" / "checkpoints").exists()
    )
    again = tmp_path / "again"
    nli_run(config, again, evaluate=False)  # the head is seeded: two runs give the same model
    a = NLIDiscriminator.load(str(again)).predict_proba(["A man sleeps."], ["A man rests."])
    assert a == pytest.approx(reloaded.predict_proba(["A man sleeps."], ["A man rests."]), abs=1e-6)
    results = evaluate_nli(reloaded, {"small": str(small)})
    assert results["small"]["n"] == 2 and 0 <= results["small"]["accuracy"] <= 100


def test_bfloat16_training_runs_under_autocast_and_saves_float32_weights(tiny_bert_dir, tmp_path, monkeypatch):
    from safetensors.torch import load_file

    from hardcse import devices, training
    from hardcse.discriminator.train import train_nli

    small = tmp_path / "small.tsv"
    small.write_text(
        "premise\thypothesis\tlabel\nA man sleeps.\tA man rests.\tentailment\nA cat.\tA dog.\tcontradiction\n"
    )
    base = [f"base_model={tiny_bert_dir}", "training.batch_size=2", "training.eval_steps=100", f"dev_files=[{small}]"]
    base += [f"train_files=[{small}]", "training.epochs=3"]
    weights = {}
    for dtype in ("float32", "bfloat16"):
        trained = train_nli(load_config(NLITrainConfig, overrides=[*base, f"training.dtype={dtype}"]), tmp_path / dtype)
        weights[dtype] = load_file(str(tmp_path / dtype / "model.safetensors"))
        # the model handed back computes what the saved one does once loaded: no autocast left on its forward
        pair = (["A man sleeps.", "A cat."], ["A man rests.", "A dog."])
        loaded = NLIDiscriminator.load(str(tmp_path / dtype)).predict_proba(*pair)
        np.testing.assert_allclose(trained.predict_proba(*pair), loaded, atol=1e-6)
    assert all(w.dtype == torch.float32 for w in weights["bfloat16"].values())  # mixed precision: float32 weights
    moved = [k for k in weights["float32"] if not torch.equal(weights["float32"][k], weights["bfloat16"][k])]
    assert moved  # the steps ran in bfloat16: other numbers than float32's

    settings = load_config(NLITrainConfig, overrides=["training.dtype=auto"]).training
    for native in (True, False):  # auto: bfloat16 only where the device computes it natively
        monkeypatch.setattr(devices, "supports_bfloat16", lambda device, native=native: native)
        assert training.trainer_arguments(tmp_path, settings, None)["bf16"] is native
    with pytest.raises(HardcseError, match="override training.dtype=float16: .float16. is not one of"):
        load_config(NLITrainConfig, overrides=["training.dtype=float16"])
