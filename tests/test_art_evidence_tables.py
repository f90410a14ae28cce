"""benchmarks/lib/art_evidence_tables.py's and art_answers.py's helpers, by hand: which comparisons the evidence page
makes, the answer sentences (verdict and the detectable difference), and the assay groups clustered by generation
seed."""

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))

from art_forest import corrected, seed_tests  # noqa: E402
from hardcse.data.triplets import write_triplets  # noqa: E402
from hardcse.evaluation.compare import Comparison, compare_groups  # noqa: E402
from hardcse.evaluation.paired import STSBootstrap  # noqa: E402
from hardcse.evaluation.results import Result  # noqa: E402
from hardcse.stats import Interval  # noqa: E402
from lib.art_answers import answer_lines  # noqa: E402
from lib.art_evidence_tables import assay_groups, evidence_comparison, evidence_pairs  # noqa: E402
from lib.provenance import REPOSITORY, code_line, refuse_mixed_machines, refuse_uncommitted_code  # noqa: E402
from lib.record_assay import assay_provenance, assay_record, refuse_mixed_assays, triplets_digest  # noqa: E402


def test_evidence_pairs_raw_llm_first_then_mined_then_the_faithful_setting():
    names = [
        "cpu-full", "cpu-full-grpo", "baseline-raw-llm", "baseline-mined-negatives", "art-two-negatives",
        "ablation-one-round",
    ]  # fmt: skip
    raw, mined = "baseline-raw-llm", "baseline-mined-negatives"
    assert evidence_pairs(names) == [
        (raw, "cpu-full"), (raw, "cpu-full-grpo"), (raw, mined), (raw, "art-two-negatives"),
        (raw, "ablation-one-round"),
        (mined, "cpu-full"), (mined, "cpu-full-grpo"), (mined, "art-two-negatives"),
        ("cpu-full", "cpu-full-grpo"), ("cpu-full", "art-two-negatives"), ("cpu-full", "ablation-one-round"),
    ]  # fmt: skip
    assert evidence_pairs(["cpu-full"]) == []


def members(name: str, generations: list[int], per: int) -> list[Result]:
    return [Result(name, {}, {"seed": g * 100 + t}, g) for g in generations for t in range(1, per + 1)]


def test_an_answer_is_its_declared_comparison_then_what_is_secondary():
    """avg7 +0.20 [+0.10, +0.30]: higher; 80% power at (1.96 + 0.8416) x 0.20 / (2 x 1.96) = 0.143. STS-B dev +0.10
    [-0.10, +0.30]: no detectable difference; (1.96 + 0.8416) x 0.40 / 3.92 = 0.286. Post hoc, the test sets whose
    interval excludes zero, largest first (STS13's does not). The final encoders: avg7 only."""
    raw, ppo = "baseline-raw-llm", "cpu-full"
    diff = {
        "STS12": Interval(-0.22, -0.40, -0.05, 3108), "STS13": Interval(0.1, -0.1, 0.3, 1500),
        "SICK-R": Interval(0.68, 0.38, 0.97, 4927), "STS-B-dev": Interval(0.1, -0.1, 0.3, 1379),
        "avg7": Interval(0.2, 0.1, 0.3, 9000),
    }  # fmt: skip
    groups = {raw: members(raw, [42, 1], 3), ppo: members(ppo, [42, 1], 3)}
    columns = ["STS12", "STS13", "SICK-R", "avg7", "STS-B-dev"]
    assay = Comparison(groups, [(raw, ppo)], {(raw, ppo): diff}, 1000, 0, columns)
    final_groups = {raw: members(raw, [42, 1], 1), ppo: members(ppo, [42, 1], 1)}
    final = Comparison(final_groups, [(raw, ppo)], {(raw, ppo): {"avg7": Interval(-0.3, -0.5, -0.1, 9000)}}, 1000, 0)
    lines = answer_lines(assay, final)
    assert lines[:2] == ["## Answers", ""]
    assert len(lines) == 6  # the preface, then one question answered: the others have no groups
    assert lines[4] == (
        "- **Does RL-tuning the generator write better training data than the raw generator?** ART (PPO, paper's "
        "reward) (`cpu-full`) - raw generator (`baseline-raw-llm`), its data assayed (2 generation seeds x 3 "
        "training seeds a side): interim, 2 of the 5 declared generation seeds: avg7 higher by 0.20 (+0.20 [+0.10, "
        "+0.30]) (80% power for a true difference of 0.14). Secondary: the same data: STS-B dev no detectable "
        "difference (+0.10 [-0.10, +0.30]) (80% power for a true difference of 0.29); per test set, post hoc (not an "
        "answer): SICK-R +0.68 [+0.38, +0.97], STS12 -0.22 [-0.40, -0.05]; its own final encoders: avg7 "
        "lower by 0.30 (-0.30 [-0.50, -0.10]) (80% power for a true difference of 0.29)."
    )


