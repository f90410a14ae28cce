import re
from pathlib import Path

import pytest

from hardcse.art.config import (
    AnchorConfig,
    ArtRunConfig,
    FilterConfig,
    GeneratorConfig,
    RewardConfig,
    RLConfig,
    TuneConfig,
)
from hardcse.assay import AssayConfig
from hardcse.config import config_from_dict, config_to_dict, load_config, save_config
from hardcse.datacube.config import DataCubeConfig
from hardcse.diffaug.config import DiffAugConfig
from hardcse.discriminator.train import NLITrainConfig
from hardcse.encoder.simcse import SimCSEConfig
from hardcse.errors import HardcseError


def test_defaults_are_the_documented_values():
    config = load_config(SimCSEConfig)
    assert config.tau == 0.05 and config.training.max_seq_length == 32 and config.mode == "sup"
    assert load_config(NLITrainConfig).training.batch_size == 32  # each method sets its own training defaults
    assert load_config(DataCubeConfig).training.max_seq_length == 64


def test_a_partial_block_keeps_the_methods_own_defaults(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("discriminator_training:\n  training:\n    eval_steps: 7\n")
    nli = load_config(ArtRunConfig, path).discriminator_training.training
    assert (nli.eval_steps, nli.batch_size, nli.learning_rate, nli.warmup_ratio) == (7, 32, 5e-5, 0.1)
    curriculum = load_config(DataCubeConfig, overrides=["training.batch_size=16"]).training
    assert (curriculum.batch_size, curriculum.max_seq_length, curriculum.warmup_ratio) == (16, 64, 0.1)


def test_yaml_then_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("training:\n  batch_size: 16\n  learning_rate: 1\n")
    config = load_config(SimCSEConfig, path, ["training.batch_size=8", "max_examples=100", "mode=unsup"])
    assert config.training.batch_size == 8 and config.training.learning_rate == 1.0 and config.max_examples == 100
    assert load_config(SimCSEConfig, overrides=["training.learning_rate=1e-7"]).training.learning_rate == 1e-7
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
        ("training.batch_size=many", "expected int"),
        ("length_grouped=3", "expected true/false"),
        ("nonsense", "write key=value"),
        ("training=3", "expected a mapping"),
    ],
)
def test_bad_overrides_say_what_is_wrong(override, message):
    with pytest.raises(HardcseError, match=message):
        load_config(NLITrainConfig, overrides=[override])


@pytest.mark.parametrize(
    ("cls", "old", "new"),
    [
        (SimCSEConfig, "temperature=0.1", "tau"),
        (SimCSEConfig, "batch_size=8", "training.batch_size"),
        (SimCSEConfig, "model=x", "encoder"),
        (NLITrainConfig, "max_length=64", "training.max_seq_length"),
        (NLITrainConfig, "model=x", "base_model"),
        (DataCubeConfig, "initial_temperature=0.1", "anneal_t0"),
        (DataCubeConfig, "temperature=0.1", "tau"),
        (DiffAugConfig, "seed=1", "training.seed"),
        (DiffAugConfig, "stage2.max_steps=10", "training.max_steps"),
        (ArtRunConfig, "generator.temperature=0.7", "sampling_temperature"),
        (ArtRunConfig, "encoder_training.epochs=2", "training.epochs"),
    ],
)
def test_an_old_key_names_the_new_one(cls, old, new):
    with pytest.raises(HardcseError, match=f"this key is now {new}"):
        load_config(cls, overrides=[old])


