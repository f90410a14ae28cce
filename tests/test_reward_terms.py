"""A user's reward terms (hardcse/art/reward/terms.py): the sum by hand, the checks by their messages, and a term that
runs through tuning, synthesis and the held-out comparison on tiny models."""

import numpy as np
import pytest

from hardcse.art.config import TuneConfig
from hardcse.art.generator.parsing import Parsed
from hardcse.art.reward.config import RewardConfig, RewardTermConfig
from hardcse.art.reward.dual import Reward, dual_reward
from hardcse.config import load_config
from hardcse.errors import HardcseError

TERMS = """
import math


def words(anchors, answers, kind, context):
    return [len(a.split()) if a is not None else math.nan for a in answers]


def target_probability(anchors, answers, kind, context):
    return context.nli_probs[:, 0 if kind == "positive" else 2]


def three(anchors, answers, kind):
    return [0.0] * len(anchors)


def short(anchors, answers, kind, context):
    return [0.0] * (len(anchors) - 1)


def nan_for_dogs(anchors, answers, kind, context):
    return [math.nan if a is not None and "dog" in a else 1.0 for a in answers]


def divide(anchors, answers, kind, context):
    return [1 / 0 for _ in answers]


def writes(anchors, answers, kind, context):
    context.cosine[0] = 5.0
    return [0.0] * len(anchors)
"""


@pytest.fixture
def terms_file(tmp_path):
    path = tmp_path / "my_terms.py"
    path.write_text(TERMS)
    return path


class FixedNLI:
    """P(entailment, neutral, contradiction) = (0.7, 0.2, 0.1) for every pair."""

    def predict_proba(self, premises, hypotheses):
        return np.tile([0.7, 0.2, 0.1], (len(premises), 1))


class LetterEncoder:
    """Letter counts as the embedding (no tokenizer: hardcse's encode falls back to .encode)."""

    def encode(self, sentences, batch_size=64, convert_to_numpy=True):
        return np.array([[s.count(c) + 1e-3 for c in "abcdefghijklmnopqrstuvwxyz"] for s in sentences], dtype=float)


ANCHORS = ["the cat runs", "the cat runs", "a dog sleeps", "a dog sleeps"]
PARSED = [Parsed("the cat is running"), Parsed(None, "empty"), Parsed("a dog is awake"), Parsed("no dog sleeps")]
KINDS = ["positive", "negative", "positive", "negative"]


def term(terms_file, function, **extra) -> RewardTermConfig:
    return RewardTermConfig(fn=f"{terms_file}:{function}", **extra)


def test_a_term_adds_its_weighted_value_to_the_dual_reward_by_hand(terms_file):
    config = RewardConfig(omega=0.3, terms=[term(terms_file, "words", weight=0.1)])
    parts = Reward(FixedNLI(), LetterEncoder(), config)(ANCHORS, PARSED, KINDS)
    valid = np.array([0, 2, 3])
    p_target = np.array([0.7, 0.7, 0.1])  # entailment for positives, contradiction for the negative
    is_positive = np.array([True, True, False])
    dual, r1, r2 = dual_reward(p_target, parts.cosine[valid], is_positive, config)
    np.testing.assert_array_equal(parts.terms["r1"][valid], r1)
    assert parts.terms["words"][valid].tolist() == [4, 4, 3] and np.isnan(parts.terms["words"][1])
    np.testing.assert_allclose(parts.reward[valid], dual + 0.1 * np.array([4, 4, 3]))
    assert parts.reward[1] == config.invalid_penalty
    assert parts.weights == {"r1": 0.5, "r2": 0.5, "words": 0.1}


def test_the_dual_reward_alone_adds_exactly_as_the_paper_writes_it():
    config = RewardConfig(omega=0.3)
    parts = Reward(FixedNLI(), LetterEncoder(), config)(ANCHORS, PARSED, KINDS)
    valid = np.array([0, 2, 3])
    dual, _, _ = dual_reward(parts.p_target[valid], parts.cosine[valid], np.array([True, True, False]), config)
    assert parts.reward[valid].tolist() == dual.tolist()  # bit for bit: the triplets of a run do not change


