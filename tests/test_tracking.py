"""Experiment trackers (``report_to``): what a run writes to TensorBoard and MLflow, read back with their own
readers; a resumed folder continues its tracker run; a bad or failing tracker."""

import json
import logging
import sqlite3

import pytest
import yaml

from hardcse.cli import main as hardcse
from hardcse.config import load_config
from hardcse.encoder.simcse import SimCSEConfig
from hardcse.tracking.callbacks import Guarded
from hardcse.tracking.run import Tracking
from hardcse.tracking.values import flatten, markdown_table
from test_art_run import run_config  # noqa: F401 - the tiny ART run's config, a fixture

pytest.importorskip("tensorboard")
pytest.importorskip("mlflow")


def scalars(folder) -> dict[str, list[int]]:
    """Every scalar tag of the TensorBoard event files in ``folder`` (one TensorBoard run), with its steps."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    events.Reload()
    out = {tag: [e.step for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}
    # add_text writes tensors: their tags with the steps too
    out |= {tag: [e.step for e in events.Tensors(tag)] for tag in events.Tags()["tensors"]}
    return out


def mlflow_store(runs_dir):
    return sqlite3.connect(runs_dir / "mlflow.db")


def test_a_simcse_run_reports_its_training_job_to_tensorboard_and_mlflow_and_a_resume_continues(
    tiny_encoder_dir, triplet_file, tmp_path
):
    runs = tmp_path / "runs"
    out = runs / "sup"
    args = ["simcse", "train", "--data", str(triplet_file), "--out", str(out), f"encoder={tiny_encoder_dir}"]
    small = ["mode=sup", "training.max_steps=3", "training.eval_steps=1", "training.batch_size=4"]
    assert (
        hardcse(
            [*args, "--config", "simcse-sup", *small, "eval_tasks=[STS-B-dev]", "--report-to", "tensorboard", "mlflow"]
        )
        == 0
    )
    assert load_config(SimCSEConfig, out / "config.yaml").report_to == ["tensorboard", "mlflow"]
    # TensorBoard: the Trainer's own integration, one TensorBoard run for the job (its folder in the run: model)
    job = scalars(out / "tensorboard" / "model")
    assert job["train/loss"] and job["eval/sts-dev_spearman"] == [1, 2, 3] and "train/learning_rate" in job
    own = scalars(out / "tensorboard" / "run")  # hardcse's own: the finished stages' numbers
    assert "eval/scores/STS-B-dev" in own and "config/text_summary" in own  # the config, as text
    # MLflow: one run named after the folder with the config as parameters, the job a nested run with its curves
    with mlflow_store(runs) as db:
        [(parent, name)] = db.execute("select run_uuid, name from runs where name = 'sup'").fetchall()
        params = dict(db.execute("select key, value from params where run_uuid = ?", (parent,)).fetchall())
        assert params["mode"] == "sup" and params["training.max_steps"] == "3"
        [child] = [
            r for (r,) in db.execute("select run_uuid from tags where key='mlflow.parentRunId' and value=?", (parent,))
        ]
        steps = db.execute("select step from metrics where run_uuid = ? and key = 'loss'", (child,)).fetchall()
        assert len(steps) >= 1
        dev = db.execute("select step from metrics where run_uuid = ? and key = 'eval_sts-dev_spearman'", (child,))
        assert sorted(s for (s,) in dev) == [1, 2, 3]
        assert db.execute(
            "select count(*) from metrics where run_uuid = ? and key like 'eval/%'", (parent,)
        ).fetchone()[0]
    # a resumed folder continues the same MLflow run: still one run of that name
    assert hardcse([*args, "--resume", *small, "eval_tasks=[STS-B-dev]", "--report-to", "mlflow"]) == 0
    with mlflow_store(runs) as db:
        assert db.execute("select count(*) from runs where name = 'sup'").fetchone()[0] == 1
        assert db.execute("select status from runs where run_uuid = ?", (parent,)).fetchone()[0] == "FINISHED"


def test_an_art_run_reports_rl_steps_completions_rounds_and_plots(run_config, tmp_path):  # noqa: F811
    run = tmp_path / "runs" / "tiny"
    config = yaml.safe_load(run_config.read_text())
    run_config.write_text(yaml.safe_dump(config | {"rounds": 1, "report_to": ["tensorboard"]}))
    assert hardcse(["art", "run", "--config", str(run_config), "--out", str(run)]) == 0
    own = scalars(run / "tensorboard" / "run")
    for part in ("reward", "r1", "r2", "kl", "parse_failure_rate", "share_r1"):
        assert own[f"round_1/rl/{part}"] == [1, 2], part  # every RL step
    assert own["round_1/rl/completions/text_summary"] == [1, 2]  # the sampled completions, a table each save
    assert own["rounds/eval/scores/STS-B-dev"] == [0, 1]  # round 0: the starting encoder
    assert "rounds/synthesis/kept" in own and any(t.startswith("rounds/heldout/") for t in own)
    assert scalars(run / "tensorboard" / "round_1" / "encoder")["train/loss"]  # the round's training job
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run / "tensorboard" / "run"), size_guidance={"images": 0})
    events.Reload()
    # the run folder's plots, at the end: the report's and the round's RL curves
    assert set(events.Tags()["images"]) >= {
        "plots/sts_per_round",
        "plots/reward_per_round",
        "round_1/generator/rl_curves",
    }


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "[tensorbord]",
            "report_to=[tensorbord]: 'tensorbord' is not a tracker; choose from tensorboard, mlflow, wandb, trackio",
        ),
        ("[mlflow, mlflow]", "names a tracker twice"),
    ],
)
def test_a_wrong_tracker_is_one_line_naming_the_key(value, message, tiny_encoder_dir, triplet_file, tmp_path, capsys):
    out = tmp_path / "run"
    args = ["simcse", "train", "--config", "simcse-sup", "--data", str(triplet_file), "--out", str(out)]
    assert hardcse([*args, f"report_to={value}"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize("tracker", ["tensorboard", "mlflow", "wandb", "trackio"])
def test_a_tracker_not_installed_names_the_extra(tracker, monkeypatch, tmp_path, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == tracker else real(name, *a))
    out = tmp_path / "run"
    assert hardcse(["simcse", "train", "--config", "simcse-sup", "--out", str(out), "--report-to", tracker]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"error: override report_to=[{tracker}]: {tracker} is not installed; pip install 'hardcse[tracking]' "
        f"(or pip install {tracker})\n"
    )
    assert not out.exists()


def test_report_to_none_on_the_command_line_turns_the_config_off(tmp_path):
    import argparse

    from hardcse.cli.common import run_config as cli_config

    path = tmp_path / "c.yaml"
    path.write_text("report_to: [tensorboard]\n")
    args = argparse.Namespace(
        config=str(path), resume=False, out=str(tmp_path / "o"), overrides=[], report_to=["none"], run_command="x"
    )
    assert cli_config(SimCSEConfig, args).report_to == []


class Failing:
    name = "broken"

    def metrics(self, values, step, job=None):
        raise OSError("disk full")


class Recording:
    name = "recording"

    def __init__(self):
        self.seen = []

    def metrics(self, values, step, job=None):
        self.seen.append((values, step))


def test_a_failing_tracker_is_dropped_with_a_warning_and_the_others_go_on(caplog):
    recording = Recording()
    tracking = Tracking(None, [Failing(), recording])
    with caplog.at_level(logging.WARNING):
        tracking.metrics({"a": {"b": 1.0, "text": "x", "missing": None}, "nan": float("nan")}, 3, prefix="p")
        tracking.metrics({"c": 2}, 4)
    assert "broken failed to log metrics (disk full); the run goes on without it" in caplog.text
    assert [b.name for b in tracking.backends] == ["recording"]
    assert recording.seen == [({"p/a/b": 1.0}, 3), ({"c": 2}, 4)]  # numbers only, nested keys joined by /


def test_a_failing_trainer_integration_is_dropped_and_training_goes_on(caplog):
    class Broken:
        def on_log(self, args, state, control, **kwargs):
            raise RuntimeError("store locked")

    guarded = Guarded(Broken(), "mlflow")
    with caplog.at_level(logging.WARNING):
        assert guarded.on_log(None, None, None, logs={}) is None
        assert guarded.on_log(None, None, None, logs={}) is None  # dropped: no second warning
    assert caplog.text.count("mlflow failed in the Trainer (on_log: store locked)") == 1


def test_flatten_and_the_markdown_table_by_hand():
    assert flatten({"a": {"b": 1, "c": {"d": 2}}, "e": 3}) == {"a.b": 1, "a.c.d": 2, "e": 3}
    table = markdown_table([{"x": 1, "y": "a|b"}, {"x": 2, "z": "two\nlines"}])
    assert table.splitlines() == ["| x | y | z |", "|---|---|---|", "| 1 | a\\|b |  |", "| 2 |  | two lines |"]


def test_the_run_ids_are_saved_at_once_so_a_killed_run_resumes_the_same_tracker_run(tmp_path):
    import json

    from hardcse.tracking.run import tracking

    folder = tmp_path / "runs" / "r"
    folder.mkdir(parents=True)
    with pytest.raises(RuntimeError), tracking(folder, ["mlflow"], {"seed": 1}) as opened:
        first = json.loads((folder / "tracking.json").read_text())["mlflow"]["run_id"]  # before any stage ends
        opened.metrics({"x": 1.0}, 1)
        raise RuntimeError("killed")
    with mlflow_store(tmp_path / "runs") as db:
        assert db.execute("select status from runs where run_uuid = ?", (first,)).fetchone()[0] == "FAILED"
    with tracking(folder, ["mlflow"], {"seed": 1}) as opened:
        opened.metrics({"x": 2.0}, 2)
    with mlflow_store(tmp_path / "runs") as db:
        assert db.execute("select run_uuid, status from runs").fetchall() == [(first, "FINISHED")]
        assert sorted(db.execute("select step, value from metrics where key = 'x'")) == [(1, 1.0), (2, 2.0)]


def test_a_tuned_generator_copied_from_the_cache_still_reports_its_rl_steps(tiny_tune_overrides, tmp_path, monkeypatch):
    """reuse: true copies a kept tuning (no RL runs): its RL log and completions go to the trackers all the same,
    and report_to is no part of the kept tuning's key; a longer tuning that continues a kept one reports both."""
    from hardcse.art.config import TuneConfig
    from hardcse.art.rl.tuning import tune_generator
    from hardcse.tracking.run import tracking

    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    overrides = [*tiny_tune_overrides, "generator.max_new_tokens=8", "rl.steps=2", "rl.save_every=1", "reuse=true"]
    tune_generator(load_config(TuneConfig, overrides=overrides), tmp_path / "w1", tmp_path / "g1")
    run = tmp_path / "run"
    run.mkdir()
    with tracking(run, ["tensorboard"], {}) as trackers:
        tune_generator(
            load_config(TuneConfig, overrides=[*overrides, "report_to=[tensorboard]"]),
            run / "rl",
            run / "g",
            tracking=trackers,
        )
    assert len(list((tmp_path / "cache" / "tuned").iterdir())) == 1  # copied, not tuned again
    own = scalars(run / "tensorboard" / "run")
    assert own["rl/reward"] == [1, 2] and own["rl/completions/text_summary"] == [1, 2]
    # a longer tuning continues from the kept 2 steps: their curves, then its third step's
    longer = tmp_path / "longer"
    longer.mkdir()
    with tracking(longer, ["tensorboard"], {}) as trackers:
        config = load_config(TuneConfig, overrides=[*overrides, "rl.steps=3"])
        tune_generator(config, longer / "rl", longer / "g", tracking=trackers)
    assert scalars(longer / "tensorboard" / "run")["rl/reward"] == [1, 2, 3]