@pytest.mark.parametrize(
    ("other", "generations", "other_generations", "interim"),
    [
        ("baseline-raw-llm", [42, 1, 2, 3], None, "interim, 4 of the 5 declared generation seeds: "),
        ("baseline-raw-llm", [42, 1, 2, 3, 4], [42, 1, 2, 3], "interim, 4 of the 5 declared generation seeds: "),
        ("baseline-raw-llm", [42, 1, 2, 3, 4], None, ""),
        ("ablation-no-filter", [5, 6, 7], [5, 6], "interim, 2 of the 3 declared generation seeds: "),
        # three seeds, but not the declared 5, 6, 7: seed 7's runs are still missing (seed 2 is not declared)
        ("ablation-no-filter", [2, 5, 6], [2, 5, 6], "interim, 2 of the 3 declared generation seeds: "),
        ("ablation-no-filter", [5, 6, 7], [5, 6, 7], ""),
    ],
)
def test_an_answer_is_interim_until_its_declared_generation_seeds_are_in(
    other, generations, other_generations, interim
):
    """Issue 42 declared generation seeds 42, 1, 2, 3, 4 for a main setting's comparison, 5, 6, 7 for an ablation's:
    an answer on the seeds both sides ran says how many of those it has, until it has every one."""
    a, b = ("baseline-raw-llm", "cpu-full") if other == "baseline-raw-llm" else ("cpu-full", other)
    groups = {a: members(a, generations, 3), b: members(b, other_generations or generations, 3)}
    assay = Comparison(groups, [(a, b)], {(a, b): {"avg7": Interval(0.2, 0.1, 0.3, 9000)}}, 1000, 0)
    line = next(x for x in answer_lines(assay, Comparison({}, [], {}, 1000, 0)) if x.startswith("- **"))
    assert f"x 3 training seeds a side): {interim}avg7 higher by 0.20 (+0.20 [+0.10, +0.30])" in line


def test_the_ablation_page_says_what_its_answers_are_and_the_main_page_says_its_own():
    """The ablation page (the faithful setting and ablations only) declares each ablation's comparison; the main page
    keeps its questions' text (issue 41's dev choices, the baselines' one round)."""
    interval = {"avg7": Interval(0.2, 0.1, 0.3, 9000)}
    none = Comparison({}, [], {}, 1000, 0)
    for other, starts, absent in [
        ("ablation-no-filter", "Each ablation's answer is one comparison", "issue 41"),
        ("baseline-raw-llm", "Each question's answer is one comparison", "Each ablation's"),
    ]:
        a, b = ("cpu-full", other) if "ablation" in other else (other, "cpu-full")
        groups = {a: members(a, [5, 6, 7], 3), b: members(b, [5, 6, 7], 3)}
        preface = answer_lines(Comparison(groups, [(a, b)], {(a, b): interval}, 1000, 0), none)[2]
        assert preface.startswith(starts) and absent not in preface
        assert ("not corrected for the three ablations" in preface) == ("ablation" in other)