def test_without_the_dual_reward_only_the_terms_count_and_the_summary_splits_the_reward(terms_file):
    config = RewardConfig(dual=False, terms=[term(terms_file, "target_probability", weight=2.0, name="p")])
    parts = Reward(FixedNLI(), LetterEncoder(), config)(ANCHORS, PARSED, KINDS)
    assert list(parts.terms) == ["p"]
    assert parts.reward.tolist() == pytest.approx([1.4, -1.0, 1.4, 0.2])
    s = parts.summary()
    # reward_format = -1 / 4; reward_p = 2 * (0.7 + 0.7 + 0.1) / 4 = 0.75; shares of |parts|: 0.25 / 1.0, 0.75
    assert s["reward_format"] == pytest.approx(-0.25) and s["reward_p"] == pytest.approx(0.75)
    assert s["reward_format"] + s["reward_p"] == pytest.approx(s["reward"])
    assert s["share_format"] == pytest.approx(0.25) and s["share_p"] == pytest.approx(0.75)
    assert s["p"] == pytest.approx(0.5) and "r1" not in s


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("short", "reward term 'short' ({file}:short) returned 1 values for 2 positive rows; return one float per row"),
        ("nan_for_dogs", "reward term 'nan_for_dogs' ({file}:nan_for_dogs) returned nan for row 2 of the batch "),
        ("divide", "reward term 'divide' ({file}:divide) raised ZeroDivisionError: division by zero at {file}:"),
        ("writes", "raised ValueError: assignment destination is read-only"),
    ],
)
def test_a_term_that_misbehaves_is_named_with_its_row(terms_file, name, message):
    reward = Reward(FixedNLI(), LetterEncoder(), RewardConfig(terms=[term(terms_file, name)]))
    with pytest.raises(HardcseError) as e:
        reward(ANCHORS, PARSED, KINDS)
    assert message.format(file=terms_file) in str(e.value) and "\n" not in str(e.value)


def test_a_nan_for_a_rejected_answer_is_not_an_error(terms_file):
    parts = Reward(FixedNLI(), LetterEncoder(), RewardConfig(terms=[term(terms_file, "words")]))(ANCHORS, PARSED, KINDS)
    assert np.isfinite(parts.reward).all()


@pytest.mark.parametrize(
    ("terms", "message"),
    [
        ("[{fn: 'no_such_module_xyz:f'}]", "reward.terms[0].fn: cannot import no_such_module_xyz (ModuleNotFound"),
        ("[{fn: '{dir}/nope.py:f'}]", "reward.terms[0].fn: {dir}/nope.py: no such file"),
        ("[{fn: '{dir}:f'}]", "reward.terms[0].fn: {dir}: a folder; give path/to/file.py:function or package"),
        ("[{fn: 'f'}]", "reward.terms[0].fn: 'f' is not package.module:function or path/to/file.py:function"),
        ("[{fn: '{dir}/my_terms.py:missing'}]", "{dir}/my_terms.py has no function 'missing'"),
        ("[{fn: '{dir}/my_terms.py:three'}]", "takes (anchors, answers, kind); a term takes (anchors, answers, kind"),
        ("[{fn: '{dir}/broken.py:f'}]", "{dir}/broken.py: cannot be loaded (ZeroDivisionError: division by zero at"),
        ("[{fn: '{dir}/my_terms.py:words', name: kl}]", "reward.terms[0].name: 'kl' cannot name a term"),
        ("[{fn: '{dir}/my_terms.py:words', name: r2}]", "'r2' cannot name a term"),
        ("[{fn: '{dir}/my_terms.py:words', weight: .nan}]", "reward.terms[0].weight: nan must be a finite number"),
        ("[{fn: '{dir}/my_terms.py:words'}, {fn: '{dir}/my_terms.py:words'}]", "'words' names two terms"),
        ("[{weight: 1}]", "reward.terms[0].fn: give the term's function"),
    ],
)
def test_a_term_that_cannot_run_is_refused_with_its_key(terms_file, terms, message, capsys):
    from hardcse.cli import main

    folder = terms_file.parent
    (folder / "broken.py").write_text("x = 1 / 0\n")
    out = folder / "out"
    args = [
        "art",
        "tune",
        "--config",
        "tune-cpu",
        "--out",
        str(out),
        f"reward.terms={terms.replace('{dir}', str(folder))}",
    ]
    assert main(args) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: override reward.terms="), lines
    assert message.replace("{dir}", str(folder)) in lines[0]
    assert not out.exists()


