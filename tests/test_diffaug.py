"""DiffAug: prefix modules, their save/load, delta and kappa by hand, the losses, both stages, the CLI."""

import json

import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from transformers import DynamicCache

from conftest import SENTENCES, run_until_killed
from hardcse.cli import main as hardcse
from hardcse.config import load_config
from hardcse.data.jsonl import jsonl_text, read_jsonl
from hardcse.diffaug.config import DiffAugConfig
from hardcse.diffaug.data import nli_data
from hardcse.diffaug.diagnostics import Stage1Diagnostics, representation_divergence, weight_convergence
from hardcse.diffaug.objectives import (
    MLPHead,
    PairClassifier,
    PrefixContrastiveLoss,
    PrefixPairClassificationLoss,
    embed,
)
from hardcse.diffaug.prefix import PREFIX_WEIGHTS, PrefixedTransformer, add_prefixes, prefixed, with_view
from hardcse.diffaug.run import diffaug_run
from hardcse.encoder.build import load_encoder
from hardcse.errors import HardcseError

HYPOTHESES = {
    "entailment": "Someone is doing something.",
    "neutral": "It happens on a sunny Tuesday.",
    "contradiction": "Nobody is there at all.",
}


@pytest.fixture
def nli_file(tmp_path):
    rows = [f"{s}\t{h}\t{label}" for s in SENTENCES for label, h in HYPOTHESES.items()]
    rows += [f"{s}\t{SENTENCES[(i + 1) % 8]}\tcontradiction" for i, s in enumerate(SENTENCES)]
    path = tmp_path / "nli.tsv"
    path.write_text("premise\thypothesis\tlabel\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture
def prefixed_encoder(tiny_encoder_dir):
    torch.manual_seed(0)
    model = add_prefixes(load_encoder(str(tiny_encoder_dir), device="cpu"), tiny_encoder_dir, 3, 16, 2)
    return model.eval()


def features(model: SentenceTransformer, texts: list[str]) -> dict:
    return dict(model.preprocess(texts))


def same_prefixes(a: SentenceTransformer, b: SentenceTransformer) -> bool:
    first, second = a[0].prefixes.state_dict(), b[0].prefixes.state_dict()
    return first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)


# The CLI tests' tiny prefixes and two stage-1 steps.
TWO_STAGE1_STEPS = [
    *("prefix_length=3", "prefix_hidden_size=16"),
    *("stage1.steps=2", "stage1.batch_size=8", "stage1.probe_pairs=4"),
]


def tiny_config(tiny_encoder_dir, nli_file, corpus, **changes) -> DiffAugConfig:
    overrides = [
        f"encoder={tiny_encoder_dir}",
        f"nli_files=[{nli_file}]",
        f"unlabeled={corpus}",
        "prefix_length=3",
        "prefix_hidden_size=16",
        "stage1.steps=4",
        "stage1.batch_size=8",
        "stage1.diagnostics_every=2",
        "stage1.probe_pairs=4",
        "training.max_steps=3",
        "training.batch_size=8",
        "training.eval_steps=2",
        "training.learning_rate=1e-3",
        "eval_tasks=[STS-B-dev]",
        *(f"{k}={v}" for k, v in changes.items()),
    ]
    return load_config(DiffAugConfig, None, overrides)


