"""The inference engines: choosing one, and the OpenVINO paths giving the PyTorch path's numbers and tokens."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from hardcse import engines
from hardcse.art.config import FilterConfig, GeneratorConfig, TuneConfig
from hardcse.cache_entries import is_entry
from hardcse.cli import main
from hardcse.config import load_config
from hardcse.engines import Engine
from hardcse.errors import HardcseError

openvino = pytest.mark.skipif(not engines.openvino_installed(), reason="the openvino extra is not installed")
CPU, GPU = torch.device("cpu"), torch.device("cuda", 0)
PROMPTS = ["the cat runs", "the cat sleeps very", "the", "a dog", "a dog runs good", "a dog sleeps"]


def test_auto_is_openvino_on_a_cpu_where_installed_and_torch_elsewhere(monkeypatch):
    monkeypatch.setattr(engines, "openvino_installed", lambda: True)
    assert Engine("auto").on(CPU) == "openvino"
    assert Engine("auto").on(GPU) == "torch"
    assert Engine("torch").on(CPU) == "torch"
    with pytest.raises(HardcseError, match="^engine: openvino runs on the CPU, not on cuda:0; set engine: torch"):
        Engine.resolve("openvino").on(GPU)
    monkeypatch.setattr(engines, "openvino_installed", lambda: False)
    assert Engine("auto").on(CPU) == "torch"
    with pytest.raises(
        HardcseError, match=r"engine: openvino: OpenVINO is not installed; pip install 'hardcse\[openvino\]'"
    ):
        Engine.resolve("openvino")


def test_a_commands_choice_wins_and_auto_reads_hardcse_engine_when_resolved(monkeypatch):
    monkeypatch.setattr(engines, "openvino_installed", lambda: True)
    monkeypatch.setenv("HARDCSE_ENGINE", "torch")
    assert Engine.resolve("auto") == Engine.from_environment() == Engine("torch")
    assert Engine.resolve("openvino", precision="float32") == Engine("openvino", "float32")  # the config's own
    monkeypatch.setenv("HARDCSE_ENGINE", "openvino")  # read when resolved, never kept
    assert Engine.resolve("auto").on(CPU) == "openvino"
    monkeypatch.delenv("HARDCSE_ENGINE")
    assert Engine.resolve("auto") == Engine("auto")
    with pytest.raises(HardcseError, match="precision: 'half' is not one of auto, float32, bfloat16"):
        Engine.resolve("auto", precision="half")


def test_a_bad_hardcse_engine_is_refused_when_used(monkeypatch):
    monkeypatch.setenv("HARDCSE_ENGINE", "onnx")
    with pytest.raises(HardcseError, match="^HARDCSE_ENGINE: 'onnx' is not one of auto, torch, openvino"):
        Engine.from_environment()
    assert Engine.resolve("torch").on(CPU) == "torch"  # a config's own choice does not read it


def test_no_module_of_hardcse_keeps_an_engine():
    """The engine is a value each command resolves and passes down (DESIGN.md): no process-wide switch to set, no
    ``global`` in the modules that choose and use it, and no module of the package binds an engine at import."""
    import ast
    from pathlib import Path

    import hardcse

    assert not hasattr(engines, "select_engine") and not hasattr(engines, "encoder_engine")
    package = Path(hardcse.__file__).parent
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if path.name in ("engines.py", "encode.py"):
            assert not any(isinstance(node, ast.Global) for node in ast.walk(tree)), path
            assigned = [node for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)]
            assert all(isinstance(node.value, ast.Constant | ast.Tuple) for node in assigned), path  # constants only
        for node in tree.body:  # module level: no engine made at import
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                names = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
                assert "Engine" not in names, f"{path}:{node.lineno} binds an engine at import"


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


@pytest.mark.parametrize(
    ("dtype", "native_bf16", "expected"),
    [
        ("float32", True, "f32"),
        ("bfloat16", True, "bf16"),
        ("bfloat16", False, None),
        ("auto", True, "bf16"),
        ("auto", False, None),
    ],
)
def test_the_key_value_cache_is_kept_in_the_model_precision(monkeypatch, dtype, native_bf16, expected):
    pytest.importorskip("openvino_genai")
    import openvino_genai as genai

    from hardcse.art.config import GeneratorConfig
    from hardcse.art.generator import openvino

    monkeypatch.setattr(openvino, "supports_bfloat16", lambda device: native_bf16)
    assert openvino.kv_cache_precision(dtype) == expected
    built = {}
    monkeypatch.setattr(genai, "ContinuousBatchingPipeline", lambda *args: built.setdefault("args", args))
    openvino.OpenVINOGenerator(Path("unused"), [0], [0], GeneratorConfig(dtype=dtype))
    properties = built["args"][3]
    assert properties.get("KV_CACHE_PRECISION") == expected
    monkeypatch.setattr(openvino, "KV_CACHE_IN_MODEL_PRECISION", False)  # the benchmark's switch: the default cache
    assert openvino.kv_cache_precision(dtype) == ("f32" if dtype == "float32" else None)


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
@pytest.mark.exact_numbers
def test_the_openvino_encoder_gives_the_torch_embeddings_and_follows_weight_changes(tiny_encoder):
    from hardcse.encoder.encode import encode, encoding_engine

    sentences = ["a man plays a guitar", "two dogs run", "the child reads a long book in the garden", "hi"]
    openvino_float32 = Engine("openvino", "float32")
    torch_emb = encode(tiny_encoder, sentences, engine=Engine("torch"))
    assert encoding_engine(tiny_encoder, openvino_float32) == "openvino"
    np.testing.assert_allclose(encode(tiny_encoder, sentences, engine=openvino_float32), torch_emb, atol=1e-5)
    with torch.no_grad():  # an optimizer step changes weights in place: the converted model must follow
        tiny_encoder[0].auto_model.embeddings.word_embeddings.weight.mul_(1.5)
    changed = encode(tiny_encoder, sentences, engine=Engine("torch"))
    assert np.abs(changed - torch_emb).max() > 1e-3
    np.testing.assert_allclose(encode(tiny_encoder, sentences, engine=openvino_float32), changed, atol=1e-5)


@openvino
def test_a_model_that_does_not_convert_keeps_torch(tiny_encoder):
    from sentence_transformers import SentenceTransformer

    from hardcse.encoder.encode import encoding_engine

    openvino = Engine("openvino")
    assert encoding_engine(tiny_encoder, openvino) == "openvino"
    tiny_encoder[0].auto_model.config.output_hidden_states = True
    assert encoding_engine(tiny_encoder, openvino) == "torch"
    assert encoding_engine(SentenceTransformer(modules=[tiny_encoder[1]], device="cpu"), openvino) == "torch"


@openvino
def test_eval_records_the_engine_it_ran_and_the_next_command_does_not_inherit_it(tiny_encoder_dir, tmp_path, capsys):
    out = tmp_path / "eval"
    assert main(["eval", "--model", str(tiny_encoder_dir), "--tasks", "STS-B-dev", "--out", str(out)]) == 0
    torch_record = json.loads((out / "eval.json").read_text())
    assert torch_record["engine"] == "torch" and "precision" not in torch_record
    args = ["eval", "--model", str(tiny_encoder_dir), "--tasks", "STS-B-dev", "--engine", "openvino"]
    assert main([*args, "--precision", "float32", "--out", str(tmp_path / "ov")]) == 0
    ov_record = json.loads((tmp_path / "ov" / "eval.json").read_text())
    assert ov_record["engine"] == "openvino" and ov_record["precision"] == "float32"
    assert ov_record["scores"]["STS-B-dev"] == pytest.approx(torch_record["scores"]["STS-B-dev"], abs=1e-3)
    # the next command of the same process resolves its own engine: auto (HARDCSE_ENGINE=torch here), not OpenVINO
    assert (
        main(["eval", "--model", str(tiny_encoder_dir), "--tasks", "STS-B-dev", "--out", str(tmp_path / "next")]) == 0
    )
    next_record = json.loads((tmp_path / "next" / "eval.json").read_text())
    assert next_record["engine"] == "torch" and next_record["scores"] == torch_record["scores"]


GREEDY = GeneratorConfig(dtype="float32", top_k=1, max_new_tokens=6, device="cpu")


@openvino
@pytest.mark.exact_numbers
def test_openvino_greedy_writes_the_torch_tokens_and_the_export_is_cached(tiny_lm_dir, tmp_path, monkeypatch):
    from hardcse.art.generator import openvino as ov_generator
    from hardcse.art.generator.texts import TextGenerator

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    expected = TextGenerator(str(tiny_lm_dir), GREEDY, Engine("torch")).generate(PROMPTS)
    got = TextGenerator(str(tiny_lm_dir), GREEDY, Engine("openvino")).generate(PROMPTS)
    assert got == expected and any(expected.texts) and expected.tokens > len(PROMPTS)
    (export,) = [p for p in (tmp_path / "cache" / "openvino").iterdir() if is_entry(p)]  # and its lock, sidecar, lease
    assert (export / ov_generator.MODEL_FILE).is_file()

    def no_export(*_):
        raise AssertionError("exported again")

    monkeypatch.setattr(ov_generator, "_export", no_export)  # the same files: the cached export is used
    assert TextGenerator(str(tiny_lm_dir), GREEDY, Engine("openvino")).generate(PROMPTS) == expected


@openvino
@pytest.mark.exact_numbers
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
            str(tiny_lm_dir),
            anchors,
            generation,
            reward,
            FilterConfig(rule="none"),
            tmp_path / name,
            engine=Engine("openvino"),
        )
        return (tmp_path / name / "synthetic.jsonl").read_bytes()

    first = written("a")
    assert written("b") == first
    assert written("c", seed=8) != first
    torch_texts = tmp_path / "t"
    generation = GeneratorConfig(dtype="float32", max_new_tokens=6, batch_size=4, seed=7)
    synthesize(
        str(tiny_lm_dir), anchors, generation, reward, FilterConfig(rule="none"), torch_texts, engine=Engine("torch")
    )
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


def test_the_shared_prefix_of_each_group_by_hand():
    from hardcse.art.generator.openvino import shared_prefixes

    rows = [[1, 2, 3], [1, 2, 4], [5, 6], [5, 6, 7], [9]]
    assert shared_prefixes(rows, ["a", "a", "b", "b", "c"]) == [[1, 2], [5, 6]]  # a lone prompt shares nothing
    assert shared_prefixes(rows, None) == [[]]
    assert shared_prefixes([[4, 4], [4, 4]], None) == [[4, 4]]


@openvino
@pytest.mark.exact_numbers
def test_openvino_prefills_a_shared_prefix_once_and_a_batch_writes_the_same_whatever_came_before(
    tiny_lm_dir, tmp_path, monkeypatch
):
    from hardcse.art.generator import openvino as ov_generator
    from hardcse.art.generator.texts import TextGenerator

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    shared = "the cat runs " * 12  # 36 tokens: a whole cache block and more
    first = [shared + tail for tail in ("a dog", "the dog sleeps", "a cat runs good")]
    second = [shared + tail for tail in ("a dog runs", "the cat", "a dog sleeps very")]
    prefixes = []
    real = ov_generator.shared_prefixes
    monkeypatch.setattr(
        ov_generator, "shared_prefixes", lambda ids, groups: prefixes.append(real(ids, groups)) or prefixes[-1]
    )
    sampled = GeneratorConfig(dtype="float32", max_new_tokens=6, device="cpu")
    generator = TextGenerator(str(tiny_lm_dir), sampled, Engine("openvino"))
    generator.generate(first, row_seeds=[1, 2, 3])
    after_another_batch = generator.generate(second, row_seeds=[4, 5, 6])
    alone = TextGenerator(str(tiny_lm_dir), sampled, Engine("openvino")).generate(second, row_seeds=[4, 5, 6])
    assert after_another_batch == alone  # what a rank that made only this batch writes
    assert [len(p) for p in prefixes[0]] == [36]
    both = first + second  # two groups: each prefilled once
    groups = ["x", "x", "x", "y", "y", "y"]
    expected = TextGenerator(str(tiny_lm_dir), GREEDY, Engine("torch")).generate(both, groups=groups)
    assert TextGenerator(str(tiny_lm_dir), GREEDY, Engine("openvino")).generate(both, groups=groups) == expected
    assert [len(p) for p in prefixes[-1]] == [36, 36]


@openvino
def test_openvino_gives_every_row_its_own_stream(tiny_lm_dir, tmp_path, monkeypatch):
    from hardcse.art.generator.texts import TextGenerator

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    sampled = GeneratorConfig(dtype="float32", max_new_tokens=6, device="cpu")
    generator = TextGenerator(str(tiny_lm_dir), sampled, Engine("openvino"))
    # one prompt, eight seeds: eight draws (one seed for all would write one text eight times)
    assert len(set(generator.generate(["the cat"] * 8, groups=list(range(8)), row_seeds=list(range(8))).texts)) > 2
    # a row's text follows its seed, not its place: the same rows in the other order write the same texts
    prompts, seeds, groups = ["the cat runs", "a dog sleeps", "the dog"], [11, 12, 13], ["a", "b", "c"]
    forward = generator.generate(prompts, groups=groups, row_seeds=seeds).texts
    backward = generator.generate(prompts[::-1], groups=groups[::-1], row_seeds=seeds[::-1]).texts
    assert backward == forward[::-1]
