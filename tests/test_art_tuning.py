"""art tune, resume, generate and judge, end to end on tiny random models."""

import dataclasses
import json
import re

import pytest
import torch

from hardcse.art.analysis.judge import judge_records, judge_table_markdown
from hardcse.art.config import AnchorConfig, FilterConfig, TuneConfig
from hardcse.art.reward.dual import Reward
from hardcse.art.rl.tuning import SAMPLER_FILE, check_same_sampler, tune_generator
from hardcse.art.synthesis.anchors import anchors_for_step, split_anchors
from hardcse.art.synthesis.triplets import synthesize
from hardcse.cli.art import tune_run
from hardcse.config import load_config
from hardcse.data.jsonl import read_jsonl
from hardcse.discriminator.nli import NLIDiscriminator
from hardcse.encoder.build import load_encoder
from hardcse.errors import HardcseError


def test_anchor_split_is_seeded_filtered_and_disjoint(corpus):
    config = AnchorConfig(corpus=str(corpus), held_out=5)
    split = split_anchors(config)
    assert len(split.held_out) == 5 and not set(split.held_out) & set(split.train)
    assert "too short" not in split.train + split.held_out
    assert split_anchors(config) == split
    assert anchors_for_step(["a", "b", "c"], 2, 2) == ["c", "a"]
    with pytest.raises(HardcseError, match="need more than held_out"):
        split_anchors(AnchorConfig(corpus=str(corpus), held_out=1000))


def test_a_checkpoint_that_does_not_say_what_sampled_it_resumes_with_a_warning(tmp_path, caplog):
    check_same_sampler(tmp_path, "openvino", "auto")  # written before checkpoints recorded it
    assert f"{tmp_path} does not say what sampled its rollouts; resuming with openvino" in caplog.text
    (tmp_path / SAMPLER_FILE).write_text(json.dumps({"rollout_engine": "openvino"}))
    check_same_sampler(tmp_path, "openvino", "auto")
    auto = "rl.rollout_engine: auto now resolves to torch (it follows the engine, OpenVINO's install and generator."
    with pytest.raises(HardcseError, match=re.escape(auto + "device); resume with OpenVINO installed, HARDCSE_ENGINE")):
        check_same_sampler(tmp_path, "torch", "auto")


@pytest.mark.slow  # a whole run on tiny models (10 s and more): make test, not test-fast
def test_tune_resume_generate_judge(tiny_tune_overrides, tiny_lm_dir, tiny_encoder_dir, tiny_nli_dir, tmp_path):
    overrides = [
        *tiny_tune_overrides,
        "generator.max_new_tokens=16",
        "rl.steps=2",
        "rl.epochs=1",
        "rl.save_every=1",
    ]
    config = load_config(TuneConfig, overrides=overrides)
    run = tmp_path / "tune"
    final = tune_run(config, run)
    assert final == run / "generator" and not (run / "rl").exists()
    log = read_jsonl(final / "rl_log.jsonl")
    assert [r["step"] for r in log] == [1, 2]
    assert {"reward", "r1", "r2", "kl", "entropy", "clipfrac", "value_loss", "parse_failure_rate"} <= set(log[0])
    assert {"generation_s", "scoring_s", "reference_s", "optimisation_s"} <= set(log[0])
    assert (final / "rl_curves.png").stat().st_size > 1000 and (final / "generator.json").is_file()
    with pytest.raises(HardcseError, match="--resume"):
        tune_run(config, run)

    # the work folder's checkpoint continues: two more steps extend the log instead of restarting it
    work = tmp_path / "work"
    tune_generator(config, work, tmp_path / "g2")
    more = load_config(TuneConfig, overrides=[*overrides, "rl.steps=4"])
    tune_generator(more, work, tmp_path / "g4")
    assert [r["step"] for r in read_jsonl(tmp_path / "g4" / "rl_log.jsonl")] == [1, 2, 3, 4]
    # its checkpoint says what sampled the rollouts; a resume that would sample otherwise is refused before a step
    assert json.loads((work / "checkpoint" / SAMPLER_FILE).read_text()) == {"rollout_engine": "torch"}
    elsewhere = load_config(TuneConfig, overrides=[*overrides, "rl.steps=5", "rl.rollout_engine=openvino"])
    refused = f"{work / 'checkpoint' / SAMPLER_FILE}: this tuning's rollouts were sampled by torch, but "
    with pytest.raises(HardcseError, match=re.escape(refused + "rl.rollout_engine is openvino now; resume with")):
        tune_generator(elsewhere, work, tmp_path / "g5")
    assert [r["step"] for r in read_jsonl(work / "rl_log.jsonl")] == [1, 2, 3, 4]

    # tuning can start from a tuned generator; the new folder still names the raw base model
    again = load_config(TuneConfig, overrides=[*overrides, f"generator.model={final}", "rl.steps=1"])
    second = tune_run(again, tmp_path / "tune2")
    assert json.loads((second / "generator.json").read_text())["base_model"] == str(tiny_lm_dir)

    split = split_anchors(config.anchors)
    reward = Reward(NLIDiscriminator.load(str(tiny_nli_dir)), load_encoder(str(tiny_encoder_dir)), config.reward)
    out = tmp_path / "synth"
    report = synthesize(str(final), split.held_out, config.generator, reward, FilterConfig(rule="none"), out)
    records = read_jsonl(out / "synthetic.jsonl")
    assert report.anchors == len(records) == 5
    for r in records:
        assert {"anchor", "positive_raw", "positive", "positive_reason", "negative_probs", "drop_reason"} <= set(r)
        assert (r["positive"] is None) == (r["positive_reason"] is not None)
    kept = [r for r in records if r["drop_reason"] is None]
    assert report.kept == len(kept) == sum(1 for _ in (out / "triplets.csv").open()) - 1
    assert json.loads((out / "synthesis.json").read_text())["anchors"] == 5

    measures = judge_records(records, NLIDiscriminator.load(str(tiny_nli_dir)))
    assert measures["anchors"] == 5 and 0 <= measures["positive_parse_failure_rate"] <= 1
    assert "| tiny |" in judge_table_markdown({"tiny": measures})