def test_a_masked_out_prefix_leaves_the_encoder_as_it_was(prefixed_encoder, tiny_encoder_dir):
    """The prefix enters only as extra keys/values: masked out, the encoder computes exactly its plain output
    (tokens keep positions 0..L-1)."""
    plain = load_encoder(str(tiny_encoder_dir), device="cpu").eval()
    transformer = prefixed(prefixed_encoder)
    f = features(prefixed_encoder, SENTENCES[:3])
    batch, length = f["input_ids"].shape
    cache = DynamicCache(config=transformer.model.config)
    for layer, (key, value) in enumerate(transformer.prefix_key_values(0)):
        cache.update(key.expand(batch, -1, -1, -1), value.expand(batch, -1, -1, -1), layer)
    mask = torch.cat([torch.zeros(batch, 3, dtype=f["attention_mask"].dtype), f["attention_mask"]], dim=1)
    with torch.no_grad():
        masked = transformer.model(
            input_ids=f["input_ids"],
            attention_mask=mask,
            past_key_values=cache,
            position_ids=torch.arange(length).expand(batch, -1),
        ).last_hidden_state
        expected = plain[0].model(input_ids=f["input_ids"], attention_mask=f["attention_mask"]).last_hidden_state
        seen = prefixed_encoder(with_view(f, 0))["sentence_embedding"]
        plain_embedding = plain(dict(f))["sentence_embedding"]
    torch.testing.assert_close(masked, expected, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(seen, plain_embedding, atol=1e-4)  # visible, the prefix changes the encoding


def test_views_select_prefix_modules(prefixed_encoder):
    transformer = prefixed(prefixed_encoder)
    assert [k.shape for k, _ in transformer.prefix_key_values(0)] == [(2, 3, 16)] * 2  # (heads, l, head_dim)
    assert [k.shape for k, _ in transformer.prefix_key_values(None)] == [(2, 6, 16)] * 2  # inference: both
    f = features(prefixed_encoder, SENTENCES[:4])
    with torch.no_grad():
        first, second = embed(prefixed_encoder, f, 0), embed(prefixed_encoder, f, 1)
    assert not torch.allclose(first, second, atol=1e-4)
    with pytest.raises(HardcseError, match="prefix view"):
        transformer.view_indices(2)


def test_save_and_load_round_trip(prefixed_encoder, tmp_path):
    prefixed_encoder.save(str(tmp_path / "m"))
    expected = prefixed_encoder.encode(SENTENCES)
    loaded = load_encoder(str(tmp_path / "m"), device="cpu")
    assert isinstance(loaded[0], PrefixedTransformer) and loaded[0].prefix_length == 3
    assert torch.allclose(torch.tensor(loaded.encode(SENTENCES)), torch.tensor(expected), atol=1e-6)
    plain_st = SentenceTransformer(str(tmp_path / "m"), trust_remote_code=True, local_files_only=True)
    assert torch.allclose(torch.tensor(plain_st.encode(SENTENCES)), torch.tensor(expected), atol=1e-6)
    (tmp_path / "m" / PREFIX_WEIGHTS).unlink()
    with pytest.raises(HardcseError, match="no trained prefixes"):
        load_encoder(str(tmp_path / "m"))


def test_delta_by_hand(prefixed_encoder):
    a, b = SENTENCES[:5], SENTENCES[3:]
    with torch.no_grad():
        u = embed(prefixed_encoder, features(prefixed_encoder, a), 0)
        v = embed(prefixed_encoder, features(prefixed_encoder, b), 1)
    expected = sum((u[i] - v[i]).norm().item() for i in range(5)) / 5
    assert representation_divergence(prefixed_encoder, a, b) == pytest.approx(expected, rel=1e-5)


def test_delta_is_zero_for_one_shared_prefix(tiny_encoder_dir):
    model = add_prefixes(load_encoder(str(tiny_encoder_dir), device="cpu"), tiny_encoder_dir, 3, 16, 1).eval()
    assert representation_divergence(model, SENTENCES, SENTENCES) == pytest.approx(0.0, abs=1e-6)


def test_kappa_by_hand(prefixed_encoder):
    """Token keys/values recomputed from each layer's input hidden states (not by hooks), prefix rows from the
    cache: kappa = mean over modules, layers and K/V of (mean token row norm - mean prefix row norm)."""
    transformer = prefixed(prefixed_encoder)
    f = features(prefixed_encoder, SENTENCES)
    valid = f["attention_mask"].bool()
    gaps_per_module = []
    transformer.model.config.output_hidden_states = True  # sentence-transformers then returns every layer's input
    with torch.no_grad():
        for index in range(2):
            states = prefixed_encoder(with_view(dict(f), index))["all_layer_embeddings"]
            gaps = []
            for layer, (pk, pv) in enumerate(transformer.prefix_key_values(index)):
                attention = transformer.model.encoder.layer[layer].attention.self
                for proj, prefix in ((attention.key, pk), (attention.value, pv)):
                    tokens = proj(states[layer])[valid].norm(dim=-1).mean()
                    prefix_rows = prefix.permute(1, 0, 2).reshape(prefix.shape[1], -1)  # (l, heads * head_dim)
                    gaps.append((tokens - prefix_rows.norm(dim=-1).mean()).item())
            gaps_per_module.append(sum(gaps) / len(gaps))
    transformer.model.config.output_hidden_states = False
    expected = sum(gaps_per_module) / 2
    assert weight_convergence(prefixed_encoder, SENTENCES) == pytest.approx(expected, rel=1e-4)


def test_contrastive_loss_without_prefixes_is_simcse(tiny_encoder):
    """On a plain encoder the DiffAug loss is exactly supervised SimCSE (MNRL with scale 1 / tau)."""
    tiny_encoder.eval()
    cols = [features(tiny_encoder, SENTENCES[i : i + 3]) for i in (0, 2, 4)]
    ours = PrefixContrastiveLoss(tiny_encoder, 0.05, 3)(cols, torch.zeros(3))
    reference = MultipleNegativesRankingLoss(tiny_encoder, scale=20.0)(cols, torch.zeros(3))
    assert ours.item() == pytest.approx(reference.item(), rel=1e-5)


def test_pair_classification_loss_by_hand(prefixed_encoder):
    torch.manual_seed(0)
    classifier = PairClassifier(32, 2)
    premise, hypothesis = features(prefixed_encoder, SENTENCES[:4]), features(prefixed_encoder, SENTENCES[4:])
    labels = torch.tensor([1, 0, 1, 0])
    loss = PrefixPairClassificationLoss(prefixed_encoder, classifier)([premise, hypothesis], labels)
    u, v = embed(prefixed_encoder, premise, 0), embed(prefixed_encoder, hypothesis, 1)
    logits = classifier.linear(torch.cat([u, v, (u - v).abs()], dim=-1))
    expected = -torch.log_softmax(logits, dim=-1)[torch.arange(4), labels].mean()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)