@pytest.mark.parametrize(
    ("interval", "power"),
    [
        # (1.96 + 0.8416) x 0.04 / 1.96 = 0.057 < 0.23: the declared figure, the observed beside it
        (
            Interval(-0.03, -0.07, 0.01, 9000),
            "0.23, as declared before the runs; their own spread says 0.06, which 3 runs cannot vouch for",
        ),
        # (1.96 + 0.8416) x 1.26 / 1.96 = 1.80: the observed figure alone
        (Interval(-0.27, -1.53, 0.99, 9000), "1.80"),
    ],
)
def test_an_ablation_answer_says_its_declared_power_where_its_few_runs_spread_less(interval, power):
    """With 3 runs a side the observed spread can come out far below the runs' true one: an ablation's answer never
    claims a smaller detectable difference than the one declared before its runs (DECLARED_ABLATION_POWER)."""
    a, b = "cpu-full", "ablation-one-round"
    groups = {a: members(a, [5, 6, 7], 3), b: members(b, [5, 6, 7], 3)}
    assay = Comparison(groups, [(a, b)], {(a, b): {"avg7": interval}}, 1000, 0)
    line = next(x for x in answer_lines(assay, Comparison({}, [], {}, 1000, 0)) if x.startswith("- **"))
    assert f"]) (80% power for a true difference of {power})." in line


def test_with_one_run_a_side_an_answer_is_interim_without_a_verdict():
    raw, ppo = "baseline-raw-llm", "cpu-full"
    diff = {"STS-B-dev": Interval(0.1, 0.05, 0.15, 1379), "avg7": Interval(0.2, 0.1, 0.3, 9000)}
    groups = {raw: members(raw, [42], 3), ppo: members(ppo, [42, 1], 3)}
    assay = Comparison(groups, [(raw, ppo)], {(raw, ppo): diff}, 1000, 0)
    line = answer_lines(assay, Comparison({}, [], {}, 1000, 0))[4]
    assert "(1 generation seed x 3 training seeds a side): interim, one generation run a side: avg7 +0.20 " in line
    assert "higher" not in line and "power" not in line


def write_eval(path: Path, scores: list[float]) -> None:
    """An eval.json.gz whose STS12 cosines are ``scores`` against gold 1..n (Spearman 100 when they rise)."""
    gold = list(range(1, len(scores) + 1))
    record = {"scores": {"STS12": 0.0}, "cosines": {"STS12": {"gold": gold, "cosine": scores}}}
    path.write_bytes(gzip.compress(json.dumps(record).encode()))


def test_pairs_are_compared_on_the_generation_seeds_both_sides_ran():
    """An ablation with seed 42 alone against cpu-full with 42 and 1: paired on 42 only (the same interval as a
    comparison of the two seed-42 runs alone), not against cpu-full's mean over both seeds."""
    n = len(STSBootstrap(["STS12"], 2, 0).gold["STS12"])
    rng = np.random.default_rng(0)

    def result(name: str, generation: int) -> Result:
        record = {"scores": {"STS12": 0.0}, "cosines": {"STS12": rng.random(n).tolist()}}
        return Result(f"{name}-{generation}", record, {"seed": generation}, generation)

    cpu_full, ablation = [result("cpu-full", 42), result("cpu-full", 1)], [result("ablation-one-round", 42)]
    c = evidence_comparison({"cpu-full": cpu_full, "ablation-one-round": ablation})
    assert c.pairs == [("cpu-full", "ablation-one-round")]
    assert [len(m) for m in c.groups.values()] == [2, 1]  # the tables keep every run
    alone = compare_groups({"cpu-full": cpu_full[:1], "ablation-one-round": ablation}, c.pairs)
    assert c.differences[c.pairs[0]]["STS12"] == alone.differences[c.pairs[0]]["STS12"]
    both = compare_groups({"cpu-full": cpu_full, "ablation-one-round": ablation}, c.pairs)
    assert c.differences[c.pairs[0]]["STS12"].estimate != both.differences[c.pairs[0]]["STS12"].estimate


def write_record(folder: Path, rows: list[tuple[str, str, str]]) -> None:
    (folder / "round_1").mkdir(parents=True)
    (folder / "config.yaml").write_text("triplets_per_round: 2\n")
    write_triplets(folder / "round_1" / "triplets.csv", rows)