def test_mlflow_telemetry_is_off_unless_the_user_turns_it_on():
    import os

    import hardcse  # noqa: F401 - importing it sets the default

    assert os.environ["MLFLOW_DISABLE_TELEMETRY"] == "true" and os.environ["HF_HUB_DISABLE_TELEMETRY"] == "1"
    from mlflow.telemetry.utils import is_telemetry_disabled

    assert is_telemetry_disabled()


def test_a_stage_reports_its_json_or_its_folders_eval_json_and_rounds_make_a_curve(tmp_path):
    import json

    from hardcse.run_folder import report_stage

    recording = Recording()
    trackers = Tracking(tmp_path, [recording])
    (tmp_path / "seed-1").mkdir()
    (tmp_path / "seed-1" / "eval.json").write_text(json.dumps({"scores": {"STS-B-dev": 80.5}, "pairs": [1, 2]}))
    (tmp_path / "eval.json").write_text(json.dumps({"scores": {"STS-B": 81.0}}))
    report_stage("a.seed-1", tmp_path / "seed-1", trackers)
    report_stage("round_2.eval", tmp_path / "eval.json", trackers)
    report_stage("model", tmp_path / "nothing-here", trackers)
    report_stage("a.seed-1", tmp_path / "seed-1", Tracking())  # a run reporting nowhere
    assert recording.seen == [
        ({"a.seed-1/scores/STS-B-dev": 80.5}, 0),
        ({"rounds/eval/scores/STS-B": 81.0}, 2),
    ]