def test_aux_loss_adds_its_weighted_cross_entropy(prefixed_encoder):
    torch.manual_seed(0)
    classifier = PairClassifier(32, 2)
    cols = [features(prefixed_encoder, SENTENCES[:4]) for _ in range(2)]
    nli = [features(prefixed_encoder, SENTENCES[:4]), features(prefixed_encoder, SENTENCES[4:])]
    labels = torch.tensor([1, 0, 1, 1])
    contrastive = PrefixContrastiveLoss(prefixed_encoder, 0.05, 2)(cols, labels)
    ce = PrefixPairClassificationLoss(prefixed_encoder, classifier)(nli, labels)
    both = PrefixContrastiveLoss(prefixed_encoder, 0.05, 2, classifier, 0.5)([*cols, *nli], labels)
    assert both.item() == pytest.approx(contrastive.item() + 0.5 * ce.item(), rel=1e-5)


def test_stage1_length_rules(prefixed_encoder, tmp_path):
    """delta_peak keeps the prefixes of the largest delta; kappa_converged stops once kappa settles."""
    probe = (SENTENCES[:4], SENTENCES[4:])
    classifier = PairClassifier(32, 2)
    peak = Stage1Diagnostics(
        prefixed_encoder, probe, 1, tmp_path / "d.jsonl", "delta_peak", loss_modules={"classifier": classifier}
    )
    transformer = prefixed(prefixed_encoder)
    control = type("Control", (), {"should_training_stop": False})()
    peak._check({"step": 0, "delta": 0.5, "kappa": 3.0}, control)
    kept = {k: v.clone() for k, v in transformer.prefixes.state_dict().items()}
    kept_classifier = {k: v.clone() for k, v in classifier.state_dict().items()}
    with torch.no_grad():
        for p in [*transformer.prefixes.parameters(), *classifier.parameters()]:
            p.add_(1.0)
    peak._check({"step": 5, "delta": 0.4, "kappa": 2.0}, control)
    peak.restore_selected()
    assert peak.selected_step == 0
    assert all(torch.equal(v, kept[k]) for k, v in transformer.prefixes.state_dict().items())
    # the classifier of the same step, so an aux-loss stage 2 starts from a matching pair
    assert all(torch.equal(v, kept_classifier[k]) for k, v in classifier.state_dict().items())

    converged = Stage1Diagnostics(prefixed_encoder, probe, 1, tmp_path / "k.jsonl", "kappa_converged", 0.01)
    for step, kappa in [(0, 3.0), (5, 2.0), (10, 1.995)]:
        converged.rows.append({"step": step, "kappa": kappa})
        converged._check(converged.rows[-1], control)
    assert control.should_training_stop and converged.selected_step == 10


