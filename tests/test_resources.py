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
