"""Data-CUBE: readers, the annealed task order, instance order, batch combination, the masked loss, training."""

import itertools
import json
import random

import numpy as np
import pytest
import torch
import yaml

from conftest import run_until_killed
from hardcse.cli import main
from hardcse.config import load_config
from hardcse.data.decontamination import Decontamination, DecontaminationConfig
from hardcse.data.multitask import builtin_collection, read_medi, read_task_folder
from hardcse.datacube.config import DataCubeConfig
from hardcse.datacube.plan import build_plan, combine_batches, load_plan, save_plan, task_batches
from hardcse.datacube.task_order import (
    anneal_task_order,
    greedy_task_order,
    swap_delta,
    tour_similarity,
)
from hardcse.encoder.contrastive import InBatchContrastiveLoss
from hardcse.errors import HardcseError
from hardcse.training import TrainingSettings


def test_swap_delta_equals_the_difference_of_whole_tours():
    rng = np.random.default_rng(0)
    sim = rng.random((7, 7))
    sim = (sim + sim.T) / 2
    order = [3, 0, 6, 2, 5, 1, 4]
    for i, j in itertools.permutations(range(7), 2):  # adjacent, wrap-around and far pairs
        swapped = order[:]
        swapped[i], swapped[j] = swapped[j], swapped[i]
        expected = tour_similarity(swapped, sim) - tour_similarity(order, sim)
        assert swap_delta(order, i, j, sim.tolist()) == pytest.approx(expected)


def test_annealing_recovers_a_planted_chain_and_never_returns_a_worse_tour():
    m = 12
    hidden = list(range(m))
    random.Random(3).shuffle(hidden)  # task hidden[k] is similar to hidden[k + 1] (a ring)
    sim = np.full((m, m), 0.1)
    for k in range(m):
        a, b = hidden[k], hidden[(k + 1) % m]
        sim[a, b] = sim[b, a] = 1.0
    result = anneal_task_order(sim, iterations=200_000, seed=0)
    assert result.similarity == pytest.approx(m * 1.0)  # the optimum: every neighbour pair is a planted one
    assert sorted(result.order) == list(range(m))

    rng = np.random.default_rng(1)
    noisy = rng.random((30, 30))
    noisy = (noisy + noisy.T) / 2
    for iterations in (0, 10, 1000):
        r = anneal_task_order(noisy, iterations=iterations, seed=5)
        assert r.similarity >= r.start_similarity - 1e-12


def test_greedy_tour_by_hand():
    sim = np.array([[1, 0.9, 0.1, 0.2], [0.9, 1, 0.8, 0.3], [0.1, 0.8, 1, 0.7], [0.2, 0.3, 0.7, 1]])
    assert greedy_task_order(sim, 0) == [0, 1, 2, 3]
    assert tour_similarity([0, 1, 2, 3], sim) == pytest.approx(0.9 + 0.8 + 0.7 + 0.2)


def test_instances_easy_to_hard_and_algorithm_1_combination():
    config = DataCubeConfig(training=TrainingSettings(batch_size=2))
    phi = np.array([0.1, 0.9, -0.5, 0.4, 0.0])
    batches = task_batches(phi, config, random.Random(0))
    assert [rows for rows, _ in batches] == [[1, 3], [0, 4], [2]]
    assert batches[0][1] == [0.9, 0.4]
    per_task = [["a0", "a1"], ["b0"], ["c0", "c1", "c2"]]
    assert combine_batches(per_task, [2, 0, 1]) == [(2, 0), (0, 0), (1, 0), (2, 1), (0, 1), (2, 2)]


def test_masked_loss_by_hand():
    class Fixed(torch.nn.Module):  # returns the embeddings given as "features"
        def forward(self, features):
            return {"sentence_embedding": features["emb"]}

    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    pos = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    neg = torch.tensor([[0.0, 1.0], [0.0, -1.0]])
    loss = InBatchContrastiveLoss(Fixed(), tau=1.0, labels_are_mask=True)
    features = [{"emb": q}, {"emb": pos}, {"emb": neg}]
    # row 0: sims to (p0, p1, n0, n1) = (1, 1, 0, 0); row 1: (0, 0, 1, -1), target p1 (0)
    row0 = -np.log(np.e / (2 * np.e + 2))
    row1 = -np.log(1 / (2 + np.e + np.exp(-1)))
    assert float(loss(features, torch.tensor([1.0, 1.0]))) == pytest.approx((row0 + row1) / 2, rel=1e-5)
    assert float(loss(features, torch.tensor([1.0, 0.0]))) == pytest.approx(row0, rel=1e-5)  # row 1 masked out