def test_assay_groups_cluster_each_run_s_members_by_its_generation_seed(tmp_path):
    rows = [("a", "b", "c"), ("d", "e", "f"), ("g", "h", "i")]
    folders = [tmp_path / "records" / "cpu-full-seed-42", tmp_path / "records" / "cpu-full-seed-1"]
    for folder in folders:
        write_record(folder, rows)
        meta = {"rows": 2, "steps": 9, "data_sha256": triplets_digest(rows[:2]), "assays": []}
        (tmp_path / f"{folder.name}.json").write_text(json.dumps(meta))
        for t in (1, 2):
            record = {"scores": {"STS12": t}}
            (tmp_path / f"{folder.name}.t{t}.eval.json.gz").write_bytes(gzip.compress(json.dumps(record).encode()))
    groups = assay_groups(folders, tmp_path, [1, 2])
    assert list(groups) == ["cpu-full"]
    assert [(m.label, m.seed, m.cluster) for m in groups["cpu-full"]] == [
        ("cpu-full-seed-42.t1", 4201, 42), ("cpu-full-seed-42.t2", 4202, 42),
        ("cpu-full-seed-1.t1", 101, 1), ("cpu-full-seed-1.t2", 102, 1),
    ]  # fmt: skip
    with pytest.raises(SystemExit, match=r"cpu-full-seed-42.t3.eval.json.gz is missing"):
        assay_groups(folders, tmp_path, [3])
    # the record's training data changed after its assay: its evaluations are refused, not paired with the new data
    write_triplets(folders[1] / "round_1" / "triplets.csv", [("a", "b", "c"), ("x", "e", "f")])
    with pytest.raises(SystemExit, match=r"cpu-full-seed-1.json assayed other data than the record cpu-full-seed-1"):
        assay_groups(folders, tmp_path, [1, 2])


def test_an_assay_of_other_data_under_a_kept_name_is_refused(tmp_path):
    """assay_record keys what it keeps by the assayed triplets' digest (rows and steps beside it): a record run
    again with other data is refused before anything is trained."""
    data = tmp_path / "data.csv"
    write_triplets(data, [("a", "b", "c"), ("d", "e", "f")])
    meta = {"rows": 2, "steps": 9, "data_sha256": triplets_digest([("a", "b", "c"), ("d", "e", "x")]), "assays": []}
    (tmp_path / "run.json").write_text(json.dumps(meta))
    with pytest.raises(SystemExit, match=r"run.json: assayed at rows=2, steps=9, data [0-9a-f]{12}, now rows=2, "):
        assay_record("run", data, tmp_path, tmp_path / "work", [1], 2, 9)
    assert not (tmp_path / "work").exists()


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _four_commits(tmp_path: Path) -> tuple[Path, list[str], list[Path]]:
    """A repository of four commits (art/run.py "a"; evaluation/paired.py; art/run.py "c"; evaluation/sts.py) and a
    record run-seed-I for each, whose manifest names commit I."""
    repo = tmp_path / "repo"
    (repo / "src/hardcse/evaluation").mkdir(parents=True)
    (repo / "src/hardcse/art").mkdir(parents=True)
    git(repo, "init", "-q")
    commits = []
    for path, text in [
        ("src/hardcse/art/run.py", "a"),
        ("src/hardcse/evaluation/paired.py", "b"),
        ("src/hardcse/art/run.py", "c"),
        ("src/hardcse/evaluation/sts.py", "d"),
    ]:
        (repo / path).write_text(text)
        git(repo, "add", "-A")
        git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", path)
        commits.append(git(repo, "rev-parse", "HEAD"))
    records = []
    for i, commit in enumerate(commits):
        record = tmp_path / f"run-seed-{i}"
        record.mkdir()
        (record / "manifest.json").write_text(json.dumps({"git_commit": commit}))
        records.append(record)
    return repo, commits, records


