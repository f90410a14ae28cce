"""``hardcse compare``: group intervals by hand, identical groups give exactly zero, seeds pair by seed, runs that
differ only by seed group, encoder evaluations are cached, and mistakes are one-line errors."""

import gzip
import json

import numpy as np
import pytest
import yaml

from hardcse.cli import main as hardcse
from hardcse.data.sts import ALL_TASKS, DEV_TASK, SEVEN_TASKS, STSPairs, load_sts_task
from hardcse.errors import HardcseError
from hardcse.evaluation import paired, results
from hardcse.evaluation.compare import compare_groups, verdict
from hardcse.evaluation.paired import STSBootstrap, group_difference
from hardcse.evaluation.results import Result, group_by_seed, load_result
from hardcse.stats import Interval

GOLD = {"T1": [1.0, 2.0, 3.0, 4.0]}


def record(cos: list[float]) -> dict:
    return {"cosines": {"T1": cos}}


def test_group_difference_by_hand():
    """T1 gold 1..4. A1 = gold order (rho 1), A2 = two neighbours swapped (rho = 1 - 6*2/60 = 0.8), B = reversed
    (rho -1). Group A's mean 90, B -100: estimate -190. Every resample with two distinct pairs gives A1 = 100
    and B = -100 (ties fall alike), so with A1 alone the interval is exactly [-200, -200]."""
    boot = STSBootstrap(["T1"], resamples=300, seed=1, gold=GOLD)
    a1, a2, b = (boot.draws(record(c), n) for c, n in [([1, 2, 3, 4], "a1"), ([1, 2, 4, 3], "a2"), ([4, 3, 2, 1], "b")])
    assert a2.estimate["T1"] == pytest.approx(80.0)
    both = group_difference([a1, a2], [b], boot, [1, 2], [1])
    assert both["T1"].estimate == pytest.approx(-190.0)
    assert both["average"].estimate == pytest.approx(-190.0)  # one task: the average is that task
    alone = group_difference([a1], [b], boot)
    assert (alone["T1"].low, alone["T1"].high) == (-200.0, -200.0)
    assert alone["T1"].n == 4


def test_identical_groups_give_exactly_zero_and_seeds_pair_by_seed():
    boot = STSBootstrap(["T1"], resamples=200, seed=0, gold=GOLD)
    m = {s: boot.draws(record(c), str(s)) for s, c in [(1, [1, 2, 3, 4]), (2, [1, 2, 4, 3]), (3, [2, 1, 4, 3])]}
    # the same runs listed in another order: paired by seed, every resample draws the same seeds on both sides
    same = group_difference([m[1], m[2], m[3]], [m[3], m[1], m[2]], boot, [1, 2, 3], [3, 1, 2])
    assert (same["T1"].estimate, same["T1"].low, same["T1"].high) == (0.0, 0.0, 0.0)
    # without seeds the members are drawn independently: the seed spread shows up in the interval
    unpaired = group_difference([m[1], m[2], m[3]], [m[3], m[1], m[2]], boot)
    assert unpaired["T1"].estimate == pytest.approx(0.0)
    assert unpaired["T1"].low < 0 < unpaired["T1"].high


def test_clustered_members_are_drawn_as_whole_clusters_paired_by_cluster():
    """Three clusters x two seeds, listed in another order on each side: every resample takes whole clusters (both
    members, in seed order), and B's member in each place has A's cluster and seed."""
    clusters_a, seeds_a = [1, 1, 2, 2, 3, 3], [1, 2, 1, 2, 1, 2]
    order = [5, 2, 0, 3, 1, 4]
    clusters_b, seeds_b = [clusters_a[i] for i in order], [seeds_a[i] for i in order]
    pick_a, pick_b, g_a, g_b = paired._cluster_choice(clusters_a, clusters_b, seeds_a, seeds_b, resamples=50, seed=3)
    assert (g_a, g_b) == (3, 3)
    assert pick_a.shape == pick_b.shape == (50, 6)
    drawn = np.array(clusters_a)[pick_a].reshape(50, 3, 2)
    assert (drawn[:, :, 0] == drawn[:, :, 1]).all()
    assert (np.array(seeds_a)[pick_a].reshape(50, 3, 2) == [1, 2]).all()
    assert (np.array(clusters_a)[pick_a] == np.array(clusters_b)[pick_b]).all()
    assert (np.array(seeds_a)[pick_a] == np.array(seeds_b)[pick_b]).all()
    assert len(set(drawn[:, :, 0].ravel())) == 3


