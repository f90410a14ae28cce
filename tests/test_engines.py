"""The inference engines: choosing one, and the OpenVINO paths giving the PyTorch path's numbers and tokens."""

import json
import os

import numpy as np
import pytest
import torch

from hardcse import engines
from hardcse.art.config import FilterConfig, GeneratorConfig, TuneConfig
from hardcse.cli import main
from hardcse.config import load_config
from hardcse.errors import HardcseError

openvino = pytest.mark.skipif(not engines.openvino_installed(), reason="the openvino extra is not installed")
CPU, GPU = torch.device("cpu"), torch.device("cuda", 0)
PROMPTS = ["the cat runs", "the cat sleeps very", "the", "a dog", "a dog runs good", "a dog sleeps"]


def test_auto_is_openvino_on_a_cpu_where_installed_and_torch_elsewhere(monkeypatch):
    monkeypatch.setattr(engines, "_selected", "auto")
    monkeypatch.setattr(engines, "openvino_installed", lambda: True)
    assert engines.resolve_engine("auto", CPU) == "openvino"
    assert engines.resolve_engine("auto", GPU) == "torch"
    assert engines.resolve_engine("torch", CPU) == "torch"
    with pytest.raises(HardcseError, match="^engine: openvino runs on the CPU, not on cuda:0; set engine: torch"):
        engines.resolve_engine("openvino", GPU)
    monkeypatch.setattr(engines, "openvino_installed", lambda: False)
    assert engines.resolve_engine("auto", CPU) == "torch"
    with pytest.raises(
        HardcseError, match=r"engine: openvino: OpenVINO is not installed; pip install 'hardcse\[openvino\]'"
    ):
        engines.resolve_engine("openvino", CPU)


def test_the_process_wide_choice_is_what_auto_defers_to(monkeypatch):
    monkeypatch.setattr(engines, "openvino_installed", lambda: True)
    engines.select_engine("torch")
    assert engines.resolve_engine("auto", CPU) == engines.encoder_engine(CPU) == "torch"
    engines.select_engine("auto")  # no preference: the earlier choice stands
    assert engines.encoder_engine(CPU) == "torch"
    engines.select_engine("openvino", precision="float32")
    assert engines.encoder_engine(CPU) == "openvino" and engines.encoder_precision() == "float32"
    assert engines.resolve_engine("torch", CPU) == "torch"  # a config's own choice wins over the default
    with pytest.raises(HardcseError, match="precision: 'half' is not one of auto, float32, bfloat16"):
        engines.select_engine("auto", precision="half")


def test_a_bad_hardcse_engine_is_refused_when_used(monkeypatch):
    monkeypatch.setattr(engines, "_selected", "onnx")  # as HARDCSE_ENGINE=onnx sets it at import
    with pytest.raises(HardcseError, match="^HARDCSE_ENGINE: 'onnx' is not one of auto, torch, openvino"):
        engines.encoder_engine(CPU)
    assert engines.resolve_engine("torch", CPU) == "torch"  # a config's own choice does not read it


def test_a_config_names_an_engine_or_is_refused():
    assert TuneConfig().engine == "auto"
    with pytest.raises(HardcseError, match="override engine=onnx: .onnx. is not one of auto, torch, openvino"):
        load_config(TuneConfig, overrides=["engine=onnx"])
    with pytest.raises(
        HardcseError, match="override generator.openvino_weights=int4: .int4. is not one of float, int8"
    ):
        load_config(TuneConfig, overrides=["generator.openvino_weights=int4"])
    assert engines.openvino_precision("float32") == {"INFERENCE_PRECISION_HINT": "f32"}
    assert engines.openvino_precision("auto") == {}