def test_a_resumed_stage1_keeps_its_diagnostics_and_the_peak_before_the_kill(prefixed_encoder, tmp_path):
    probe = (SENTENCES[:4], SENTENCES[4:])
    log_path = tmp_path / "diagnostics.jsonl"
    control = type("Control", (), {"should_training_stop": False})()
    first = Stage1Diagnostics(prefixed_encoder, probe, 1, log_path, "delta_peak")
    transformer = prefixed(prefixed_encoder)
    rows = [{"step": 0, "delta": 0.1, "kappa": 1.0}, {"step": 1, "delta": 0.9, "kappa": 1.0}]
    for row in rows:
        first._check(row, control)  # the peak (step 1) is saved beside the log
    peak = {k: v.clone() for k, v in transformer.prefixes.state_dict().items()}
    later = [{"step": 2, "delta": 0.5, "kappa": 1.0}, {"step": 3, "delta": 0.2, "kappa": 1.0}]
    log_path.write_text(jsonl_text(rows + later) + '{"step": 4, "del')  # killed while writing step 4
    with torch.no_grad():
        for p in transformer.prefixes.parameters():
            p.add_(1.0)  # the model moved on after the peak

    resumed = Stage1Diagnostics(prefixed_encoder, probe, 1, log_path, "delta_peak")
    state = type("State", (), {"global_step": 2})()  # the checkpoint it resumes from
    resumed.on_train_begin(None, state, control)
    assert [r["step"] for r in resumed.rows] == [0, 1, 2] and read_jsonl(log_path) == resumed.rows
    resumed.restore_selected()
    assert resumed.selected_step == 1
    assert all(torch.equal(v, peak[k]) for k, v in transformer.prefixes.state_dict().items())
    resumed.discard_saved_peak()
    assert not (tmp_path / "delta_peak_prefixes.pt").exists()


def test_prefix_dropout_acts_in_training_only(tiny_encoder_dir):
    torch.manual_seed(0)
    model = add_prefixes(
        load_encoder(str(tiny_encoder_dir), device="cpu"), tiny_encoder_dir, 3, 16, 2, prefix_dropout=0.5
    )
    transformer = prefixed(model)
    transformer.train()
    first, second = (transformer.prefix_key_values(0)[0][0] for _ in range(2))
    assert not torch.equal(first, second) and (first == 0).any()
    transformer.eval()
    assert torch.equal(transformer.prefix_key_values(0)[0][0], transformer.prefix_key_values(0)[0][0])


def test_inference_view_is_saved_and_used_by_encode(prefixed_encoder, tmp_path):
    f = features(prefixed_encoder, SENTENCES[:4])
    with torch.no_grad():
        second = embed(prefixed_encoder, f, 1)
    prefixed(prefixed_encoder).inference_view = 1
    prefixed_encoder.save(str(tmp_path / "m"))
    loaded = load_encoder(str(tmp_path / "m"), device="cpu")
    assert loaded[0].inference_view == 1
    torch.testing.assert_close(torch.tensor(loaded.encode(SENTENCES[:4])), second, atol=1e-6, rtol=1e-6)


def test_mlp_head_enters_the_loss_by_hand(prefixed_encoder):
    head = MLPHead(32)
    f = features(prefixed_encoder, SENTENCES[:4])
    labels = torch.zeros(4)
    with torch.no_grad():
        loss = PrefixContrastiveLoss(prefixed_encoder, 0.05, 2, head=head)([f, f], labels)
        u, v = head(embed(prefixed_encoder, f, 0)), head(embed(prefixed_encoder, f, 1))
        sim = torch.nn.functional.normalize(u, dim=-1) @ torch.nn.functional.normalize(v, dim=-1).T / 0.05
    torch.testing.assert_close(loss, torch.nn.functional.cross_entropy(sim, torch.arange(4)))
    assert u.abs().max() <= 1.0  # tanh