def test_synthesis_text_does_not_depend_on_batch_size_or_order(tiny_lm_dir, tiny_encoder_dir, tiny_nli_dir, tmp_path):
    from hardcse.art.config import GeneratorConfig

    anchors = [f"the {s} {v} very {w}" for s in ("cat", "dog") for v in ("runs", "sleeps") for w in ("good", "bad")]
    anchors += ["a cat runs", "a dog sleeps"]
    reward = Reward(NLIDiscriminator.load(str(tiny_nli_dir)), load_encoder(str(tiny_encoder_dir)), TuneConfig().reward)

    def written(batch_size: int, rows: list[str], seed: int = 7) -> dict[str, tuple]:
        generation = GeneratorConfig(dtype="float32", max_new_tokens=6, batch_size=batch_size, seed=seed)
        out = tmp_path / f"b{batch_size}-s{seed}-{rows[0].replace(' ', '_')}"
        synthesize(str(tiny_lm_dir), rows, generation, reward, FilterConfig(rule="none"), out)
        return {r["anchor"]: (r["positive_raw"], r["negative_raw"]) for r in read_jsonl(out / "synthetic.jsonl")}

    # generator.batch_size counts responses: a positive and a negative per anchor, so 1, 3 and 8 anchors a batch
    one = written(2, anchors)
    assert written(6, anchors) == one
    assert written(16, anchors) == one
    assert written(16, anchors[::-1]) == one  # another order and other batch neighbours
    assert written(16, anchors[3:6]) == {a: one[a] for a in anchors[3:6]}  # a shard of the anchors
    assert any(p != n for p, n in one.values())  # positive and negative draw from different streams
    assert written(16, anchors, seed=8) != one  # and the seed matters


def test_the_kl_reference_is_a_generator_folders_adapter_when_asked(tiny_tune_overrides, tmp_path):
    """rl.reference: a generator folder (the warm start): RL tuning on from that folder starts at KL exactly 0 (the
    reference forwards are the policy's own sums), where the paper's reference, the adapter disabled, is not; an
    adapter of another shape is refused by name."""
    start = tune_generator(
        load_config(TuneConfig, overrides=[*tiny_tune_overrides, "rl.steps=2", "rl.learning_rate=0.05"]),
        tmp_path / "w-start",
        tmp_path / "start",
    )

    def first_kl(reference: str, *more: str) -> float:
        overrides = [*tiny_tune_overrides, f"generator.model={start}", "rl.steps=1", f"rl.reference={reference}"]
        name = reference.replace("/", "_")
        out = tune_generator(load_config(TuneConfig, overrides=[*overrides, *more]), tmp_path / f"w{name}",
                             tmp_path / f"g{name}")  # fmt: skip
        return read_jsonl(out / "rl_log.jsonl")[0]["kl"]

    assert first_kl(str(start)) == 0.0
    assert first_kl("base") > 0 and first_kl("auto") == first_kl("base")  # auto outside a warm-started run: base
    other = tune_generator(
        load_config(TuneConfig, overrides=[*tiny_tune_overrides, "rl.steps=1", "generator.lora_r=4"]),
        tmp_path / "w-other",
        tmp_path / "other",
    )
    fresh = load_config(TuneConfig, overrides=[*tiny_tune_overrides, "rl.steps=1", f"rl.reference={other}"])
    with pytest.raises(HardcseError, match="rl.reference: .* is not shaped as the policy's"):
        tune_generator(fresh, tmp_path / "w-refused", tmp_path / "refused")
    not_a_generator = dataclasses.replace(fresh, rl=dataclasses.replace(fresh.rl, reference=str(tmp_path)))
    with pytest.raises(HardcseError, match="rl.reference: .* is not a generator folder"):
        tune_generator(not_a_generator, tmp_path / "w-none", tmp_path / "none")


