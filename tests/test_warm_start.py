"""The generator's supervised warm start (hardcse/art/rl/warm_start.py): which pairs it reads, that it makes its
answers likelier, that it leaves the caller's random state alone, and that RL can tune on from its folder."""

import dataclasses
import random

import numpy as np
import pytest
import torch

from hardcse.art.config import GeneratorConfig
from hardcse.art.generator.model import is_generator_folder, load_generator
from hardcse.art.rl import warm_start as warm_start_module
from hardcse.art.rl.warm_start import read_record, train_warm_start, warm_start_examples
from hardcse.art.warm_start_config import WarmStartConfig
from hardcse.config import ConfigValueError
from hardcse.data.decontamination import DecontaminationConfig
from hardcse.errors import HardcseError

OFF = DecontaminationConfig(enabled=False)
ROWS = [
    ("the cat runs", "the cat runs very", "entailment"),
    ("the cat runs", "a dog sleeps here", "contradiction"),
    ("the cat runs", "a cat runs here", "neutral"),
    ("a dog sleeps", "the dog sleeps a", "entailment"),
    ("a dog sleeps", "the dog runs very", "contradiction"),
    ("a dog sleeps", "dog", "contradiction"),  # too short an answer
    ("the good cat", "the good cat runs", "entailment"),
    ("the good cat", "a bad dog sleeps", "contradiction"),
    ("the good cat", "a bad dog sleeps", "contradiction"),  # a duplicate
    ("a very bad dog", "the bad dog runs", "entailment"),
    ("a very bad dog", "the good cat sleeps", "contradiction"),
]


