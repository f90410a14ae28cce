"""End-to-end runs of the CLI on the bundled models, at small sizes."""

import json
import socket
from pathlib import Path

import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

from hardcse.art.config import ArtRunConfig
from hardcse.cli import main
from hardcse.config import load_config
from hardcse.data.corpus import WIKI_SENTENCES
from hardcse.data.jsonl import read_jsonl
from hardcse.data.sts import load_sts_task
from hardcse.discriminator.nli import NLIDiscriminator
from hardcse.engines import Engine
from hardcse.evaluation.results import cached_eval
from hardcse.paths import data_dir
from hardcse.resources import BUNDLED_ENCODER, resolve_model

WIKI = data_dir() / WIKI_SENTENCES

pytestmark = pytest.mark.slow  # the bundled models end to end: `make test` runs it, `make test-fast` does not


def test_eval_matches_an_independent_evaluation(tmp_path, capsys, no_network):
    assert main(["eval", "--model", BUNDLED_ENCODER, "--tasks", "STS-B-dev", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "eval.json").read_text())
    assert "| STS-B-dev |" in capsys.readouterr().out
    dev = load_sts_task("STS-B-dev")
    reference = EmbeddingSimilarityEvaluator(dev.sentences1, dev.sentences2, dev.scores.tolist())
    model = SentenceTransformer(str(resolve_model(BUNDLED_ENCODER)))
    expected = reference(model)[reference.primary_metric] * 100
    assert round(record["scores"]["STS-B-dev"], 2) == round(expected, 2)
    assert (tmp_path / "eval.md").is_file()


def test_train_encoder_sup_from_nli_triplets(tmp_path):
    triplets = tmp_path / "snli_dev.csv"
    assert main(["nli", "triplets", "--nli", "nli/SNLI/dev.tsv", "--out", str(triplets)]) == 0
    out = tmp_path / "encoder"
    args = ["simcse", "train", "--config", "configs/simcse-sup.yaml", "--data", str(triplets), "--out", str(out)]
    args += ["eval_tasks=[STS-B-dev]", "training.max_steps=2", "training.eval_steps=2", "training.batch_size=8"]
    assert main(args) == 0
    before, after = (json.loads((out / name).read_text()) for name in ("eval_before.json", "eval.json"))
    assert abs(after["scores"]["STS-B-dev"] - before["scores"]["STS-B-dev"]) < 5
    assert SentenceTransformer(str(out / "model")).encode(["It loads."]).shape == (1, 384)
    assert main(args) == 2  # refuses to overwrite a finished run


def test_train_nli_on_the_bundled_encoder(tmp_path):
    dev = tmp_path / "dev.tsv"
    rows = ["premise\thypothesis\tlabel", "A dog runs.\tAn animal moves.\tentailment", "A dog.\tA cat.\tcontradiction"]
    dev.write_text("\n".join(rows) + "\n")
    out = tmp_path / "nli"
    args = ["nli", "train", "--config", "configs/nli-discriminator.yaml", "--out", str(out), "--no-eval"]
    small = ["max_examples=64", "training.batch_size=16", "training.eval_steps=4", f"dev_files=[{dev}]"]
    assert main(args + small) == 0
    probs = NLIDiscriminator.load(str(out)).predict_proba(["A dog runs."], ["An animal moves."])
    assert probs.shape == (1, 3) and probs.sum() == pytest.approx(1, abs=1e-5)


def test_user_mistakes_get_one_line_errors(capsys, tmp_path):
    assert main(["eval", "--model", "nobody/nothing"]) == 2
    missing = ["simcse", "train", "--config", "configs/simcse-sup.yaml", "--data", str(tmp_path / "none.csv")]
    assert main([*missing, "--out", str(tmp_path / "o")]) == 2
    assert main(["simcse", "train", "--config", "configs/simcse-sup.yaml", "--out", str(tmp_path / "o")]) == 2
    assert main(["art", "run", "--config", "configs/smoke.yaml", "--out", str(tmp_path / "o"), "rl.steps=0"]) == 2
    err = capsys.readouterr().err
    assert "error: model 'nobody/nothing'" in err and "none.csv: no such file" in err and "give --data" in err
    assert "override rl.steps=0: 0 must be a finite number greater than 0" in err
    assert not (tmp_path / "o").exists()  # nothing written before the input was checked
    assert "Traceback" not in err