def test_records_of_other_code_are_not_compared(tmp_path):
    """code_line: commits that differ in evaluation/'s interval code or the shipped configs pass; one that changed
    other code of src/hardcse (the STS scoring among it) stops the page, naming the file and the runs."""
    repo, commits, records = _four_commits(tmp_path)
    line = code_line(records[:2], repo)
    assert line.startswith(f"Code of the runs (their manifests' commits): {commits[0][:8]}, {commits[1][:8]}; ")
    with pytest.raises(SystemExit, match=rf"run-seed-2 ran commit {commits[2][:8]}, whose src/hardcse/art/run.py"):
        code_line(records[:3], repo)
    with pytest.raises(SystemExit, match=rf"run-seed-3 ran commit {commits[3][:8]}, whose src/hardcse/art/run.py, "):
        code_line([records[0], records[3]], repo)
    with pytest.raises(SystemExit, match=rf"whose src/hardcse/evaluation/sts.py differ from {commits[2][:8]}"):
        code_line([records[2], records[3]], repo)
    # an assay's commit is checked as a run's: it trained and scored the encoders the answers compare
    assays = {commits[1]: ["assay of run-seed-0"]}
    assert code_line(records[:1], repo, assays).startswith(
        f"Code of the runs (their manifests' commits): {commits[0][:8]}; of their assays: {commits[1][:8]}; "
    )
    with pytest.raises(SystemExit, match=rf"^error: assay of run-seed-0 ran commit {commits[3][:8]}, whose src/"):
        code_line(records[2:3], repo, {commits[3]: ["assay of run-seed-0"]})
    # a run resumed on another commit: each start's commit is checked, not only the first's
    resumed = tmp_path / "resumed-seed-0"
    resumed.mkdir()
    starts = [{"git_commit": commits[0]}, {"git_commit": commits[2]}]
    (resumed / "manifest.json").write_text(json.dumps({"git_commit": commits[0], "runs": starts}))
    with pytest.raises(SystemExit, match=rf"resumed-seed-0 ran commit {commits[2][:8]}, whose src/hardcse/art/run"):
        code_line([records[0], resumed], repo)
    # a run outside a git checkout names no commit: refused by name, not compared with an unknown code
    (resumed / "manifest.json").write_text(json.dumps({"git_commit": None}))
    with pytest.raises(SystemExit, match=r"^error: resumed-seed-0 name no commit \(run outside a git checkout\)"):
        code_line([records[0], resumed], repo)
    assert (REPOSITORY / "src/hardcse").is_dir()  # the default repository is the checkout's root, where git's
    # pathspec src/hardcse names the package (from benchmarks/ it named nothing, and every commit passed)


def test_an_evidence_run_on_uncommitted_code_is_refused(tmp_path):
    repo = tmp_path / "repo"
    (repo / "src/hardcse").mkdir(parents=True)
    (repo / "src/hardcse/run.py").write_text("a")
    (repo / "notes.md").write_text("a")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    (repo / "notes.md").write_text("b")  # outside src/hardcse: no bearing on a run's code
    refuse_uncommitted_code(repo)
    (repo / "src/hardcse/run.py").write_text("b")
    with pytest.raises(
        SystemExit, match=r"^error: src/hardcse has changes git has not committed \(src/hardcse/run.py\)"
    ):
        refuse_uncommitted_code(repo)


def test_runs_of_one_seed_on_two_machines_are_not_compared(tmp_path):
    def record(name: str, *flags: list[str]) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        runs = [{"machine": {"cpu": "EPYC", "cores": 2, "threads": 2, "cpu_flags": f, "gpu": None}} for f in flags]
        (folder / "manifest.json").write_text(json.dumps({"runs": runs}), encoding="utf-8")
        return folder

    bf16, avx2 = ["avx2", "avx512_bf16"], ["avx2"]
    runs = {("a", 1): record("a-seed-1", bf16), ("b", 1): record("b-seed-1", bf16, bf16), ("a", 2): record("a2", avx2)}
    refuse_mixed_machines(runs)  # seed 2 on another machine than seed 1: settings meet only within a seed
    runs[("b", 2)] = record("b-seed-2", avx2, bf16)  # resumed on another machine
    with pytest.raises(SystemExit, match=r"^error: the runs of generation seed 2 ran on different machines \(a, b on "):
        refuse_mixed_machines(runs)