# Every config class, fed out-of-range values: each error names the key (with its parent keys) before any work.
OUT_OF_RANGE = [
    (SimCSEConfig, "tau=0", "tau"),
    (SimCSEConfig, "tau=.nan", "tau"),
    (SimCSEConfig, "mode=semi", "mode"),
    (SimCSEConfig, "pooling=max", "pooling"),
    (SimCSEConfig, "eval_tasks=[STS99]", "eval_tasks"),
    (SimCSEConfig, "training.learning_rate=-1", "training.learning_rate"),
    (SimCSEConfig, "training.learning_rate=.inf", "training.learning_rate"),
    (SimCSEConfig, "training.batch_size=0", "training.batch_size"),
    (SimCSEConfig, "training.max_steps=0", "training.max_steps"),
    (SimCSEConfig, "training.warmup_ratio=1.5", "training.warmup_ratio"),
    (SimCSEConfig, "training.eval_steps=0", "training.eval_steps"),
    (NLITrainConfig, "training.max_seq_length=0", "training.max_seq_length"),
    (NLITrainConfig, "max_examples=0", "max_examples"),
    (NLITrainConfig, "train_files=[nli/SNLI/test.tsv]", "train_files"),
    (GeneratorConfig, "positive_prompt=no anchor here", "positive_prompt"),
    (GeneratorConfig, "sampling_temperature=0", "sampling_temperature"),
    (GeneratorConfig, "top_p=1.5", "top_p"),
    (GeneratorConfig, "lora_dropout=-0.1", "lora_dropout"),
    (GeneratorConfig, "few_shot=[{positive: x}]", r"few_shot\[0\]"),
    (RewardConfig, "omega=2", "omega"),
    (RewardConfig, "alpha_pos=-3", "alpha_pos"),
    (RewardConfig, "w1=-1", "w1"),
    (RLConfig, "learning_rate=0", "learning_rate"),
    (RLConfig, "minibatch_size=32", "minibatch_size"),
    (RLConfig, "ppo.lam=1.5", "ppo.lam"),
    (RLConfig, "grpo.group_size=0", "grpo.group_size"),
    (RLConfig, "save_every=0", "save_every"),
    (RLConfig, "algorithm=a2c", "algorithm"),
    (GeneratorConfig, "dtype=float16", "dtype"),
    (AnchorConfig, "max_words=2", "max_words"),
    (FilterConfig, "min_entailment=2", "min_entailment"),
    (TuneConfig, "rl.steps=0", "rl.steps"),
    (TuneConfig, "pooling=max", "pooling"),
    (ArtRunConfig, "rounds=0", "rounds"),
    (ArtRunConfig, "synthesis_temperature=0", "synthesis_temperature"),
    (ArtRunConfig, "pooling=cls_mlp", "pooling"),
    (ArtRunConfig, "encoder_training.tau=-1", "encoder_training.tau"),
    (ArtRunConfig, "discriminator_training.training.batch_size=0", "discriminator_training.training.batch_size"),
    (ArtRunConfig, "generator.top_p=2", "generator.top_p"),
    (ArtRunConfig, "generator.stop=sentence", "generator.stop"),
    (ArtRunConfig, "generator.length_budget=0", "generator.length_budget"),
    (ArtRunConfig, "generator.length_extra=-1", "generator.length_extra"),
    (DataCubeConfig, "task_order=greedy", "task_order"),
    (DataCubeConfig, "schedule=round_robin", "schedule"),
    (DataCubeConfig, "cooling=1.5", "cooling"),
    (DataCubeConfig, "anneal_t0=0", "anneal_t0"),
    (DataCubeConfig, "training.batch_size=1", "training.batch_size"),
    (DiffAugConfig, "setting=unsup", "setting"),
    (DiffAugConfig, "stages=[3]", "stages"),
    (DiffAugConfig, "nli_fraction=0", "nli_fraction"),
    (DiffAugConfig, "stage1.select=best", "stage1.select"),
    (DiffAugConfig, "stage1.steps=0", "stage1.steps"),
    (DiffAugConfig, "stage2.aux_weight=-1", "stage2.aux_weight"),
    (DiffAugConfig, "prefix_length=0", "prefix_length"),
    (DiffAugConfig, "training.epochs=0", "training.epochs"),
]


def test_grpo_batches_split_into_groups_and_old_ppo_keys_name_their_new_place():
    with pytest.raises(HardcseError, match=r"^override batch_size=10: 10 is not a multiple of grpo.group_size 4"):
        load_config(RLConfig, overrides=["algorithm=grpo", "batch_size=10"])
    grpo = load_config(RLConfig, overrides=["algorithm=grpo", "minibatch_size=6"])
    assert (grpo.rows_per_prompt, grpo.minibatch_unit) == (4, 1)  # a minibatch of 6 splits groups: rows drawn singly
    assert load_config(RLConfig, overrides=["algorithm=grpo"]).minibatch_unit == 4
    with pytest.raises(HardcseError, match=r"^override ppo.steps=3: this key is now rl; rename it"):
        load_config(TuneConfig, overrides=["ppo.steps=3"])
    with pytest.raises(HardcseError, match=r"^override rl.ppo_epochs=3: this key is now epochs"):
        load_config(TuneConfig, overrides=["rl.ppo_epochs=3"])


