"""``hardcse eval --backend mteb``: MTEB's own STS evaluator on the vendored data gives the built-in suite's scores."""

import json
import sys

import pytest

from hardcse.cli import main
from hardcse.data.sts import ALL_TASKS, load_sts_task
from hardcse.resources import BUNDLED_ENCODER

pytestmark = pytest.mark.slow  # MTEB's evaluator on the seven tasks: `make test` runs it, `make test-fast` does not

pytest.importorskip("mteb")  # the optional extra (`make install` installs it)


def test_mteb_gives_the_seven_scores_of_the_builtin_suite(tmp_path, capsys, tiny_encoder_dir):
    # a tiny encoder built here: the same seven tasks and sentences, a fraction of the bundled encoder's time
    ours, theirs = tmp_path / "hardcse", tmp_path / "mteb"
    assert main(["eval", "--model", str(tiny_encoder_dir), "--out", str(ours)]) == 0
    assert main(["eval", "--model", str(tiny_encoder_dir), "--backend", "mteb", "--out", str(theirs)]) == 0
    a = json.loads((ours / "eval.json").read_text())
    b = json.loads((theirs / "eval.json").read_text())
    assert list(b["scores"]) == ALL_TASKS and b["backend"].startswith("mteb 2.")
    for task in ALL_TASKS:
        assert abs(a["scores"][task] - b["scores"][task]) < 0.01, task
    assert abs(a["avg7"] - b["avg7"]) < 0.01
    # MTEB's own result files: SentEval's SICK-R under its own name, STS-B test and dev in one STSBenchmark file
    [folder] = (theirs / "mteb" / "results").glob("*/*")
    files = {p.name for p in folder.glob("*.json")}
    assert {"STS12.json", "STSBenchmark.json", "SICK-R-SentEval.json"} <= files and "SICK-R.json" not in files
    stsb = json.loads((folder / "STSBenchmark.json").read_text())
    assert set(stsb["scores"]) == {"test", "validation"}
    assert stsb["scores"]["validation"][0]["cosine_spearman"] == pytest.approx(b["scores"]["STS-B-dev"] / 100)
    assert "mteb" in capsys.readouterr().out


def test_sick_r_full_is_mtebs_sick_r_and_mistakes_are_one_line(tmp_path, capsys, monkeypatch):
    from hardcse.evaluation.mteb_backend import mteb_tasks

    assert len(load_sts_task("SICK-R-full")) == 9927 and len(load_sts_task("SICK-R")) == 4927
    [full, senteval] = mteb_tasks(["SICK-R-full", "SICK-R"])
    assert (full.metadata.name, len(full.dataset["test"])) == ("SICK-R", 9927)
    assert (senteval.metadata.name, len(senteval.dataset["test"])) == ("SICK-R-SentEval", 4927)
    assert main(["eval", "--model", BUNDLED_ENCODER, "--backend", "mteb", "--tasks", "NoSuchTask"]) == 2
    assert "unknown task 'NoSuchTask': neither hardcse's" in capsys.readouterr().err
    assert main(["eval", "--model", BUNDLED_ENCODER, "--tasks", "NoSuchTask"]) == 2
    assert "(more with --backend mteb)" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "mteb", None)  # as if the extra were not installed
    assert main(["eval", "--model", BUNDLED_ENCODER, "--backend", "mteb", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'hardcse[mteb]'" in err and not (tmp_path / "x").exists()