def test_medi_and_task_folder_readers(tmp_path):
    rows = [
        {
            "query": ["Represent the q:", "a cat"],
            "pos": ["Represent the d:", "a kitten"],
            "neg": ["Represent the d:", "a car"],
            "task_name": "t1",
        },
        {
            "query": ["Represent the q:", "a dog"],
            "pos": ["Represent the d:", "a puppy"],
            "neg": ["Represent the d:", "a cup"],
            "task_name": "t1",
        },
        {"query": ["Find:", "rain"], "pos": ["Doc:", "water"], "neg": ["Doc:", "sun"], "task_name": "t2"},
    ]
    jsonl = tmp_path / "medi.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    as_list = tmp_path / "medi.json"
    as_list.write_text(json.dumps(rows))
    for path in (jsonl, as_list):
        tasks = read_medi(path)
        assert [t.name for t in tasks] == ["t1", "t2"] and len(tasks[0].instances) == 2
        assert tasks[0].instructed(tasks[0].instances[0]) == (
            "Represent the q: a cat",
            "Represent the d: a kitten",
            "Represent the d: a car",
        )
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rows[0]) + "\n" + json.dumps({**rows[1], "pos": "no instruction"}) + "\n")
    with pytest.raises(HardcseError, match=r"bad.jsonl:2: pos must be \[instruction, text\]"):
        read_medi(bad)

    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "instructions.yaml").write_text(
        yaml.safe_dump({"t1": {"query": "Q:", "positive": "P:", "negative": "N:"}})
    )
    (folder / "t1.jsonl").write_text('{"query": "a", "pos": "b", "neg": "c"}\n{"query": "d", "pos": "", "neg": "f"}\n')
    with pytest.raises(HardcseError, match="t1.jsonl:2"):
        read_task_folder(folder)


def test_builtin_collection_has_its_own_instructions_and_no_evaluation_text():
    check = Decontamination(DecontaminationConfig())
    tasks = builtin_collection(max_per_task=300, check=check)
    assert len(tasks) == 10 and sum(len(t.instances) > 100 for t in tasks) == 8
    assert len({t.query_instruction for t in tasks}) == len(tasks)
    # SICK train and STS-B train share most sentences with the test sets: only a few instances are left
    assert check.counts["sick-entailment"]["dropped"] > 1000 and check.counts["stsb-train"]["dropped"] > 1000
    for task in tasks:
        assert 0 < len(task.instances) <= 300
        for i in task.instances:
            assert i.positive != i.negative
            assert not any(check.index.match(text) for text in (i.query, i.positive, i.negative))