def test_the_interval_counts_clusters_not_members():
    """T1 gold 1..4: a model in gold order scores 100 on every resample, reversed -100. A: one gold-order model.
    B: cluster 1 three gold-order members, cluster 2 three reversed: mean 0, B - A = -100. Drawn by cluster,
    both clusters are gold order with probability 1/4, and the interval is widened for two clusters (t with one
    degree of freedom); drawn as six independent members, all six gold (-0) has probability 1/64 < 2.5%, so the
    97.5th percentile is the next value, one reversed of six: -200/6."""
    boot = STSBootstrap(["T1"], resamples=2000, seed=5, gold=GOLD)
    up, down = boot.draws(record([1, 2, 3, 4]), "up"), boot.draws(record([4, 3, 2, 1]), "down")
    b, seeds, clusters = [up, up, up, down, down, down], [1, 2, 3, 1, 2, 3], [1, 1, 1, 2, 2, 2]
    nested = group_difference([up], b, boot, [1], seeds, [None], clusters)["T1"]
    assert nested.estimate == pytest.approx(-100.0)
    # by cluster the draws are 0, -100, -200 with probabilities 1/4, 1/2, 1/4: sd 100/sqrt(2); two clusters widen
    # it by t_1 at 97.5% (12.706) x sqrt(2/1), about 1271 either side
    half = 12.7062 * np.sqrt(2) * 100 / np.sqrt(2)
    assert nested.high - nested.estimate == pytest.approx(half, rel=0.05)
    assert nested.estimate - nested.low == pytest.approx(half, rel=0.05)
    flat = group_difference([up], b, boot, [1], seeds)["T1"]
    assert flat.high == pytest.approx(-200 / 6)
    # compare_groups passes each Result's cluster through: its interval is group_difference's with clusters
    rng = np.random.default_rng(0)
    evals = [fake_eval(rng, noise) for noise in (0.5, 0.5, 2.0, 2.0)]
    members = [Result(f"b{i}", e, {"seed": 1 + i % 2}, cluster=i // 2) for i, e in enumerate(evals)]
    groups = {"A": [Result("a", evals[0], {"seed": 1})], "B": members}
    via_groups = compare_groups(groups, [("A", "B")], resamples=100, seed=5).differences[("A", "B")]["avg7"]
    boot = STSBootstrap([*SEVEN_TASKS, DEV_TASK], resamples=100, seed=5)
    direct = group_difference(
        [boot.draws(evals[0], "a")], [boot.draws(e, "b") for e in evals], boot, [1], [1, 2, 1, 2], [None], [0, 0, 1, 1]
    )["avg7"]
    assert (via_groups.low, via_groups.high) == (direct.low, direct.high)


def test_a_clustered_interval_widens_the_spread_between_clusters_alone():
    """Two clusters on B that hold the same model: nothing differs between clusters, so the interval is the test
    pairs' alone, estimate +- 1.96 x their sd, not widened by t_1 x sqrt(2) = 18 for two clusters. With a second
    model in one cluster, the clusters' part is added: half^2 = t_1^2 x 2 x var(between) + 1.96^2 x var(pairs)."""
    gold = {"T1": [float(v) for v in range(1, 21)]}
    boot = STSBootstrap(["T1"], resamples=500, seed=2, gold=gold)
    rng = np.random.default_rng(1)
    m0, m1, m2 = (boot.draws(record(list(np.arange(20) + rng.normal(0, s, 20))), f"m{s}") for s in (3, 5, 8))
    same = group_difference([m0], [m1, m1], boot, [1], [1, 2], [None], [1, 2])["T1"]
    sd_pairs = float(np.nanstd(m1.draws["T1"] - m0.draws["T1"]))
    assert same.estimate == pytest.approx(m1.estimate["T1"] - m0.estimate["T1"])
    assert same.high - same.estimate == pytest.approx(1.959964 * sd_pairs)
    # it keeps its standard error (the pairs' sd alone here) and no degrees of freedom (nothing between clusters)
    assert (same.se, same.df) == (pytest.approx(sd_pairs), None)
    mixed = group_difference([m0], [m1, m2], boot, [1], [1, 2], [None], [1, 2])["T1"]
    # the two clusters drawn with replacement: (m1, m1), (m1, m2), (m2, m1), (m2, m2), each 1/4 on average; the
    # bootstrap's own draws give var(between) near (m2 - m1)^2 / 8
    gap = m2.estimate["T1"] - m1.estimate["T1"]
    pairs = np.nanvar((m1.draws["T1"] + m2.draws["T1"]) / 2 - m0.draws["T1"])
    half = np.sqrt(12.7062**2 * 2 * gap**2 / 8 + 1.959964**2 * pairs)
    assert mixed.high - mixed.estimate == pytest.approx(half, rel=0.1)
    # its SE and Welch-Satterthwaite degrees of freedom, from the half-width's two parts: t_1^2 V_runs + z^2 V_pairs
    runs = ((mixed.high - mixed.estimate) ** 2 - 1.959964**2 * pairs) / 12.7062**2
    assert mixed.se == pytest.approx(np.sqrt(runs + pairs), rel=1e-4)
    assert mixed.df == pytest.approx((runs + pairs) ** 2 / runs**2, rel=1e-3)


def test_the_clustered_spread_by_hand():
    """G = 3 clusters; between-cluster draws of variance 1, test-pair draws of variance 4: V_runs = 3/2 x 1 = 1.5,
    V_pairs = 4; half-width sqrt(t_2^2 x 1.5 + z^2 x 4) = sqrt(27.769 + 15.366) = 6.567729; SE
    sqrt(5.5) = 2.345208; Welch-Satterthwaite df (3 - 1) x 5.5^2 / 1.5^2 = 26.888889."""
    half, se, df = paired._clustered_spread(np.array([1.0, -1.0, 1.0, -1.0]), np.array([2.0, -2.0, 2.0, -2.0]), 3)
    assert half == pytest.approx(6.567729, abs=1e-5)
    assert (se, df) == (pytest.approx(2.345208, abs=1e-6), pytest.approx(26.888889))
    # nothing between clusters: no degrees of freedom for t (the pairs' part is normal)
    assert paired._clustered_spread(np.zeros(4), np.array([2.0, -2.0, 2.0, -2.0]), 3)[2] is None


def test_clusters_of_unequal_size_are_an_error():
    boot = STSBootstrap(["T1"], resamples=10, seed=0, gold=GOLD)
    m = boot.draws(record([1, 2, 3, 4]), "m")
    with pytest.raises(HardcseError, match="every cluster of a group needs as many members as the others"):
        group_difference([m], [m, m, m], boot, [1], [1, 2, 1], [None], [7, 7, 8])


def test_verdict_claims_only_outside_zero():
    assert verdict(Interval(0.4, -0.1, 0.9, 10)) == "no detectable difference (+0.40 [-0.10, +0.90])"
    assert verdict(Interval(0.4, 0.1, 0.9, 10)) == "higher by 0.40 (+0.40 [+0.10, +0.90])"
    assert verdict(Interval(-0.4, -0.9, -0.1, 10)).startswith("lower by 0.40")


def fake_eval(rng: np.random.Generator, noise: float) -> dict:
    """An eval.json record over the real STS suite: cosines = gold + noise, scores from them."""
    from scipy.stats import spearmanr

    cosines, scores = {}, {}
    for task in ALL_TASKS:
        gold = load_sts_task(task).scores
        cosines[task] = (gold + rng.normal(0, noise, len(gold))).round(6).tolist()
        scores[task] = float(spearmanr(cosines[task], gold).statistic * 100)
    avg7 = float(np.mean([scores[t] for t in ALL_TASKS if t != "STS-B-dev"]))
    return {"model": "fake", "scores": scores, "avg7": avg7, "cosines": cosines}


def write_run(folder, record, seed, lr=1e-5, gz=False, **top):
    folder.mkdir(parents=True)
    config = {"encoder": "x", "training": {"seed": seed, "learning_rate": lr}, **top}
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    if gz:
        (folder / "eval.json.gz").write_bytes(gzip.compress(json.dumps(record).encode()))
    else:
        (folder / "eval.json").write_text(json.dumps(record))


def test_runs_group_by_seed_and_art_runs_read_their_last_round(tmp_path):
    for seed in (1, 2):
        write_run(tmp_path / "a" / f"seed-{seed}", {"scores": {"STS12": seed}}, seed)
        # where a run took its finished stage 1 from is not a setting: still one group
        stage1 = f"runs/semi/seed-{seed}/stage1"
        write_run(
            tmp_path / "b" / f"seed-{seed}", {"scores": {"STS12": seed}}, seed, lr=2e-5, gz=True, stage1_from=stage1
        )
    art = tmp_path / "art"
    for r, score in [(0, 1.0), (1, 2.0)]:
        (art / f"round_{r}").mkdir(parents=True)
        (art / f"round_{r}" / "eval.json").write_text(json.dumps({"scores": {"STS12": score}}))
    found = [load_result(str(p)) for p in sorted(tmp_path.glob("[ab]/seed-*")) + [art]]
    groups = group_by_seed(found)
    assert list(groups) == [str(tmp_path / "a"), str(tmp_path / "b"), str(art)]
    assert [m.seed for m in groups[str(tmp_path / "b")]] == [1, 2]
    assert groups[str(art)][0].record["scores"]["STS12"] == 2.0


def test_compare_cli_writes_tables_plot_and_json(tmp_path, capsys):
    rng = np.random.default_rng(0)
    for seed in (1, 2, 3):
        write_run(tmp_path / "base" / f"seed-{seed}", fake_eval(rng, 0.9), seed)
        write_run(tmp_path / "better" / f"seed-{seed}", fake_eval(rng, 0.6), seed, lr=2e-5)
    sources = [str(p) for p in sorted(tmp_path.glob("*/seed-*"))]
    out = tmp_path / "cmp"
    assert hardcse(["compare", *sources, "--resamples", "200", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| model | n | seeds |" in text and "± " in text
    assert f"{tmp_path / 'better'} against {tmp_path / 'base'}, avg7: higher by" in text
    data = json.loads((out / "compare.json").read_text())
    diff = data["differences"][0]["b_minus_a"]["avg7"]
    assert diff["low"] > 0 and diff["n"] == sum(len(load_sts_task(t).scores) for t in ALL_TASKS[:7])
    assert data["groups"][str(tmp_path / "base")]["seeds"] == [1, 2, 3]
    assert (out / "compare.png").stat().st_size > 10_000 and (out / "compare.md").is_file()
    # the same runs again, each its own row, the better ones as baseline: every difference is negative
    assert hardcse(["compare", *sources, "--no-grouping", "--baseline", sources[-1], "--resamples", "100"]) == 0
    assert "lower by" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message",
    [
        (["nowhere"], "model 'nowhere': no such folder"),
        (["RUN", "--baseline", "other"], "--baseline other: not among the sources or groups"),
        (["RUN", "--resamples", "10"], "--resamples 10: use at least 100"),
    ],
)
def test_compare_mistakes_are_one_line_errors(tmp_path, capsys, args, message):
    write_run(tmp_path / "run", {"scores": {}}, 1)
    args = [str(tmp_path / "run") if a == "RUN" else a for a in args]
    assert hardcse(["compare", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1


def test_an_unfinished_run_and_missing_cosines_name_the_fix(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.yaml").write_text("encoder: x\n")
    with pytest.raises(HardcseError, match="has no eval.json yet; finish it with --resume"):
        load_result(str(tmp_path / "run"))
    old = Result("old", {"scores": {"STS12": 1.0}})
    with pytest.raises(HardcseError, match="no STS task has per-pair cosines in every compared eval.json"):
        compare_groups({"old": [old], "new": [old]}, [("old", "new")])


def test_encoders_are_evaluated_once_and_cached(tiny_encoder_dir, tmp_path, monkeypatch):
    calls = []

    def fake_eval_of(path, source, tasks, pooling, device, engine):
        calls.append(source)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"model": source, "scores": {}}))
        return {"model": source, "scores": {}}

    monkeypatch.setattr("hardcse.evaluation.sts.write_sts_eval", fake_eval_of)
    first = load_result(str(tiny_encoder_dir), cache=tmp_path / "cache")
    again = load_result(str(tiny_encoder_dir), cache=tmp_path / "cache")
    assert calls == [str(tiny_encoder_dir)] and first.config is None
    assert again.record == first.record | {"read_from": again.record["read_from"]}
    (tiny_encoder_dir / "extra.txt").write_text("changed files, another model")
    load_result(str(tiny_encoder_dir), cache=tmp_path / "cache")
    assert len(calls) == 2
    assert results.model_fingerprint(tiny_encoder_dir) != ""


@pytest.fixture(autouse=True)
def tiny_task(monkeypatch):
    """T1 stands for a task in the by-hand tests; the others use the real STS files."""
    real = paired.load_sts_task

    def load(task):
        if task in GOLD:
            n = len(GOLD[task])
            return STSPairs(task, [f"a{i}" for i in range(n)], [f"b{i}" for i in range(n)], np.array(GOLD[task]))
        return real(task)

    monkeypatch.setattr(paired, "load_sts_task", load)


def test_a_written_comparison_keeps_the_machine_it_is_given(tmp_path):
    """write_comparison's JSON: its command always, the machine where the caller names one (a benchmark's assays)."""
    from hardcse.evaluation.compare import Comparison, write_comparison

    empty = Comparison({}, [], {}, 100, 0, [])
    write_comparison(empty, tmp_path / "plain", "T", "hardcse compare a b")
    assert "machine" not in json.loads((tmp_path / "plain.json").read_text())
    machine = [{"cpu": "AMD EPYC", "cpu_flags": ["avx2", "avx512_bf16"]}]
    write_comparison(empty, tmp_path / "named", "T", "python benchmarks/x.py", machine=machine)
    record = json.loads((tmp_path / "named.json").read_text())
    assert record["machine"] == machine and record["command"] == "python benchmarks/x.py"