def test_a_record_of_another_config_than_today_s_is_refused(tmp_path, monkeypatch):
    """The page and a run both stop at a finished record whose config the setting's file no longer builds."""
    import art_rounds
    from hardcse.art.config import ArtRunConfig
    from hardcse.config import load_config, save_config
    from hardcse.run_folder import seeds

    monkeypatch.setattr(art_rounds, "RECORDS", tmp_path)
    for seed, extra in ((42, []), (2, ["rl.steps=3"])):
        record = art_rounds.record_dir("cpu-full", seed)
        record.mkdir()
        overrides = [*art_rounds.seed_overrides("cpu-full", seed), *extra]
        config = load_config(ArtRunConfig, art_rounds.RUNS["cpu-full"], overrides)
        save_config(config, record / "config.yaml")
        manifest = {"runs": [{"finished": True}], "seeds": seeds(config)}  # as RunFolder writes it
        (record / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    art_rounds.refuse_changed_configs([("cpu-full", 42)])
    with pytest.raises(
        SystemExit, match=r"cpu-full-seed-2 ran another config than configs/cpu-full.yaml builds .*rl: "
    ):
        art_rounds.refuse_changed_configs([("cpu-full", 42), ("cpu-full", 2)])


def write_assay_folder(
    folder: Path, commit: str, data: str, steps: int, seeds: list[int], resumed_on=None, rows: int = 270
) -> dict:
    """An assay run folder (what `hardcse assay` leaves: manifest.json, config.yaml) and its provenance."""
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"git_commit": commit}))
    config = {"data": [data], "names": [folder.name], "seeds": seeds, "training": {"max_steps": steps}, "rows": rows}
    (folder / "config.yaml").write_text(json.dumps(config))  # JSON is YAML
    return assay_provenance(folder, resumed_on)


def test_the_assays_on_one_page_ran_one_config_and_name_their_commits(tmp_path):
    """An assay's config digest leaves out what names or counts its data (data, names, seeds, rows): assays of two
    records with the same method agree, one at other steps is refused, and one kept without provenance is refused by
    its file."""
    one = write_assay_folder(tmp_path / "a", "c1", "a.csv", 9, [1, 2])
    # another record's data, seeds and size (a round may keep fewer triplets than it trains on), resumed on other code
    two = write_assay_folder(tmp_path / "b", "c2", "b.csv", 9, [3], resumed_on="c3", rows=264)
    other = write_assay_folder(tmp_path / "c", "c2", "c.csv", 10, [1, 2])
    assert one == {"commit": "c1", "config_sha256": two["config_sha256"]} and two["resumed_on"] == "c3"
    assert other["config_sha256"] != one["config_sha256"]
    assert "resumed_on" not in write_assay_folder(tmp_path / "d", "c1", "d.csv", 9, [1], resumed_on="c1")
    metas = {}
    for name, provenance in [("cpu-full-seed-1", one), ("cpu-full-seed-2", two), ("cpu-full-seed-3", other)]:
        metas[name] = {"assays": [{"seeds": [1], **provenance}]}
    assert refuse_mixed_assays(dict(list(metas.items())[:2]), tmp_path) == {
        "c1": ["assay of cpu-full-seed-1"],
        "c2": ["assay of cpu-full-seed-2"],
        "c3": ["assay of cpu-full-seed-2"],  # both commits of a resumed assay are checked
    }
    with pytest.raises(SystemExit, match=r"^error: the assays ran different configs \(config [0-9a-f]{12}: "):
        refuse_mixed_assays(metas, tmp_path)
    for kept in ({"seeds": [1]}, {"seeds": [1], "commit": None, "config_sha256": one["config_sha256"]}):
        metas["cpu-full-seed-3"] = {"assays": [kept]}  # None: run outside a git checkout
        with pytest.raises(SystemExit, match=r"cpu-full-seed-3.json: an assay keeps no commit or config digest; "):
            refuse_mixed_assays(metas, tmp_path)