@pytest.fixture
def nli_file(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("premise\thypothesis\tlabel\n" + "".join(f"{p}\t{h}\t{label}\n" for p, h, label in ROWS))
    return path


def test_the_pairs_alternate_kinds_and_leave_out_neutral_short_duplicate_and_held_apart_texts(nli_file, monkeypatch):
    monkeypatch.setattr(warm_start_module, "held_apart_texts", lambda: {"a very bad dog"})
    config = WarmStartConfig(steps=3, batch_size=2, files=[str(nli_file)], share=None)
    examples, counts = warm_start_examples(config, OFF)
    assert [e.kind for e in examples] == ["positive", "negative"] * 3
    assert counts == {
        "read": 11, "neutral": 1, "length": 1, "shortcut": 0, "positive_cover": 0, "negative_cover": 0,
        "dev_or_eval_text": 2, "duplicate": 1,
        "decontaminated": 0, "available": {"positive": 3, "negative": 3}, "used": 6,
    }  # fmt: skip
    assert {(e.anchor, e.answer) for e in examples if e.kind == "negative"} == {
        ("the cat runs", "a dog sleeps here"),
        ("a dog sleeps", "the dog runs very"),
        ("the good cat", "a bad dog sleeps"),
    }
    assert warm_start_examples(config, OFF)[0] == examples  # a seeded order
    other = warm_start_examples(dataclasses.replace(config, seed=2), OFF)[0]
    assert sorted(other) == sorted(examples)
    with pytest.raises(HardcseError, match=r"warm_start: 4 steps of 2 pairs need 4 positive pairs but the files give"):
        warm_start_examples(dataclasses.replace(config, steps=4), OFF)


def test_drop_shortcuts_leaves_out_deletion_entailments_and_contradictions_adding_a_negation(tmp_path):
    rows = [
        ("the small cat runs home", "the cat runs home", "entailment"),  # a deletion: left out
        ("the small cat runs home", "an animal is moving", "entailment"),
        ("the small cat runs home", "the small cat does not run home", "contradiction"),  # adds "not": left out
        ("the small cat runs home", "the cat sleeps on the sofa", "contradiction"),
        ("no dog barks at night", "no dog is awake at night", "contradiction"),  # "no" is the premise's own
        ("no dog barks at night", "the night has silent dogs", "entailment"),
    ]
    path = tmp_path / "pairs.tsv"
    path.write_text("premise\thypothesis\tlabel\n" + "".join(f"{p}\t{h}\t{label}\n" for p, h, label in rows))
    config = WarmStartConfig(steps=1, batch_size=4, files=[str(path)], share=None, drop_shortcuts=True)
    examples, counts = warm_start_examples(config, OFF)
    assert counts["shortcut"] == 2 and counts["available"] == {"positive": 2, "negative": 2}
    assert {e.answer for e in examples} == {
        "an animal is moving", "the night has silent dogs", "the cat sleeps on the sofa", "no dog is awake at night",
    }  # fmt: skip
    kept = warm_start_examples(dataclasses.replace(config, drop_shortcuts=False, steps=1, batch_size=6), OFF)
    assert kept[1]["shortcut"] == 0 and kept[1]["available"] == {"positive": 3, "negative": 3}


def test_min_cover_keeps_the_answers_that_restate_or_edit_their_premise(tmp_path):
    rows = [
        ("the small cat runs home", "the big cat runs home", "contradiction"),  # cover 2/3 (big is new)
        ("the small cat runs home", "a dog sleeps on the sofa", "contradiction"),  # cover 0/3: another scene
        ("the small cat runs home", "the cat sleeps at the shop", "contradiction"),  # cover 1/3
        ("the small cat runs home", "a cow eats grass", "entailment"),  # positives are not checked
    ]
    path = tmp_path / "pairs.tsv"
    path.write_text("premise\thypothesis\tlabel\n" + "".join(f"{p}\t{h}\t{label}\n" for p, h, label in rows))
    config = WarmStartConfig(steps=1, batch_size=2, files=[str(path)], share=None, negative_min_cover=0.5)
    examples, counts = warm_start_examples(config, OFF)
    assert counts["negative_cover"] == 2 and counts["available"] == {"positive": 1, "negative": 1}
    assert [e.answer for e in examples] == ["a cow eats grass", "the big cat runs home"]
    loose = warm_start_examples(dataclasses.replace(config, negative_min_cover=1 / 3), OFF)[1]
    assert loose["negative_cover"] == 1 and loose["available"]["negative"] == 2  # 1/3 is kept at 1/3
    # the same rule for positives: "a cow eats grass" says nothing of its premise
    strict = dataclasses.replace(config, negative_min_cover=0.0, positive_min_cover=0.5, batch_size=2)
    with pytest.raises(HardcseError, match="need 1 positive pairs but the files give 0"):
        warm_start_examples(strict, OFF)


def test_anchor_cover_counts_the_answers_content_words_found_in_the_anchor():
    from hardcse.art.reward.shortcuts import anchor_cover

    assert anchor_cover("The committee approved the budget.", "The committee rejected the budget.") == 2 / 3
    assert anchor_cover("The committee approved the budget.", "A dog is sleeping.") == 0.0
    assert anchor_cover("The committee approved the budget.", "It was there.") == 1.0  # no content word


def test_no_pair_of_the_shipped_files_is_an_nli_dev_or_evaluation_text_or_a_graders_premise():
    from hardcse.data.decontamination import normalise
    from hardcse.data.nli import TRAIN_FILES, premise_share, read_nli_files
    from hardcse.discriminator.train import NLITrainConfig, nli_training_pairs

    examples, counts = warm_start_examples(WarmStartConfig(steps=50, batch_size=8), DecontaminationConfig())
    apart = warm_start_module.held_apart_texts()
    assert counts["used"] == 400 and counts["dev_or_eval_text"] > 0
    assert not any(normalise(e.anchor) in apart or normalise(e.answer) in apart for e in examples)
    # the three shares split the training pairs by premise: a discriminator or judge trained on its share never
    # read a premise the warm start taught
    everything = read_nli_files(TRAIN_FILES)
    shares = {name: nli_training_pairs(NLITrainConfig(share=name))[0] for name in ("discriminator", "judge")}
    assert sum(len(p) for p in shares.values()) + len(everything.share("warm_start")) == len(everything)
    graders = {normalise(p) for pairs in shares.values() for p in pairs.premises}
    assert not graders & {normalise(e.anchor) for e in examples}
    assert {premise_share(e.anchor) for e in examples} == {"warm_start"}
    assert len(shares["judge"]) > 0.3 * len(everything) and not set(shares["judge"].premises) & set(
        shares["discriminator"].premises
    )


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"steps": -1}, "steps"),
        ({"batch_size": 3}, "batch_size"),
        ({"files": ["sts/SICK/train.tsv"]}, "files"),
        ({"share": "judge "}, "share"),
        ({"negative_min_cover": 1.5}, "negative_min_cover"),
        ({"positive_min_cover": -0.1}, "positive_min_cover"),
    ],
)
def test_a_bad_warm_start_setting_names_its_key(overrides, key):
    with pytest.raises(ConfigValueError, match=key):
        WarmStartConfig(**overrides).check()


def test_the_warm_start_raises_its_answers_likelihood_and_keeps_the_callers_random_state(
    tiny_lm_dir, nli_file, tmp_path
):
    generation = GeneratorConfig(model=str(tiny_lm_dir), dtype="float32", device="cpu", system_prompt=None)
    config = WarmStartConfig(steps=3, batch_size=2, files=[str(nli_file)], share=None, learning_rate=5e-2)
    random.seed(5), np.random.seed(5), torch.manual_seed(5)
    before = (random.random(), np.random.rand(), torch.rand(1))
    random.seed(5), np.random.seed(5), torch.manual_seed(5)
    out = train_warm_start(config, generation, OFF, tmp_path / "warm")
    assert (random.random(), np.random.rand(), torch.rand(1)) == before  # the caller's streams go on as they were
    assert is_generator_folder(str(out))
    record = read_record(out)
    assert record["steps"] == 3 and len(record["loss"]) == 3 and record["pairs"]["used"] == 6
    # the folder loads as a trainable generator (RL tunes on from it) whose answers are likelier than before
    model, tokenizer = load_generator(str(out), generation, trainable=True)
    raw, _ = load_generator(str(tiny_lm_dir), generation)
    assert any(p.requires_grad for p in model.parameters())

    from hardcse.art.generator.prompts import render_prompts

    (prompt,) = render_prompts(tokenizer, ["the cat runs"], ["positive"], generation)
    prompt_ids = tokenizer([prompt], return_tensors="pt")["input_ids"]
    ids = tokenizer([prompt + "the cat runs very" + tokenizer.eos_token], return_tensors="pt")["input_ids"]

    def answer_logprob(lm) -> float:  # log p(answer + EOS | prompt): what the warm start raises
        with torch.no_grad():
            logp = lm(ids).logits[0, :-1].float().log_softmax(-1).gather(1, ids[0, 1:, None]).squeeze(1)
        return float(logp[prompt_ids.shape[1] - 1 :].sum())

    assert answer_logprob(model) > answer_logprob(raw)


