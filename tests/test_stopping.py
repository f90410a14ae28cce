"""Where a response ends: stop tokens (the end of sequence, line breaks under ``stop: line``) and a token budget
per row, the same in PyTorch and OpenVINO."""

import dataclasses

import pytest
import torch
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast

from hardcse.art.config import GeneratorConfig
from hardcse.art.generator import stopping
from hardcse.art.generator.model import load_generator
from hardcse.art.generator.sampling import sample
from hardcse.art.generator.stopping import line_break_ids, stop_ids, token_limits
from hardcse.art.generator.texts import TextGenerator
from hardcse.cache_entries import is_entry
from hardcse.engines import Engine, openvino_installed

GREEDY = GeneratorConfig(dtype="float32", top_k=1, max_new_tokens=6, device="cpu")
PROMPTS = ["the cat runs", "the cat sleeps very", "the", "a dog", "a dog runs good", "a dog sleeps"]
openvino = pytest.mark.skipif(not openvino_installed(), reason="OpenVINO is not installed")


def test_line_breaks_are_the_tokens_whose_text_holds_one():
    vocab = {"[PAD]": 0, "[EOS]": 1, "a": 2, "\n": 3, "b\nc": 4, "\r\n": 5, "d": 6}
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="[PAD]")), pad_token="[PAD]", eos_token="[EOS]"
    )
    assert line_break_ids(tokenizer) == [3, 4, 5]
    assert stop_ids(tokenizer, [1], GREEDY) == [1]  # stop: eos, the paper's
    assert stop_ids(tokenizer, [1], dataclasses.replace(GREEDY, stop="line")) == [1, 3, 4, 5]
    tokenizer.add_tokens(["e\nf"])  # the same tokenizer object with a token more: its line breaks follow
    assert line_break_ids(tokenizer) == [3, 4, 5, 7]


def test_token_limits_by_hand(tiny_lm_dir):
    _, tokenizer = load_generator(str(tiny_lm_dir), GREEDY)
    anchors = ["the cat runs very good", "the", "a dog runs"]  # 5, 1 and 3 tokens
    assert token_limits(tokenizer, anchors, GREEDY) == [6, 6, 6]  # no budget: max_new_tokens for all
    budget = dataclasses.replace(GREEDY, length_budget=1.5, length_extra=1, max_new_tokens=7)
    # ceil(1.5 * 5) + 1 = 9 -> at most 7; ceil(1.5) + 1 = 3; ceil(4.5) + 1 = 6
    assert token_limits(tokenizer, anchors, budget) == [7, 3, 6]


SAMPLED = dataclasses.replace(GREEDY, top_k=0, sampling_temperature=1.0)
SEEDS = [96, 97, 98, 99, 100, 101]  # a stream per row: a row's draws do not depend on when the others stop


@pytest.fixture(scope="module")
def lm(tiny_lm_dir):
    return load_generator(str(tiny_lm_dir), GREEDY)


@pytest.fixture(scope="module")
def full(lm):
    """Seeded samples with no budget and the model's end token only: the reference."""
    samples = sample(*lm, PROMPTS, SAMPLED, row_seeds=SEEDS)
    lengths = samples.response_mask.sum(dim=1).long().tolist()
    assert sum(samples.truncated) >= 2 and len(set(lengths)) >= 4  # rows of several lengths, some cut off
    return samples


def written(samples, i: int) -> list[int]:
    return samples.response_ids[i, : int(samples.response_mask[i].sum())].tolist()


def test_a_row_stops_at_its_own_budget_cut_off(lm, full):
    limits = [1, 2, 3, 4, 5, 6]
    cut = sample(*lm, PROMPTS, SAMPLED, row_seeds=SEEDS, limits=limits)
    for i, limit in enumerate(limits):
        assert written(cut, i) == written(full, i)[:limit] and cut.response_mask[i, limit:].sum() == 0
        # cut off when the budget ran out before the end token (an end token on the last allowed step is not)
        assert cut.truncated[i] == (full.truncated[i] or len(written(full, i)) > limit)
    with pytest.raises(ValueError, match="2 limits for 6 prompts"):
        sample(*lm, PROMPTS, SAMPLED, limits=[1, 2])


