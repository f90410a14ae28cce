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
    from hardcse.art.synthesis.triplets import _drop_eval_matches

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


# ----- every method's data building drops planted matches ----------------------------------------------------


@pytest.fixture(scope="module")
def planted():
    """Two STS test texts: one as it is (upper case), one with a word added (a near duplicate)."""
    stsb = load_sts_task("STS-B")
    long_one = next(s for s in stsb.sentences1 if len(s.split()) >= 10)
    return stsb.sentences2[3].upper(), f"{long_one} indeed"


def test_datacube_drops_matching_instances_per_task_and_refuses_an_emptied_task(tmp_path, planted):
    from hardcse.datacube.config import DataCubeConfig
    from hardcse.datacube.plan import load_tasks

    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "instructions.yaml").write_text("a: {query: 'Q:', positive: 'P:', negative: 'N:'}\n")
    rows = [("our query one", "our positive", "our negative"), (planted[0], "x", "y"), ("q", "p", planted[1])]
    lines = [json.dumps({"query": q, "pos": p, "neg": n}) for q, p, n in rows]
    (folder / "a.jsonl").write_text("\n".join(lines) + "\n")
    config = load_config(DataCubeConfig, overrides=[f"data={folder}"])
    check = Decontamination(config.decontamination)
    [task] = load_tasks(config, check)
    assert [i.query for i in task.instances] == ["our query one"]
    assert check.counts["a"] == {"checked": 3, "exact": 1, "near": 1, "dropped": 2}
    assert len(load_tasks(load_config(DataCubeConfig, overrides=[f"data={folder}"]))[0].instances) == 3  # no check
    (folder / "a.jsonl").write_text("\n".join(lines[1:]) + "\n")
    with pytest.raises(HardcseError, match="task a: every instance .* decontamination.enabled: false"):
        load_tasks(config, Decontamination(config.decontamination))


def test_diffaug_drops_matching_nli_pairs_and_unlabeled_sentences(tmp_path, planted):
    from hardcse.diffaug.config import DiffAugConfig
    from hardcse.diffaug.data import nli_data, stage2_dataset

    premises = [f"Premise number {k} of ours" for k in range(8)]
    rows = [
        f"{p}\tIts entailment {k}\tentailment\n{p}\tIts contradiction {k}\tcontradiction"
        for k, p in enumerate(premises)
    ]
    rows[2] = f"{planted[0]}\tIts entailment 2\tentailment\n{planted[0]}\tIts contradiction 2\tcontradiction"
    rows[5] = f"{premises[5]}\t{planted[1]}\tentailment\n{premises[5]}\tIts contradiction 5\tcontradiction"
    (tmp_path / "nli.tsv").write_text("premise\thypothesis\tlabel\n" + "\n".join(rows) + "\n")
    (tmp_path / "wiki.txt").write_text(f"A sentence of ours.\n{planted[0]}\nAnother of ours.\n")
    overrides = [f"nli_files=[{tmp_path / 'nli.tsv'}]", f"unlabeled={tmp_path / 'wiki.txt'}", "stage1.probe_pairs=1"]
    data = nli_data(load_config(DiffAugConfig, overrides=overrides))
    assert len(data.triplets) == 6 and not {planted[0], premises[5]} & {t[0] for t in data.triplets}
    assert sorted(stage2_dataset(load_config(DiffAugConfig, overrides=overrides), data)["anchor"]) == [
        "A sentence of ours.",
        "Another of ours.",
    ]
    counts = data.decontamination.summary()["sources"]
    assert counts["nli"] == {"checked": 16, "exact": 2, "near": 1, "dropped": 3}
    assert counts["unlabeled"] == {"checked": 3, "exact": 1, "near": 0, "dropped": 1}
    off = nli_data(load_config(DiffAugConfig, overrides=[*overrides, "decontamination.enabled=false"]))
    assert len(off.triplets) == 8


def test_simcse_and_art_mixing_drop_matching_rows_of_user_files(tmp_path, planted, tiny_encoder_dir, capsys):
    from hardcse.art.config import ArtRunConfig
    from hardcse.art.run import _training_data

    data = tmp_path / "mine.csv"
    data.write_text(
        "sent0,sent1,hard_neg\nA man is tuning an old guitar,One man tunes a guitar,A dog sleeps\n"
        f'"{planted[0]}",A paraphrase,A negative\nThe sky is blue today,The sky looks blue,The sky is green\n'
    )
    out, config = tmp_path / "run", tmp_path / "c.yaml"
    config.write_text("mode: sup\n")
    small = ["training.max_steps=1", "training.batch_size=2", "eval_tasks=[]", f"encoder={tiny_encoder_dir}"]
    assert main(["simcse", "train", "--data", str(data), "--out", str(out), "--config", str(config), *small]) == 0
    assert "decontamination: 1 of 3 rows dropped (1 exact, 0 near" in capsys.readouterr().out
    counts = json.loads((out / "decontamination.json").read_text())["sources"]
    assert counts == {str(data): {"checked": 3, "exact": 1, "near": 0, "dropped": 1}}
    assert json.loads((out / "decontaminated.jsonl").read_text())["row"] == 2

    round_dir = tmp_path / "round_0"
    round_dir.mkdir()
    (round_dir / "triplets.csv").write_text("sent0,sent1,hard_neg\nsynthetic a,synthetic b,synthetic c\n")
    triplets, dropped = _training_data(ArtRunConfig(mix_triplets=str(data), mix_examples=2), round_dir)
    assert [t[0] for t in triplets] == ["synthetic a", "A man is tuning an old guitar", "The sky is blue today"]
    assert dropped == {"mix_triplets": {"checked": 3, "exact": 1, "near": 0, "dropped": 1}}
