"""`hardcse art run` on tiny random models: the run folder, resume after a kill, reproducibility, report."""

import json
import shutil

import pytest
import yaml
from sentence_transformers import SentenceTransformer

from conftest import run_until_killed
from hardcse.art.analysis.report import compare_runs
from hardcse.art.config import ArtRunConfig
from hardcse.art.run import art_run, round_anchors
from hardcse.art.synthesis.anchors import split_anchors
from hardcse.cache_entries import is_entry
from hardcse.cli import main
from hardcse.config import load_config
from hardcse.data.jsonl import read_jsonl
from hardcse.encoder.build import load_encoder
from hardcse.engines import Engine
from hardcse.errors import HardcseError
from hardcse.evaluation.results import cached_eval
from hardcse.evaluation.sts import dev_score, sts_record


@pytest.fixture
def run_config(tiny_lm_dir, tiny_encoder_dir, tiny_nli_dir, corpus, tmp_path):
    """Two rounds: 2 PPO steps x 4 rollouts and 4 synthesis anchors each, on 45 corpus anchors."""
    config = {
        "encoder": str(tiny_encoder_dir),
        "discriminator": str(tiny_nli_dir),
        "judge": str(tiny_nli_dir),
        "rounds": 2,
        "generator": {"model": str(tiny_lm_dir), "max_new_tokens": 16, "batch_size": 4},
        "anchors": {"corpus": str(corpus), "held_out": 5, "min_words": 3},
        "rl": {"steps": 2, "batch_size": 4, "minibatch_size": 2, "epochs": 1, "save_every": 1},
        "synthesis_anchors": 4,
        "heldout_anchors": 3,
        "filter": {"rule": "none"},
        "encoder_training": {"training": {"batch_size": 4, "eval_steps": 1, "learning_rate": 1e-3}},
        "keep_better_encoder": False,
        "eval_tasks": [],  # STS-B dev only (always evaluated): fast
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_round_anchors_are_disjoint_and_synthesis_comes_first():
    train = [f"s{i}" for i in range(100)]
    config = ArtRunConfig(rounds=3, synthesis_anchors=10)
    config.rl.steps, config.rl.batch_size = 2, 4
    blocks = round_anchors(train, config)
    assert [b.synthesis for b in blocks] == [train[0:10], train[10:20], train[20:30]]
    assert [b.rl for b in blocks] == [train[30:38], train[38:46], train[46:54]]
    # a one-round run with the whole budget synthesises for exactly the same anchors
    one = ArtRunConfig(rounds=1, synthesis_anchors=30, tune_generator=False)
    assert round_anchors(train, one)[0].synthesis == train[:30] and round_anchors(train, one)[0].rl == []
    with pytest.raises(HardcseError, match="needs 324 distinct anchors"):
        round_anchors(train, ArtRunConfig(rounds=3, synthesis_anchors=100, rl=config.rl))


@pytest.mark.slow  # a whole run on tiny models (10 s and more): make test, not test-fast
def test_run_folder_report_compare_and_loading(run_config, tmp_path, capsys):
    run = tmp_path / "runs" / "tiny"
    assert main(["art", "run", "--config", str(run_config), "--out", str(run)]) == 0
    printed = capsys.readouterr().out
    assert "| round_0 |" in printed and "| round_2 |" in printed

    assert {"config.yaml", "manifest.json", "report.md", "plots", "round_0", "round_1", "round_2", "run.log"} <= {
        p.name for p in run.iterdir()
    }
    for r in ("round_1", "round_2"):
        names = {p.name for p in (run / r).iterdir()}
        assert {"generator", "synthetic.jsonl", "triplets.csv", "encoder", "eval.json", "measures.json"} <= names
        assert "rl" not in names  # the RL work folder is removed once generator/ is complete
        assert (run / r / "generator" / "rl_log.jsonl").is_file()
        assert len(read_jsonl(run / r / "synthetic.jsonl")) == 4
        heldout = json.loads((run / r / "heldout.json").read_text())
        assert heldout["anchors"] == 3 and heldout["judge"] is not None
        for measure in ("reward", "parse_failure", "judged_correct", "positive_cosine", "negative_cosine"):
            assert heldout[measure] is None or set(heldout[measure]) == {"raw", "tuned", "difference"}
        assert heldout["reward"]["raw"]["n"] == 3
        assert set(heldout["synthetic_accuracy"]) == {"raw", "tuned", "difference"}  # Table 4's, by the judge
        assert set(heldout["kept_per_minute"]) == {"raw", "tuned"}  # None where read from the cache or untimed
        raw = read_jsonl(run / r / "heldout" / "raw" / "synthetic.jsonl")
        assert [x["anchor"] for x in raw] == [
            x["anchor"] for x in read_jsonl(run / r / "heldout" / "tuned" / "synthetic.jsonl")
        ]
    anchors = [
        json.loads(line)["anchor"] for r in ("round_1", "round_2") for line in (run / r / "synthetic.jsonl").open()
    ]
    assert len(set(anchors)) == 8  # no anchor reused across rounds

    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["versions"]["torch"] and manifest["seeds"]["rl"] == 42
    assert list(manifest["stages"])[:2] == ["round_0.eval", "round_1.generator"]
    assert all(s["seconds"] >= 0 and s["attempts"] == 1 for s in manifest["stages"].values())

    report = (run / "report.md").read_text()
    for heading in ("STS per round", "Synthetic data per round", "Encoder training per round", "Time per stage"):
        assert f"## {heading}" in report
    assert "| round_2 |" in report and "Δavg7" not in report  # only STS-B was evaluated: no 7-task average
    assert {p.name for p in (run / "plots").iterdir()} == {
        "reward_per_round.png",
        "sts_per_round.png",
        "cosine_histograms.png",
    }

    model = SentenceTransformer(str(run / "round_2" / "encoder"), device="cpu")
    assert model.encode(["the cat runs"]).shape == (1, 32)

    # round 0's scores are what a fresh evaluation of the starting encoder computes, and the evaluation cache holds
    # them under the key a later run computes: it reads them back
    config = load_config(ArtRunConfig, run_config)
    engine = Engine.resolve(config.engine)
    round_0 = json.loads((run / "round_0" / "eval.json").read_text())
    encoder = load_encoder(config.encoder, config.pooling, device="cpu")
    assert round_0["scores"] == sts_record(encoder, config.encoder, config.evaluated_tasks, engine=engine)["scores"]
    start = {"tasks": config.evaluated_tasks, "pooling": config.pooling, "device": config.device, "engine": engine}
    kept = cached_eval(config.encoder, **start)
    assert kept["scores"] == round_0["scores"] and "read_from" in kept and "seconds" not in kept

    (run / "report.md").unlink()
    assert main(["art", "report", str(run)]) == 0
    assert (run / "report.md").read_text() == report
    assert main(["art", "compare", str(run), str(run)]) == 0
    assert compare_runs([run]).count("| tiny |") == 1


def test_a_run_refuses_to_overwrite_or_change_its_config(run_config, tmp_path, capsys):
    config = load_config(ArtRunConfig, run_config, ["rounds=1", "rl.steps=1", "synthesis_anchors=2"])
    art_run(config, tmp_path / "r")
    with pytest.raises(HardcseError, match="--resume"):
        art_run(config, tmp_path / "r")
    changed = load_config(ArtRunConfig, run_config, ["rounds=1", "rl.steps=2", "synthesis_anchors=2"])
    with pytest.raises(HardcseError, match="differs from .* in rl.steps"):
        art_run(changed, tmp_path / "r", resume=True)
    art_run(config, tmp_path / "r", resume=True)  # everything done: nothing redone
    stages = json.loads((tmp_path / "r" / "manifest.json").read_text())["stages"]
    assert all(s["attempts"] == 1 for s in stages.values())
    assert main(["art", "run", "--out", str(tmp_path / "nothing")]) == 2
    assert "--config" in capsys.readouterr().err


def test_raw_llm_run_with_no_triplets_kept_and_no_judge(run_config, tmp_path):
    """tune_generator false (the SimCSE* baseline); a filter nothing passes; the previous encoder is handed on."""
    overrides = [
        "tune_generator=false",
        "rounds=1",
        "judge=null",
        "filter.rule=threshold",
        "filter.min_entailment=1.01",
        "keep_better_encoder=true",
    ]
    config = load_config(ArtRunConfig, run_config, overrides)
    final = art_run(config, tmp_path / "raw")
    run = tmp_path / "raw"
    assert not (run / "round_1" / "generator").exists() and final == run / "round_1" / "encoder"
    training = json.loads((run / "round_1" / "training.json").read_text())
    assert training == training | {"triplets": 0, "trained": False, "handed_on": "previous"}
    scores = [json.loads((run / r / "eval.json").read_text())["scores"] for r in ("round_0", "round_1")]
    assert scores[0] == scores[1]
    copied = json.loads((run / "round_1" / "eval.json").read_text())  # copied, not timed, nor read from a cache
    assert "seconds" not in copied and "read_from" not in copied and copied["copied_from"].endswith("eval.json")
    handed_on = SentenceTransformer(str(final), device="cpu")
    assert handed_on.encode(["the cat runs"]).shape == (1, 32)
    # keep-better's previous score is training's own evaluator on the encoder it would hand on (not eval.json's,
    # which encodes the dev set among the whole suite's sentences): a fresh process scores the saved encoder the same
    assert training["previous_dev"] == dev_score(handed_on, Engine.from_environment())
    # and it does not read round 0's eval.json: with another dev score there, round 1 made again records the same
    record = json.loads((run / "round_0" / "eval.json").read_text())
    record["scores"]["STS-B-dev"] = 99.0
    (run / "round_0" / "eval.json").write_text(json.dumps(record))
    shutil.rmtree(run / "round_1" / "encoder")
    (run / "round_1" / "training.json").unlink()
    art_run(config, run, resume=True)
    assert json.loads((run / "round_1" / "training.json").read_text())["previous_dev"] == dev_score(
        handed_on, Engine.from_environment()
    )
    measures = json.loads((run / "round_1" / "measures.json").read_text())
    assert measures["positive_accuracy"] is None and measures["judge"] is None
    report = (run / "report.md").read_text()
    assert "without RL" in report and "no triplets survived the filter" in report
    assert not (run / "round_1" / "heldout.json").exists()  # nothing tuned: nothing to compare


def test_mined_negative_baseline_run(run_config, tmp_path):
    """negatives: mined: the generator writes positives only; each negative comes from the corpus. The encoder
    trains on at most triplets_per_round of the kept triplets, the first ones."""
    overrides = ["tune_generator=false", "rounds=1", "negatives=mined", "triplets_per_round=1"]
    config = load_config(ArtRunConfig, run_config, overrides)
    config.mining.relative_margin = 0.0005  # the tiny random encoder's cosines are all close to 1
    art_run(config, tmp_path / "mined")
    records = read_jsonl(tmp_path / "mined" / "round_1" / "synthetic.jsonl")
    corpus = split_anchors(config.anchors).train
    assert len(records) == 4 and all(r["negative_source"] == "mined" and r["negative_raw"] is None for r in records)
    mined = [r for r in records if r["negative"] is not None]
    assert all(r["negative"] in corpus and r["negative"] != r["anchor"] for r in mined)
    assert all(r["negative_probs"] is not None for r in mined)
    assert all(
        r["negative_reason"] == "not_mined" for r in records if r["positive"] is not None and r["negative"] is None
    )
    training = json.loads((tmp_path / "mined" / "round_1" / "training.json").read_text())
    kept = sum(r["drop_reason"] is None for r in records)
    assert (training["kept"], training["triplets"], training["triplets_per_round"]) == (kept, min(kept, 1), 1)
    used = f"| {min(kept, 1)} of {kept} kept |" if kept else "| 0 (short of 1) |"
    assert used in (tmp_path / "mined" / "report.md").read_text()


def test_two_negatives_a_generated_and_a_mined_one_train_together(run_config, tmp_path):
    """negatives: both: the generator writes both texts, a negative is mined beside the generated one, and a kept
    row carries the two as negative columns of the encoder's training data."""
    from hardcse.data.triplets import read_triplets

    overrides = ["tune_generator=false", "rounds=1", "negatives=both"]
    config = load_config(ArtRunConfig, run_config, overrides)
    config.mining.relative_margin = 0.0005  # the tiny random encoder's cosines are all close to 1
    art_run(config, tmp_path / "both")
    round_dir = tmp_path / "both" / "round_1"
    records = read_jsonl(round_dir / "synthetic.jsonl")
    assert all("negative_raw" in r and "mined_negative" in r for r in records)
    kept = [r for r in records if r["drop_reason"] is None]
    rows = read_triplets(round_dir / "triplets.csv")
    assert rows == [(r["anchor"], r["positive"], r["negative"], r["mined_negative"]) for r in kept]
    if rows:
        assert (round_dir / "triplets.csv").read_text().splitlines()[0] == "sent0,sent1,hard_neg,hard_neg_2"
    assert rows and all(None not in row and "" not in row for row in rows)
    training = json.loads((round_dir / "training.json").read_text())
    assert training["triplets"] == len(rows) and training["trained"]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("judge=no/such-judge", "judge: "),
        ("mix_triplets=missing.csv", "no such file"),
        ("synthesis_anchors=1000", "distinct anchors"),
    ],
)
def test_bad_run_configs_fail_before_any_work(run_config, tmp_path, override, message):
    config = load_config(ArtRunConfig, run_config, [override])
    with pytest.raises(HardcseError, match=message):
        art_run(config, tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


@pytest.mark.slow  # a whole run on tiny models (10 s and more): make test, not test-fast
def test_killed_inside_and_between_stages_resume_gives_the_same_run(run_config, tmp_path):
    config = load_config(ArtRunConfig, run_config)
    reference = tmp_path / "reference"
    art_run(config, reference)

    killed = tmp_path / "runs" / "killed"
    args = ["art", "run", "--config", str(run_config), "--out", str(killed)]
    # inside a stage: PPO has saved its first checkpoint but not finished
    run_until_killed(args, lambda: (killed / "round_1" / "rl" / "checkpoint").is_dir())
    assert not (killed / "round_1" / "generator").exists()
    # between stages of round 2 (or wherever it is when the synthesis file appears)
    run_until_killed([*args, "--resume"], lambda: (killed / "round_2" / "synthesis.json").is_file())
    assert not (killed / "report.md").exists()
    art_run(config, killed, resume=True)

    for r in ("round_1", "round_2"):
        assert (killed / r / "synthetic.jsonl").read_text() == (reference / r / "synthetic.jsonl").read_text()
        assert (killed / r / "triplets.csv").read_text() == (reference / r / "triplets.csv").read_text()
        rewards = [[s["reward"] for s in read_jsonl(d / r / "generator" / "rl_log.jsonl")] for d in (killed, reference)]
        assert rewards[0] == rewards[1]
        scores = [json.loads((d / r / "eval.json").read_text())["scores"] for d in (killed, reference)]
        assert scores[0] == scores[1]
    stages = json.loads((killed / "manifest.json").read_text())["stages"]
    assert stages["round_0.eval"]["attempts"] == 1 and stages["round_1.synthesis"]["attempts"] == 1
    assert stages["round_1.generator"]["attempts"] == 2  # killed once, resumed from its checkpoint
    assert all("seconds" in s for s in stages.values())


@pytest.mark.slow  # two runs on tiny models
def test_a_run_trains_its_judge_on_its_own_share_and_grades_with_it(
    run_config, tiny_nli_dir, tmp_path, monkeypatch, caplog
):
    """judge: train: a stage of its own after the discriminator's, from judge_training (the judge's third, seed 7),
    and the held-out comparison, the measures and the report read the run's judge folder; trained on pairs the
    discriminator shares, the run warns. (The training itself and its cache: tests/test_caches.py.)"""
    import hardcse.art.nli_models as nli_models_module

    trained = []

    def fake_training(config, out, tracking=None):  # the tiny NLI model, and what it was asked to train on
        shutil.copytree(tiny_nli_dir, out, dirs_exist_ok=True)
        trained.append((config.share, config.training.seed))

    monkeypatch.setattr(nli_models_module, "train_or_copy", fake_training)
    overrides = ["rounds=1", "discriminator=train", "judge=train", "discriminator_training.share=discriminator"]
    art_run(load_config(ArtRunConfig, run_config, overrides), tmp_path / "run")
    assert trained == [("discriminator", 42), ("judge", 7)]
    run = tmp_path / "run"
    stages = list(json.loads((run / "manifest.json").read_text())["stages"])
    assert stages.index("discriminator") < stages.index("judge") < stages.index("round_1.generator")
    assert json.loads((run / "round_1" / "heldout.json").read_text())["judge"] == str(run / "judge")
    assert json.loads((run / "round_1" / "measures.json").read_text())["judge"] == str(run / "judge")
    report = (run / "report.md").read_text().splitlines()
    assert "synthetic accuracy (by the judge)" in report[2]
    assert "judge: trained in the run (`judge/`: `bundled:minilm-l6`, all NLI pairs of the share `judge`)" in report[5]
    assert "train on shared NLI pairs" not in caplog.text
    # both on every pair: the run says the judge saw the reward's pairs
    shared = ["rounds=1", "discriminator=train", "judge=train", "judge_training.share=null", "tune_generator=false"]
    art_run(load_config(ArtRunConfig, run_config, shared), tmp_path / "shared")
    assert "judge: the run's judge and discriminator train on shared NLI pairs (shares None and None)" in caplog.text


@pytest.mark.slow  # two whole runs on tiny models (about 2 min): make test, not test-fast
def test_a_warm_started_run_tunes_on_from_the_warm_start_and_compares_against_it(run_config, tmp_path, monkeypatch):
    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))  # an empty cache: the first run trains
    nli = tmp_path / "pairs.tsv"
    rows = [("the cat runs", "the cat runs very", "entailment"), ("a dog sleeps", "the dog runs here", "contradiction")]
    nli.write_text("premise\thypothesis\tlabel\n" + "".join("\t".join(r) + "\n" for r in rows * 3))
    warm = ["warm_start.steps=1", "warm_start.batch_size=2", f"warm_start.files=[{nli}]", "warm_start.share=null"]
    config = load_config(ArtRunConfig, run_config, ["rounds=1", *warm])
    art_run(config, tmp_path / "a")
    run = tmp_path / "a"
    assert json.loads((run / "warm_start" / "warm_start.json").read_text())["pairs"]["used"] == 2
    stages = list(json.loads((run / "manifest.json").read_text())["stages"])
    assert stages.index("warm_start") < stages.index("round_1.generator")
    heldout = json.loads((run / "round_1" / "heldout.json").read_text())
    assert heldout["raw_generator"] == str(run / "warm_start")  # RL's own effect: the warm start against its tuning
    # the second run copies the kept warm start: the same adapter, byte for byte
    art_run(config, tmp_path / "b")
    for name in ("adapter_model.safetensors", "warm_start.json"):
        assert (tmp_path / "b" / "warm_start" / name).read_bytes() == (run / "warm_start" / name).read_bytes()
    assert len([p for p in (tmp_path / "cache" / "warm_start").iterdir() if is_entry(p)]) == 1
    with pytest.raises(HardcseError, match="warm_start: generator.model .* is a tuned generator folder"):
        art_run(load_config(ArtRunConfig, run_config, [*warm, f"generator.model={run / 'warm_start'}"]), tmp_path / "c")