def test_eval_on_a_user_pair_file(tmp_path, capsys):
    path = tmp_path / "mine.csv"
    rows = [
        "sentence1,sentence2,score",
        "A man plays.,A man is playing.,5",
        "A cat.,Stocks fell.,0",
        "Dogs run.,Dogs run fast.,4",
    ]
    path.write_text("\n".join(rows) + "\n")
    assert main(["eval", "--model", BUNDLED_ENCODER, "--pairs", str(path)]) == 0
    out = capsys.readouterr().out
    assert "| model | mine |" in out and "| 100.00 |" in out  # the bundled encoder ranks these three pairs right


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a network connection fails the test (not the offline variables: the code itself)."""
    attempts = []

    def refuse(sock, address):
        attempts.append(address)
        raise OSError(f"test: no network ({address})")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    yield attempts
    assert attempts == [], f"a connection was attempted: {attempts}"


def without_timings(path: Path) -> list[dict]:
    return [{k: v for k, v in row.items() if not k.endswith("_s")} for row in read_jsonl(path)]


def test_art_smoke_run_twice_gives_the_same_bytes_and_never_touches_the_network(
    tmp_path, capsys, monkeypatch, no_network
):
    """The shipped smoke config: discriminator training, round 0, PPO, synthesis, filter, SimCSE, eval, report; run
    twice with the same seed, every output is identical (timings aside), and no socket is opened. Both runs train
    their discriminator (keep_discriminator=false), so its training is compared too."""
    runs = [tmp_path / "first", tmp_path / "second"]
    for run in runs:
        assert main(["art", "run", "--config", "smoke", "--out", str(run), "keep_discriminator=false"]) == 0
    out = capsys.readouterr().out
    assert "| round_0 | 82.03 | 86.72 |" in out and "| round_1 |" in out  # STS-B, STS-B dev of the bundled encoder
    run = runs[0]
    assert (run / "discriminator" / "config.json").is_file()
    records = read_jsonl(run / "round_1" / "synthetic.jsonl")
    assert len(records) == 8 and sum(r["positive"] is not None for r in records) >= 4  # the few-shot prompt parses
    assert "## Synthetic data per round" in (run / "report.md").read_text()
    model = SentenceTransformer(str(run / "round_1" / "encoder"), device="cpu")
    assert model.encode(["A man plays a guitar."]).shape == (1, 384)

    for name in ("discriminator/model.safetensors", "round_1/synthetic.jsonl", "round_1/triplets.csv"):
        assert (runs[0] / name).read_bytes() == (runs[1] / name).read_bytes()
    assert "reused_from" not in json.loads((runs[1] / "discriminator" / "training.json").read_text())
    logs = [without_timings(r / "round_1" / "generator" / "rl_log.jsonl") for r in runs]
    assert logs[0] == logs[1]
    for stage in ("round_0", "round_1"):
        scores = [json.loads((r / stage / "eval.json").read_text())["scores"] for r in runs]
        assert scores[0] == scores[1]
    # round 0's scores may be read back from the evaluation cache by both runs: they are a new evaluation's
    smoke = load_config(ArtRunConfig, "smoke")
    settings = {"tasks": smoke.evaluated_tasks, "pooling": smoke.pooling, "device": smoke.device}
    fresh = cached_eval(smoke.encoder, tmp_path / "new-cache", Engine.resolve(smoke.engine), **settings)
    assert "read_from" not in fresh
    assert fresh["scores"] == json.loads((run / "round_0" / "eval.json").read_text())["scores"]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    assert main(["eval", "--model", "runs/typo"]) == 2  # owner/name in form, but runs/ is a local folder: no hub
    assert "model 'runs/typo': no such folder" in capsys.readouterr().err


def test_diffaug_smoke_run_twice_gives_the_same_bytes(tmp_path, capsys):
    """The shipped DiffAug smoke config (diffaug-semi at two steps a stage): vendored NLI pairs and Wikipedia
    sentences, both stages, the STS-B dev evaluation; the saved model loads with its prefixes through plain
    sentence-transformers, and a second run gives the same diagnostics, weights and scores."""
    runs = [tmp_path / "first", tmp_path / "second"]
    for out in runs:
        assert main(["diffaug", "train", "--config", "diffaug-smoke", "--out", str(out)]) == 0
    assert "| STS-B-dev |" in capsys.readouterr().out
    out = runs[0]
    dev = json.loads((out / "eval.json").read_text())["scores"]["STS-B-dev"]
    assert 70 < dev < 95  # a few steps at lr 1e-5 leave the bundled encoder (86.7) close to where it was
    assert [row["step"] for row in read_jsonl(out / "stage1" / "diagnostics.jsonl")] == [0, 1, 2]
    model = SentenceTransformer(str(out / "model"), trust_remote_code=True, local_files_only=True)
    assert type(model[0]).__name__ == "PrefixedTransformer" and model.encode(["It loads."]).shape == (1, 384)

    for name in ("stage1/diagnostics.jsonl", "stage1/model.safetensors", "model/model.safetensors"):
        assert (runs[0] / name).read_bytes() == (runs[1] / name).read_bytes(), name
    scores = [json.loads((r / "eval.json").read_text())["scores"] for r in runs]
    assert scores[0] == scores[1]


def test_the_readme_recipe_runs_art_on_a_users_sentences_and_encoder(tmp_path, monkeypatch):
    """README's "ART on your own sentences and encoder", its commands as written, at smoke size: `--config smoke` in
    place of the quickstart, a corpus file and the bundled encoder saved to a folder under the recipe's names. Its
    Python, run in a fresh process, loads the encoder the run wrote."""
    import re
    import shlex
    import subprocess
    import sys

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    recipe = re.search(r"## ART on your own sentences and encoder\n(.*?)\n## ", readme, re.S).group(1)
    blocks = dict(re.findall(r"```(bash|python)\n(.*?)```", recipe, re.S))
    (command,) = [line for line in blocks["bash"].splitlines() if line.startswith("hardcse art run")]
    argv = shlex.split(command)[1:]
    argv[argv.index("--config") + 1] = "smoke"
    corpus = next(a.split("=", 1)[1] for a in argv if a.startswith("anchors.corpus="))
    encoder = next(a.split("=", 1)[1] for a in argv if a.startswith("encoder="))
    monkeypatch.chdir(tmp_path)
    sentences = [s for s in WIKI.read_text(encoding="utf-8").splitlines() if 6 <= len(s.split()) <= 40]
    Path(corpus).write_text("\n".join(sentences[:560]) + "\n", encoding="utf-8")  # 500 held out, the rest to use
    SentenceTransformer(str(resolve_model(BUNDLED_ENCODER)), device="cpu").save(encoder)
    assert main(argv) == 0
    out = Path(argv[argv.index("--out") + 1])
    config = (out / "config.yaml").read_text(encoding="utf-8")
    assert f"corpus: {corpus}" in config and f"encoder: {encoder}" in config
    loaded = subprocess.run([sys.executable, "-c", blocks["python"]], capture_output=True, text=True, check=False)
    assert loaded.returncode == 0, loaded.stderr
    assert "(2, 384)" in loaded.stdout