@pytest.fixture
def task_folder(tmp_path):
    from conftest import SENTENCES

    folder = tmp_path / "tasks"
    folder.mkdir()
    spec = {}
    for t in range(3):
        spec[f"task{t}"] = {
            "query": f"Represent query {t}:",
            "positive": "Represent doc:",
            "negative": "Represent doc:",
        }
        rows = [
            {"query": s, "pos": s.replace("A ", "One "), "neg": SENTENCES[(k + t + 1) % len(SENTENCES)]}
            for k, s in enumerate(SENTENCES)
        ]
        (folder / f"task{t}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (folder / "instructions.yaml").write_text(yaml.safe_dump(spec))
    return folder


def _tiny_overrides(tiny_encoder_dir, task_folder) -> list[str]:
    return [
        f"encoder={tiny_encoder_dir}",
        f"data={task_folder}",
        "training.batch_size=3",
        "queries_per_task=4",
        "anneal_iterations=2000",
        "training.eval_steps=2",
        "mask_threshold=0.0",
        "eval_tasks=[]",
    ]


@pytest.mark.slow  # a whole run on tiny models (10 s and more): make test, not test-fast
def test_plan_then_train_on_a_tiny_encoder(task_folder, tiny_encoder_dir, tmp_path, capsys):
    overrides = _tiny_overrides(tiny_encoder_dir, task_folder)
    config = load_config(DataCubeConfig, None, overrides)
    plan = build_plan(config)
    assert [len(b.rows) for b in plan.batches] == [3] * 6 + [2] * 3  # 8 instances a task: batches of 3, 3, 2
    assert [b.task for b in plan.batches] == plan.task_order * 3  # Algorithm 1: one batch per task per pass
    for b in plan.batches:
        assert b.difficulty == sorted(b.difficulty, reverse=True)
        assert b.mask == [int(p >= 0.0) for p in b.difficulty]
    saved = save_plan(plan, tmp_path / "plan")
    again = load_plan(saved)
    assert again.task_order == plan.task_order and [b.rows for b in again.batches] == [b.rows for b in plan.batches]
    assert (tmp_path / "plan" / "task_similarity.png").stat().st_size > 1000

    out = tmp_path / "run"
    assert main(["datacube", "plan", "--out", str(out), *overrides]) == 2  # no --config, no --resume
    config_file = tmp_path / "c.yaml"
    config_file.write_text("task_order: anneal\n")
    assert main(["datacube", "plan", "--config", str(config_file), "--out", str(out), *overrides]) == 0
    assert (out / "plan" / "plan.json").is_file() and not (out / "model").exists()
    assert main(["datacube", "train", "--out", str(out), "--resume"]) == 0  # trains from the folder's plan
    record = json.loads((out / "model" / "training.json").read_text())
    # 9 optimizer steps: the plan's batches (a default sampler would cut 24 rows into 8 batches of 3)
    assert record["steps"] == 9 and 0 <= record["underfit_share_after"] <= 1 and record["masked_rows"] >= 0
    assert "best STS-B dev" in capsys.readouterr().out
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    assert stages["plan"]["attempts"] == 1 and stages["model"]["attempts"] == 1

    bad = ["plan", "--config", str(config_file), "--out", str(tmp_path / "p2"), f"data={task_folder}"]
    assert main(["datacube", *bad, "task_order=greedy"]) == 2
    assert "override task_order=greedy: 'greedy' is not one of anneal, random" in capsys.readouterr().err
    assert not (tmp_path / "p2").exists()


@pytest.mark.slow  # a whole run on tiny models (10 s and more): make test, not test-fast
def test_killed_inside_training_resumes_without_redoing_the_plan(task_folder, tiny_encoder_dir, tmp_path):
    config_file = tmp_path / "c.yaml"
    config_file.write_text("task_order: anneal\n")
    out = tmp_path / "run"
    # 4 epochs of 9 plan batches, a checkpoint every 2 steps: killed once the first checkpoint is complete
    overrides = [*_tiny_overrides(tiny_encoder_dir, task_folder), "training.epochs=4"]
    args = ["datacube", "train", "--config", str(config_file), "--out", str(out), *overrides]
    checkpoints = out / "model.partial" / "checkpoints"
    run_until_killed(args, lambda: checkpoints.is_dir() and any(checkpoints.glob("checkpoint-*/trainer_state.json")))
    assert (out / "plan" / "plan.json").is_file() and not (out / "model").exists()
    assert main(["datacube", "train", "--out", str(out), "--resume"]) == 0
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    assert stages["plan"]["attempts"] == 1 and stages["model"]["attempts"] == 2
    record = json.loads((out / "model" / "training.json").read_text())
    assert record["steps"] == 36 and record["resumed_from"].startswith("checkpoint-")


@pytest.mark.exact_numbers
def test_two_runs_with_the_same_seed_are_identical(task_folder, tiny_encoder_dir, tmp_path):
    """Plan (annealing, sampling), data order, training and selection are all seeded from the config."""
    config_file = tmp_path / "c.yaml"
    config_file.write_text("task_order: anneal\n")
    runs = [tmp_path / "first", tmp_path / "second"]
    for out in runs:
        args = ["datacube", "train", "--config", str(config_file), "--out", str(out)]
        assert main([*args, *_tiny_overrides(tiny_encoder_dir, task_folder)]) == 0
    for name in ("plan/plan.json", "model/model.safetensors"):
        assert (runs[0] / name).read_bytes() == (runs[1] / name).read_bytes(), name
    histories = [json.loads((r / "model" / "training.json").read_text())["dev_history"] for r in runs]
    assert histories[0] == histories[1]