def test_best_of_k_synthesis_writes_k_candidates_and_keeps_candidate_zero_as_the_one(
    tiny_lm_dir, tiny_encoder_dir, tiny_nli_dir, tmp_path
):
    """filter.candidates: k responses per anchor and kind, each from its own stream; candidate 0 is what one
    candidate writes, the kept one is the hardest (r2) of those that pass its kind (under rule none: every parsed
    one), the others stay in the record; the texts do not depend on the batching."""
    from hardcse.art.config import GeneratorConfig

    anchors = ["the cat runs very fast", "a dog sleeps here now", "the bird sings a song", "a cow eats the grass"]
    reward = Reward(NLIDiscriminator.load(str(tiny_nli_dir)), load_encoder(str(tiny_encoder_dir)), TuneConfig().reward)

    def records(k: int, batch_size: int) -> list[dict]:
        generation = GeneratorConfig(dtype="float32", max_new_tokens=6, batch_size=batch_size, seed=3)
        out = tmp_path / f"k{k}-b{batch_size}"
        config = FilterConfig(rule="none", candidates=k)
        report = synthesize(str(tiny_lm_dir), anchors, generation, reward, config, out)
        assert report.candidates == k and json.loads((out / "synthesis.json").read_text())["candidates"] == k
        return read_jsonl(out / "synthetic.jsonl")

    def texts(rows: list[dict], kind: str) -> list[list[str]]:  # each anchor's candidates, the kept one first
        return [[r[f"{kind}_raw"], *(o["raw"] for o in r[f"{kind}_others"])] for r in rows]

    one, three = records(1, 8), records(3, 12)
    # 6 responses an anchor: two anchors a batch at 12 rows, one at 6; the same texts, the same choice
    assert all(texts(three, kind) == texts(records(3, 6), kind) for kind in ("positive", "negative"))
    chose_another = 0
    for single, best in zip(one, three, strict=True):
        for kind in ("positive", "negative"):
            others = best[f"{kind}_others"]
            assert len(others) == 2
            # candidate 0, the one-candidate text, is the kept one or the first of the others
            assert single[f"{kind}_raw"] in (best[f"{kind}_raw"], others[0]["raw"])
            chose_another += single[f"{kind}_raw"] != best[f"{kind}_raw"]
            parsed = [o for o in others if o["sentence"] is not None]
            assert best[f"{kind}_passing"] == len(parsed) + (best[kind] is not None)
            if best[kind] is not None:  # the hardest of the parsed ones
                assert all(o["r2"] <= best[f"{kind}_r2"] for o in parsed)
            else:  # none parsed: the first candidate, the one-candidate text
                assert not parsed and best[f"{kind}_raw"] == single[f"{kind}_raw"]
    assert chose_another  # the choice is exercised: some kept answer is not candidate 0


def test_a_synthesis_read_from_the_generation_cache_reports_no_speed(
    tiny_lm_dir, tiny_encoder_dir, tiny_nli_dir, tmp_path, monkeypatch
):
    """Texts copied from the cache were written by no one now: the stage says how many batches it read and gives
    no tokens per second (it once reported 3,012 tokens/s for 24 s of copying)."""
    from hardcse.art.config import GeneratorConfig

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    reward = Reward(NLIDiscriminator.load(str(tiny_nli_dir)), load_encoder(str(tiny_encoder_dir)), TuneConfig().reward)
    generation = GeneratorConfig(dtype="float32", max_new_tokens=6, batch_size=4)
    anchors = ["the cat runs very fast", "a dog sleeps here now", "the bird sings a song"]

    def run(name: str) -> dict:
        synthesize(str(tiny_lm_dir), anchors, generation, reward, FilterConfig(rule="none"), tmp_path / name,
                   cache_generations=True)  # fmt: skip
        return json.loads((tmp_path / name / "synthesis.json").read_text())

    fresh, copied = run("fresh"), run("copied")
    assert fresh["cached_batches"] == 0 and fresh["tokens_per_second"] > 0
    assert copied["cached_batches"] == 2 and copied["tokens_per_second"] is None  # 3 anchors at 2 a batch
    assert (tmp_path / "copied" / "synthetic.jsonl").read_text() == (tmp_path / "fresh" / "synthetic.jsonl").read_text()