def test_an_nli_model_trained_again_stands_in_only_with_the_records_weights(tmp_path):
    """nli_reproduce: a trained folder's row names its digest against the one every record names, and its held-out
    accuracy beside the records' model's; a folder without its files is an error naming the missing one."""
    from nli_reproduce import RESULTS, records_digest, reproduction

    folder = tmp_path / "nli"
    (folder / "model").mkdir(parents=True)
    (folder / "model" / "model.safetensors").write_bytes(b"other weights")
    for name in ("manifest.json", "nli_eval.json"):
        (folder / name).write_text((RESULTS / f"nli-minilm-{name}").read_text())
    row = reproduction("discriminator", folder)
    assert row["records_sha256"] == records_digest("discriminator") and row["records_sha256"].startswith("9cd239845429")
    assert row["sha256"] != row["records_sha256"] and row["records_weights_sha256"] is None  # not kept then
    assert row["same_eval"] and row["accuracy"]["SNLI test"] == [78.88, 78.88]
    assert row["git_commit"].startswith("aa8a97cc") and "AMD EPYC" in row["machine"]
    # the weights' digest leaves out the model card and training log (the training's minutes), not the weights
    (folder / "model" / "training.json").write_text('{"seconds_per_step": 1.2}')
    (folder / "model" / "README.md").write_text("Training: 35.1 minutes")
    again = reproduction("discriminator", folder)
    assert again["weights_sha256"] == row["weights_sha256"] and again["sha256"] != row["sha256"]
    (folder / "model" / "model.safetensors").write_bytes(b"other weights again")
    assert reproduction("discriminator", folder)["weights_sha256"] != row["weights_sha256"]
    (folder / "nli_eval.json").unlink()
    with pytest.raises(SystemExit, match=r"nli_eval.json is missing: --model takes a folder `hardcse nli train`"):
        reproduction("discriminator", folder)


def test_runs_compare_by_their_nli_weights_where_their_records_keep_them(tmp_path):
    """Two trainings of the same weights differ in their folder's digest (the training's minutes): records that keep
    the weights' digest agree by it; a record that keeps only the folder's never agrees with one that keeps both."""
    from lib.provenance import NLI_RECORD, nli_models_used

    def record(name: str, folder: str, weights: str | None) -> Path:
        path = tmp_path / name
        path.mkdir()
        model = {"source": "runs/nli", "sha256": folder} | ({"weights_sha256": weights} if weights else {})
        (path / NLI_RECORD).write_text(json.dumps({"discriminator": model, "judge": model}))
        return path

    old, one, two = record("old", "a" * 64, None), record("one", "b" * 64, "c" * 64), record("two", "d" * 64, "c" * 64)
    used = nli_models_used([old, one, two])
    assert used["old"] == "discriminator aaaaaaaaaaaa / judge aaaaaaaaaaaa"
    assert used["one"] == used["two"] == "discriminator weights cccccccccccc / judge weights cccccccccccc"


def test_one_code_and_one_pair_of_nli_models_a_seed_is_enough(tmp_path):
    """Settings are compared within a generation seed: code_line_by_seed names each seed's commits where seeds ran
    other code, and stops where one seed's runs did; refuse_mixed_nli likewise for the NLI models."""
    from lib.provenance import NLI_RECORD, code_line_by_seed, refuse_mixed_nli

    repo, commits, records = _four_commits(tmp_path)
    same = code_line_by_seed({1: ([records[0]], {}), 2: ([records[1]], {commits[0]: ["assay of run-seed-1"]})}, repo)
    assert same == code_line([records[0], records[1]], repo, {commits[0]: ["assay of run-seed-1"]})
    by_seed = code_line_by_seed({1: ([records[0], records[1]], {}), 2: ([records[2]], {commits[2]: ["assay"]})}, repo)
    assert by_seed.startswith("Code of the runs by generation seed (settings are compared within a seed; ")
    c = [commit[:8] for commit in commits]
    assert f"seed 1: {c[0]}, {c[1]}; seed 2: {c[2]} (assays {c[2]}); within each seed src/hardcse differs" in by_seed
    with pytest.raises(SystemExit, match=rf"^error: generation seed 2: run-seed-3 ran commit {commits[3][:8]}, whose"):
        code_line_by_seed({1: ([records[0]], {}), 2: ([records[2], records[3]], {})}, repo)

    def judged(record: Path, weights: str) -> None:
        model = {"source": "runs/nli", "sha256": "f" * 64, "weights_sha256": weights}
        (record / NLI_RECORD).write_text(json.dumps({"discriminator": model, "judge": model}))

    for record, weights in zip(records, ["a" * 64, "a" * 64, "b" * 64, "c" * 64], strict=True):
        judged(record, weights)
    refuse_mixed_nli({("cpu-full", 1): records[0], ("ablation", 1): records[1], ("cpu-full", 2): records[2]})
    with pytest.raises(SystemExit, match=r"^error: the runs of generation seed 2 were judged by other NLI models \("):
        refuse_mixed_nli({("cpu-full", 1): records[0], ("cpu-full", 2): records[2], ("ablation", 2): records[3]})