def test_without_the_dual_reward_a_term_is_needed():
    with pytest.raises(HardcseError, match="terms: empty while dual is false: give a term, or set dual: true"):
        load_config(TuneConfig, overrides=["reward.dual=false"])


def test_a_term_runs_through_tuning_synthesis_and_the_held_out_comparison(
    terms_file, tiny_tune_overrides, tiny_lm_dir, tiny_encoder_dir, tiny_nli_dir, tmp_path
):
    from hardcse.art.config import FilterConfig
    from hardcse.art.rl.tuning import tune_generator
    from hardcse.art.synthesis.anchors import split_anchors
    from hardcse.art.synthesis.heldout import compare, compare_markdown
    from hardcse.art.synthesis.triplets import synthesize
    from hardcse.data.jsonl import read_jsonl
    from hardcse.discriminator.nli import NLIDiscriminator
    from hardcse.encoder.build import load_encoder

    overrides = [
        *tiny_tune_overrides,
        "generator.max_new_tokens=12",
        "rl.steps=2",
        "rl.save_every=2",
        "rl.log_completions=3",
        f"reward.terms=[{{fn: '{terms_file}:words', weight: 0.05, name: length}}]",
    ]
    config = load_config(TuneConfig, overrides=overrides)
    final = tune_generator(config, tmp_path / "work", tmp_path / "generator")
    log = read_jsonl(final / "rl_log.jsonl")
    assert {"length", "reward_length", "share_length", "r1", "share_r1", "share_format"} <= set(log[0])
    shares = [log[0][f"share_{name}"] for name in ("format", "r1", "r2", "length")]
    assert sum(shares) == pytest.approx(1.0)
    # every key the log has of its own is one a term's name cannot overwrite (NAME, reward_NAME, share_NAME)
    from hardcse.art.log_keys import RESERVED_NAMES

    own = set(log[0]) - {"length", "reward_length", "share_length"}
    guarded = RESERVED_NAMES | {k for k in own if k.startswith("reject_")}  # a term name cannot start reject_
    unguarded = {k for k in own if k not in guarded and k.partition("_")[2] not in RESERVED_NAMES}
    assert not unguarded
    completions = read_jsonl(final / "completions.jsonl")
    assert [c["step"] for c in completions] == [2, 2, 2] and len({c["row"] for c in completions}) == 3
    assert set(completions[0]["terms"]) == {"r1", "r2", "length"} and "response" in completions[0]

    reward = Reward(NLIDiscriminator.load(str(tiny_nli_dir)), load_encoder(str(tiny_encoder_dir)), config.reward)
    anchors = split_anchors(config.anchors).held_out
    sides = {}
    for side, source in (("raw", str(tiny_lm_dir)), ("tuned", str(final))):
        synthesize(source, anchors, config.generator, reward, FilterConfig(rule="none"), tmp_path / side)
        sides[side] = read_jsonl(tmp_path / side / "synthetic.jsonl")
    record = sides["raw"][0]
    assert {"positive_length", "negative_length", "positive_r1", "negative_r2"} <= set(record)
    if record["positive"] is not None:
        assert record["positive_length"] == len(record["positive"].split())
    result = compare(sides["raw"], sides["tuned"], None, load_encoder(str(tiny_encoder_dir)), ["r1", "r2", "length"])
    after = result["measures"].index("p_target_parsed") + 1  # each term's mean follows P(target), in the terms' order
    assert result["measures"][after : after + 3] == ["r1_parsed", "r2_parsed", "length_parsed"]
    assert "| length_parsed |" in compare_markdown(result)


def test_the_documented_example_term_by_hand():
    from pathlib import Path

    from hardcse.art.reward.term_loading import load_term_function

    example = Path(__file__).resolve().parents[1] / "examples" / "reward_terms.py"
    copy = load_term_function(f"{example}:demonstration_copy")
    anchors = ["A cat sleeps on the mat.", "A dog runs.", "A dog runs."]
    answers = ["The committee approved the cat.", "A dog is running fast.", None]
    values = copy(anchors, answers, "positive", None)
    # "the committee approved the cat": committee and approved come from the demonstration, not the anchor: 2 / 4
    assert values[:2] == [0.5, 0.0] and np.isnan(values[2])


