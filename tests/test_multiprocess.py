"""Several processes on this machine's CPU (gloo): the sliced loss equals one process's, and `torchrun` runs the
commands end to end. The launched runs are small (tiny models) but real: DDP, gathering, rank-0 writes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from accelerate.data_loader import BatchSamplerShard
from sentence_transformers import SentenceTransformer

from hardcse.config import save_config
from hardcse.discriminator.nli import NLIDiscriminator
from hardcse.distributed import RankSlices, split_slices
from hardcse.encoder.build import load_encoder
from test_art_run import run_config  # noqa: F401  (a fixture)
from test_datacube import _tiny_overrides, task_folder  # noqa: F401  (a fixture)
from test_diffaug import nli_file  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow  # several processes, each importing torch: `make test` runs it, `make test-fast` does not

ROWS, DIM = 5, 4


def test_split_slices_and_what_each_rank_gets():
    assert split_slices([0, 1, 2, 3, 4], 2) == [[0, 1, 2], [3, 4]]
    assert split_slices([0, 1, 2, 3, 4, 5], 3) == [[0, 1], [2, 3], [4, 5]]
    assert split_slices([7], 2) == [[7], [7]]  # a one-row batch: each process gets the row
    inner = [[0, 1, 2], [3, 4, 5, 6], [7, 8]]  # batches of varying size, as a Data-CUBE plan has
    per_rank = [list(BatchSamplerShard(RankSlices(inner, 2), 2, r, even_batches=False)) for r in range(2)]
    assert per_rank[0] == [[0, 1], [3, 4], [7]] and per_rank[1] == [[2], [5, 6], [8]]
    assert len(BatchSamplerShard(RankSlices(inner, 2), 2, 0, even_batches=False)) == 3  # one step per batch


def _on_each_rank(rank: int, world: int, init_file: str, out_file: str) -> None:
    """One process of `test_sliced_loss_and_collectives`: its slice of the batch, the loss and the gradient averaged
    over the ranks as DDP does; then the collectives. Each rank writes what it saw."""
    from hardcse.distributed import all_ranks_true, mean_over_ranks, run_on_main
    from hardcse.encoder.contrastive import in_batch_contrastive_loss
    from hardcse.errors import HardcseError

    torch.distributed.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    encoder, x, mask = _problem()
    rows = split_slices(list(range(ROWS)), world)[rank]
    q, pos, neg = (encoder(x[i][rows]) for i in range(3))
    loss = in_batch_contrastive_loss(q, pos, neg, tau=0.1, mask=mask[rows])
    loss.backward()
    for p in encoder.parameters():
        torch.distributed.all_reduce(p.grad)
        p.grad /= world
    value = loss.detach().clone()
    torch.distributed.all_reduce(value)
    seen: dict = {
        "loss": float(value / world),
        "grad": [p.grad.tolist() for p in encoder.parameters()],
        "mean": mean_over_ranks({"step": 4, "x": float(rank), "y": None if rank == 0 else 2.0, "z": None, "f": True}),
        "agree": [all_ranks_true(True), all_ranks_true(rank == 0)],
        "value": run_on_main(lambda: {"from": "rank 0"}),
    }

    def fails() -> None:
        raise HardcseError("data.csv line 3: no anchor")

    try:
        run_on_main(fails)
    except HardcseError as e:
        seen["error"] = str(e)
    Path(f"{out_file}.{rank}").write_text(json.dumps(seen))
    torch.distributed.destroy_process_group()


def _problem() -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    torch.manual_seed(3)
    return torch.nn.Linear(DIM, DIM), torch.randn(3, ROWS, DIM), torch.tensor([1.0, 0.0, 1.0, 1.0, 1.0])


def test_sliced_loss_and_collectives(tmp_path, world=3):  # slices of 2, 2 and 1 rows
    """The sliced contrastive loss and its averaged gradient equal the one-process ones (uneven slices, a mask);
    numbers are averaged (a rank without a value left out), decisions agreed, rank 0's value and its user error
    reach every rank (no rank waits for ever)."""
    from hardcse.encoder.contrastive import in_batch_contrastive_loss

    out = str(tmp_path / "seen")
    torch.multiprocessing.spawn(_on_each_rank, args=(world, str(tmp_path / "init"), out), nprocs=world, join=True)
    encoder, x, mask = _problem()
    loss = in_batch_contrastive_loss(*(encoder(x[i]) for i in range(3)), tau=0.1, mask=mask)
    loss.backward()
    for rank in range(world):
        seen = json.loads(Path(f"{out}.{rank}").read_text())
        assert seen["loss"] == pytest.approx(loss.item(), rel=1e-5)
        for ours, reference in zip(seen["grad"], encoder.parameters(), strict=True):
            torch.testing.assert_close(torch.tensor(ours), reference.grad, rtol=1e-4, atol=1e-6)
        assert seen["mean"] == {"step": 4, "x": 1.0, "y": 2.0, "z": None, "f": True}
        assert seen["agree"] == [True, False]
        assert seen["value"] == {"from": "rank 0"}
        assert seen["error"] == "data.csv line 3: no anchor"


LAUNCHERS = {
    "torchrun": [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"],
    # accelerate's --cpu starts one process without MPI; --multi_gpu starts torchrun's, which then find no GPU
    "accelerate": [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes=2"],
}


def launch(args: list[str], cwd: Path, launcher: str = "torchrun") -> subprocess.CompletedProcess:
    """``torchrun --nproc_per_node 2 -m hardcse.cli ARGS`` (or accelerate's launcher) on this machine's CPU; once,
    no retry (the abort after a finished command that a retry once hid is fixed: distributed.end_launched_process)."""
    command = LAUNCHERS[launcher]
    env = os.environ | {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [*command, "-m", "hardcse.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-6000:]  # the whole tail: a child's own error comes before torchrun's
    return done


def test_two_process_simcse_takes_the_one_process_steps(tiny_bert_dir, triplet_file, tmp_path):
    """With dropout off, two SimCSE steps on 2 processes (DDP, sliced batches, gathered negatives; `accelerate
    launch`, the other runs use torchrun) end at the weights one process reaches; rank 0 writes the run folder
    and prints."""
    from safetensors.torch import load_file
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    from hardcse.cli import main

    no_dropout = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    transformer = Transformer(str(tiny_bert_dir), max_seq_length=64, config_kwargs=no_dropout)
    SentenceTransformer(modules=[transformer, Pooling(32, "mean")], device="cpu").save(str(tmp_path / "encoder"))
    config = Path(__file__).parents[1] / "configs" / "simcse-sup.yaml"
    args = ["simcse", "train", "--config", str(config), "--data", str(triplet_file), f"encoder={tmp_path / 'encoder'}"]
    args += ["training.max_steps=2", "training.batch_size=8", "training.learning_rate=1e-2", "eval_tasks=[STS-B-dev]"]
    assert main([*args, "--out", str(tmp_path / "one")]) == 0
    done = launch([*args, "--out", str(tmp_path / "two")], tmp_path, "accelerate")
    out = tmp_path / "two"
    record = json.loads((out / "model" / "training.json").read_text())
    assert record["world_size"] == 2 and record["steps"] == 2 and record["best_dev"] is not None
    assert json.loads((out / "manifest.json").read_text())["runs"][-1]["world_size"] == 2
    assert done.stdout.count("best STS-B dev") == 1  # rank 0 prints, the other rank is quiet
    assert not (out / "model" / "checkpoints").exists() and not (out / "model.partial").exists()
    start, one, two = (
        load_file(str(tmp_path / d / "model.safetensors")) for d in ("encoder", "one/model", "two/model")
    )
    assert max(float((one[k] - start[k]).abs().max()) for k in one) > 1e-3  # the steps moved the weights
    for key in one:
        torch.testing.assert_close(two[key], one[key], rtol=0, atol=1e-4)


def test_two_process_datacube_run_trains_each_plan_batch_once(task_folder, tiny_encoder_dir, tmp_path):  # noqa: F811
    out = tmp_path / "run"
    overrides = _tiny_overrides(tiny_encoder_dir, task_folder)
    config = Path(__file__).parents[1] / "configs" / "datacube-smoke.yaml"
    one_epoch = ["training.max_steps=-1", "training.epochs=1"]
    launch(["datacube", "train", "--config", str(config), "--out", str(out), *overrides, *one_epoch], tmp_path)
    record = json.loads((out / "model" / "training.json").read_text())
    plan = json.loads((out / "plan" / "plan.json").read_text())
    assert record["world_size"] == 2 and record["steps"] == len(plan["batches"])  # one step per plan batch
    assert SentenceTransformer(str(out / "model")).encode(["a query"]).shape == (1, 32)


ANCHORS = [f"the {s} {v} very {w}" for s in ("cat", "dog") for v in ("runs", "sleeps") for w in ("good", "bad")]


def _synthesize(rank: int, world: int, init_file: str, models: tuple[str, str, str], out: str) -> None:
    """One process of a sharded synthesis (world 1: the reference, without a process group)."""
    import hardcse.art.synthesis.triplets as synthesis
    from hardcse.art.config import FilterConfig, GeneratorConfig, TuneConfig
    from hardcse.art.reward.dual import Reward
    from hardcse.discriminator.nli import NLIDiscriminator
    from hardcse.encoder.build import load_encoder

    if world > 1:
        torch.distributed.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    lm, encoder, nli = models
    reward = Reward(NLIDiscriminator.load(nli), load_encoder(encoder), TuneConfig().reward)
    generation = GeneratorConfig(dtype="float32", max_new_tokens=6, batch_size=4, seed=5)
    sampled = []  # the batches this rank generated
    generate = synthesis.TextGenerator.generate

    def counted(self, prompts, *a, **kw):
        sampled.append(len(prompts))
        return generate(self, prompts, *a, **kw)

    synthesis.TextGenerator.generate = counted
    synthesis.synthesize(lm, ANCHORS, generation, reward, FilterConfig(0.3, 0.3), out)
    Path(out).mkdir(exist_ok=True)
    (Path(out) / f"sampled-{rank}.json").write_text(json.dumps(sampled))
    if world > 1:
        torch.distributed.destroy_process_group()


def test_sharded_synthesis_writes_the_one_process_files(tiny_lm_dir, tiny_encoder_dir, tiny_nli_dir, tmp_path):
    models = (str(tiny_lm_dir), str(tiny_encoder_dir), str(tiny_nli_dir))
    _synthesize(0, 1, "", models, str(tmp_path / "one"))
    torch.multiprocessing.spawn(
        _synthesize, args=(2, str(tmp_path / "init"), models, str(tmp_path / "two")), nprocs=2, join=True
    )
    for name in ("synthetic.jsonl", "triplets.csv"):  # 4 batches of 2 anchors: each rank generated two of them
        assert (tmp_path / "two" / name).read_bytes() == (tmp_path / "one" / name).read_bytes()
    assert json.loads((tmp_path / "one" / "sampled-0.json").read_text()) == [4, 4, 4, 4]  # 2 anchors x 2 kinds
    for rank in range(2):
        assert json.loads((tmp_path / "two" / f"sampled-{rank}.json").read_text()) == [4, 4]
    one, two = (json.loads((tmp_path / run / "synthesis.json").read_text()) for run in ("one", "two"))
    assert two["anchors"] == one["anchors"] == len(ANCHORS) and two["kept"] == one["kept"]


def test_two_process_art_run(run_config, tmp_path):  # noqa: F811
    """A whole ART round on 2 processes: PPO on each rank's rollouts with averaged gradients, sharded synthesis,
    DDP encoder training, rank-0 evaluation and report."""
    out = tmp_path / "art"
    launch(["art", "run", "--config", str(run_config), "--out", str(out), "rounds=1"], tmp_path)
    rl_log = [json.loads(line) for line in (out / "round_1" / "generator" / "rl_log.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rl_log] == [1, 2]  # one line a step (rank 0 logs the ranks' mean)
    assert (out / "round_1" / "synthesis.json").is_file() and (out / "report.md").is_file()
    assert json.loads((out / "round_1" / "training.json").read_text())["trained"]
    assert SentenceTransformer(str(out / "round_1" / "encoder")).encode(["x y z"]).shape == (1, 32)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["runs"][-1]["world_size"] == 2 and all("end" in stage for stage in manifest["stages"].values())


def test_two_process_diffaug_run_both_stages(tiny_encoder_dir, nli_file, corpus, tmp_path):  # noqa: F811
    """Stage 1 (prefix-tuning, its diagnostics on every rank, written by rank 0) and stage 2 with the auxiliary
    classifier (a loss-owned module whose gradients the ranks average)."""
    from test_diffaug import tiny_config

    config = tmp_path / "diffaug.yaml"
    save_config(tiny_config(tiny_encoder_dir, nli_file, corpus, **{"stage2.aux_weight": "0.1"}), config)
    out = tmp_path / "run"
    launch(["diffaug", "train", "--config", str(config), "--out", str(out)], tmp_path)
    stage1 = json.loads((out / "stage1" / "stage1.json").read_text())
    assert stage1["steps_run"] == 4 and len((out / "stage1" / "diagnostics.jsonl").read_text().splitlines()) == 3
    record = json.loads((out / "model" / "training.json").read_text())
    assert record["world_size"] == 2 and record["steps"] == 3
    assert load_encoder(str(out / "model")).encode(["a sentence"]).shape == (1, 32)


def test_two_process_nli_training(tiny_bert_dir, tmp_path):
    """The NLI discriminator (a CrossEncoder and its trainer) on 2 processes: 64 pairs, batches of 16."""
    dev = tmp_path / "dev.tsv"
    dev.write_text(
        "premise\thypothesis\tlabel\nA man sleeps.\tA man rests.\tentailment\nA cat.\tA dog.\tcontradiction\n"
    )
    config = Path(__file__).parents[1] / "configs" / "nli-discriminator.yaml"
    overrides = [f"base_model={tiny_bert_dir}", "max_examples=64", "training.batch_size=16", "training.max_steps=-1"]
    overrides += ["training.epochs=1", "training.eval_steps=2", f"dev_files=[{dev}]"]
    out = tmp_path / "nli"
    launch(["nli", "train", "--config", str(config), "--out", str(out), "--no-eval", *overrides], tmp_path)
    record = json.loads((out / "model" / "training.json").read_text())
    assert record["world_size"] == 2 and record["steps"] == 4  # 64 pairs in batches of 16, one step a batch
    assert NLIDiscriminator.load(str(out)).predict_proba(["A man sleeps."], ["A man rests."]).shape == (1, 3)


def test_rl_refuses_a_batch_the_processes_cannot_share(monkeypatch):
    import hardcse.art.rl.tuning as tuning
    from hardcse.art.rl.config import GRPOConfig, RLConfig
    from hardcse.errors import HardcseError

    monkeypatch.setattr(tuning, "world_size", lambda: 3)
    tuning.check_rank_shares(RLConfig(batch_size=6, minibatch_size=2))  # 2 rollouts each
    with pytest.raises(HardcseError, match=r"rl.batch_size: 4 \(4 rollouts\) cannot be shared equally by 3"):
        tuning.check_rank_shares(RLConfig(batch_size=4, minibatch_size=2))
    with pytest.raises(HardcseError, match=r"\(2 groups of 4\).*groups divide by 3"):
        tuning.check_rank_shares(
            RLConfig(algorithm="grpo", batch_size=8, grpo=GRPOConfig(group_size=4), minibatch_size=4)
        )


def test_a_launched_process_exits_with_its_status_and_output_flushed(tmp_path):
    """end_launched_process: no interpreter shutdown (gloo's threads could abort it), but the status is the
    command's and nothing buffered in stdout, stderr or a log file is lost."""
    script = (
        "import logging, sys\n"
        "from hardcse.distributed import end_launched_process\n"
        f"logging.basicConfig(filename={str(tmp_path / 'log.txt')!r}, level=logging.INFO)\n"
        "logging.getLogger('x').info('logged')\n"
        "print('printed', end='')\n"
        "print('warned', end='', file=sys.stderr)\n"
        "end_launched_process(3)\n"
        "print('never')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (3, "printed", "warned")
    assert "logged" in (tmp_path / "log.txt").read_text()