def test_a_line_break_ends_a_row_and_is_part_of_its_response(lm, full, monkeypatch):
    # the tiny vocabulary has no line break: name as one the token that the longest row writes second
    longest = max(range(len(PROMPTS)), key=lambda i: len(written(full, i)))
    second = written(full, longest)[1]
    monkeypatch.setattr(stopping, "line_break_ids", lambda _: [second])
    stopped = sample(*lm, PROMPTS, dataclasses.replace(SAMPLED, stop="line"), row_seeds=SEEDS)
    for i in range(len(PROMPTS)):
        before = written(full, i)
        n = before.index(second) + 1 if second in before else len(before)
        assert written(stopped, i) == before[:n]
        assert stopped.truncated[i] == (second not in before and full.truncated[i])  # a line break is an end
    assert written(stopped, longest) == written(full, longest)[:2] and not stopped.truncated[longest]
    assert sample(*lm, PROMPTS, SAMPLED, row_seeds=SEEDS).texts == full.texts  # stop: eos is unchanged


def test_a_batch_whose_rows_all_leave_at_once_keeps_their_tokens(lm):
    out = sample(*lm, PROMPTS, SAMPLED, row_seeds=SEEDS, limits=[1] * len(PROMPTS))
    assert out.response_ids.shape == (len(PROMPTS), 1)
    torch.testing.assert_close(out.response_mask, torch.ones(len(PROMPTS), 1))


@openvino
def test_openvino_stops_where_torch_stops(tiny_lm_dir, lm, tmp_path, monkeypatch):
    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    greedy = sample(*lm, PROMPTS, GREEDY)
    longest = max(range(len(PROMPTS)), key=lambda i: len(written(greedy, i)))
    assert len(written(greedy, longest)) >= 3
    monkeypatch.setattr(stopping, "line_break_ids", lambda _: [written(greedy, longest)[1]])
    line = dataclasses.replace(GREEDY, stop="line")
    limits = [1, 2, 3, 4, 5, 6]
    expected = TextGenerator(str(tiny_lm_dir), line, Engine("torch")).generate(PROMPTS, limits=limits)
    got = TextGenerator(str(tiny_lm_dir), line, Engine("openvino")).generate(PROMPTS, limits=limits)
    assert got == expected and expected.tokens < int(greedy.response_mask.sum())


def test_cached_generations_are_read_back_and_keyed_by_what_they_depend_on(tiny_lm_dir, tmp_path, monkeypatch):
    from hardcse.art.generator import sampling

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    first = TextGenerator(str(tiny_lm_dir), SAMPLED, Engine("torch"), cache=True).generate(PROMPTS, row_seeds=SEEDS)
    assert len([p for p in (tmp_path / "cache" / "generations").iterdir() if is_entry(p)]) == 1
    TextGenerator(str(tiny_lm_dir), SAMPLED, Engine("torch")).generate(
        PROMPTS, row_seeds=SEEDS
    )  # no cache: nothing kept
    assert len([p for p in (tmp_path / "cache" / "generations").iterdir() if is_entry(p)]) == 1

    def no_sampling(*_args, **_kwargs):
        raise AssertionError("generated again")

    monkeypatch.setattr(sampling, "sample", no_sampling)
    reader = TextGenerator(str(tiny_lm_dir), SAMPLED, Engine("torch"), cache=True)
    assert reader.generate(PROMPTS, row_seeds=SEEDS) == dataclasses.replace(first, from_cache=True)
    assert "_model" not in vars(reader)  # every call read from the cache: the model was never loaded
    for changed in (
        lambda g: g.generate(PROMPTS, row_seeds=[s + 1 for s in SEEDS]),  # other seeds
        lambda g: g.generate(PROMPTS, row_seeds=SEEDS, limits=[3] * len(PROMPTS)),  # other budgets
        lambda g: TextGenerator(
            str(tiny_lm_dir), dataclasses.replace(SAMPLED, sampling_temperature=0.5), Engine("torch"), cache=True
        ).generate(PROMPTS, row_seeds=SEEDS),
    ):
        with pytest.raises(AssertionError, match="generated again"):
            changed(TextGenerator(str(tiny_lm_dir), SAMPLED, Engine("torch"), cache=True))
    from hardcse import cache  # what decides the texts besides the call: the code, the libraries, the machine

    for name, value in (
        ("code_digest", lambda **_: "other code"),
        ("library_versions", lambda: {"torch": "0.0"}),
        ("machine_kind", lambda device: "cpu without avx"),
    ):
        with monkeypatch.context() as m, pytest.raises(AssertionError, match="generated again"):
            m.setattr(cache, name, value)
            TextGenerator(str(tiny_lm_dir), SAMPLED, Engine("torch"), cache=True).generate(PROMPTS, row_seeds=SEEDS)
