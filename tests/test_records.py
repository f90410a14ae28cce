"""Every figure a user reads has its record (issue 43): each top-level benchmarks/results/*.md names the machine
it came from (the CPU's flags, or says the machine was not recorded, or that any machine gives the same), a date and
the command that made it; and benchmarks/lib/provenance.py, which the scripts use to name the machine, holds the
CPU's flags."""

import importlib.util
import json
import re
from pathlib import Path

import pytest

from hardcse.machine import cpu_info

ROOT = Path(__file__).resolve().parents[1]
RECORDS = sorted((ROOT / "benchmarks" / "results").glob("*.md"))
# a CPU flag that changes which kernels run (hardcse.machine.KERNEL_FLAGS, and ARM's)
FLAG = r"\b(?:avx2|avx512\w*|avx_vnni|amx\w*|fma|neon|asimd\w*|sve\w*)\b"
FLAGS = re.compile(rf"\bflags\b[^\n]*?{FLAG}", re.I)
NOT_RECORDED = re.compile(r"machine not recorded|machine: not recorded|machine: any\b", re.I)
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
INDENTED = re.compile(r"^(?: {4}|\t)(.+)$", re.M)
# a command, not a path: a benchmark script run by python or bash, or a hardcse command (a venv's too)
COMMAND = re.compile(r"(?:^|\s)(?:python\S*|bash|sh) (?:-\S+ )*benchmarks/\S+\.(?:py|sh)\b|(?:^|[\s/])hardcse ")


def _load(name: str) -> object:
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "lib" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _table_flags(text: str) -> bool:
    """A Markdown table with a column whose header names flags and a row whose cell there holds one."""
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        if not (line.startswith("|") and re.fullmatch(r"\|(?:\s*:?-+:?\s*\|)+", lines[i + 1].strip())):
            continue
        columns = [j for j, cell in enumerate(line.split("|")) if re.search(r"\bflags\b", cell, re.I)]
        for row in lines[i + 2 :]:
            if not row.startswith("|"):
                break
            cells = row.split("|")
            if any(j < len(cells) and re.search(FLAG, cells[j], re.I) for j in columns):
                return True
    return False


def missing(text: str) -> list[str]:
    """What of machine, date and command a record's text lacks."""
    lacks = []
    if not (FLAGS.search(text) or _table_flags(text) or NOT_RECORDED.search(text)):
        lacks.append('the machine (a line "flags avx2 ...", or "machine not recorded" / "machine: any")')
    if not DATE.search(text):
        lacks.append("a date YYYY-MM-DD")
    code = [*FENCE.findall(text), *INLINE.findall(FENCE.sub("", text)), *INDENTED.findall(FENCE.sub("", text))]
    if not any(COMMAND.search(c) for c in code):
        lacks.append("the command (in backticks or a code block: python benchmarks/NAME.py ..., or hardcse ...)")
    return lacks


def test_there_are_records():
    assert len(RECORDS) > 20


@pytest.mark.parametrize("record", RECORDS, ids=lambda p: p.name)
def test_every_record_names_its_machine_date_and_command(record):
    lacks = missing(record.read_text(encoding="utf-8"))
    assert not lacks, f"benchmarks/results/{record.name} lacks " + "; ".join(lacks)


def test_the_check_catches_each_missing_part():
    full = "# T\n\n`python benchmarks/x.py`, 2026-11-26, AMD EPYC, 2 cores, flags avx2 fma.\n"
    assert missing(full) == []
    assert len(missing("# T\n\n`python benchmarks/x.py`, 2026-11-26, 2 cores.\n")) == 1  # no flags
    assert len(missing("# T\n\n`python benchmarks/x.py`, flags avx2.\n")) == 1  # no date
    assert len(missing("# T\n\npython benchmarks/x.py, 2026-11-26, flags avx2.\n")) == 1  # command not in code
    assert len(missing("# T\n\n`make demo`, 2026-11-26, flags avx2.\n")) == 1  # no benchmark or hardcse command
    assert len(missing("# T\n\nSee `benchmarks/x.py`; 2026-11-26, flags avx2.\n")) == 1  # a path, not a command
    assert missing("# T\n\n    hardcse eval --model M\n\n2026-11-26; Machine: not recorded.\n") == []
    table = "| run | cores, CPU flags |\n|---|---|\n| a | 2: avx2 avx512f |\n"
    assert missing(f"# T\n\n`python benchmarks/x.py` 2026-11-26\n\n{table}") == []
    assert len(missing(f"# T\n\n`python benchmarks/x.py` 2026-11-26\n\n{table.replace('avx2 avx512f', '-')}")) == 1


def test_machine_line_holds_this_cpus_flags():
    line = _load("provenance").machine_line()
    flags = cpu_info()["cpu_flags"]
    assert "\n" not in line and cpu_info()["cpu"] in line and DATE.search(line)
    assert f"flags {' '.join(flags)}," in line if flags else "flags none" in line
    if flags:
        assert missing(f"`python benchmarks/x.py`\n\n{line}\n") == []


def test_a_rebuilt_table_names_the_runs_machines_not_todays(tmp_path):
    module = _load("provenance")
    machine = {"cpu": "Some CPU", "cores": 4, "threads": 4, "cpu_flags": ["avx2", "amx_bf16"], "gpu": None}
    machine["versions"] = {"torch": "2.13.0+cpu"}
    new, old, bare = tmp_path / "new", tmp_path / "old", tmp_path / "bare"
    for folder, run in ((new, {"machine": machine}), (old, {"platform": "Linux-x"})):
        folder.mkdir()
        manifest = {"created": "2026-11-20T10:00:00+00:00", "versions": {"torch": "2.12.0+cpu"}, "runs": [run]}
        (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    bare.mkdir()
    line = module.recorded_machines({"new": new, "old": old, "bare": bare})
    assert "Some CPU, 4 cores, 4 torch threads, flags avx2 amx_bf16, torch 2.13.0+cpu, no GPU (new)" in line
    assert "machine not recorded (Linux-x, torch 2.12.0+cpu) (old)" in line
    assert "machine not recorded (the record keeps no manifest) (bare)" in line
    assert "2026-11-20" in module.recorded_dates({"new": new, "old": old})


def test_a_json_record_without_a_page_names_its_machine_date_and_command():
    """A figure file with no Markdown page beside it says for itself where it came from: a ``machine`` key (a
    machine record, or null with a ``machine_note`` saying why), a date and a command."""
    for path in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
        if path.with_suffix(".md").is_file():
            continue  # its page names them (the test above)
        record = json.loads(path.read_text(encoding="utf-8"))
        assert isinstance(record, dict) and "machine" in record, f"{path.name}: no machine key"
        assert record["machine"] or "not recorded" in record.get("machine_note", ""), f"{path.name}: machine"
        assert DATE.search(str(record.get("date", ""))) and record.get("command"), f"{path.name}: date, command"