def test_every_label_comes_from_the_sampled_triplets(tmp_path, tiny_encoder_dir, nli_file, corpus):
    """Fair by construction: stage 1's pairs are the sampled triplets' own (premise, entailment) and (premise,
    contradiction) pairs, for every fraction; the probe's triplets are left out of stage 1 only."""
    full = nli_data(tiny_config(tiny_encoder_dir, nli_file, corpus))
    half = nli_data(tiny_config(tiny_encoder_dir, nli_file, corpus, nli_fraction=0.5))
    again = nli_data(tiny_config(tiny_encoder_dir, nli_file, corpus, nli_fraction=0.5))
    assert len(full.triplets) == 8 and len(full.probe[0]) == 2 and len(full.pairs) == 2 * (8 - 2)
    assert len(half.triplets) == 4 and len(half.probe[0]) == 1 and len(half.pairs) == 2 * (4 - 1)
    assert half.pairs == again.pairs and half.triplets == again.triplets
    for data in (full, half):
        allowed = {(a, p, 0) for a, p, _ in data.triplets} | {(a, n, 2) for a, _, n in data.triplets}
        pairs = set(zip(data.pairs.premises, data.pairs.hypotheses, data.pairs.labels, strict=True))
        probe = set(zip(*data.probe, strict=True))
        assert pairs <= allowed and len(pairs) == len(data.pairs.labels)
        assert probe <= {(a, p) for a, p, _ in data.triplets} and not probe & {(a, h) for a, h, _ in pairs}
    three = nli_data(tiny_config(tiny_encoder_dir, nli_file, corpus, **{"stage1.labels": "three_way"}))
    neutral = [
        (p, h)
        for p, h, y in zip(three.pairs.premises, three.pairs.hypotheses, three.pairs.labels, strict=True)
        if y == 1
    ]
    assert len(neutral) == 6 and {p for p, _ in neutral} == {a for a, _, _ in three.triplets[2:]}


def test_both_stages_train_what_they_should(tmp_path, tiny_encoder_dir, nli_file, corpus):
    config = tiny_config(tiny_encoder_dir, nli_file, corpus, setting="sup")
    start = load_encoder(str(tiny_encoder_dir))
    final = diffaug_run(config, tmp_path / "run")
    stage1 = load_encoder(str(tmp_path / "run" / "stage1"))
    trained = load_encoder(str(final))
    encoder_weights = [n for n, _ in start[0].model.named_parameters()]
    start_state, stage1_state = start[0].model.state_dict(), stage1[0].model.state_dict()
    assert all(torch.equal(start_state[n], stage1_state[n]) for n in encoder_weights)  # stage 1: encoder frozen
    assert any(not torch.equal(stage1_state[n], trained[0].model.state_dict()[n]) for n in encoder_weights)
    assert not same_prefixes(stage1, trained)
    rows = [json.loads(line) for line in (tmp_path / "run" / "stage1" / "diagnostics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 2, 4] and all(r["kappa"] is not None for r in rows)
    assert (tmp_path / "run" / "stage1" / "diagnostics.png").stat().st_size > 0
    training = json.loads((final / "training.json").read_text())
    assert training["steps"] == 3 and training["seconds_per_step"] > 0

    # stage 2 from the same stage 1, with fixed prefixes (stage1_from reuses a finished stage 1)
    fixed = tiny_config(
        tiny_encoder_dir,
        nli_file,
        corpus,
        setting="sup",
        stage1_from=tmp_path / "run",
        **{"stage2.train_prefixes": "false"},
    )
    kept = load_encoder(str(diffaug_run(fixed, tmp_path / "fixed")))
    assert same_prefixes(stage1, kept)
    other = tiny_config(tiny_encoder_dir, nli_file, corpus, stage1_from=tmp_path / "run", prefix_length=4)
    with pytest.raises(HardcseError, match="stage1_from: .* other prefix_length"):
        diffaug_run(other, tmp_path / "other")


def test_cli_run_then_eval_and_refusals(tmp_path, tiny_encoder_dir, nli_file, corpus, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(
        f"encoder: {tiny_encoder_dir}\nnli_files: [{nli_file}]\nunlabeled: {corpus}\nstage2:\n  aux_weight: 1.0e-3\n"
    )
    small = [*TWO_STAGE1_STEPS, "training.max_steps=2", "training.batch_size=8", "eval_tasks=[STS-B-dev]"]
    out = tmp_path / "run"
    assert hardcse(["diffaug", "train", "--config", str(config), "--out", str(out), *small]) == 0
    assert (out / "stage1" / "classifier.safetensors").is_file() and (out / "eval.json").is_file()
    assert "STS-B-dev" in capsys.readouterr().out
    assert hardcse(["eval", "--model", str(out / "model"), "--tasks", "STS-B-dev"]) == 0
    assert hardcse(["eval", "--model", str(out), "--tasks", "STS-B-dev"]) == 0  # a run folder stands for its model
    assert hardcse(["diffaug", "train", "--config", str(config), "--out", str(out), *small]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert hardcse(["diffaug", "train", "--out", str(out), "--resume", *small[:-1], "eval_tasks=[STS-B]"]) == 2
    err = capsys.readouterr().err
    assert "differs from" in err and "eval_tasks" in err
    (out / "stale.txt").write_text("from the old run")
    assert hardcse(["diffaug", "train", "--config", str(config), "--out", str(out), "--overwrite", *small]) == 0
    assert not (out / "stale.txt").exists()


def test_prefix_tuning_only_and_simcse_baseline(tmp_path, tiny_encoder_dir, nli_file, corpus):
    only = diffaug_run(tiny_config(tiny_encoder_dir, nli_file, corpus, stages="[1]"), tmp_path / "only")
    assert only == tmp_path / "only" / "model" and isinstance(load_encoder(str(only))[0], PrefixedTransformer)
    baseline = diffaug_run(tiny_config(tiny_encoder_dir, nli_file, corpus, method="simcse"), tmp_path / "b")
    assert not (tmp_path / "b" / "stage1").exists()
    assert not isinstance(load_encoder(str(baseline))[0], PrefixedTransformer)


def test_prefix_only_ablation_trains_prefixes_with_the_encoder_frozen_and_dev_picks_the_view(
    tmp_path, tiny_encoder_dir, nli_file, corpus
):
    """The paper's prefix-tuning-only ablation: stage 2 runs, only the prefixes move. ``inference_prefix: dev``
    keeps the view with the best STS-B dev score and records all three."""
    changes = {"stage2.train_encoder": "false", "inference_prefix": "dev"}
    final = diffaug_run(tiny_config(tiny_encoder_dir, nli_file, corpus, **changes), tmp_path / "run")
    stage1, trained = load_encoder(str(tmp_path / "run" / "stage1")), load_encoder(str(final))
    start, after = stage1[0].model.state_dict(), trained[0].model.state_dict()
    assert all(torch.equal(start[n], after[n]) for n in start)
    assert not same_prefixes(stage1, trained)
    record = json.loads((final / "training.json").read_text())
    scores = record["inference_prefix_dev"]
    assert set(scores) == {"both", "first", "second"} and scores[record["inference_prefix"]] == max(scores.values())
    assert trained[0].inference_view == {"both": None, "first": 0, "second": 1}[record["inference_prefix"]]
    assert (tmp_path / "run" / "stage1" / "mlp_head.safetensors").is_file()  # mlp_head is on by default


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"setting": "weak"}, "setting"),
        ({"setting": "sup", "stage2.aux_weight": "0.1"}, "aux_weight"),
        ({"method": "simcse", "stages": "[1]"}, "no stage 1"),
        ({"nli_fraction": "0"}, "nli_fraction"),
        ({"stage1.select": "best"}, "stage1.select"),
        ({"prefix_length": "0"}, "prefix_length"),
        ({"stage2.train_encoder": "false", "stage2.train_prefixes": "false"}, "trains nothing"),
        ({"method": "simcse", "inference_prefix": "dev"}, "inference_prefix"),
        ({"stages": "[1]", "inference_prefix": "first"}, "chosen after stage 2"),
    ],
)
def test_config_mistakes_fail_before_work(tmp_path, tiny_encoder_dir, nli_file, corpus, changes, message):
    with pytest.raises(HardcseError, match=message):
        tiny_config(tiny_encoder_dir, nli_file, corpus, **changes)


