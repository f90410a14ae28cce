import json

import numpy as np
import pytest
import torch
from huggingface_hub import ModelCard
from sentence_transformers import SentenceTransformer

from conftest import SENTENCES
from hardcse.cli import main as hardcse
from hardcse.config import load_config
from hardcse.encoder.build import load_encoder
from hardcse.encoder.simcse import SimCSEConfig, read_training_data, simcse_dataset, train_simcse
from hardcse.engines import Engine
from hardcse.errors import HardcseError
from hardcse.evaluation.sts import dev_evaluator


@pytest.mark.parametrize(("mode", "dtype"), [("sup", "float32"), ("unsup", "float32"), ("sup", "bfloat16")])
def test_simcse_trains_saves_best_and_reloads(tiny_encoder_dir, triplet_file, tmp_path, mode, dtype):
    data = triplet_file if mode == "sup" else SENTENCES
    training = ["training.max_steps=3", "training.eval_steps=2", "training.batch_size=4", f"training.dtype={dtype}"]
    training += ["training.learning_rate=1e-3", "training.max_seq_length=16"]
    config = load_config(SimCSEConfig, overrides=[f"encoder={tiny_encoder_dir}", f"mode={mode}", *training])
    if mode == "sup":
        data = read_training_data("sup", data)
    before = load_encoder(str(tiny_encoder_dir)).encode(SENTENCES)
    model = load_encoder(str(tiny_encoder_dir))
    outcome = train_simcse(
        model,
        data,
        mode,
        config,
        tmp_path / "out",
        evaluator=dev_evaluator(model.max_seq_length, Engine.from_environment()),
    )
    history = outcome.record["dev_history"]
    assert [h["step"] for h in history] == [2, 3]  # the last step is evaluated too
    assert outcome.best_dev == max(h["dev"] for h in history)
    reloaded = SentenceTransformer(str(tmp_path / "out"))
    assert reloaded.max_seq_length == 64  # the evaluation length, not the training length
    after = reloaded.encode(SENTENCES)
    assert not np.allclose(before, after)  # training changed the weights
    # the model handed back computes as the saved one (bfloat16: no autocast left on its forward)
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


def test_cli_run_folder_before_after_resume_and_refusals(tiny_encoder_dir, triplet_file, tmp_path, capsys):
    out = tmp_path / "run"
    args = ["simcse", "train", "--data", str(triplet_file), "--out", str(out), f"encoder={tiny_encoder_dir}"]
    small = ["training.max_steps=2", "training.eval_steps=1", "training.batch_size=4", "eval_tasks=[STS-B-dev]"]
    assert hardcse([*args, *small]) == 2  # no --config and no --resume
    assert "give --config" in capsys.readouterr().err
    config = tmp_path / "c.yaml"
    config.write_text("mode: sup\n")
    assert hardcse([*args, "--config", str(config), *small]) == 0
    printed = capsys.readouterr().out
    assert "(before)" in printed and "(after)" in printed
    assert {"config.yaml", "manifest.json", "run.log", "eval_before.json", "model", "eval.json"} <= {
        p.name for p in out.iterdir()
    }
    assert SentenceTransformer(str(out / "model")).encode(["hi"]).shape == (1, 32)
    card = ModelCard.load(out / "model" / "README.md")  # the hub's own reader: metadata and results parse
    assert card.data.library_name == "sentence-transformers" and "simcse" in card.data.tags
    [result] = card.data.eval_results
    dev = json.loads((out / "eval.json").read_text())["scores"]["STS-B-dev"]
    assert (result.dataset_name, result.metric_type) == ("STS-B-dev", "spearman_cosine")
    assert result.metric_value == round(dev / 100, 5)
    assert f"hardcse simcse train --config {out / 'config.yaml'}" in card.text
    assert f"It was made by `hardcse simcse train --data {triplet_file}" in card.text
    assert "decontamination: 0 of 8 rows dropped" in card.text and "mode: sup" in card.text
    assert hardcse([*args, "--config", str(config), *small]) == 2  # a finished folder is not overwritten
    assert "--overwrite" in capsys.readouterr().err
    assert hardcse([*args, "--resume", *small]) == 0  # everything done: nothing redone
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    assert all(s["attempts"] == 1 for s in stages.values())
    assert hardcse([*args, "--resume", *small[1:], "training.max_steps=3"]) == 2
    assert "differs from" in capsys.readouterr().err


def test_what_the_loss_trains_beside_the_model_goes_into_every_checkpoint(tmp_path):
    """A classifier or head owned by the loss is not in the trainer's checkpoints: the job writes it there and a
    resumed job reads it back."""
    from types import SimpleNamespace

    from safetensors.torch import load_file

    from hardcse.training import LOSS_STATE, LossStateCheckpoint, loss_owned_state

    loss = torch.nn.Module()
    loss.model, loss.head = torch.nn.Linear(2, 2), torch.nn.Linear(2, 3)
    (tmp_path / "checkpoint-3").mkdir()
    LossStateCheckpoint(loss).on_save(SimpleNamespace(output_dir=str(tmp_path)), SimpleNamespace(global_step=3), None)
    saved = load_file(str(tmp_path / "checkpoint-3" / LOSS_STATE))
    assert set(saved) == {"head.weight", "head.bias"} and set(loss_owned_state(loss)) == set(saved)
    assert torch.equal(saved["head.weight"], loss.head.weight)
