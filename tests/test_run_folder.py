"""RunFolder stages: what a kill at an awkward moment leaves in the manifest."""

import json
import os
from datetime import datetime

from hardcse.encoder.simcse import SimCSEConfig
from hardcse.run_folder import RunFolder


def test_a_kill_between_the_rename_and_the_manifest_write_still_gives_the_stage_its_time(tmp_path):
    run = tmp_path / "run"
    with RunFolder(run, SimCSEConfig()) as folder:
        folder.stage("make", "out.txt", lambda partial: partial.write_text("done"))
    manifest = json.loads((run / "manifest.json").read_text())
    start = datetime.fromisoformat(manifest["stages"]["make"]["start"])
    # as the manifest stands when the process dies right after os.replace: the output is whole, the entry open
    manifest["stages"]["make"] = {"start": start.isoformat(), "attempts": 1}
    (run / "manifest.json").write_text(json.dumps(manifest))
    os.utime(run / "out.txt", (start.timestamp() + 42, start.timestamp() + 42))

    built = []
    with RunFolder(run, SimCSEConfig(), resume=True) as folder:
        folder.stage("make", "out.txt", built.append)
        folder.stage("make", "out.txt", built.append)  # a closed entry is left as it is
    entry = json.loads((run / "manifest.json").read_text())["stages"]["make"]
    assert built == []  # the whole output is not made again
    assert entry == {
        "start": start.isoformat(),
        "attempts": 1,
        "end": datetime.fromtimestamp(start.timestamp() + 42, start.tzinfo).isoformat(timespec="seconds"),
        "seconds": 42.0,
        "end_from": "output mtime",
    }


def test_a_finished_stage_records_its_end_and_seconds(tmp_path):
    with RunFolder(tmp_path / "run", SimCSEConfig()) as folder:
        folder.stage("make", "out", lambda partial: partial.mkdir())
    entry = json.loads((tmp_path / "run" / "manifest.json").read_text())["stages"]["make"]
    assert entry["attempts"] == 1 and entry["seconds"] >= 0 and entry["end"] >= entry["start"]
    assert (tmp_path / "run" / "out").is_dir() and not (tmp_path / "run" / "out.partial").exists()


def test_each_start_names_the_commit_it_ran(tmp_path, monkeypatch):
    """A run resumed after a commit ran two codes: the manifest keeps the first commit on top and each start's own."""
    import hardcse.run_folder as run_folder

    run = tmp_path / "run"
    monkeypatch.setattr(run_folder, "git_commit", lambda: "a" * 40)
    with RunFolder(run, SimCSEConfig()) as folder:
        folder.stage("one", "one.txt", lambda partial: partial.write_text("1"))
    monkeypatch.setattr(run_folder, "git_commit", lambda: "b" * 40)
    with RunFolder(run, SimCSEConfig(), resume=True) as folder:
        folder.stage("two", "two.txt", lambda partial: partial.write_text("2"))
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["git_commit"] == "a" * 40
    assert [start["git_commit"] for start in manifest["runs"]] == ["a" * 40, "b" * 40]
