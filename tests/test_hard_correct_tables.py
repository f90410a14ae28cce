"""benchmarks/lib/hard_correct_tables.py's helpers, by hand: which comparisons the assay makes, the false-negative
difference over the pool of kept answers, and the answer sentences when variants are missing."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))

from hardcse.evaluation.compare import Comparison  # noqa: E402
from hardcse.stats import Interval  # noqa: E402
from lib.hard_correct_tables import (  # noqa: E402
    answers,
    answers_of,
    assay_pairs,
    kept_difference,
    percent_cell,
    variant_of,
)

FALSE_NEGATIVES = "negatives judged entailment % (false negatives)"


def test_variant_of_splits_at_the_last_seed_marker():
    assert variant_of("paper-seed-42") == ("paper", 42)
    assert variant_of("art-two-negatives-seed-7") == ("art-two-negatives", 7)
    assert variant_of("paper-seed-42+guard-dropped") == ("paper", 42)  # kept with what the guards dropped


def test_answers_of_counts_both_negatives_of_a_two_negative_row():
    row = ("anchor", "positive", "generated negative", "mined negative")
    assert answers_of(row, "positive") == ["positive"]
    assert answers_of(row, "negative") == ["generated negative", "mined negative"]
    assert answers_of(("a", "p", "n"), "negative") == ["n"]


def test_assay_pairs_put_the_references_first_then_each_variant_against_each_reference():
    pairs = assay_pairs(["paper", "filter-argmax", "raw-llm", "mined", "art-mined-negatives", "art-two-negatives"])
    assert pairs == [
        ("raw-llm", "paper"),
        ("raw-llm", "mined"),
        ("mined", "paper"),
        ("paper", "filter-argmax"),
        ("raw-llm", "filter-argmax"),
        ("mined", "filter-argmax"),
        ("paper", "art-mined-negatives"),
        ("raw-llm", "art-mined-negatives"),
        ("mined", "art-mined-negatives"),
        ("paper", "art-two-negatives"),
        ("raw-llm", "art-two-negatives"),
        ("mined", "art-two-negatives"),
        ("art-mined-negatives", "art-two-negatives"),  # isolates the generated negative added to the mined one
    ]
    assert assay_pairs(["hard-correct"]) == []


def test_kept_difference_is_the_share_over_each_sides_kept_answers():
    # the threshold rule kept four negatives, two of them entailed; argmax kept two of those four, none entailed,
    # and one the other did not keep (entailed): 1/3 - 2/4 = -1/6
    judged = {
        "paper-seed-42": {
            FALSE_NEGATIVES: {("a1", "n1"): 1.0, ("a2", "n2"): 0.0, ("a3", "n3"): 0.0, ("a4", "n4"): 1.0}
        },
        "filter-argmax-seed-42": {FALSE_NEGATIVES: {("a2", "n2"): 0.0, ("a3", "n3"): 0.0, ("a5", "n5"): 1.0}},
    }
    change = kept_difference(judged, ["paper-seed-42"], ["filter-argmax-seed-42"], FALSE_NEGATIVES)
    assert change.estimate == pytest.approx(1 / 3 - 2 / 4)
    assert change.n == 2  # answers both kept
    assert change.low <= change.estimate <= change.high


def test_kept_difference_keys_answers_by_generation_seed():
    # the same answer text from two generation seeds is two answers
    judged = {
        "paper-seed-1": {FALSE_NEGATIVES: {("a", "n"): 1.0}},
        "paper-seed-2": {FALSE_NEGATIVES: {("a", "n"): 0.0}},
        "filter-argmax-seed-1": {FALSE_NEGATIVES: {("a", "n"): 0.0}},
    }
    change = kept_difference(judged, ["paper-seed-1", "paper-seed-2"], ["filter-argmax-seed-1"], FALSE_NEGATIVES)
    assert change.estimate == pytest.approx(0.0 - 0.5)


def test_percent_cell_scales_a_share():
    assert percent_cell(Interval(0.25, 0.125, 0.5, 8)) == "25.0 [12.5, 50.0]"


def test_answers_name_what_is_missing():
    empty = Comparison(groups={}, pairs=[], differences={}, resamples=1000, seed=0)
    lines = answers(empty, {}, [])
    assert lines[0] == "## Answers"
    assert "- Does the filter fix remove false negatives? Not measured: needs paper and filter-argmax." in lines
    assert any("Not measured: needs r2-gated and paper" in line for line in lines)
    assert any("Not measured: needs art-mined-negatives and art-two-negatives." in line for line in lines)
    assert not any("Beats mined" in line for line in lines)  # no mined group, no verdict
