"""Every cache follows what decides its content, and two processes on one cold cache both succeed
(docs/development.md "Caches": the list these tests cover)."""

import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from hardcse import engines
from hardcse.cache import publish_dir
from hardcse.cache_entries import is_entry
from hardcse.engines import Engine

openvino = pytest.mark.skipif(not engines.openvino_installed(), reason="the openvino extra is not installed")


def run_together(script: str, env: dict, count: int = 2, timeout: float = 600) -> list[str]:
    """Start ``count`` Python processes running ``script`` at once; each must succeed; their stdouts."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(script)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ | {"HARDCSE_ENGINE": "torch", "TQDM_DISABLE": "1"} | env,
        )
        for _ in range(count)
    ]
    outputs = [p.communicate(timeout=timeout) for p in processes]
    for process, (_, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err[-3000:]
    return [out for out, _ in outputs]


def test_publish_dir_builds_once_for_two_processes_and_leaves_nothing_partial(tmp_path):
    script = f"""
        import os, time
        from pathlib import Path
        from hardcse.cache import publish_dir

        def build(tmp):
            with open({str(tmp_path / "builds.log")!r}, "a") as fh:
                fh.write(f"{{os.getpid()}}\\n")
            time.sleep(1.0)  # long enough for the other process to arrive while this one builds
            (tmp / "weights").write_text(str(os.getpid()))

        target = Path({str(tmp_path / "cache" / "entry")!r})
        print(publish_dir(target, build, lambda f: (f / "weights").is_file()))
    """
    outputs = run_together(script, {})
    assert len(set(outputs)) == 1
    assert len((tmp_path / "builds.log").read_text().split()) == 1  # the second waited and read the first's
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["entry", "entry.leases", "entry.lock"]


def test_a_killed_build_is_cleared_and_a_complete_entry_is_never_replaced(tmp_path):
    target = tmp_path / "entry"
    (tmp_path / "entry.partial-dead").mkdir()  # what a killed process left
    target.mkdir()  # and a folder it left half-built at the target
    built = []
    complete = lambda f: (f / "done").is_file()  # noqa: E731

    def build(tmp):
        built.append(tmp)
        (tmp / "done").write_text("1")

    assert publish_dir(target, build, complete) == target and (target / "done").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry", "entry.leases", "entry.lock"]
    publish_dir(target, lambda tmp: pytest.fail("built again"), complete)
    with pytest.raises(RuntimeError, match="left it incomplete"):
        publish_dir(tmp_path / "other", lambda tmp: None, complete)
    assert not list(tmp_path.glob("other*partial*"))


def test_atomic_writes_of_one_path_by_two_writers_never_tear_or_fail(tmp_path):
    path = tmp_path / "entry.json"
    script = f"""
        import json, os
        from hardcse.atomic import write_json_atomic
        for i in range(300):
            write_json_atomic({str(path)!r}, {{"writer": os.getpid(), "i": i, "pad": "x" * 20000}})
    """
    torn = []

    def read_while_written() -> None:
        while not done.is_set():
            if path.is_file():
                try:
                    json.loads(path.read_text())
                except json.JSONDecodeError:
                    torn.append(1)

    done = threading.Event()
    reader = threading.Thread(target=read_while_written)
    reader.start()
    try:
        run_together(script, {})
    finally:
        done.set()
        reader.join()
    assert not torn
    assert [p.name for p in tmp_path.iterdir()] == ["entry.json"]  # no temporary file left


@pytest.mark.slow
@openvino
def test_two_processes_preparing_on_a_cold_cache_make_one_conversion_and_one_export_that_runs_find(
    tmp_path, monkeypatch, capsys
):
    """`hardcse prepare` (the first make demo runs it): the bundled generator is converted from its GGUF and
    exported to OpenVINO once, however many processes ask at once, under the keys a run computes: a run finds both,
    converts nothing, and the checkpoint chats."""
    import time

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from hardcse import resources
    from hardcse.art.config import ArtRunConfig
    from hardcse.art.generator import openvino as ov_generator
    from hardcse.art.run import starting_scores
    from hardcse.cli import main
    from hardcse.config import load_config

    script = """
        from hardcse.cli import main
        raise SystemExit(main(["prepare", "--no-training"]))
    """
    # HARDCSE_ENGINE: auto (run_together pins torch), so that prepare exports for OpenVINO as a user's would
    outputs = run_together(script, {"HARDCSE_CACHE": str(tmp_path), "HARDCSE_ENGINE": "auto"})
    assert len({tuple(out.splitlines()[:2]) for out in outputs}) == 1
    # the encoder's scores: the same, evaluated by one process or both (the other may read the first's back)
    assert len({out.splitlines()[2].rsplit(" as a run's round 0 reads it: ", 1)[1] for out in outputs}) == 1
    lines = outputs[0].splitlines()
    checkpoint = lines[0].removeprefix(f"{resources.BUNDLED_GENERATOR} as a float checkpoint: ")
    export = lines[1].removeprefix(f"{resources.BUNDLED_GENERATOR} in OpenVINO: ")
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir() and is_entry(p)) == sorted(
        ["eval", "openvino", os.path.basename(checkpoint)]
    )
    assert [p.name for p in (tmp_path / "openvino").iterdir() if is_entry(p)] == [os.path.basename(export)]
    assert (
        len([p for p in (tmp_path / "eval").iterdir() if is_entry(p)]) == 1
    )  # the bundled encoder's scores, evaluated once

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path))

    def refuse(*args):  # noqa: ANN002, ANN202
        raise AssertionError("converted again")

    monkeypatch.setattr(resources, "convert_gguf", refuse)
    monkeypatch.setattr(ov_generator, "_export", refuse)
    start = time.perf_counter()
    assert str(resources.resolve_model(resources.BUNDLED_GENERATOR)) == checkpoint
    assert time.perf_counter() - start < 2  # found, not converted again (the key reads the GGUF's 98 MB)
    for name in ("quickstart", "cpu-full"):  # what these runs export for the raw generator is what was prepared
        generator = load_config(ArtRunConfig, name).generator
        assert str(ov_generator.export_generator(generator.model, generator)) == export
    demo = load_config(ArtRunConfig, "quickstart")  # and its round 0 reads the scores prepared (engine as prepare's)
    monkeypatch.setenv("HARDCSE_ENGINE", "auto")
    assert "read_from" in starting_scores(demo, Engine.resolve(demo.engine))
    capsys.readouterr()
    assert main(["prepare", "--no-training"]) == 0  # prepared already: nothing to do
    assert f"{resources.BUNDLED_ENCODER} read back from {tmp_path / 'eval'}" in capsys.readouterr().out
    model, tokenizer = AutoModelForCausalLM.from_pretrained(checkpoint), AutoTokenizer.from_pretrained(checkpoint)
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Say hello."}], add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    out = model.generate(**ids, max_new_tokens=8, do_sample=False)
    assert tokenizer.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True).strip()


def test_prepare_converts_but_does_not_export_where_runs_would_not_use_openvino(tmp_path, monkeypatch, capsys):
    from hardcse import resources
    from hardcse.art import run as art_run
    from hardcse.cli import main
    from hardcse.data.sts import ALL_TASKS

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path))
    monkeypatch.setenv("HARDCSE_ENGINE", "torch")
    monkeypatch.setattr(resources, "bundled_generator_dir", lambda: tmp_path / "checkpoint")
    evaluated = []  # the encoder's evaluation, as the quickstart's round 0 asks for it (its engine: torch here)
    monkeypatch.setattr(art_run, "cached_eval", lambda source, **kw: evaluated.append((source, kw)) or {"avg7": 78.9})
    assert main(["prepare", "--no-training"]) == 0
    out = capsys.readouterr().out
    assert f"{resources.BUNDLED_GENERATOR} as a float checkpoint: {tmp_path / 'checkpoint'}" in out
    assert "no OpenVINO export (runs here generate in PyTorch: HARDCSE_ENGINE=torch)" in out
    assert not (tmp_path / "openvino").exists()
    settings = {"tasks": ALL_TASKS, "pooling": "default", "device": "auto", "engine": Engine("torch")}
    assert evaluated == [(resources.BUNDLED_ENCODER, settings)]
    assert f"{resources.BUNDLED_ENCODER} evaluated as a run's round 0 reads it: avg7 78.90" in out
    kept = {"avg7": 78.9, "read_from": str(tmp_path / "eval" / "scores.json")}  # prepared before: read back
    monkeypatch.setattr(art_run, "cached_eval", lambda source, **kw: kept)
    assert main(["prepare", "--no-training"]) == 0
    read_back = f"{resources.BUNDLED_ENCODER} read back from {kept['read_from']} as a run's round 0 reads it"
    assert f"{read_back}: avg7 78.90" in capsys.readouterr().out


@pytest.mark.slow  # a whole run on tiny models (10 s and more): make test, not test-fast
@openvino
def test_two_processes_on_a_cold_cache_both_get_the_one_generator_export(tiny_lm_dir, tmp_path):
    script = f"""
        from hardcse.art.config import GeneratorConfig
        from hardcse.art.generator.openvino import export_generator
        print(export_generator({str(tiny_lm_dir)!r}, GeneratorConfig(dtype="float32", device="cpu")))
    """
    outputs = run_together(script, {"HARDCSE_CACHE": str(tmp_path)})
    assert len(set(outputs)) == 1
    assert [p.name for p in (tmp_path / "openvino").iterdir() if is_entry(p)] == [os.path.basename(outputs[0].strip())]


@pytest.mark.slow  # a whole run on tiny models (10 s and more): make test, not test-fast
def test_two_processes_on_a_cold_cache_write_and_agree_on_cached_generations(tiny_lm_dir, tmp_path):
    script = f"""
        import json
        from hardcse.art.config import GeneratorConfig
        from hardcse.art.generator.texts import TextGenerator
        from hardcse.engines import Engine
        config = GeneratorConfig(dtype="float32", max_new_tokens=6, device="cpu")
        texts = TextGenerator({str(tiny_lm_dir)!r}, config, Engine("torch"), cache=True).generate(
            ["the cat runs", "a dog"], row_seeds=[1, 2]
        )
        print(json.dumps(texts.texts))
    """
    outputs = run_together(script, {"HARDCSE_CACHE": str(tmp_path)})
    assert len(set(outputs)) == 1
    assert len([p for p in (tmp_path / "generations").iterdir() if is_entry(p)]) == 1


@pytest.mark.slow  # a whole run on tiny models (10 s and more): make test, not test-fast
def test_two_processes_on_a_cold_cache_both_keep_the_one_tuned_generator(tiny_tune_overrides, tmp_path, monkeypatch):
    from hardcse.art.config import TuneConfig
    from hardcse.art.rl.tuned_cache import tuned_cache_dir
    from hardcse.config import load_config

    overrides = [*tiny_tune_overrides, "rl.steps=2", "rl.save_every=2", "generator.max_new_tokens=6", "reuse=true"]
    script = f"""
        import os, sys
        from hardcse.art.config import TuneConfig
        from hardcse.art.rl.tuning import tune_generator
        from hardcse.config import load_config
        config = load_config(TuneConfig, overrides={overrides!r})
        out = {str(tmp_path)!r} + f"/run-{{os.getpid()}}"
        tune_generator(config, out + "/work", out + "/generator")
        print(sorted(os.listdir(out + "/generator")))
    """
    outputs = run_together(script, {"HARDCSE_CACHE": str(tmp_path / "cache")})
    assert len(set(outputs)) == 1
    from hardcse.art.synthesis.anchors import split_anchors

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    config = load_config(TuneConfig, overrides=overrides)
    entry = tuned_cache_dir(config, split_anchors(config.anchors).train, Engine.resolve(config.engine))
    assert entry.is_dir() and not list(entry.parent.glob("*partial*"))


@pytest.mark.slow  # a whole run on tiny models (10 s and more): make test, not test-fast
def test_two_processes_on_a_cold_cache_write_and_agree_on_an_encoders_evaluation(tiny_encoder_dir, tmp_path):
    script = f"""
        from hardcse.evaluation.results import cached_eval
        print(cached_eval({str(tiny_encoder_dir)!r})["avg7"])
    """
    outputs = run_together(script, {"HARDCSE_CACHE": str(tmp_path)})
    assert len(set(outputs)) == 1
    assert len([p for p in (tmp_path / "eval").iterdir() if is_entry(p)]) == 1


def test_the_tuned_generator_key_follows_processes_engines_precision_and_the_terms_code(
    tiny_tune_overrides, tmp_path, monkeypatch
):
    from hardcse.art.config import TuneConfig
    from hardcse.art.rl import tuned_cache
    from hardcse.config import load_config

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "helper.py").write_text("SCALE = 1.0\n")
    (tmp_path / "terms.py").write_text(
        "from helper import SCALE\n\ndef words(anchors, answers, kind, context):\n"
        "    return [SCALE * len((a or '').split()) for a in answers]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    overrides = [*tiny_tune_overrides, "reward.terms=[{fn: 'terms.py:words', weight: 0.1}]"]

    torch_engine = Engine("torch")

    def key(engine: Engine = torch_engine, rollouts: str = "torch") -> str:
        config = load_config(TuneConfig, overrides=[*overrides, f"rl.rollout_engine={rollouts}"])
        return tuned_cache._family(config, engine).name

    torch_key = key()
    assert key() == torch_key  # nothing changed: the same key
    assert key(rollouts="auto") == torch_key  # auto under the torch engine: the policy samples, as with torch
    with monkeypatch.context() as m:
        m.setattr(tuned_cache, "world_size", lambda: 2)  # rank r samples with seed + r * 1_000_003
        assert key() != torch_key
    if engines.openvino_installed():
        float32 = key(Engine("openvino", "float32"))
        assert float32 != torch_key
        assert key(Engine("openvino", "bfloat16")) != float32
        assert key(Engine("auto")) == key(Engine("openvino"))  # the engine used on this CPU, not the word chosen
        openvino_rollouts = key(Engine("auto"), "openvino")
        assert openvino_rollouts != key(Engine("auto"))  # another sampler: another tuning
        assert key(Engine("auto"), "auto") == openvino_rollouts  # auto here samples in OpenVINO
    (tmp_path / "helper.py").write_text("SCALE = 2.0\n")  # a module the term imports changed
    assert key() != torch_key
    helper_changed = key()
    (tmp_path / "terms.py").write_text((tmp_path / "terms.py").read_text() + "# edited\n")
    assert key() != helper_changed
    # the KL's reference: auto outside a warm-started run is base; a folder by its files, not its path
    edited = key()

    def with_reference(reference: str) -> str:
        config = load_config(TuneConfig, overrides=[*overrides, "rl.rollout_engine=torch", f"rl.reference={reference}"])
        return tuned_cache._family(config, torch_engine).name

    assert with_reference("auto") == with_reference("base") == edited
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "adapter_model.safetensors").write_bytes(b"weights")
    folder = with_reference(str(tmp_path / "a"))
    assert folder != edited and with_reference(str(tmp_path / "b")) == folder  # a copy: the same reference
    (tmp_path / "b" / "adapter_model.safetensors").write_bytes(b"other weights")
    assert with_reference(str(tmp_path / "b")) != folder


def test_a_term_file_is_loaded_by_its_path_now_and_again_when_edited(tmp_path, monkeypatch):
    from hardcse.art.reward.term_loading import load_term_function

    for name, value in (("a", 1.0), ("b", 2.0)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "t.py").write_text(f"def term(anchors, answers, kind, context):\n    return [{value}]\n")
    monkeypatch.chdir(tmp_path / "a")
    assert load_term_function("t.py:term")([], [], "positive", None) == [1.0]
    monkeypatch.chdir(tmp_path / "b")  # the same spec from another folder is another file
    assert load_term_function("t.py:term")([], [], "positive", None) == [2.0]
    (tmp_path / "b" / "t.py").write_text("def term(anchors, answers, kind, context):\n    return [3.0]\n")
    term = load_term_function("t.py:term")
    assert term([], [], "positive", None) == [3.0]
    assert term.__module__.startswith("hardcse_reward_term_")  # a name of its own, the same in every process
    assert term.__module__ == load_term_function(str(tmp_path / "b" / "t.py") + ":term").__module__


@pytest.mark.slow  # a whole run on tiny models (10 s and more): make test, not test-fast
def test_an_encoders_cached_evaluation_follows_the_model_tasks_pooling_data_engine_and_code(
    tiny_encoder, tiny_encoder_dir, tmp_path, monkeypatch
):
    import shutil

    import torch

    from hardcse import cache
    from hardcse.evaluation import results
    from hardcse.paths import data_dir

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    sts = tmp_path / "data"
    shutil.copytree(data_dir() / "sts", sts / "sts")
    monkeypatch.setenv("HARDCSE_DATA", str(sts))
    evaluations = []
    from hardcse.evaluation import sts as sts_module

    write = sts_module.write_sts_eval
    monkeypatch.setattr(sts_module, "write_sts_eval", lambda *a, **k: evaluations.append(1) or write(*a, **k))

    torch_float32 = Engine("torch", "float32")

    def evaluate(engine: Engine = torch_float32) -> float:
        return results.cached_eval(str(tiny_encoder_dir), engine=engine)["avg7"]

    first = evaluate()
    assert evaluate() == first and len(evaluations) == 1  # read back
    again = results.cached_eval(str(tiny_encoder_dir), engine=torch_float32)
    assert "seconds" not in again and again["read_from"].startswith(str(tmp_path / "cache" / "eval"))
    dev_only = results.cached_eval(str(tiny_encoder_dir), engine=torch_float32, tasks=["STS-B-dev"])
    assert list(dev_only["scores"]) == ["STS-B-dev"] and "seconds" in dev_only and len(evaluations) == 2
    cls = results.cached_eval(str(tiny_encoder_dir), engine=torch_float32, tasks=["STS-B-dev"], pooling="cls")
    assert cls["scores"] != dev_only["scores"] and len(evaluations) == 3  # another pooling: evaluated
    del evaluations[1:]  # the counts below are of the whole suite's evaluations
    assert evaluate(Engine("torch")) == first and len(evaluations) == 1  # PyTorch computes in float32 either way
    with monkeypatch.context() as m:
        m.setattr(cache, "code_digest", lambda **_: "other code")
        evaluate()
    assert len(evaluations) == 2
    dev = sts / "sts" / "STSBenchmark" / "dev.tsv"
    header, row, *rest = dev.read_text().splitlines()
    dev.write_text("\n".join([header, "0.1" + row[row.index("\t") :], *rest]) + "\n")  # the data changed
    evaluate()
    assert len(evaluations) == 3
    with torch.no_grad():
        next(tiny_encoder.parameters()).mul_(2)
    tiny_encoder.save(str(tiny_encoder_dir))  # the model changed
    evaluate()
    assert len(evaluations) == 4
    if engines.openvino_installed():
        evaluate(Engine("openvino", "float32"))
        assert len(evaluations) == 5


def test_the_decontamination_index_follows_the_evaluation_data(tmp_path, monkeypatch):
    import shutil

    from hardcse.data.decontamination import DecontaminationConfig, eval_index
    from hardcse.paths import data_dir

    shutil.copytree(data_dir() / "sts", tmp_path / "sts")
    monkeypatch.setenv("HARDCSE_DATA", str(tmp_path))
    config = DecontaminationConfig(tasks=["STS-B"])
    sentence = "A sentence that is in no evaluation set at all, written for this test."
    assert eval_index(config).match(sentence) is None
    test = tmp_path / "sts" / "STSBenchmark" / "test.tsv"
    lines = test.read_text().splitlines()
    header, first = lines[0], lines[1].split("\t")
    columns = header.split("\t")
    first[columns.index("sentence1")] = sentence
    test.write_text("\n".join([header, "\t".join(first), *lines[2:]]) + "\n")
    assert eval_index(config).match(sentence) is not None


def test_the_decontamination_index_memo_is_bounded():
    from hardcse.data.decontamination import DecontaminationConfig, _built_index, eval_index

    settings = [DecontaminationConfig(tasks=["STS-B"], threshold=t) for t in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)]
    indexes = [eval_index(config) for config in settings]
    assert _built_index.cache_info().currsize <= 4
    assert eval_index(settings[-1]) is indexes[-1]  # the latest kept
    assert eval_index(settings[0]) is not indexes[0]  # the oldest built again


def test_the_shared_code_never_imports_the_upper_layers():
    """What keys the NLI models' cache by the shared code only (hardcse.cache.UPPER_LAYERS) rests on this: the
    dependencies point down (docs/development.md)."""
    import ast
    from pathlib import Path

    import hardcse
    from hardcse.cache import UPPER_LAYERS

    root = Path(hardcse.__file__).parent
    upper = tuple(f"hardcse.{name.removesuffix('.py')}" for name in UPPER_LAYERS)
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] in UPPER_LAYERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            found += [f"{path.relative_to(root)}: {n}" for n in names if n == "hardcse" or n.startswith(upper)]
    # the package's facade imports the Python API on first use of a name (hardcse/__init__.py), never on import
    facade = "__init__.py: hardcse.api"
    assert not [f for f in found if not f.endswith(": hardcse") and f != facade], found


def test_a_discriminator_trained_in_a_run_is_kept_and_its_key_follows_what_decides_its_weights(
    tiny_bert_dir, tmp_path, monkeypatch
):
    import shutil

    from hardcse import cache
    from hardcse.config import load_config
    from hardcse.discriminator import kept
    from hardcse.discriminator.train import NLITrainConfig, nli_training_pairs

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    train, dev = tmp_path / "train.tsv", tmp_path / "dev.tsv"
    rows = [("A man sleeps.", "A man rests.", "entailment"), ("A cat sits.", "A dog runs.", "contradiction")]
    rows += [("Kids play.", "Children are outside.", "neutral")]
    train.write_text("premise\thypothesis\tlabel\n" + "".join("\t".join(r) + "\n" for r in rows * 4))
    dev.write_text("premise\thypothesis\tlabel\n" + "".join("\t".join(r) + "\n" for r in rows))
    model = tmp_path / "base"
    shutil.copytree(tiny_bert_dir, model)
    common = [f"base_model={model}", "training.batch_size=4", "training.eval_steps=2"]

    def config(*extra: str, train_file=train) -> NLITrainConfig:
        files = [f"train_files=[{train_file}]", f"dev_files=[{dev}]"]
        return load_config(NLITrainConfig, overrides=[*common, *files, *extra])

    def key(c: NLITrainConfig | None = None) -> str:
        c = c or config()
        return kept.kept_discriminator_dir(c, nli_training_pairs(c)).name

    trainings = []
    train_nli = kept.train_nli
    monkeypatch.setattr(kept, "train_nli", lambda *a: trainings.append(1) or train_nli(*a))
    kept.train_or_copy(config(), tmp_path / "first")
    (tmp_path / "second" / "checkpoints" / "checkpoint-2").mkdir(parents=True)  # a killed training's leftovers
    kept.train_or_copy(config(), tmp_path / "second")
    assert len(trainings) == 1 and not (tmp_path / "second" / "checkpoints").exists()  # replaced by the copy
    first, second = (json.loads((tmp_path / name / "training.json").read_text()) for name in ("first", "second"))
    assert "seconds_per_step" in first and "seconds_per_step" not in second  # a copy reports no speed
    assert second.pop("reused_from") == key()
    assert second == {k: v for k, v in first.items() if k not in kept.TIMING_KEYS}
    # what the cache promises: training again from nothing writes the same weights, byte for byte
    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "another-cache"))
    kept.train_or_copy(config(), tmp_path / "third")
    assert len(trainings) == 2
    weights = [(tmp_path / name / "model.safetensors").read_bytes() for name in ("second", "third")]
    assert weights[0] == weights[1]

    base = key()
    assert key() == base
    renamed = tmp_path / "renamed.tsv"
    shutil.copy(train, renamed)
    assert key(config(train_file=renamed)) == base  # the same pairs under another name
    assert key(config("report_to=[]")) == base  # how a run is watched
    assert key(config("training.learning_rate=1e-4")) != base
    assert key(config("training.dtype=bfloat16")) != base
    assert key(config("max_examples=6")) != base
    assert key(config("length_grouped=false")) != base
    train.write_text(train.read_text().replace("A man rests.", "A man naps."))  # a training pair changed
    assert key() != base
    changed = key()
    dev.write_text(dev.read_text().replace("neutral", "entailment"))  # a dev label changed
    assert key() != changed
    changed = key()
    (model / "config.json").write_text((model / "config.json").read_text().replace("{", '{"edited": 1, ', 1))
    assert key() != changed  # the base model's files changed
    changed = key()
    with monkeypatch.context() as m:
        m.setattr(kept, "world_size", lambda: 2)
        assert key() != changed
    with monkeypatch.context() as m:
        m.setattr(cache, "code_digest", lambda **_: "other code")
        assert key() != changed
    with monkeypatch.context() as m:
        m.setattr(cache, "machine_kind", lambda device: "another CPU")
        assert key() != changed


def test_a_discriminator_resumed_from_a_killed_runs_checkpoint_is_not_kept(tmp_path, monkeypatch):
    from hardcse.config import load_config
    from hardcse.discriminator import kept
    from hardcse.discriminator.train import NLITrainConfig, nli_training_pairs

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    config = load_config(NLITrainConfig, overrides=["max_examples=8"])

    # what train_nli leaves after a resume
    def resumed_training(config: NLITrainConfig, out, data, tracking=None) -> None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "training.json").write_text(json.dumps({"steps": 4, "resumed_from": "checkpoint-2"}))

    monkeypatch.setattr(kept, "train_nli", resumed_training)
    kept.train_or_copy(config, tmp_path / "run" / "discriminator")
    entry = kept.kept_discriminator_dir(config, nli_training_pairs(config))
    assert (tmp_path / "run" / "discriminator" / "training.json").is_file() and not entry.exists()


def test_a_discriminator_that_cannot_be_kept_costs_a_warning_not_the_run(tmp_path, monkeypatch, caplog):
    from hardcse.config import load_config
    from hardcse.discriminator import kept
    from hardcse.discriminator.train import NLITrainConfig

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))

    def trained(config: NLITrainConfig, out, data, tracking=None) -> None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "training.json").write_text(json.dumps({"steps": 4, "resumed_from": None}))

    def full_disk(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(kept, "train_nli", trained)
    monkeypatch.setattr(kept, "publish_dir", full_disk)
    kept.train_or_copy(load_config(NLITrainConfig, overrides=["max_examples=8"]), tmp_path / "discriminator")
    assert (tmp_path / "discriminator" / "training.json").is_file()
    assert "not kept" in caplog.text and "No space left on device" in caplog.text


def test_an_evaluation_of_a_folder_that_loads_hardcses_own_modules_follows_all_of_hardcses_code(tmp_path, monkeypatch):
    # a DiffAug encoder's modules.json names hardcse.diffaug's prefixed transformer: its scores depend on that code,
    # which the shared code's digest leaves out
    import json

    from hardcse import cache
    from hardcse.evaluation import results
    from hardcse.evaluation import sts as sts_module

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    plain, prefixed = tmp_path / "plain", tmp_path / "prefixed"
    for folder, module in (
        (plain, "sentence_transformers.models.Transformer"),
        (prefixed, "hardcse.diffaug.prefix.PrefixedTransformer"),
    ):
        folder.mkdir()
        (folder / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "", "type": module}]))
    evaluated = []

    def write(path, source, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        evaluated.append(source)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"avg7": 1.0, "scores": {}}))
        return {"avg7": 1.0, "scores": {}}

    monkeypatch.setattr(sts_module, "write_sts_eval", write)
    for upper_layers in ("upper layers as they were", "upper layers changed"):
        monkeypatch.setattr(cache, "code_digest", lambda without=(), upper=upper_layers: "shared" if without else upper)
        for folder in (plain, prefixed):
            results.cached_eval(str(folder), engine=Engine("torch", "float32"), tasks=["STS-B-dev"])
    assert evaluated == [str(plain), str(prefixed), str(prefixed)]  # the plain folder's scores were read back


def test_prepare_trains_what_the_quickstart_would_train_first_with_its_own_configs(tmp_path, monkeypatch, capsys):
    """Where the quickstart trains its discriminator and judge and warm-starts its generator, `hardcse prepare`
    asks the same kept trainings with the same configs, so the run copies them (their keys: tests above and
    tests/test_warm_start.py); --no-training asks none."""
    from hardcse import resources
    from hardcse.art import run as art_run
    from hardcse.art.config import ArtRunConfig
    from hardcse.art.rl import warm_start
    from hardcse.cli import main
    from hardcse.config import load_config
    from hardcse.discriminator import kept

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path))
    monkeypatch.setenv("HARDCSE_ENGINE", "torch")
    monkeypatch.setattr(resources, "bundled_generator_dir", lambda: tmp_path / "checkpoint")
    monkeypatch.setattr(art_run, "cached_eval", lambda source, **kw: {"avg7": 78.9})
    asked = []
    monkeypatch.setattr(kept, "train_or_copy", lambda config, out: asked.append(("nli", config)) or out)
    monkeypatch.setattr(warm_start, "warm_started", lambda *args: asked.append(("warm", args[:3])))
    demo = load_config(ArtRunConfig, "quickstart", ["judge=train", "warm_start.steps=3"])
    monkeypatch.setattr("hardcse.config.load_config", lambda cls, name, *a: demo if name == "quickstart" else None)
    assert main(["prepare"]) == 0
    assert asked == [
        ("nli", demo.discriminator_training),
        ("nli", demo.judge_training),
        ("warm", (demo.warm_start, demo.generator, demo.decontamination)),
    ]
    out = capsys.readouterr().out
    assert "the quickstart's discriminator: " in out and "the quickstart's warm start: " in out
    asked.clear()
    assert main(["prepare", "--no-training"]) == 0 and asked == []
