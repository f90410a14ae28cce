"""Training texts matched against evaluation texts: normalisation, exact and near duplicates, the command."""

import json
import random

import pytest

from hardcse.cli import main
from hardcse.config import load_config
from hardcse.data.decontamination import Decontamination, DecontaminationConfig, EvalIndex, ngrams, normalise
from hardcse.data.sts import load_sts_task
from hardcse.errors import HardcseError

FOX = "The quick brown fox jumps over the lazy dog"  # 9 words: 7 trigrams


def index(texts, **config):
    return EvalIndex(DecontaminationConfig(**config), [("T", t) for t in texts])


def test_normalisation_and_ngrams():
    assert normalise("  A man,  is PLAYING a guitar!! ") == "a man is playing a guitar"
    assert ngrams("a b c d", 3) == {"a b c", "b c d"}
    assert ngrams("a b", 3) == {"a b"}  # shorter than n: the whole text


def test_exact_and_near_duplicates_by_hand():
    found = index([FOX, "Two dogs play."])
    exact = found.match("the QUICK brown fox -- jumps over the lazy dog.")
    assert (exact.kind, exact.eval_text, exact.similarity) == ("exact", FOX, 1.0)
    near = found.match(FOX + " today")  # 7 shared trigrams of 8: 0.875
    assert (near.kind, near.similarity) == ("near", 7 / 8)
    assert found.match("The quick brown fox leaps over the lazy dog") is None  # 4 of 10: 0.4
    assert found.match("two dogs play") and found.match("two dogs") is None  # short texts: exact only
    assert index([FOX], threshold=0.4).match("The quick brown fox leaps over the lazy dog").similarity == 0.4


def test_prefix_filtering_finds_every_pair_brute_force_finds():
    rng = random.Random(0)
    words = "a the man dog cat runs sits on in red big small park".split()
    evals = [" ".join(rng.choices(words, k=rng.randint(2, 9))) for _ in range(300)]
    queries = [" ".join(rng.choices(words, k=rng.randint(2, 9))) for _ in range(300)] + evals[:20]
    for n, threshold in [(1, 0.5), (2, 0.4), (3, 0.8)]:
        found = index(evals, ngram=n, threshold=threshold)
        sets = [ngrams(normalise(e), n) for e in evals]
        for q in queries:
            x = ngrams(normalise(q), n)
            best = max(len(x & y) / len(x | y) for y in sets)
            m = found.match(q)
            assert (m is not None) == (best >= threshold), (q, n, threshold)
            assert m is None or m.kind == "exact" or m.similarity == best


def test_filter_counts_and_lists_what_it_drops(tmp_path):
    check = Decontamination(DecontaminationConfig())
    check.index = index([FOX])
    rows = [("fine", "also fine"), ("fine", FOX.upper()), (FOX + " today", "x")]
    kept = check.filter("synthetic", rows, lambda r: [("anchor", r[0]), ("positive", r[1])])
    assert kept == [rows[0]]
    assert check.counts["synthetic"] == {"checked": 3, "exact": 1, "near": 1, "dropped": 2}
    assert [(d["row"], d["column"], d["kind"]) for d in check.dropped] == [
        (2, "positive", "exact"),
        (3, "anchor", "near"),
    ]
    check.write(tmp_path)
    assert json.loads((tmp_path / "decontamination.json").read_text())["sources"]["synthetic"]["dropped"] == 2
    assert len((tmp_path / "decontaminated.jsonl").read_text().splitlines()) == 2
    off = Decontamination(DecontaminationConfig(enabled=False))
    assert off.filter("user", rows, lambda r: [("a", r[0])]) == rows and off.counts["user"]["checked"] == 3


def test_config_mistakes_name_the_key(tmp_path):
    with pytest.raises(HardcseError, match="threshold"):
        DecontaminationConfig(threshold=0)
    with pytest.raises(HardcseError, match="tasks: unknown"):
        DecontaminationConfig(tasks=["STS99"])
    path = tmp_path / "c.yaml"
    path.write_text("ngram: 0\n")
    with pytest.raises(HardcseError, match="ngram"):
        load_config(DecontaminationConfig, path)


def test_the_command_drops_planted_duplicates_of_the_real_test_sets(tmp_path, capsys):
    stsb = load_sts_task("STS-B")
    long_one = next(s for s in stsb.sentences1 if len(s.split()) >= 10)
    source = tmp_path / "mine.csv"
    source.write_text(
        "sent0,sent1,hard_neg\n"
        "Our own sentence number one here,Its own paraphrase here,Something else entirely\n"
        f'"{stsb.sentences2[3].upper()}",A paraphrase,A negative\n'  # exact after normalisation
        f'An anchor of ours,"{long_one} indeed",A negative\n'  # near: one word more
        '"A quoted, anchor",Second,Third\n'
    )
    assert main(["decontaminate", str(source)]) == 0
    out = tmp_path / "mine.decontaminated.csv"
    assert out.read_text() == (
        "sent0,sent1,hard_neg\n"
        "Our own sentence number one here,Its own paraphrase here,Something else entirely\n"
        '"A quoted, anchor",Second,Third\n'
    )
    matches = [json.loads(line) for line in (tmp_path / "mine.decontaminated.matches.jsonl").read_text().splitlines()]
    assert [(m["line"], m["column"], m["kind"], normalise(m["eval_text"])) for m in matches] == [
        (3, "sent0", "exact", normalise(stsb.sentences2[3])),
        (4, "sent1", "near", normalise(long_one)),
    ]
    assert "2 of 4 rows dropped (1 exact, 1 near" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.csv"], "missing.csv: no such file"),
        (["mine.csv", "--threshold", "1.5"], "--threshold: 1.5 must be between"),
        (["mine.csv", "--columns", "nope"], "missing column(s) ['nope']"),
        (["mine.csv", "--out", "taken.csv"], "taken.csv exists; pass --overwrite"),
    ],
)
def test_command_mistakes_are_one_line_errors(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.csv").write_text("a,b\nx,y\n")
    (tmp_path / "taken.csv").write_text("kept\n")
    assert main(["decontaminate", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert (tmp_path / "taken.csv").read_text() == "kept\n"
    assert not (tmp_path / "mine.decontaminated.csv").exists()


def test_synthesis_drops_kept_triplets_that_match_an_evaluation_text():
    from hardcse.art.synthesis import _drop_eval_matches

    stsb = load_sts_task("STS-B")
    passed = [
        {"anchor": "An anchor of ours", "positive": "its paraphrase", "negative": "its opposite", "drop_reason": None},
        {"anchor": "Another anchor", "positive": stsb.sentences1[0], "negative": "no", "drop_reason": None},
    ]
    _drop_eval_matches(passed, DecontaminationConfig())
    assert passed[0]["drop_reason"] is None and "eval_match" not in passed[0]
    assert passed[1]["drop_reason"] == "eval_exact"
    assert passed[1]["eval_match"]["column"] == "positive"
    assert normalise(passed[1]["eval_match"]["eval_text"]) == normalise(stsb.sentences1[0])
    off = [dict(passed[0], anchor=stsb.sentences1[0])]
    _drop_eval_matches(off, DecontaminationConfig(enabled=False))
    assert off[0]["drop_reason"] is None