def test_the_ablation_seeds_run_without_the_judge():
    from art_rounds import ABLATION_SEEDS, AS_RUN, seed_overrides

    assert "judge=null" in seed_overrides("ablation-no-filter", ABLATION_SEEDS[0])
    assert "judge=null" not in seed_overrides("ablation-no-filter", 2) and seed_overrides("cpu-full", 42) == AS_RUN


def test_a_held_out_measure_without_its_model_reads_undefined(tmp_path):
    """A run without a judge (the ablation seeds) has no judge accuracy: its cell says so, the others are drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lib.art_evidence_tables import HELDOUT, heldout_evidence

    measure = {"difference": {"estimate": 0.1, "low": 0.05, "high": 0.15, "n": 40}}
    (tmp_path / "cpu-full-seed-5" / "round_1").mkdir(parents=True)
    record = {key: measure for key in HELDOUT} | {"judged_correct": None}
    (tmp_path / "cpu-full-seed-5" / "round_1" / "heldout.json").write_text(json.dumps(record))
    fig, ax = plt.subplots()
    lines = heldout_evidence([tmp_path / "cpu-full-seed-5"], ax)
    plt.close(fig)
    row = next(line for line in lines if line.startswith("| cpu-full-seed-5 |"))
    cells = ["+0.100 [+0.050, +0.150] *"] * 4 + ["undefined"]
    assert row == "| cpu-full-seed-5 | round_1 | " + " | ".join(cells) + " |"


def test_the_forest_plots_corrected_interval_is_the_pages_construction_at_the_bonferroni_level():
    """An interval paired.py's clustered spread builds itself, from runs and test pairs drawn here: corrected for one
    comparison it comes back unchanged; for three, its half-width is the same construction at the 0.99167
    quantiles, by hand: sqrt(t_2(0.99167)^2 x V_runs + z(0.99167)^2 x V_pairs) with t_2 7.6488, z 2.3940."""
    from hardcse.evaluation.paired import _clustered_spread

    rng = np.random.default_rng(0)
    between, pairs, runs = rng.normal(-0.27, 0.06, 1000), rng.normal(-0.27, 0.02, 1000), 3
    half, se, df = _clustered_spread(between, pairs, runs)
    d = Interval(-0.27, -0.27 - half, -0.27 + half, 100, se, df)
    same = corrected(d, runs, 1)
    assert same.low == pytest.approx(d.low, abs=1e-12) and same.high == pytest.approx(d.high, abs=1e-12)
    v_runs, v_pairs = runs / (runs - 1) * float(np.var(between)), float(np.var(pairs))
    wide = corrected(d, runs, 3)
    assert wide.high - wide.estimate == pytest.approx((7.6488**2 * v_runs + 2.3940**2 * v_pairs) ** 0.5, rel=1e-4)
    # one run a side (a percentile interval) or no spread between runs: nothing to correct from
    assert corrected(Interval(0.1, 0.0, 0.2, 100), 1, 3) is None
    assert corrected(Interval(0.1, 0.0, 0.2, 100, 0.05, None), 3, 3) is None


def test_the_per_seed_tests_on_hand_counted_differences():
    """Differences 1, 2, -1: of the 8 sign assignments, 6 have |sum| >= 2 (+++, ++-, +-+, -+-, --+, ---), so the
    sign-flip p is 0.75; t = 0.667 / (1.5275 / sqrt 3) = 0.756 on 2 degrees of freedom, whose two-sided p is
    1 - t / sqrt(t^2 + 2) = 0.529. Five differences of one sign give 2 / 32, the smallest five seeds can give."""
    t_p, sign_p = seed_tests([1.0, 2.0, -1.0])
    assert sign_p == 0.75 and t_p == pytest.approx(0.5286, abs=1e-3)
    assert seed_tests([0.186, 0.066, 0.198, 0.032, 0.057])[1] == 2 / 32
