"""benchmarks/art_evidence_tables.py's helpers, by hand: which comparisons the evidence page makes, the answer
sentences (verdict and the detectable difference), and the assay groups clustered by generation seed."""

import gzip
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))

from art_evidence_tables import answer_lines, assay_groups, evidence_pairs  # noqa: E402
from hardcse.evaluation.compare import Comparison  # noqa: E402
from hardcse.evaluation.results import Result  # noqa: E402
from hardcse.stats import Interval  # noqa: E402


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


def test_answers_say_the_verdict_and_the_difference_each_comparison_could_detect():
    """STS-B dev +0.10 [-0.10, +0.30]: no detectable difference; 80% power at (1.96 + 0.8416) x 0.40 / (2 x 1.96)
    = 0.286. avg7 +0.20 [+0.10, +0.30]: higher; (1.96 + 0.8416) x 0.20 / 3.92 = 0.143."""
    raw, ppo = "baseline-raw-llm", "cpu-full"
    diff = {"STS-B-dev": Interval(0.1, -0.1, 0.3, 1379), "avg7": Interval(0.2, 0.1, 0.3, 9000)}
    groups = {raw: members(raw, [42, 1], 3), ppo: members(ppo, [42, 1], 3)}
    assay = Comparison(groups, [(raw, ppo)], {(raw, ppo): diff}, 1000, 0)
    final = Comparison({}, [], {}, 1000, 0)
    lines = answer_lines(assay, final)
    assert lines[:2] == ["## Answers", ""]
    assert len(lines) == 6  # the preface, then one question answered: the others have no groups
    assert lines[4] == (
        "- **Does RL-tuning the generator write better training data than the raw generator?** ART (PPO, paper's "
        "reward) (`cpu-full`) - raw generator (`baseline-raw-llm`), its data, assayed (2 generation seeds x 3 "
        "training seeds against 2 generation seeds x 3 training seeds): STS-B dev no detectable difference (+0.10 "
        "[-0.10, +0.30]), avg7 higher by 0.20 (+0.20 [+0.10, +0.30]) (80% power for a true difference of 0.29 and "
        "0.14)."
    )


def test_assay_groups_cluster_each_run_s_members_by_its_generation_seed(tmp_path):
    for name in ("cpu-full-seed-42", "cpu-full-seed-1"):
        for t in (1, 2):
            record = {"scores": {"STS12": t}}
            (tmp_path / f"{name}.t{t}.eval.json.gz").write_bytes(gzip.compress(json.dumps(record).encode()))
    folders = [Path("records/cpu-full-seed-42"), Path("records/cpu-full-seed-1")]
    groups = assay_groups(folders, tmp_path, [1, 2])
    assert list(groups) == ["cpu-full"]
    assert [(m.label, m.seed, m.cluster) for m in groups["cpu-full"]] == [
        ("cpu-full-seed-42.t1", 4201, 42), ("cpu-full-seed-42.t2", 4202, 42),
        ("cpu-full-seed-1.t1", 101, 1), ("cpu-full-seed-1.t2", 102, 1),
    ]  # fmt: skip
    with pytest.raises(SystemExit, match=r"cpu-full-seed-42.t3.eval.json.gz is missing"):
        assay_groups(folders, tmp_path, [3])