def test_a_term_is_tried_on_two_anchors_in_the_documented_stand_in_context(terms_file):
    from hardcse.art.reward.terms import check_terms, config_terms, stand_in_context

    context = stand_in_context(["a dog sleeps", None])
    assert context.nli_probs[0].tolist() == [1 / 3] * 3 and np.isnan(context.nli_probs[1]).all()
    assert context.cosine[0] == 0.5 and np.isnan(context.cosine[1])
    vectors = context.encode(["a", "b", "a"])
    assert (
        vectors.shape == (3, 8) and np.allclose(np.linalg.norm(vectors, axis=1), 1) and (vectors[0] == vectors[2]).all()
    )
    assert context.nli(["x", "y"], ["z", "w"]).tolist() == [[1 / 3] * 3] * 2
    anchors = ["the cat runs", "a dog sleeps", "never read"]
    check_terms(config_terms([term(terms_file, "words"), term(terms_file, "target_probability")]), anchors)
    # the parsed row answers with the second anchor, which mentions a dog: nan_for_dogs fails here, before any model
    with pytest.raises(HardcseError) as e:
        check_terms(config_terms([term(terms_file, "nan_for_dogs")]), anchors)
    message = str(e.value)
    assert (
        message.startswith("reward term 'nan_for_dogs' (")
        and "returned nan for row 0 of the batch (positive" in message
    )
    assert message.endswith(
        "(checked before any model loads: two of the run's anchors, a stand-in context; "
        "docs/art.md, 'Your own reward terms')"
    )


@pytest.mark.parametrize("command", ["tune", "run"])
def test_a_broken_term_stops_the_run_in_one_line_before_any_model_loads(
    terms_file, tiny_lm_dir, tiny_encoder_dir, tiny_nli_dir, corpus, tmp_path, capsys, monkeypatch, command
):
    from hardcse.art import nli_models
    from hardcse.art import run as art_run_module
    from hardcse.art.rl import tuning
    from hardcse.cli import main
    from hardcse.discriminator import nli

    def never(*args, **kwargs):
        raise AssertionError("a model was loaded or trained before the reward's terms were checked")

    loaders = ["load_discriminator", "tune_generator", "cached_eval", "load_encoder"]
    for name in loaders:  # where art run calls them (imported by name)
        monkeypatch.setattr(art_run_module, name, never)
    for name in ("train_nli", "train_or_copy"):  # where the run's NLI models train
        monkeypatch.setattr(nli_models, name, never)
    monkeypatch.setattr(nli, "load_discriminator", never)
    monkeypatch.setattr(tuning, "tune_generator", never)  # where art tune calls it

    out = tmp_path / command
    config = "tune-cpu" if command == "tune" else "smoke"
    args = ["art", command, "--config", config, "--out", str(out), f"encoder={tiny_encoder_dir}"]
    args += [f"discriminator={tiny_nli_dir}", f"generator.model={tiny_lm_dir}", "generator.max_new_tokens=8"]
    args += [f"anchors.corpus={corpus}", "anchors.held_out=5", "anchors.min_words=3", "rl.steps=2"]
    args += ["rl.batch_size=4", "rl.minibatch_size=2", f"reward.terms=[{{fn: '{terms_file}:short'}}]"]
    assert main(args) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip().startswith(("error", "Trace"))]
    assert lines == [lines[0]] and lines[0].startswith("error: reward term 'short' (")
    assert "returned 1 values for 2 positive rows" in lines[0] and "checked before any model loads" in lines[0]
    assert not out.exists()  # no stage had started: nothing is left


def test_the_report_writes_the_reward_as_a_formula():
    from hardcse.art.analysis.tuning_report import reward_formula

    reward = {"w1": 0.5, "w2": 0.5, "dual": True, "terms": [{"fn": "f.py:copy", "weight": -4.0, "name": None}]}
    assert reward_formula(reward) == "0.5 x r1 + 0.5 x r2 - 4.0 x copy (`f.py:copy`)"
    assert reward_formula(reward | {"dual": False}) == "- 4.0 x copy (`f.py:copy`)"
    assert reward_formula({"w1": 0.5, "w2": 0.0}) == "0.5 x r1 + 0.0 x r2"  # a config from before terms