def test_rl_keys_that_moved_into_their_algorithms_block_still_load_with_a_warning(tmp_path, caplog):
    old = tmp_path / "old.yaml"  # a config (or a run folder's config.yaml) written before the blocks
    old.write_text("rl:\n  algorithm: grpo\n  kl_coef: 0.05\n  lam: 0.9\n  group_size: 2\n  grpo_beta: 0.1\n")
    with caplog.at_level("WARNING", logger="hardcse.config"):
        config = load_config(TuneConfig, old)
    rl = config.rl
    assert (rl.ppo.kl_coef, rl.ppo.lam, rl.grpo.group_size, rl.grpo.beta, rl.rows_per_prompt) == (0.05, 0.9, 2, 0.1, 2)
    assert [r.getMessage() for r in caplog.records] == [
        f"{old}: rl.kl_coef, rl.lam, rl.group_size, rl.grpo_beta moved into a block; read as rl.ppo.kl_coef, "
        "rl.ppo.lam, rl.grpo.group_size, rl.grpo.beta. The old keys still load; new configs write the new ones."
    ]
    new = tmp_path / "new.yaml"
    save_config(config, new)  # saved under the new keys: loads again without a warning, to the same config
    caplog.clear()
    with caplog.at_level("WARNING", logger="hardcse.config"):
        assert load_config(TuneConfig, new) == config
        assert config_from_dict(TuneConfig, config_to_dict(config), "saved") == config
    assert not caplog.records
    both = tmp_path / "both.yaml"
    both.write_text("rl:\n  lam: 0.9\n  ppo:\n    lam: 0.8\n")
    with pytest.raises(HardcseError, match=rf"^{re.escape(str(both))}: rl.lam: given here and as rl.ppo.lam; keep"):
        load_config(TuneConfig, both)


def test_a_moved_key_overrides_like_any_key_whichever_place_each_source_writes(tmp_path, caplog):
    base = tmp_path / "base.yaml"
    base.write_text("rl:\n  ppo:\n    kl_coef: 0.3\n")
    child = tmp_path / "child.yaml"
    child.write_text("base: base.yaml\nrl:\n  kl_coef: 0.05\n")  # the old key over a base with the new one
    assert load_config(TuneConfig, child).rl.ppo.kl_coef == 0.05
    base.write_text("rl:\n  kl_coef: 0.3\n")
    child.write_text("base: base.yaml\nrl:\n  ppo:\n    kl_coef: 0.05\n")  # the new key over an old base
    assert load_config(TuneConfig, child).rl.ppo.kl_coef == 0.05
    caplog.clear()
    with caplog.at_level("WARNING", logger="hardcse.config"):
        config = load_config(TuneConfig, child, ["rl={grpo_beta: 0.5}", "rl.kl_coef=0.15"])
    assert (config.rl.ppo.kl_coef, config.rl.grpo.beta) == (0.15, 0.5)
    assert [r.getMessage().split(";")[0] for r in caplog.records] == [
        f"{base}: rl.kl_coef moved into a block",
        "override rl={grpo_beta: 0.5}: rl.grpo_beta moved into a block",
        "override rl.kl_coef=0.15: rl.kl_coef moved into a block",
    ]
    with pytest.raises(HardcseError, match=r"^override rl.lam=2: 2.0 must be"):  # the old key's mistake, named
        load_config(TuneConfig, overrides=["rl.lam=2"])
    with pytest.raises(HardcseError, match=r"^override 'rl.kl_coef=0.1': ppo is not a block of keys"):
        load_config(TuneConfig, overrides=["rl.ppo=3", "rl.kl_coef=0.1"])
    with pytest.raises(HardcseError, match=r"^override rl={ppo: 3, lam: 0.9}: rl.lam: unknown key"):
        load_config(TuneConfig, overrides=["rl={ppo: 3, lam: 0.9}"])  # no block to move it into: an error, no crash