def test_the_kept_warm_starts_key_follows_what_decides_its_weights_and_nothing_else(
    tiny_lm_dir, nli_file, tmp_path, monkeypatch
):
    import trl

    from hardcse.art.rl.warm_start import PROMPT_AND_ADAPTER, warm_start_entry

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    shown = [{"anchor": "the cat", "positive": "a cat", "negative": "a dog"}]
    generation = GeneratorConfig(model=str(tiny_lm_dir), device="cpu", few_shot=shown)
    config = WarmStartConfig(steps=2, batch_size=2, files=[str(nli_file)], share=None)

    def key(c=config, g=generation, d=OFF) -> str:
        return warm_start_entry(c, g, d)[0].name

    first = key()
    changed = {
        "positive_prompt": "Rewrite [X] alike:",
        "negative_prompt": "Rewrite [X] otherwise:",
        "system_prompt": None,
        "few_shot": [{"anchor": "a dog", "positive": "one dog", "negative": "a cat"}],
        "demonstrations": 1,
        "seed": 7,
        "lora_r": 8,
        "lora_alpha": 8,
        "lora_dropout": 0.0,
        "lora_target_modules": ["q_proj"],
        "device": "auto",
    }
    assert set(changed) == set(PROMPT_AND_ADAPTER)
    for field, value in changed.items():
        assert key(g=dataclasses.replace(generation, **{field: value})) != first, field
    for field, value in {"sampling_temperature": 0.5, "top_k": 3, "max_new_tokens": 9, "batch_size": 2}.items():
        assert key(g=dataclasses.replace(generation, **{field: value})) == first, field  # sampling: not read
    # steps and batch size change the examples read too; the others only the training
    for field, value in {"steps": 1, "learning_rate": 1e-3, "dtype": "bfloat16", "seed": 2, "max_words": 30}.items():
        assert key(c=dataclasses.replace(config, **{field: value})) != first, field
    # no pair of these files takes a shortcut, yet the setting is part of what was asked
    assert key(c=dataclasses.replace(config, drop_shortcuts=True)) != first
    one_step = dataclasses.replace(config, steps=1)  # what is left after the cover rule still fills a step
    assert key(c=dataclasses.replace(one_step, negative_min_cover=0.3)) != key(c=one_step)
    assert key(c=dataclasses.replace(one_step, positive_min_cover=0.3)) != key(c=one_step)
    assert key(d=DecontaminationConfig(threshold=0.9)) != first
    renamed = tmp_path / "renamed.tsv"
    renamed.write_bytes(nli_file.read_bytes())
    assert key(c=dataclasses.replace(config, files=[str(renamed)])) == first  # the same pairs under another name
    nli_file.write_text(nli_file.read_text().replace("sleeps", "naps"))  # pairs the warm start reads, edited
    assert key() != first
    monkeypatch.setattr(trl, "__version__", "0.0.1")
    assert key(c=dataclasses.replace(config, files=[str(renamed)])) != first  # another TRL


def test_a_run_model_trained_on_every_pair_is_named_as_having_seen_the_warm_starts(nli_file, caplog):
    """The warm start's pairs are a third of the NLI pairs; a run's discriminator or judge that trains on all of
    them saw what the warm start taught, and the run says which model and the key that fixes it."""
    from hardcse.art.config import ArtRunConfig
    from hardcse.art.rl.warm_start import check_warm_start

    on = {"warm_start": WarmStartConfig(steps=1, batch_size=2, files=[str(nli_file)], share=None)}
    config = ArtRunConfig(discriminator="train", judge="train", decontamination=OFF, **on)
    with caplog.at_level("WARNING", logger="hardcse"):
        check_warm_start(config)
    assert "the run's discriminator trains on every NLI pair" in caplog.text
    assert "discriminator_training.share: discriminator" in caplog.text
    assert "the run's judge trains" not in caplog.text  # the judge's own third by default
    caplog.clear()
    every_pair = dataclasses.replace(config.judge_training, share=None)
    discriminator_share = dataclasses.replace(config.discriminator_training, share="discriminator")
    with caplog.at_level("WARNING", logger="hardcse"):
        check_warm_start(
            dataclasses.replace(config, judge_training=every_pair, discriminator_training=discriminator_share)
        )
    assert "the run's judge trains on every NLI pair" in caplog.text and "discriminator trains" not in caplog.text
