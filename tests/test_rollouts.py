"""RL's rollouts sampled by OpenVINO GenAI with the policy's LoRA adapter as it is at each step."""

import dataclasses

import pytest
import torch

from hardcse import engines
from hardcse.art.config import GeneratorConfig, RLConfig, TuneConfig
from hardcse.art.generator.model import load_generator
from hardcse.art.generator.sampling import sample
from hardcse.art.rl import rollouts as rollouts_module
from hardcse.art.rl.loop import RLTrainer
from hardcse.art.rl.rollouts import OpenVINORollouts, resolve_rollout_engine, rollout_sampler
from hardcse.art.rl.tuning import tune_generator
from hardcse.cache_entries import is_entry
from hardcse.config import ConfigValueError, load_config
from hardcse.data.jsonl import read_jsonl
from hardcse.engines import Engine
from hardcse.errors import HardcseError
from test_rl import assert_ratio_one_before_any_update, good_share, losses_without_updates

openvino = pytest.mark.skipif(not engines.openvino_installed(), reason="the openvino extra is not installed")

GREEDY = GeneratorConfig(dtype="float32", top_k=1, max_new_tokens=6, device="cpu")
SHARED = "the cat runs " * 12  # 36 tokens: more than a whole block of GenAI's key/value cache
PROMPTS = [SHARED + tail for tail in ("a dog", "the dog sleeps", "a cat runs good", "the", "very", "a dog runs")]
GROUPS = ["positive", "negative"] * 3


