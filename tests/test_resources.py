import json
import time

import pytest

from hardcse.errors import HardcseError
from hardcse.resources import BUNDLED_ENCODER, resolve_model


def test_bundled_encoder_is_a_sentence_transformers_folder():
    path = resolve_model(BUNDLED_ENCODER)
    assert (path / "modules.json").is_file() and (path / "model.safetensors").is_file()


def test_local_folder_passes_through(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    assert resolve_model(str(tmp_path)) == tmp_path


def test_file_is_not_a_model(tmp_path):
    path = tmp_path / "x.bin"
    path.write_text("x")
    with pytest.raises(HardcseError, match="must be a folder"):
        resolve_model(str(path))


def test_unknown_bundled_name():
    with pytest.raises(HardcseError, match="unknown bundled model"):
        resolve_model("bundled:gpt-5")


def test_uncached_hub_id_fails_fast_offline_with_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(HardcseError, match=r"hub is unreachable.*--local-dir"):
        resolve_model("someone/some-model")
    assert time.perf_counter() - start < 10


def test_missing_path_that_is_not_a_hub_id():
    with pytest.raises(HardcseError, match="no such folder"):
        resolve_model("./not/here/at/all")


def test_a_finished_art_run_stands_for_its_last_rounds_encoder(tmp_path):
    """An ART run folder has no model/: each round keeps its encoder. Finished, it stands for the last round's (round
    10 after round 9, not before it); unfinished, the error says to finish it."""
    run = tmp_path / "art"
    for r in (1, 9, 10, "10.bak"):  # a copy a user left beside the rounds is not one
        (run / f"round_{r}" / "encoder").mkdir(parents=True)
        (run / f"round_{r}" / "encoder" / "config.json").write_text("{}")
    (run / "manifest.json").write_text(json.dumps({"command": "art run", "runs": [{"started": "x"}]}))
    with pytest.raises(HardcseError, match="this ART run has not finished; finish it with --resume"):
        resolve_model(str(run))
    (run / "manifest.json").write_text(json.dumps({"command": "art run", "runs": [{"finished": "2026-11-27"}]}))
    assert resolve_model(str(run)) == run / "round_10" / "encoder"
