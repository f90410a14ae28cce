from pathlib import Path

import pytest

from hardcse.config import (
    ArtRunConfig,
    CurriculumConfig,
    DiffAugConfig,
    EncoderTrainConfig,
    NLITrainConfig,
    TuneConfig,
    load_config,
    save_config,
)
from hardcse.diffaug.train import validate
from hardcse.errors import HardcseError


def test_defaults_are_the_documented_values():
    config = load_config(EncoderTrainConfig)
    assert config.temperature == 0.05 and config.max_seq_length == 32 and config.mode == "sup"


def test_yaml_then_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("batch_size: 16\nlearning_rate: 1\n")
    config = load_config(EncoderTrainConfig, path, ["batch_size=8", "max_examples=100", "mode=unsup"])
    assert config.batch_size == 8 and config.learning_rate == 1.0 and config.max_examples == 100
    assert load_config(EncoderTrainConfig, overrides=["learning_rate=1e-7"]).learning_rate == 1e-7
    assert config.mode == "unsup"


def test_list_override_and_roundtrip(tmp_path):
    config = load_config(NLITrainConfig, overrides=["train_files=[a.tsv, b.tsv]", "max_examples=null"])
    assert config.train_files == ["a.tsv", "b.tsv"] and config.max_examples is None
    save_config(config, tmp_path / "out.yaml")
    assert load_config(NLITrainConfig, tmp_path / "out.yaml") == config


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("batch_sise=3", "unknown key"),
        ("batch_size=many", "expected int"),
        ("length_grouped=3", "expected true/false"),
        ("nonsense", "write key=value"),
    ],
)
def test_bad_overrides_say_what_is_wrong(override, message):
    with pytest.raises(HardcseError, match=message):
        load_config(NLITrainConfig, overrides=[override])


def test_bad_yaml_names_the_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("a: [1, 2\n")
    with pytest.raises(HardcseError, match="c.yaml: not valid YAML"):
        load_config(EncoderTrainConfig, path)


CONFIG_CLASSES = {
    "simcse-sup.yaml": EncoderTrainConfig,
    "nli-discriminator.yaml": NLITrainConfig,
    "nli-judge.yaml": NLITrainConfig,
    "tune-cpu.yaml": TuneConfig,
    "few-shot.yaml": TuneConfig,
}


def test_every_shipped_config_loads():
    configs = sorted((Path(__file__).parents[1] / "configs").glob("*.yaml"))
    assert len(configs) >= 30
    prefixes = {"datacube": CurriculumConfig, "diffaug": DiffAugConfig}
    for path in configs:
        default = prefixes.get(path.name.split("-")[0], ArtRunConfig)
        config = load_config(CONFIG_CLASSES.get(path.name, default), path)
        if isinstance(config, DiffAugConfig):
            validate(config, [2] if config.method == "simcse" else config.stages)


def test_a_config_inherits_its_base_key_by_key(tmp_path):
    (tmp_path / "base.yaml").write_text("rounds: 3\nppo:\n  steps: 20\n  batch_size: 16\n")
    (tmp_path / "child.yaml").write_text("base: base.yaml\nppo:\n  steps: 5\n")
    config = load_config(ArtRunConfig, tmp_path / "child.yaml", ["rounds=2"])
    assert (config.rounds, config.ppo.steps, config.ppo.batch_size) == (2, 5, 16)
    (tmp_path / "base.yaml").write_text("base: child.yaml\n")
    with pytest.raises(HardcseError, match="cycle"):
        load_config(ArtRunConfig, tmp_path / "child.yaml")
