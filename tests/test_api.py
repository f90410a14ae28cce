"""The Python API (hardcse/api.py): the command line's stages called from Python, with datasets in and out."""

from __future__ import annotations

import logging
import random
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import torch

import hardcse
from hardcse.art.config import TuneConfig
from hardcse.cli import main
from hardcse.config import load_config, save_config
from hardcse.errors import HardcseError

GENERATION = ["generator.dtype=float32", "generator.max_new_tokens=16", "filter.rule=none", "filter.candidates=4"]
SENTENCES = ["the cat runs very fast", "a dog sleeps here now", "the good cat sleeps a lot", "a bad dog runs the way"]


@pytest.fixture
def tiny_config(tiny_tune_overrides) -> TuneConfig:
    return load_config(TuneConfig, overrides=[*tiny_tune_overrides, *GENERATION])


def test_import_hardcse_loads_no_model_and_no_torch():
    code = "import sys, hardcse; hardcse.generate_triplets; print('torch' in sys.modules, 'datasets' in sys.modules)"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert shown == ["False", "False"]
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        hardcse.nothing_here  # noqa: B018


def test_generate_triplets_gives_the_cli_files_and_a_dataset(tiny_config, tmp_path, monkeypatch):
    from datasets import load_dataset

    from hardcse.data.triplets import read_triplets

    result = hardcse.generate_triplets(SENTENCES, config=tiny_config, out=tmp_path / "api", scores=True, progress=False)
    assert result.anchors == 4 and result.folder == tmp_path / "api"
    kept = read_triplets(tmp_path / "api" / "triplets.csv")
    assert result.dataset.column_names == ["anchor", "positive", "negative"]
    assert [tuple(r.values()) for r in result.dataset] == kept
    assert len(kept) + sum(result.dropped.values()) == 4
    # the scores: the same rows, with what decided each, in columns of their own
    assert result.scores["anchor"] == result.dataset["anchor"]
    assert {"positive_probs", "negative_r2", "negative_reward"} <= set(result.scores.column_names)
    assert all(len(p) == 3 for p in result.scores["positive_probs"]) and None not in result.scores["negative_reward"]
    # the run folder's dataset/ loads with datasets, and its card says what made it
    loaded = load_dataset(str(tmp_path / "api" / "dataset"))["train"]
    assert loaded.to_list() == result.dataset.to_list()
    card = (tmp_path / "api" / "dataset" / "README.md").read_text()
    assert card.startswith("---\nlicense: unknown\n") and f"**generator**: {tiny_config.generator.model}" in card
    assert "**filter**: none: every parsed pair kept" in card and "**counts**: anchors 4, kept" in card

    # a second call on the finished folder says how to go on, in the function's terms
    with pytest.raises(HardcseError, match="pass resume=True to continue it, overwrite=True to start it again"):
        hardcse.generate_triplets(SENTENCES, config=tiny_config, out=tmp_path / "api")
    assert hardcse.generate_triplets(SENTENCES, config=tiny_config, out=tmp_path / "api", resume=True).anchors == 4

    # the CLI writes the same triplets for the same config file and sentences, and so does the API given the file
    (tmp_path / "s.txt").write_text("\n".join(SENTENCES) + "\n")
    save_config(tiny_config, tmp_path / "tiny.yaml")
    args = ["art", "generate", "--config", str(tmp_path / "tiny.yaml"), "--out", str(tmp_path / "cli")]
    assert main([*args, "--anchors", str(tmp_path / "s.txt")]) == 0
    by_file = hardcse.generate_triplets(SENTENCES, config=tmp_path / "tiny.yaml", out=tmp_path / "file")
    for name in ("triplets.csv", "synthetic.jsonl", "dataset/train.parquet"):
        for other in ("cli", "file"):
            assert (tmp_path / other / name).read_bytes() == (tmp_path / "api" / name).read_bytes(), (other, name)

    # a Dataset and its column are sentences too; a temporary folder leaves nothing behind
    from datasets import Dataset

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    again = hardcse.generate_triplets(Dataset.from_dict({"sentence": SENTENCES}), column="sentence", config=tiny_config)
    assert again.dataset.to_list() == result.dataset.to_list() and again.folder is None
    assert by_file.dataset.to_list() == result.dataset.to_list() and not list((tmp_path / "tmp").iterdir())