def test_an_mlflow_server_that_does_not_answer_is_a_warning_at_once(tmp_path, monkeypatch, caplog):
    """MLflow retries an unanswered request for ~100 s; the store is tried once, up front, and dropped at once."""
    import time

    from hardcse.tracking.run import tracking

    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")  # the discard port: nothing listens
    start = time.perf_counter()
    with caplog.at_level(logging.WARNING), tracking(tmp_path, ["mlflow"], {"seed": 1}) as opened:
        assert not opened  # the run goes on without it
    assert time.perf_counter() - start < 20
    assert caplog.text.count("mlflow could not start") == 1
    assert "MLFLOW_HTTP_REQUEST_MAX_RETRIES" not in __import__("os").environ  # the one try's setting is undone


def wandb_offline_runs(folder) -> list[dict]:
    """Every W&B offline run under ``folder/wandb``, read from its ``.wandb`` file: W&B's protobuf records in the
    LevelDB log format (a 7-byte file header, then 32 KiB blocks of records, each a 7-byte header and its bytes,
    split into first/middle/last pieces across blocks). wandb ships no reader of its own any more."""
    from wandb.proto import wandb_internal_pb2 as pb

    runs = []
    for path in sorted((folder / "wandb").glob("offline-run-*/run-*.wandb")):
        data = path.read_bytes()
        assert data[:4] == b":W&B"
        run = {"folder": path.parent.name, "history": [], "tables": set()}
        pos, piece = 7, b""
        while pos + 7 <= len(data):
            if 32768 - pos % 32768 < 7:  # a block's tail too short for a header is padding
                pos += 32768 - pos % 32768
                continue
            length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
            piece, pos = piece + data[pos + 7 : pos + 7 + length], pos + 7 + length
            if kind not in (1, 4):  # 1: a whole record, 4: a record's last piece; 2, 3 begin and continue one
                continue
            record, piece = pb.Record.FromString(piece), b""
            if record.WhichOneof("record_type") == "run":
                run |= {"id": record.run.run_id, "name": record.run.display_name, "group": record.run.run_group}
            elif record.WhichOneof("record_type") == "history":
                row: dict = {}
                for item in record.history.item:  # a table's fields come as nested keys: [its key, field]
                    key, *field = [item.key] if item.key else list(item.nested_key)
                    if field:
                        row.setdefault(key, {})["/".join(field)] = json.loads(item.value_json)
                    else:
                        row[key] = json.loads(item.value_json)
                run["history"].append(row)
                run["tables"] |= {k for k, v in row.items() if isinstance(v, dict) and v.get("_type") == "table-file"}
        runs.append(run)
    return runs


