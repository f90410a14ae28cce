import json

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from conftest import SENTENCES
from hardcse.config import EncoderTrainConfig, load_config
from hardcse.encoder.build import load_encoder
from hardcse.encoder.train import read_training_data, simcse_dataset, train_encoder
from hardcse.errors import HardcseError


@pytest.mark.parametrize("mode", ["sup", "unsup"])
def test_simcse_trains_saves_best_and_reloads(tiny_encoder_dir, triplet_file, tmp_path, mode):
    data = triplet_file if mode == "sup" else SENTENCES
    overrides = [f"model={tiny_encoder_dir}", f"mode={mode}", "max_steps=3", "eval_steps=2", "batch_size=4"]
    config = load_config(EncoderTrainConfig, overrides=overrides + ["learning_rate=1e-3", "max_seq_length=16"])
    before = load_encoder(str(tiny_encoder_dir)).encode(SENTENCES)
    outcome = train_encoder(config, data, tmp_path / "out")
    assert [h["step"] for h in outcome.history] == [2, 3]  # the last step is evaluated too
    assert outcome.best_dev == max(h["sts_dev"] for h in outcome.history)
    reloaded = SentenceTransformer(str(tmp_path / "out"))
    assert reloaded.max_seq_length == 64  # the evaluation length, not the training length
    after = reloaded.encode(SENTENCES)
    assert not np.allclose(before, after)  # training changed the weights
    np.testing.assert_allclose(after, outcome.model.encode(SENTENCES), atol=1e-5)
    assert json.loads((tmp_path / "out" / "training.json").read_text())["best_step"] == outcome.best_step
    assert not (tmp_path / "out" / "checkpoints").exists()


def test_dataset_shapes(triplet_file):
    triplets = read_training_data("sup", triplet_file)
    assert simcse_dataset("sup", triplets).column_names == ["anchor", "positive", "negative"]
    unsup = simcse_dataset("unsup", ["a", "b"])
    assert unsup["anchor"] == unsup["positive"] == ["a", "b"]
    with pytest.raises(HardcseError, match="mode 'semi'"):
        read_training_data("semi", triplet_file)
    with pytest.raises(HardcseError, match="no training data"):
        simcse_dataset("sup", [])


@pytest.mark.parametrize("pooling", ["cls", "cls_mlp", "mean"])
def test_pooling_options(tiny_encoder_dir, pooling):
    model = load_encoder(str(tiny_encoder_dir), pooling)
    assert model.encode(["hello"]).shape == (1, 32)
    assert [type(m).__name__ for m in model][-1] == ("Dense" if pooling == "cls_mlp" else "Pooling")
