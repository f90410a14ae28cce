"""LoRA adapters in OpenVINO: a tuned generator's saved adapter fused into its base model's export, where GenAI
computes what PEFT does, and the merged model exported where it would not."""

import dataclasses
from pathlib import Path

import pytest
import torch

from hardcse import engines
from hardcse.art.config import GeneratorConfig
from hardcse.art.generator.adapters import saved_adapter
from hardcse.cache_entries import is_entry
from hardcse.engines import Engine

openvino = pytest.mark.skipif(not engines.openvino_installed(), reason="the openvino extra is not installed")
GREEDY = GeneratorConfig(dtype="float32", top_k=1, max_new_tokens=6, device="cpu")
PROMPTS = ["the cat runs", "the cat sleeps very", "the", "a dog", "a dog runs good", "a dog sleeps"]


def _tuned(base_dir: Path, out: Path, **lora: object) -> Path:
    """A generator folder over ``base_dir`` whose LoRA update is large enough to change what greedy decoding writes
    (``lora``: LoraConfig settings; default the generator config's)."""
    from peft import LoraConfig, get_peft_model

    from hardcse.art.generator.model import load_generator, save_generator

    if lora:
        from transformers import AutoModelForCausalLM

        model = get_peft_model(
            AutoModelForCausalLM.from_pretrained(base_dir), LoraConfig(task_type="CAUSAL_LM", **lora)
        )
    else:
        model, _ = load_generator(str(base_dir), GREEDY, trainable=True)
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name or "lora_magnitude" in name:
                p.normal_(0, 0.5)
    save_generator(model, str(base_dir), out)
    return out


@openvino
def test_a_tuned_generator_samples_the_base_export_with_its_adapter_fused(tiny_lm_dir, tmp_path, monkeypatch):
    from hardcse.art.generator import openvino as ov_generator
    from hardcse.art.generator.texts import TextGenerator

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    tuned_dir = str(_tuned(tiny_lm_dir, tmp_path / "tuned"))
    tuned = TextGenerator(tuned_dir, GREEDY, Engine("torch")).generate(PROMPTS)
    assert tuned != TextGenerator(str(tiny_lm_dir), GREEDY, Engine("torch")).generate(PROMPTS)
    assert TextGenerator(tuned_dir, GREEDY, Engine("openvino")).generate(PROMPTS) == tuned
    exports = [p.name for p in (tmp_path / "cache" / "openvino").iterdir() if is_entry(p)]
    assert exports == [ov_generator.export_key(str(tiny_lm_dir))]  # the base's only: nothing merged, exported

    def no_export(*_):
        raise AssertionError("exported again")

    monkeypatch.setattr(ov_generator, "_export", no_export)  # another tuned generator over the same base: no export
    other = str(_tuned(tiny_lm_dir, tmp_path / "other", r=4, lora_alpha=8, use_rslora=True, target_modules=["o_proj"]))
    expected = TextGenerator(other, GREEDY, Engine("torch")).generate(PROMPTS)
    assert expected != tuned and TextGenerator(other, GREEDY, Engine("openvino")).generate(PROMPTS) == expected


@openvino
@pytest.mark.parametrize(
    "lora",
    [{"target_modules": ["q_proj", "lm_head"]}, {"target_modules": ["v_proj"], "use_dora": True}],
    ids=["a product GenAI does not adapt", "DoRA"],
)
def test_an_adapter_genai_would_not_apply_as_peft_is_merged_and_exported(tiny_lm_dir, tmp_path, monkeypatch, lora):
    from hardcse.art.generator import openvino as ov_generator
    from hardcse.art.generator.texts import TextGenerator

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    tuned_dir = _tuned(tiny_lm_dir, tmp_path / "tuned", **lora)
    assert saved_adapter(tuned_dir) is None
    tuned = TextGenerator(str(tuned_dir), GREEDY, Engine("torch")).generate(PROMPTS)
    assert tuned != TextGenerator(str(tiny_lm_dir), GREEDY, Engine("torch")).generate(PROMPTS)
    assert TextGenerator(str(tuned_dir), GREEDY, Engine("openvino")).generate(PROMPTS) == tuned
    exports = [p.name for p in (tmp_path / "cache" / "openvino").iterdir() if is_entry(p)]
    assert exports == [ov_generator.export_key(str(tuned_dir))]  # the merged model's, not the base's


@openvino
def test_a_saved_adapter_is_fused_with_peft_scaling_only_when_plain(tmp_path):
    from peft import LoraConfig
    from safetensors.torch import save_file

    def saved(name: str, **settings: object) -> Path:
        folder = tmp_path / name
        LoraConfig(task_type="CAUSAL_LM", **settings).save_pretrained(folder)
        save_file({"a": torch.zeros(1)}, folder / "adapter_model.safetensors")
        return folder

    def alpha(folder: Path) -> float:
        ((_, value),) = saved_adapter(folder).get_adapters_and_alphas()
        return value

    assert alpha(saved("plain", r=16, lora_alpha=32, target_modules=["q_proj", "v_proj"])) == pytest.approx(2.0)
    assert alpha(saved("rslora", r=16, lora_alpha=32, target_modules=["q_proj"], use_rslora=True)) == pytest.approx(8.0)
    assert saved_adapter(saved("ranks", r=16, target_modules=["q_proj"], rank_pattern={"q_proj": 4})) is None
    assert saved_adapter(saved("saved modules", target_modules=["q_proj"], modules_to_save=["lm_head"])) is None
    assert saved_adapter(saved("regex", target_modules=".*proj")) is None
    (saved("bin", target_modules=["q_proj"]) / "adapter_model.safetensors").unlink()
    assert saved_adapter(tmp_path / "bin") is None
    # PiSSA and OLoRA rewrite W itself when PEFT builds the adapter: the base model's export is not their W
    assert saved_adapter(saved("pissa", target_modules=["q_proj"], init_lora_weights="pissa")) is None
    assert saved_adapter(saved("olora", target_modules=["q_proj"], init_lora_weights="olora")) is None
    assert alpha(saved("gaussian", r=8, lora_alpha=8, target_modules=["q_proj"], init_lora_weights="gaussian")) == 1.0


@openvino
def test_a_tuned_generator_with_int8_weights_is_merged_and_exported(tiny_lm_dir, tmp_path, monkeypatch):
    from hardcse.art.generator import openvino as ov_generator
    from hardcse.art.generator.texts import TextGenerator

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    tuned_dir = _tuned(tiny_lm_dir, tmp_path / "tuned")
    assert saved_adapter(tuned_dir) is not None  # fusable, but there are no float weights to fuse into
    int8 = dataclasses.replace(GREEDY, openvino_weights="int8")
    assert len(TextGenerator(str(tuned_dir), int8, Engine("openvino")).generate(PROMPTS).texts) == len(PROMPTS)
    exports = [p.name for p in (tmp_path / "cache" / "openvino").iterdir() if is_entry(p)]
    assert exports == [ov_generator.export_key(str(tuned_dir), "int8")]