def trackio_runs(project: str = "hardcse") -> dict[str, dict]:
    """Trackio's local store (``$TRACKIO_DIR``, the tests' own): each run's id and logged rows, by run name."""
    import os

    runs: dict[str, dict] = {}
    with sqlite3.connect(os.path.join(os.environ["TRACKIO_DIR"], f"{project}.db")) as db:
        for run_id, name, step, metrics in db.execute("select run_id, run_name, step, metrics from metrics"):
            run = runs.setdefault(name, {"ids": set(), "rows": []})
            run["ids"].add(run_id)
            run["rows"].append((step, json.loads(metrics)))
    return runs


@pytest.mark.slow  # a whole run on tiny models (10 s and more): make test, not test-fast
def test_an_art_run_reports_each_job_as_its_own_wandb_and_trackio_run_and_a_resume_continues_them(
    run_config,  # noqa: F811
    tmp_path,
):
    pytest.importorskip("wandb")
    pytest.importorskip("trackio")
    run = tmp_path / "runs" / "tiny-w"
    config = yaml.safe_load(run_config.read_text())
    run_config.write_text(yaml.safe_dump(config | {"rounds": 1}))
    trackers = ["--report-to", "wandb", "trackio", "tensorboard", "mlflow"]
    assert hardcse(["art", "run", "--config", str(run_config), "--out", str(run), *trackers]) == 0
    assert scalars(run / "tensorboard" / "run")["round_1/rl/reward"] == [1, 2]  # all four at once
    runs = {r["name"]: r for r in wandb_offline_runs(run)}
    assert set(runs) == {"tiny-w", "tiny-w/round_1/rl", "tiny-w/round_1/encoder"}  # the folder's run and a run a job
    assert {r["group"] for r in runs.values()} == {"tiny-w"}
    rl = runs["tiny-w/round_1/rl"]["history"]
    for part in ("reward", "r1", "r2", "kl", "parse_failure_rate", "share_r1"):  # the RL parts, at each step
        assert [(row["step"], part) for row in rl if f"round_1/rl/{part}" in row] == [(1, part), (2, part)]
    assert runs["tiny-w/round_1/rl"]["tables"] == {"round_1/rl/completions"}
    [table, *_] = [row["round_1/rl/completions"] for row in rl if "round_1/rl/completions" in row]
    folder = run / "wandb" / runs["tiny-w/round_1/rl"]["folder"] / "files"
    written = json.loads((folder / table["path"]).read_text())
    assert {"anchor", "response", "reward"} <= set(written["columns"]) and len(
        written["data"]
    ) == 4  # the step's four rollouts
    assert any("train/loss" in row for row in runs["tiny-w/round_1/encoder"]["history"])  # the Trainer's logs
    own = runs["tiny-w"]["history"]
    assert sorted(row["step"] for row in own if "rounds/eval/scores/STS-B-dev" in row) == [0, 1]
    assert any("plots/sts_per_round" in row for row in own)  # the plots, as images
    tracked = trackio_runs()
    folder = f"tiny-w-{json.loads((run / 'tracking.json').read_text())['trackio']['suffix']}"  # unique to this folder
    assert {name for name in tracked if name.startswith("tiny-w")} == {n.replace("tiny-w", folder) for n in runs}
    trackio_rl = tracked[f"{folder}/round_1/rl"]["rows"]
    assert [s for s, row in trackio_rl if "round_1/rl/reward" in row] == [1, 2]
    assert [s for s, row in trackio_rl if "round_1/rl/completions" in row] == [1, 2]
    assert [s for s, row in tracked[folder]["rows"] if "rounds/eval/scores/STS-B-dev" in row] == [0, 1]
    assert any("train/loss" in row for _, row in tracked[f"{folder}/round_1/encoder"]["rows"])
    # a resumed folder continues the same runs: W&B's folder run keeps its id (offline, a second folder of that
    # id), Trackio's keeps its id
    ids = json.loads((run / "tracking.json").read_text())
    assert hardcse(["art", "run", "--out", str(run), "--resume", *trackers]) == 0
    assert json.loads((run / "tracking.json").read_text())["wandb"] == ids["wandb"]
    again = [r for r in wandb_offline_runs(run) if r["name"] == "tiny-w"]
    assert len(again) == 2 and {r["id"] for r in again} == {ids["wandb"]["ids"][""]}
    assert trackio_runs()[folder]["ids"] == tracked[folder]["ids"]
    assert not any("wandb" in key for row in again[1]["history"] for key in row)  # W&B's own copies not re-sent