@pytest.mark.parametrize(
    ("sentences", "column", "message"),
    [
        ("one sentence", "text", "give a list of sentences, not one string"),
        (["fine", 3], "text", r"sentences\[1\]: int, not a string"),
        (["fine", "  "], "text", r"sentences\[1\]: an empty sentence"),
        (7, "text", "give a list of sentences, not int"),
        (None, "text", "has no column 'text' \\(it has sentence\\); give column="),
    ],
)
def test_generate_triplets_names_a_bad_input(sentences, column, message, tiny_config, tmp_path):
    if sentences is None:
        from datasets import Dataset

        sentences = Dataset.from_dict({"sentence": SENTENCES})
    with pytest.raises(HardcseError, match=message) as raised:
        hardcse.generate_triplets(sentences, column=column, config=tiny_config, out=tmp_path / "out")
    assert "\n" not in str(raised.value) and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: hardcse.generate_triplets(SENTENCES, overrides=["filter.rul=none"]), "override filter.rul=none: "),
        (lambda: hardcse.generate_triplets(SENTENCES, overrides="filter.rule=none"), "not one string"),
        (lambda: hardcse.generate_triplets(SENTENCES, config=3), "config: int; give a config's name"),
        (lambda: hardcse.generate_triplets(SENTENCES, overrides=["negatives=mined"]), "mine_hard_negatives"),
        (lambda: hardcse.generate_triplets(SENTENCES, overrides=["warm_start.steps=5"]), "give generator=FOLDER"),
        (lambda: hardcse.generate_triplets(SENTENCES, config=TuneConfig(), overrides=["rl.steps=2"]), "replace"),
        (lambda: hardcse.art_run("quickstart"), "give out=FOLDER"),
        (lambda: hardcse.run_assay(["a.csv"], "out"), "give a dict of training sets"),
        (lambda: hardcse.run_assay({"../x": "a.csv"}, "out"), "name '../x'; use letters"),
        (lambda: hardcse.run_assay({"x": [("a", "b", "c")]}, "out"), "no column anchor, positive, negative"),
        (lambda: hardcse.evaluate_sts("bundled:minilm-l6", "STS-B-dev"), "not one string"),
        (lambda: hardcse.evaluate_sts(3, ["STS-B-dev"]), "model: int"),
        (lambda: hardcse.train_discriminator("quickstart"), "training: str; give an NLITrainConfig"),
    ],
)
def test_a_mistake_is_one_line_naming_the_argument_or_key(call, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(HardcseError, match=message) as raised:
        call()
    assert "\n" not in str(raised.value) and not (tmp_path / "out").exists() and not (tmp_path / "out-data").exists()


def test_a_call_leaves_the_callers_threads_random_state_and_bars_as_they_were(tiny_config, tmp_path, capsys):
    import datasets
    import huggingface_hub.utils as hub_utils
    from transformers.utils import logging as transformers_logging

    from hardcse.library_call import library_call
    from hardcse.progress import shown

    def bars() -> tuple[bool, ...]:
        switches = (transformers_logging.is_progress_bar_enabled(), datasets.is_progress_bar_enabled())
        return (*switches, hub_utils.are_progress_bars_disabled())

    threads, shown_before = torch.get_num_threads(), bars()
    torch.manual_seed(11)
    np.random.seed(11)
    random.seed(11)
    expected = (torch.rand(3), np.random.rand(3), random.random())
    torch.manual_seed(11)
    np.random.seed(11)
    random.seed(11)
    capsys.readouterr()
    hardcse.generate_triplets(SENTENCES, config=tiny_config, out=tmp_path / "g", progress=False)
    quiet = capsys.readouterr()
    assert "generate:" not in quiet.err and "== synthesis" not in quiet.out  # no bar, no stage line
    with library_call(progress=False):
        torch.set_num_threads(1)
        torch.manual_seed(0)
        np.random.seed(0)
        random.seed(0)
        assert not shown() and bars() == (False, False, True)
    assert torch.get_num_threads() == threads and shown() and bars() == shown_before
    drawn = (torch.rand(3), np.random.rand(3), random.random())
    assert torch.equal(drawn[0], expected[0]) and np.array_equal(drawn[1], expected[1]) and drawn[2] == expected[2]


def test_messages_name_the_functions_arguments_outside_backticks():
    from hardcse.api import python_terms

    message = "x exists; pass --resume to continue it, --overwrite to start it; `hardcse art run --resume` or --out y"
    assert python_terms(message) == (
        "x exists; pass resume=True to continue it, overwrite=True to start it; `hardcse art run --resume` or out y"
    )


def test_evaluate_sts_and_assay_return_values(tiny_encoder_dir, tmp_path):
    from datasets import Dataset

    record = hardcse.evaluate_sts(tiny_encoder_dir, ["STS-B-dev"], progress=False)
    assert set(record["scores"]) == {"STS-B-dev"} and -100 <= record["scores"]["STS-B-dev"] <= 100
    with pytest.raises(HardcseError, match="unknown task\\(s\\) \\['STS-X'\\]"):
        hardcse.evaluate_sts(tiny_encoder_dir, ["STS-X"])

    rows = [(f"the cat {w} runs", f"a cat {w} runs", f"no dog {w} sleeps") for w in ("good", "bad", "very", "a")]
    one = Dataset.from_dict({k: [r[i] for r in rows] for i, k in enumerate(("anchor", "positive", "negative"))})
    overrides = [f"encoder={tiny_encoder_dir}", "seeds=[1]", "eval_tasks=[STS-B-dev]", "training.batch_size=2"]
    logger = logging.getLogger("hardcse")
    level = logger.level
    logger.setLevel(logging.INFO)  # as docs/python.md says, for the progress lines in run.log
    try:
        markdown = hardcse.run_assay({"a": one, "b": one}, tmp_path / "assay", overrides=overrides, progress=False)
    finally:
        logger.setLevel(level)
    assert "| b − a | +0.00 [+0.00, +0.00] |" in markdown  # the same rows, the same seeds: the same encoder
    assert " INFO hardcse." in (tmp_path / "assay" / "run.log").read_text()
    with pytest.raises(HardcseError, match="data 'x': no column negative; give a file or a Dataset"):
        hardcse.run_assay({"x": one.remove_columns("negative")}, tmp_path / "assay2", overrides=overrides)


def test_train_discriminator_trains_once_a_machine_and_returns_the_cached_model(tiny_bert_dir, tmp_path, monkeypatch):
    from hardcse.discriminator import kept
    from hardcse.discriminator.train import NLITrainConfig

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where the training's scratch folder goes
    (tmp_path / "tmp").mkdir()
    rows = [("A man sleeps.", "A man rests.", "entailment"), ("A cat sits.", "A dog runs.", "contradiction")]
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("premise\thypothesis\tlabel\n" + "".join("\t".join(r) + "\n" for r in rows * 4))
    files = [f"base_model={tiny_bert_dir}", f"train_files=[{pairs}]", f"dev_files=[{pairs}]"]
    training = load_config(NLITrainConfig, overrides=[*files, "training.batch_size=4", "training.eval_steps=2"])
    trainings = []
    train_nli = kept.train_nli
    monkeypatch.setattr(kept, "train_nli", lambda *a: trainings.append(1) or train_nli(*a))
    first = hardcse.train_discriminator(training, progress=False)
    second = hardcse.train_discriminator(training, progress=False)
    assert first == second and first.parent == tmp_path / "cache" / "discriminator" and len(trainings) == 1
    assert (first / "model.safetensors").is_file() and not list((tmp_path / "tmp").iterdir())  # no scratch left