def new_adapter(model, seed: int) -> None:
    """LoRA weights large enough to change what greedy decoding writes."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_" in name:
                p.normal_(0, 0.5)


@openvino
@pytest.mark.exact_numbers
def test_openvino_rollouts_follow_the_policys_adapter_at_every_call(tiny_lm_dir, tmp_path, monkeypatch):
    from hardcse.art.generator.openvino import export_key

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    model, tokenizer = load_generator(str(tiny_lm_dir), GREEDY, trainable=True)
    int8 = dataclasses.replace(GREEDY, openvino_weights="int8")  # synthesis' setting: rollouts take float weights
    rollouts = OpenVINORollouts(model, tokenizer, int8, str(tiny_lm_dir))
    exports = [p.name for p in (tmp_path / "cache" / "openvino").iterdir() if is_entry(p)]
    assert exports == [export_key(str(tiny_lm_dir), "float")]
    limits = [6, 3, 6, 2, 6, 5]
    written = []
    for seed in (1, 2):  # an update between two steps: the second call must apply the new adapter
        new_adapter(model, seed)
        expected = sample(model, tokenizer, PROMPTS, GREEDY, GROUPS, limits=limits)
        got = rollouts(PROMPTS, GROUPS, limits)
        # greedy in float32: PyTorch's tokens, and the same prompt layout for the update's forwards
        assert got.texts == expected.texts and got.truncated == expected.truncated
        assert torch.equal(got.response_ids, expected.response_ids)
        assert torch.equal(got.response_mask, expected.response_mask)
        assert torch.equal(got.prompts.suffix_ids, expected.prompts.suffix_ids)
        written.append(got.texts)
    assert written[0] != written[1]  # the adapters differ in what they write (else the test shows nothing)
    with torch.no_grad():  # a zero adapter writes the base model's answers, the prefix not read from a cache
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.zero_()
        with model.disable_adapter():
            base = sample(model, tokenizer, PROMPTS, GREEDY, GROUPS, limits=limits)
    assert rollouts(PROMPTS, GROUPS, limits).texts == base.texts


@openvino
@pytest.mark.exact_numbers
def test_an_rl_step_on_openvino_rollouts_starts_at_ratio_one_and_reruns_the_same(tiny_lm_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    sampled = GeneratorConfig(dtype="float32", max_new_tokens=4, device="cpu")
    model, tokenizer = load_generator(str(tiny_lm_dir), sampled, trainable=True)
    new_adapter(model, 3)  # pi differs from pi_ref
    sampler = rollout_sampler("openvino", model, tokenizer, sampled, str(tiny_lm_dir))
    trainer = RLTrainer(model, tokenizer, sampled, RLConfig(batch_size=6, minibatch_size=4, epochs=2), sampler)
    seen = losses_without_updates(trainer)
    torch.manual_seed(7)
    stats = trainer.step(PROMPTS, GROUPS, good_share)
    assert len(seen) == 4
    assert_ratio_one_before_any_update(seen, stats, model, "float32")  # log pi_old is the policy's, whoever sampled
    texts = seen[0][0].samples.texts
    torch.manual_seed(7)  # the step's seed decides the call's: the same texts again
    assert sampler(PROMPTS, GROUPS, None).texts == texts
    torch.manual_seed(8)
    assert any(sampler(PROMPTS, GROUPS, None).texts != texts for _ in range(3))


@openvino
@pytest.mark.slow  # a tuning on tiny models: make test, not test-fast
def test_a_tuning_with_openvino_rollouts_logs_its_steps_and_is_keyed_apart(tiny_tune_overrides, tmp_path, monkeypatch):
    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    overrides = [*tiny_tune_overrides, "rl.steps=2", "rl.epochs=1", "rl.save_every=1", "reuse=true"]
    config = load_config(TuneConfig, overrides=[*overrides, "rl.rollout_engine=openvino"])
    final = tune_generator(config, tmp_path / "work", tmp_path / "tuned")
    log = read_jsonl(final / "rl_log.jsonl")
    assert [r["step"] for r in log] == [1, 2] and all(r["generation_s"] > 0 for r in log)
    assert (tmp_path / "work" / "checkpoint" / "adapter_model.safetensors").is_file()
    # the same inputs with the policy's own rollouts are another tuning: not copied from the cache
    torch_config = load_config(TuneConfig, overrides=overrides)
    tune_generator(torch_config, tmp_path / "work2", tmp_path / "tuned2")
    assert len(read_jsonl(tmp_path / "tuned2" / "rl_log.jsonl")) == 2
    assert len([p for p in (tmp_path / "cache" / "tuned").iterdir() if p.is_dir()]) == 2


def test_a_rollout_engine_is_auto_torch_or_openvino():
    with pytest.raises(ConfigValueError, match="rollout_engine"):
        RLConfig(rollout_engine="vllm").check()
    RLConfig(rollout_engine="auto").check()


def test_auto_rollouts_are_openvinos_only_where_the_engine_and_the_adapter_allow(monkeypatch):
    monkeypatch.setattr(engines, "openvino_installed", lambda: True)
    cpu = GeneratorConfig(device="cpu")
    assert resolve_rollout_engine("auto", cpu, Engine("auto")) == "openvino"
    assert resolve_rollout_engine("auto", cpu, Engine("openvino")) == "openvino"
    assert resolve_rollout_engine("auto", cpu, Engine("torch")) == "torch"  # engine: torch (the test suite's)
    for targets in (["q_proj", "lm_head"], "all-linear"):  # a product GenAI does not adapt; a pattern
        adapted = dataclasses.replace(cpu, lora_target_modules=targets)
        assert resolve_rollout_engine("auto", adapted, Engine("auto")) == "torch"
    for choice in ("torch", "openvino"):  # a choice made is kept (OpenVINORollouts refuses what it cannot do)
        assert resolve_rollout_engine(choice, cpu, Engine("torch")) == choice
    with monkeypatch.context() as m:  # a generator on a GPU samples itself
        m.setattr(rollouts_module, "resolve_device", lambda value, key: torch.device("cuda"))
        assert resolve_rollout_engine("auto", cpu, Engine("auto")) == "torch"
    monkeypatch.setattr(engines, "openvino_installed", lambda: False)
    assert resolve_rollout_engine("auto", cpu, Engine("auto")) == "torch"


@openvino
def test_openvino_rollouts_refuse_an_adapter_genai_cannot_apply(tiny_lm_dir):
    gen = dataclasses.replace(GREEDY, lora_target_modules=["q_proj", "lm_head"])
    model, tokenizer = load_generator(str(tiny_lm_dir), gen, trainable=True)
    with pytest.raises(HardcseError, match="lora_target_modules adapts lm_head; set rl.rollout_engine: torch"):
        OpenVINORollouts(model, tokenizer, gen, str(tiny_lm_dir))


def test_openvino_rollouts_where_openvino_is_missing_is_one_line(tiny_lm_dir, monkeypatch):
    monkeypatch.setattr(engines, "openvino_installed", lambda: False)
    model, tokenizer = load_generator(str(tiny_lm_dir), GREEDY, trainable=True)
    with pytest.raises(HardcseError, match=r"rl.rollout_engine: openvino: OpenVINO is not installed"):
        OpenVINORollouts(model, tokenizer, GREEDY, str(tiny_lm_dir))


@openvino
def test_openvino_rollouts_of_one_prompt_draw_apart(tiny_lm_dir, tmp_path, monkeypatch):
    # GRPO writes each prompt G times: GenAI gives one seed one stream, so each row needs a seed of its own
    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    sampled = GeneratorConfig(dtype="float32", max_new_tokens=6, device="cpu")
    model, tokenizer = load_generator(str(tiny_lm_dir), sampled, trainable=True)
    rollouts = OpenVINORollouts(model, tokenizer, sampled, str(tiny_lm_dir))
    torch.manual_seed(5)
    texts = rollouts(["the cat"] * 8, [0] * 8, None).texts
    assert len(set(texts)) > 2
