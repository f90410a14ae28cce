import json

import numpy as np
import pytest

from hardcse.data.corpus import read_sentences
from hardcse.data.nli import EVAL_FILES, LABELS, TRAIN_FILES, NLIPairs, read_nli, read_nli_files
from hardcse.data.sts import ALL_TASKS, STS_YEARS, load_sts_task
from hardcse.data.triplets import nli_triplets, read_triplets, write_triplets
from hardcse.errors import HardcseError
from hardcse.paths import data_dir


def test_vendored_files_have_the_documented_row_counts():
    counts = json.loads((data_dir() / "counts.json").read_text())
    for year, subsets in STS_YEARS.items():
        task = load_sts_task(year)
        assert len(task) == sum(counts[f"{year}/{s}"][0] for s in subsets)


def test_sts_task_sizes_follow_the_convention():
    sizes = {name: len(load_sts_task(name)) for name in ALL_TASKS}
    assert sizes == {
        "STS12": 3108,
        "STS13": 1500,
        "STS14": 3750,
        "STS15": 3000,
        "STS16": 1186,
        "STS-B": 1379,
        "SICK-R": 4927,
        "STS-B-dev": 1500,
    }


def test_sts12_keeps_subset_order():
    task = load_sts_task("STS12")
    assert task.sentences1[0].startswith("The problem likely will mean corrective changes")
    assert task.scores[0] == pytest.approx(4.4)


def test_unknown_task():
    with pytest.raises(HardcseError, match="unknown STS task"):
        load_sts_task("STS99")


def test_nli_reads_sick_columns_and_default_training_size():
    sick = read_nli(data_dir() / "sts/SICK/trial.tsv")
    assert len(sick) == 500 and set(sick.labels) <= {0, 1, 2}
    assert len(read_nli_files(TRAIN_FILES)) == 55_670
    assert not set(TRAIN_FILES) & set(EVAL_FILES.values())


def test_nli_bad_label_is_reported(tmp_path):
    path = tmp_path / "n.tsv"
    path.write_text("premise\thypothesis\tlabel\na\tb\tmaybe\n")
    with pytest.raises(HardcseError, match=r"n\.tsv:2: field 'label'.*must be one of"):
        read_nli(path)


def test_nli_triplets_pair_entailment_with_contradiction():
    e, n, c = (LABELS.index(x) for x in LABELS)
    pairs = NLIPairs(
        premises=["p1", "p1", "p1", "p2", "p2", "p3", "p3", "p3", "p3"],
        hypotheses=["e1", "n1", "c1", "e2", "n2", "e3a", "c3a", "e3b", "c3b"],
        labels=[e, n, c, e, n, e, c, e, c],
    )
    assert nli_triplets(pairs) == [("p1", "e1", "c1"), ("p3", "e3a", "c3a"), ("p3", "e3b", "c3b")]


def test_triplets_roundtrip_with_commas_and_quotes(tmp_path):
    triplets = [('He said "yes", twice.', "Yes, twice.", "No.")]
    write_triplets(tmp_path / "t.csv", triplets)
    assert read_triplets(tmp_path / "t.csv") == triplets
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]  # no temporary file left


def test_default_corpus():
    sentences = read_sentences()
    assert len(sentences) == 11_915 and all(sentences)
    assert np.mean([len(s) for s in sentences]) > 20


def test_mrpc_and_qqp_pairs():
    from hardcse.data.pairs import read_labeled_pairs

    mrpc = read_labeled_pairs(data_dir() / "pairs/MRPC/train.tsv")
    assert len(mrpc) == 3576 and set(mrpc.labels) == {0, 1}
    assert mrpc.sentences1[0].startswith('Amrozi accused his brother, whom he called "the witness"')
    qqp = read_labeled_pairs(data_dir() / "pairs/QQP-sample/dev.tsv", ("question1", "question2", "label"))
    assert len(qqp) == 1000


def test_user_scored_pairs(tmp_path):
    from hardcse.data.sts import read_scored_pairs

    path = tmp_path / "mine.csv"
    path.write_text("sentence1,sentence2,score\na,b,1.5\nc,d,x\ne,f,nan\ng,h,4\n")
    with pytest.raises(HardcseError, match=r"mine\.csv:3: field 'score'"):
        read_scored_pairs(path)
    pairs = read_scored_pairs(path, on_error="skip")
    assert pairs.name == "mine" and pairs.scores.tolist() == [1.5, 4.0]  # 'x' and NaN counted and skipped


def test_triplets_with_two_negatives_roundtrip_and_widths_must_agree(tmp_path):
    from hardcse.errors import HardcseError

    rows = [("a", "b", "c", "d"), ("e", "f", "g", "h")]
    write_triplets(tmp_path / "t.csv", rows)
    assert (tmp_path / "t.csv").read_text().splitlines()[0] == "sent0,sent1,hard_neg,hard_neg_2"
    assert read_triplets(tmp_path / "t.csv") == rows
    (tmp_path / "t.jsonl").write_text('{"sent0": "a", "sent1": "b", "hard_neg": "c", "hard_neg_2": "d"}\n')
    assert read_triplets(tmp_path / "t.jsonl") == [("a", "b", "c", "d")]
    with pytest.raises(HardcseError, match=r"rows of \[3, 4\] texts"):
        write_triplets(tmp_path / "u.csv", [("a", "b", "c"), ("e", "f", "g", "h")])
    assert not (tmp_path / "u.csv").exists()