@pytest.mark.slow  # a whole run on tiny models (10 s and more): make test, not test-fast
def test_killed_inside_stage2_resumes_without_redoing_stage1(tmp_path, tiny_encoder_dir, nli_file, corpus):
    config = tmp_path / "c.yaml"
    config.write_text(f"encoder: {tiny_encoder_dir}\nnli_files: [{nli_file}]\nunlabeled: {corpus}\n")
    small = [
        *TWO_STAGE1_STEPS,
        "training.max_steps=40",
        "training.batch_size=4",
        "training.eval_steps=2",
        "eval_tasks=[]",
    ]
    out = tmp_path / "run"
    args = ["diffaug", "train", "--config", str(config), "--out", str(out), *small]
    checkpoints = out / "model.partial" / "checkpoints"
    run_until_killed(args, lambda: checkpoints.is_dir() and any(checkpoints.glob("checkpoint-*/trainer_state.json")))
    assert not (out / "model").exists() and (out / "stage1").is_dir()
    assert hardcse(["diffaug", "train", "--out", str(out), "--resume"]) == 0
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    assert stages["stage1"]["attempts"] == 1 and stages["stage2"]["attempts"] == 2
    training = json.loads((out / "model" / "training.json").read_text())
    assert training["steps"] == 40 and training["resumed_from"].startswith("checkpoint-")
