"""The GPU paths, on tiny random models: skipped where torch sees no CUDA GPU (`pytest -m cuda` selects them).

What runs on a CUDA GPU here: a PPO and a GRPO step (rollouts, value head, GAE and the update all on the GPU,
and learning the toy preference of tests/test_rl.py), synthesis (texts independent of the batch size there too),
and an encoder training job with ``training.device: cuda``.
"""

import dataclasses

import pytest
import torch
from sentence_transformers import SentenceTransformer

from conftest import SENTENCES
from hardcse.art.config import FilterConfig, GeneratorConfig, TuneConfig
from hardcse.art.generator.model import load_generator
from hardcse.art.reward.dual import Reward
from hardcse.art.rl.config import PPOConfig, RLConfig
from hardcse.art.rl.loop import RLTrainer
from hardcse.art.synthesis.triplets import synthesize
from hardcse.config import load_config
from hardcse.data.jsonl import read_jsonl
from hardcse.discriminator.nli import NLIDiscriminator
from hardcse.encoder.build import load_encoder
from hardcse.encoder.simcse import SimCSEConfig, read_training_data, train_simcse
from hardcse.engines import Engine
from hardcse.evaluation.sts import dev_evaluator
from test_rl import good_share, p_good_first

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]
GEN = GeneratorConfig(max_new_tokens=3, lora_target_modules=["q_proj", "v_proj"], dtype="float32", device="cuda")


@pytest.mark.parametrize("algorithm", ["ppo", "grpo"])
def test_rl_steps_run_on_the_gpu_and_learn(tiny_lm_dir, algorithm):
    model, tokenizer = load_generator(str(tiny_lm_dir), GEN, trainable=True)
    assert {p.device.type for p in model.parameters()} == {"cuda"}
    config = RLConfig(
        algorithm=algorithm,
        batch_size=16,
        minibatch_size=8,
        epochs=4,
        learning_rate=1e-2,
        ppo=PPOConfig(kl_coef=0.01),
        seed=0,
    )
    trainer = RLTrainer(model, tokenizer, GEN, config)
    if algorithm == "ppo":
        assert trainer.algorithm.value_head.weight.device.type == "cuda"
    before = p_good_first(model, tokenizer)
    torch.manual_seed(0)
    for _ in range(10):
        stats = trainer.step(["the cat"] * 16, [0] * 16, good_share)
    assert not stats.get("skipped")
    assert p_good_first(model, tokenizer) > 1.6 * before


def test_synthesis_on_the_gpu_does_not_depend_on_the_batch_size(tiny_lm_dir, tiny_encoder_dir, tiny_nli_dir, tmp_path):
    config = TuneConfig(device="cuda")
    reward = Reward(
        NLIDiscriminator.load(str(tiny_nli_dir), device="cuda"),
        load_encoder(str(tiny_encoder_dir), device="cuda"),
        config.reward,
    )
    anchors = [f"the {s} {v} very good" for s in ("cat", "dog") for v in ("runs", "sleeps")]
    texts = []
    for batch_size in (2, 8):
        generation = dataclasses.replace(GEN, max_new_tokens=6, batch_size=batch_size)
        synthesize(str(tiny_lm_dir), anchors, generation, reward, FilterConfig(rule="none"), tmp_path / str(batch_size))
        texts.append(
            [(r["positive_raw"], r["negative_raw"]) for r in read_jsonl(tmp_path / str(batch_size) / "synthetic.jsonl")]
        )
    assert texts[0] == texts[1]


def test_an_encoder_trains_on_the_gpu(tiny_encoder_dir, triplet_file, tmp_path):
    overrides = ["training.max_steps=3", "training.eval_steps=3", "training.batch_size=4", "training.device=cuda"]
    config = load_config(SimCSEConfig, overrides=[f"encoder={tiny_encoder_dir}", "mode=sup", *overrides])
    model = load_encoder(str(tiny_encoder_dir), device="cpu")  # the job moves it
    data = read_training_data("sup", triplet_file)
    outcome = train_simcse(
        model,
        data,
        "sup",
        config,
        tmp_path / "out",
        evaluator=dev_evaluator(model.max_seq_length, Engine.from_environment()),
    )
    assert outcome.model.device.type == "cuda" and outcome.record["steps"] == 3
    assert SentenceTransformer(str(tmp_path / "out"), device="cpu").encode(SENTENCES).shape[0] == len(SENTENCES)
