"""The evidence pages' records still describe what their settings build: every finished record of ART's evidence
(benchmarks/art_rounds.py) and of the hard-and-correct variants (benchmarks/hard_correct.py) ran exactly the config
that its setting's config file, pins and seed overrides build today. A change of a shipped config or a default
fails here, before it orphans a record: pin the value the records ran with (art_rounds.AS_RUN, hard_correct.AS_RUN)."""

import re
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))

import art_rounds  # noqa: E402
import hard_correct  # noqa: E402

EVIDENCE_RECORDS = sorted(p for p in art_rounds.RECORDS.iterdir() if art_rounds.is_finished(p))


def test_there_are_records_to_check():
    assert len(EVIDENCE_RECORDS) >= 30
    assert any(hard_correct.RECORDS.glob("*-seed-42/config.yaml"))


@pytest.mark.parametrize("record", EVIDENCE_RECORDS, ids=lambda p: p.name)
def test_each_evidence_record_ran_what_its_setting_builds_today(record):
    name, seed = re.fullmatch(r"(.+)-seed-(\d+)", record.name).groups()
    assert name in art_rounds.RUNS, f"{record.name}: a record of no setting in art_rounds.RUNS"
    assert art_rounds.config_changes(art_rounds.RUNS[name], art_rounds.seed_overrides(name, int(seed)), record) == []


def test_each_hard_correct_variant_builds_what_its_record_ran(capsys):
    hard_correct.check()  # exits with the differences where a variant builds another config than its record's


def test_a_changed_config_is_caught(tmp_path):
    record = tmp_path / "cpu-full-seed-42"
    record.mkdir()
    ran = yaml.safe_load((art_rounds.RECORDS / "cpu-full-seed-42" / "config.yaml").read_text())
    ran["rl"]["rollout_engine"] = "auto"  # as if the record had run today's configs/cpu-full.yaml unpinned
    (record / "config.yaml").write_text(yaml.safe_dump(ran))
    changes = art_rounds.config_changes(art_rounds.RUNS["cpu-full"], art_rounds.seed_overrides("cpu-full", 42), record)
    assert len(changes) == 1 and changes[0].startswith("rl:") and "'rollout_engine': 'auto'" in changes[0]
