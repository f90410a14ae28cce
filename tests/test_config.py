import pytest

from hardcse.config import EncoderTrainConfig, NLITrainConfig, load_config, save_config
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