def test_eval_with_openvino_missing_is_one_line_and_writes_nothing(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(engines, "openvino_installed", lambda: False)
    out = tmp_path / "eval"
    status = main(["eval", "--model", "bundled:minilm-l6", "--engine", "openvino", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and err == [
        "error: --engine: openvino: OpenVINO is not installed; pip install 'hardcse[openvino]' (make install does), "
        "or set --engine: torch"
    ]
    assert not out.exists()


@openvino
def test_the_openvino_encoder_gives_the_torch_embeddings_and_follows_weight_changes(tiny_encoder):
    from hardcse.encoder.encode import encode, encoding_engine

    sentences = ["a man plays a guitar", "two dogs run", "the child reads a long book in the garden", "hi"]
    torch_emb = encode(tiny_encoder, sentences)
    engines.select_engine("openvino", precision="float32")
    assert encoding_engine(tiny_encoder) == "openvino"
    np.testing.assert_allclose(encode(tiny_encoder, sentences), torch_emb, atol=1e-5)
    with torch.no_grad():  # an optimizer step changes weights in place: the converted model must follow
        tiny_encoder[0].auto_model.embeddings.word_embeddings.weight.mul_(1.5)
    engines.select_engine("torch")
    changed = encode(tiny_encoder, sentences)
    assert np.abs(changed - torch_emb).max() > 1e-3
    engines.select_engine("openvino", precision="float32")
    np.testing.assert_allclose(encode(tiny_encoder, sentences), changed, atol=1e-5)


@openvino
def test_a_model_that_does_not_convert_keeps_torch(tiny_encoder):
    from sentence_transformers import SentenceTransformer

    from hardcse.encoder.encode import encoding_engine

    engines.select_engine("openvino")
    assert encoding_engine(tiny_encoder) == "openvino"
    tiny_encoder[0].auto_model.config.output_hidden_states = True
    assert encoding_engine(tiny_encoder) == "torch"
    assert encoding_engine(SentenceTransformer(modules=[tiny_encoder[1]], device="cpu")) == "torch"


@openvino
def test_eval_records_the_engine_it_ran(tiny_encoder_dir, tmp_path, capsys):
    out = tmp_path / "eval"
    assert main(["eval", "--model", str(tiny_encoder_dir), "--tasks", "STS-B-dev", "--out", str(out)]) == 0
    torch_record = json.loads((out / "eval.json").read_text())
    assert torch_record["engine"] == "torch" and "precision" not in torch_record
    args = ["eval", "--model", str(tiny_encoder_dir), "--tasks", "STS-B-dev", "--engine", "openvino"]
    assert main([*args, "--precision", "float32", "--out", str(tmp_path / "ov")]) == 0
    ov_record = json.loads((tmp_path / "ov" / "eval.json").read_text())
    assert ov_record["engine"] == "openvino" and ov_record["precision"] == "float32"
    assert ov_record["scores"]["STS-B-dev"] == pytest.approx(torch_record["scores"]["STS-B-dev"], abs=1e-3)


GREEDY = GeneratorConfig(dtype="float32", top_k=1, max_new_tokens=6, device="cpu")


@openvino
def test_openvino_greedy_writes_the_torch_tokens_and_the_export_is_cached(tiny_lm_dir, tmp_path, monkeypatch):
    from hardcse.art.generator import openvino as ov_generator
    from hardcse.art.generator.texts import TextGenerator

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    expected = TextGenerator(str(tiny_lm_dir), GREEDY, "torch").generate(PROMPTS)
    got = TextGenerator(str(tiny_lm_dir), GREEDY, "openvino").generate(PROMPTS)
    assert got == expected and any(expected.texts) and expected.tokens > len(PROMPTS)
    (export,) = [p for p in (tmp_path / "cache" / "openvino").iterdir() if p.is_dir()]  # and its .lock file
    assert (export / ov_generator.MODEL_FILE).is_file()

    def no_export(*_):
        raise AssertionError("exported again")

    monkeypatch.setattr(ov_generator, "_export", no_export)  # the same files: the cached export is used
    assert TextGenerator(str(tiny_lm_dir), GREEDY, "openvino").generate(PROMPTS) == expected


@openvino
def test_a_tuned_generator_is_exported_with_its_adapter_merged(tiny_lm_dir, tmp_path, monkeypatch):
    from hardcse.art.generator.model import load_generator, save_generator
    from hardcse.art.generator.texts import TextGenerator

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    model, _ = load_generator(str(tiny_lm_dir), GREEDY, trainable=True)
    torch.manual_seed(1)
    with torch.no_grad():  # a LoRA update large enough to change what greedy decoding writes
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    save_generator(model, str(tiny_lm_dir), tmp_path / "tuned")
    tuned = TextGenerator(str(tmp_path / "tuned"), GREEDY, "torch").generate(PROMPTS)
    assert tuned != TextGenerator(str(tiny_lm_dir), GREEDY, "torch").generate(PROMPTS)
    assert TextGenerator(str(tmp_path / "tuned"), GREEDY, "openvino").generate(PROMPTS) == tuned
    exports = [p for p in (tmp_path / "cache" / "openvino").iterdir() if p.is_dir()]
    assert len(exports) == 1  # the raw one was never exported


@openvino
def test_seeded_openvino_synthesis_reruns_byte_identical(tiny_lm_dir, tiny_encoder_dir, tiny_nli_dir, tmp_path):
    from hardcse.art.reward.dual import Reward
    from hardcse.art.synthesis.triplets import synthesize
    from hardcse.discriminator.nli import NLIDiscriminator
    from hardcse.encoder.build import load_encoder

    anchors = [f"the {s} {v} very {w}" for s in ("cat", "dog") for v in ("runs", "sleeps") for w in ("good", "bad")]
    reward = Reward(NLIDiscriminator.load(str(tiny_nli_dir)), load_encoder(str(tiny_encoder_dir)), TuneConfig().reward)

    def written(name: str, seed: int = 7) -> bytes:
        generation = GeneratorConfig(dtype="float32", max_new_tokens=6, batch_size=4, seed=seed)
        synthesize(
            str(tiny_lm_dir), anchors, generation, reward, FilterConfig(rule="none"), tmp_path / name, engine="openvino"
        )
        return (tmp_path / name / "synthetic.jsonl").read_bytes()

    first = written("a")
    assert written("b") == first
    assert written("c", seed=8) != first
    torch_texts = tmp_path / "t"
    generation = GeneratorConfig(dtype="float32", max_new_tokens=6, batch_size=4, seed=7)
    synthesize(str(tiny_lm_dir), anchors, generation, reward, FilterConfig(rule="none"), torch_texts, engine="torch")
    assert len(first.splitlines()) == len((torch_texts / "synthetic.jsonl").read_bytes().splitlines()) == 8


@openvino
def test_an_export_killed_half_way_is_made_again(tiny_lm_dir, tmp_path, monkeypatch):
    from hardcse.art.generator import openvino as ov_generator

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    target = tmp_path / "cache" / "openvino" / ov_generator.export_key(str(tiny_lm_dir))
    (target.parent / f"{target.name}.partial-123").mkdir(parents=True)  # a killed process's temporary folder
    target.mkdir()  # and a folder without its model file: never complete
    assert ov_generator.export_generator(str(tiny_lm_dir), GREEDY) == target
    assert (target / ov_generator.MODEL_FILE).is_file() and (target / "openvino_tokenizer.xml").is_file()
    assert not list(target.parent.glob(f"{target.name}.partial-{os.getpid()}"))  # its own temporary folder went