@pytest.mark.parametrize(("cls", "override", "key"), OUT_OF_RANGE)
def test_out_of_range_values_name_their_key(cls, override, key):
    with pytest.raises(HardcseError, match=rf"^override {re.escape(override)}: "):
        load_config(cls, overrides=[override])


def test_a_mistake_names_its_source_file_or_override(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("rl:\n  steps: -3\n  batch_size: 4\ngenerator:\n  few_shot: [3]\n")
    with pytest.raises(HardcseError, match=rf"^{re.escape(str(config))}: rl.steps: -3 must be"):
        load_config(TuneConfig, config)
    with pytest.raises(HardcseError, match=r"^override rl.steps=-1: -1 must be"):  # the override replaced the file's
        load_config(TuneConfig, config, ["rl.steps=-1"])
    with pytest.raises(HardcseError, match=rf"^{re.escape(str(config))}: rl.steps: -3 must be"):  # another key
        load_config(TuneConfig, config, ["rl.epochs=2"])
    config.write_text("generator:\n  few_shot: [3]\n")
    with pytest.raises(HardcseError, match=rf"^{re.escape(str(config))}: generator.few_shot\[0\]: expected"):
        load_config(TuneConfig, config)
    with pytest.raises(HardcseError, match=r"^TuneConfig \(defaults\)|^override"):
        load_config(TuneConfig, overrides=["rl.steps=0"])


def test_every_config_class_is_range_checked():
    tested = {cls for cls, _, _ in OUT_OF_RANGE}
    assert tested >= {SimCSEConfig, NLITrainConfig, GeneratorConfig, RewardConfig, RLConfig, AnchorConfig}
    assert tested >= {FilterConfig, TuneConfig, ArtRunConfig, DataCubeConfig, DiffAugConfig}


def test_a_file_error_names_the_file_and_key(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("rl:\n  steps: -3\n")
    with pytest.raises(HardcseError, match=r"c.yaml: rl\.steps: -3 must be a finite number greater than 0"):
        load_config(ArtRunConfig, path)


def test_bad_yaml_names_the_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("a: [1, 2\n")
    with pytest.raises(HardcseError, match="c.yaml: not valid YAML"):
        load_config(SimCSEConfig, path)


CONFIG_CLASSES = {
    "simcse-sup.yaml": SimCSEConfig,
    "nli-discriminator.yaml": NLITrainConfig,
    "nli-judge.yaml": NLITrainConfig,
    "tune-cpu.yaml": TuneConfig,
    "few-shot.yaml": TuneConfig,
    "compose-art-in-datacube.yaml": DataCubeConfig,
    "assay.yaml": AssayConfig,
}


def test_every_shipped_config_loads():
    configs = sorted((Path(__file__).parents[1] / "configs").glob("*.yaml"))
    assert len(configs) >= 30
    prefixes = {"datacube": DataCubeConfig, "diffaug": DiffAugConfig}
    for path in configs:
        default = prefixes.get(path.name.split("-")[0], ArtRunConfig)
        load_config(CONFIG_CLASSES.get(path.name, default), path)


def test_a_config_inherits_its_base_key_by_key(tmp_path):
    (tmp_path / "base.yaml").write_text("rounds: 3\nrl:\n  steps: 20\n  batch_size: 16\n")
    (tmp_path / "child.yaml").write_text("base: base.yaml\nrl:\n  steps: 5\n")
    config = load_config(ArtRunConfig, tmp_path / "child.yaml", ["rounds=2"])
    assert (config.rounds, config.rl.steps, config.rl.batch_size) == (2, 5, 16)
    (tmp_path / "base.yaml").write_text("base: child.yaml\n")
    with pytest.raises(HardcseError, match="cycle"):
        load_config(ArtRunConfig, tmp_path / "child.yaml")


def test_the_command_parser_imports_no_model_library():
    """`hardcse --help` stays fast: building the parser imports neither torch nor sentence-transformers."""
    import subprocess
    import sys

    code = "import sys; from hardcse.cli import build_parser; build_parser(); "
    code += "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