def test_a_command_that_stops_on_an_error_ends_its_tracker_runs_failed_without_plots(tmp_path):
    from hardcse.errors import HardcseError
    from hardcse.run_folder import RunFolder

    runs = tmp_path / "runs"
    folder = RunFolder(runs / "broken", SimCSEConfig(report_to=["mlflow"]), command="simcse train")

    def fail(partial):
        partial.mkdir()
        (partial / "plot.png").write_bytes(b"not sent")
        raise HardcseError("a user mistake found mid-run")

    with pytest.raises(HardcseError), folder as run:
        run.stage("model", "model", fail)
    with mlflow_store(runs) as db:
        assert db.execute("select status from runs where name = 'broken'").fetchall() == [("FAILED",)]
    assert not list(runs.rglob("*.png"))  # no plot sent (the folder itself is removed: nothing of it finished)


def test_the_trackers_are_a_value_not_process_wide_state(tmp_path):
    """No module holds an open tracker for others to find: a job reports only to the trackers it is handed, and a
    run folder's trackers are gone once it closes."""
    import hardcse.tracking.run as run_module
    from hardcse.run_folder import RunFolder

    assert not [name for name, value in vars(run_module).items() if isinstance(value, Tracking)]
    config = load_config(SimCSEConfig, overrides=["report_to=[tensorboard]"])
    with RunFolder(tmp_path / "run", config, command="test") as folder:
        assert [b.name for b in folder.tracking.backends] == ["tensorboard"]
    assert not folder.tracking
