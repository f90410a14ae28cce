"""JSON Lines written by hardcse stay one record a line for any reader; logs survive a torn last line; a folder
replaced while a kill may strike is never lost."""

import json

import pytest

from hardcse.atomic import recover_dir, replace_dir
from hardcse.data.jsonl import jsonl_text, read_jsonl, read_jsonl_log, split_lines
from hardcse.errors import HardcseError

AWKWARD = ["line\u2028separator", "paragraph\u2029separator", "next\x85line", "form\x0cfeed", 'tab\tand "quote"']


def test_split_lines_splits_on_newline_only():
    assert split_lines("a\u2028b\nc\r\nd") == ["a\u2028b", "c", "d"]
    assert split_lines("a\n\nb\n") == ["a", "", "b"]
    assert split_lines("") == [] and split_lines("\n") == [""]
    assert split_lines("a\r\nb", keepends=True) == ["a\r\n", "b"]


def test_written_jsonl_is_one_record_a_line_for_every_reader(tmp_path):
    records = [{"anchor": text, "n": i} for i, text in enumerate(AWKWARD)]
    path = tmp_path / "synthetic.jsonl"
    path.write_text(jsonl_text(records), encoding="utf-8")
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) == len(records)  # even str.splitlines sees one line per record
    assert [json.loads(line) for line in text.splitlines()] == records
    assert read_jsonl(path) == records
    assert "é" in jsonl_text([{"t": "café"}])  # non-ASCII text stays readable


def test_a_torn_last_line_of_a_log_is_dropped_and_counted(tmp_path):
    path = tmp_path / "rl_log.jsonl"
    path.write_text(jsonl_text([{"step": 1}, {"step": 2}]) + '{"step": 3, "rew', encoding="utf-8")
    assert read_jsonl_log(path) == ([{"step": 1}, {"step": 2}], 1)
    with pytest.raises(HardcseError, match=r"rl_log\.jsonl:3: not valid JSON"):
        read_jsonl(path)  # a file that is not a log is read strictly
    path.write_text(jsonl_text([{"step": 1}]) + '{"step": 2}', encoding="utf-8")  # complete, newline missing
    assert read_jsonl_log(path) == ([{"step": 1}, {"step": 2}], 0)
    path.write_text('{"step": 1\n{"step": 2}\n', encoding="utf-8")  # a bad line in the middle is not torn
    with pytest.raises(HardcseError, match=r":1: not valid JSON"):
        read_jsonl_log(path)


def _folder(path, content):
    path.mkdir()
    (path / "state.json").write_text(content)
    return path


@pytest.mark.parametrize("killed_after", ["nothing", "old moved aside", "new in place"])
def test_a_replaced_folder_is_complete_whenever_the_kill_comes(tmp_path, killed_after):
    target = _folder(tmp_path / "checkpoint", "step 1")
    new = _folder(tmp_path / "checkpoint.tmp", "step 2")
    old = tmp_path / "checkpoint.old"
    # replay replace_dir's steps up to the kill
    if killed_after in ("old moved aside", "new in place"):
        target.rename(old)
    if killed_after == "new in place":
        new.rename(target)
    recovered = recover_dir(target)
    expected = "step 2" if killed_after == "new in place" else "step 1"
    assert recovered == target and (target / "state.json").read_text() == expected and not old.exists()


def test_replace_dir_swaps_in_the_new_folder(tmp_path):
    target = _folder(tmp_path / "checkpoint", "step 1")
    replace_dir(_folder(tmp_path / "checkpoint.tmp", "step 2"), target)
    assert (target / "state.json").read_text() == "step 2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint"]
    assert recover_dir(tmp_path / "never") is None


def test_resume_skips_a_checkpoint_the_kill_left_half_written(tmp_path):
    from hardcse.training import last_complete_checkpoint

    for step, complete in ((2, True), (10, True), (12, False)):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "model.safetensors").write_text("weights")
        if complete:
            (folder / "trainer_state.json").write_text("{}")  # the Trainer writes it last
    assert last_complete_checkpoint(tmp_path) == str(tmp_path / "checkpoint-10")  # by number, not by name
    assert not (tmp_path / "checkpoint-12").exists()
    assert last_complete_checkpoint(tmp_path / "none") is None