@pytest.mark.slow  # a whole run on tiny models (10 s and more): make test, not test-fast
def test_reuse_copies_a_tuned_generator_of_the_same_inputs(tiny_tune_overrides, tmp_path, monkeypatch):
    """reuse: true: the second tuning of the same inputs copies the first's generator and runs no RL; a change RL
    reads (a reward weight) tunes again, a change it does not read (the filter) does not."""
    import hardcse.art.rl.tuning as tuning

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))  # this test's own: nothing kept from other runs
    overrides = [
        *tiny_tune_overrides,
        "generator.max_new_tokens=8",
        "rl.steps=1",
        "reuse=true",
    ]
    first = tune_generator(load_config(TuneConfig, overrides=overrides), tmp_path / "w1", tmp_path / "g1")
    calls = []
    real = tuning.load_generator
    monkeypatch.setattr(tuning, "load_generator", lambda *a, **k: calls.append(1) or real(*a, **k))

    again = load_config(TuneConfig, overrides=[*overrides, "filter.min_entailment=0.9"])
    second = tune_generator(again, tmp_path / "w2", tmp_path / "g2")
    assert calls == []  # no RL
    files = sorted(p.name for p in first.iterdir())
    assert files == sorted(p.name for p in second.iterdir())
    assert all((first / f).read_bytes() == (second / f).read_bytes() for f in files)
    other = load_config(TuneConfig, overrides=[*overrides, "reward.w2=0.1"])
    tune_generator(other, tmp_path / "w3", tmp_path / "g3")
    assert calls == [1]  # another reward: tuned again
    assert len(list((tmp_path / "cache" / "tuned").iterdir())) == 2


@pytest.mark.slow  # a whole run on tiny models (10 s and more): make test, not test-fast
def test_reuse_continues_a_kept_shorter_tuning_of_the_same_anchors(tiny_tune_overrides, tmp_path, monkeypatch):
    """reuse: true: a 3-step tuning whose first 2 steps were kept continues from them (one RL step, not three) and
    ends with the adapter, value head, optimizer and log an uninterrupted 3-step tuning ends with; steps that read
    other anchors start from scratch."""
    import hardcse.art.rl.tuning as tuning

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    overrides = [*tiny_tune_overrides, "generator.max_new_tokens=8", "rl.save_every=1", "rl.log_completions=2"]
    config = load_config(TuneConfig, overrides=overrides)
    anchors = split_anchors(config.anchors).train[:12]  # 3 steps of 4
    straight = tune_generator(
        load_config(TuneConfig, overrides=[*overrides, "rl.steps=3"]), tmp_path / "w0", tmp_path / "g0"
    )
    reuse = [*overrides, "reuse=true"]
    tune_generator(
        load_config(TuneConfig, overrides=[*reuse, "rl.steps=2"]), tmp_path / "w1", tmp_path / "g1", anchors[:8]
    )

    steps = []
    real = tuning.RLTrainer.step
    monkeypatch.setattr(tuning.RLTrainer, "step", lambda self, *a, **k: steps.append(1) or real(self, *a, **k))
    longer = tune_generator(
        load_config(TuneConfig, overrides=[*reuse, "rl.steps=3"]), tmp_path / "w2", tmp_path / "g2", anchors
    )
    assert steps == [1]  # steps 1-2 came from the kept 2-step tuning
    assert (longer / "adapter_model.safetensors").read_bytes() == (straight / "adapter_model.safetensors").read_bytes()
    state = [torch.load(g / "rl_state.pt", weights_only=True) for g in (longer, straight)]
    torch.testing.assert_close(*state, rtol=0, atol=0)  # optimizer moments and the value head
    untimed = [
        [{k: v for k, v in row.items() if not k.endswith("_s")} for row in read_jsonl(g / "rl_log.jsonl")]
        for g in (longer, straight)
    ]
    assert untimed[0] == untimed[1]  # every number but the seconds
    assert [row["step"] for row in read_jsonl(longer / "completions.jsonl")] == [1, 1, 2, 2, 3, 3]

    steps.clear()  # the first 2 steps of these anchors read other anchors than the kept tuning's: no prefix
    other = [*anchors[4:8], *anchors[:4], *anchors[8:]]
    tune_generator(load_config(TuneConfig, overrides=[*reuse, "rl.steps=3"]), tmp_path / "w3", tmp_path / "g3", other)
    assert steps == [1, 1, 1]
