"""``hardcse assay``: triplet files compared by the encoders they train on one fixed schedule, over seeds."""

import json
import re

import pytest

from hardcse.cli import main


@pytest.fixture
def two_files(triplet_file, tmp_path):
    """The fixture's triplets, and the same anchors with their negatives as positives (a worse file)."""
    rows = triplet_file.read_text().splitlines()
    swapped = ["sent0,sent1,hard_neg"]
    for row in rows[1:]:
        anchor, positive, negative = row.split('","')
        swapped.append(f'{anchor}","{negative.rstrip(chr(34))}","{positive}"')
    worse = tmp_path / "worse" / "triplets.csv"
    worse.parent.mkdir()
    worse.write_text("\n".join(swapped) + "\n")
    return triplet_file, worse


def assay(tiny_encoder_dir, files, out, *extra):
    return main(
        [
            "assay",
            "--data",
            *map(str, files),
            "--seeds",
            "1",
            "2",
            "--out",
            str(out),
            f"encoder={tiny_encoder_dir}",
            "eval_tasks=[STS-B-dev]",
            "resamples=100",
            "training.batch_size=4",
            *extra,
        ]
    )


@pytest.mark.slow  # a whole run on tiny models (10 s and more): make test, not test-fast
def test_each_file_trains_the_same_fixed_schedule_and_is_compared_with_the_first(
    tiny_encoder_dir, two_files, tmp_path, capsys
):
    from sentence_transformers import SentenceTransformer

    from hardcse.data.sts import DEV_TASK, load_sts_task
    from hardcse.devices import resolve_device
    from hardcse.evaluation.sts import evaluate_sts

    out = tmp_path / "assay"
    assert assay(tiny_encoder_dir, two_files, out, "rows=6", "keep_models=true") == 0
    manifest = json.loads((out / "manifest.json").read_text())
    labels = list(manifest["assay"]["files"])  # the two files' names end alike: their folders tell them apart
    assert labels[1] == "worse.triplets" and labels[0].endswith(".triplets")
    assert f"| {labels[1]} − {labels[0]} |" in capsys.readouterr().out
    assert manifest["assay"]["rows"] == 6 and manifest["assay"]["steps"] == 2  # ceil(6 / 4): one pass
    assert manifest["runs"][0]["machine"]["cpu_flags"] is not None
    for label in labels:
        for seed in (1, 2):
            record = json.loads((out / label / f"seed-{seed}" / "eval.json").read_text())
            training = record["training"]
            assert training["steps"] == 2 and training["rows"] == 6 and training["seed"] == seed
            assert training["best_step"] is None and training["dev_history"] == []  # no dev gating
            # what the assay reports is what a fresh load of what it saved computes (on the device the assay used:
            # a GPU's encodings differ from the CPU's in the last digits)
            model = SentenceTransformer(str(out / label / f"seed-{seed}" / "model"), device=str(resolve_device("auto")))
            fresh = evaluate_sts(model, [load_sts_task(DEV_TASK)], show_progress=False).scores[DEV_TASK]
            assert record["scores"][DEV_TASK] == pytest.approx(fresh, abs=1e-9)
    comparison = json.loads((out / "assay.json").read_text())
    assert (out / "assay.md").is_file() and (out / "assay.png").is_file()
    assert labels[0] in json.dumps(comparison) and labels[1] in json.dumps(comparison)
    seed_1 = json.loads((out / labels[0] / "seed-1" / "eval.json").read_text())["scores"][DEV_TASK]
    seed_2 = json.loads((out / labels[0] / "seed-2" / "eval.json").read_text())["scores"][DEV_TASK]
    assert seed_1 != seed_2  # the training seed matters (shuffle), so seeds are worth averaging over


@pytest.mark.slow  # a whole run on tiny models (10 s and more): make test, not test-fast
def test_models_are_not_kept_unless_asked(tiny_encoder_dir, two_files, tmp_path):
    out = tmp_path / "assay"
    assert assay(tiny_encoder_dir, two_files[:1], out, "rows=4") == 0  # one file: its encoders' scores alone
    assert sorted(p.name for p in (out / "triplets" / "seed-1").iterdir()) == ["eval.json"]
    assert "One file: nothing to compare it with" in (out / "assay.md").read_text()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["rows=9"], r"rows=9: .*triplets.csv \(8\) hold fewer rows; set rows <= 8"),
        (["names=[a]"], r"names=\[a\]: 1 names for 2 files; give one per file"),
        (["names=[a, a]"], r"names=\[a, a\]: two files get one label \(a, a\); give names"),
        (["names=['a b', c]"], r"'a b': use letters, digits"),
        (["seeds=[1, 1]"], r"seeds=\[1, 1\]: \[1, 1\]: give one or more distinct training seeds"),
        (["--seeds", "-1"], r"override seeds=\[-1\]: -1: a seed is an integer from 0 to 4294967295"),
        (["--seeds", "4294967296"], r"4294967296: a seed is an integer from 0 to 4294967295"),
    ],
)
def test_mistakes_are_one_line_and_leave_no_folder(tiny_encoder_dir, two_files, tmp_path, capsys, extra, message):
    out = tmp_path / "assay"
    args = ["assay", "--data", *map(str, two_files), "--out", str(out), f"encoder={tiny_encoder_dir}", *extra]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert re.search(message, err), err
    assert not out.exists()


def test_a_missing_file_is_named(tiny_encoder_dir, tmp_path, capsys):
    out = tmp_path / "assay"
    assert main(["assay", "--data", str(tmp_path / "none.csv"), "--out", str(out)]) == 2
    assert "none.csv" in capsys.readouterr().err and not out.exists()


def test_no_data_is_one_line(tmp_path, capsys):
    assert main(["assay", "--out", str(tmp_path / "assay")]) == 2
    err = capsys.readouterr().err
    assert err == "error: no training data: give --data A.csv [B.csv ...] (or data: in the config)\n"
