"""The docs cannot drift from the CLI: every ``hardcse`` command shown in README.md and docs/*.md is parsed by the
real parser, and a command with a config is built up to its config (the file found, every key=value override a
known key with a valid value) without running; linked files, configs and benchmark scripts exist."""

import re
import shlex
from pathlib import Path

import pytest

from hardcse.cli import GROUPS, build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"```[a-z]*\n(.*?)```", re.S)
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
# a shown command: ``hardcse ...`` or a launcher's ``-m hardcse.cli ...``; placeholders in capitals are grammar
COMMAND = re.compile(r"(?:^|\s)(?:\$ )?(?:hardcse|-m hardcse\.cli) (.*)$")
PLACEHOLDER = re.compile(r"\b(GROUP|COMMAND|FILE|DIR|OUT|NAME|KEY)\b|\.\.\.|\|")


def shown_commands() -> list[tuple[str, str]]:
    """(page, command line) for every hardcse command in a code block, or in inline code with an option."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        blocks = FENCE.findall(text)
        lines = [line for block in blocks for line in block.replace("\\\n", " ").splitlines()]
        # inline code names a command (`hardcse eval`) or shows one: one with an option must be complete
        lines += [span for span in INLINE.findall(FENCE.sub("", text)) if " -" in span]
        for line in lines:
            match = COMMAND.search(line.strip())
            if match and not PLACEHOLDER.search(match.group(1).split("#")[0]):
                found.append((page.name, match.group(1)))
    return found


COMMANDS = shown_commands()


class Built(Exception):
    """Raised by the stand-in for run_config once the config is built: nothing runs."""


def test_readme_is_short_and_every_page_is_reachable():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) < 15_000
    linked = {m.split("#")[0] for m in re.findall(r"\]\(((?:docs/)?[\w./-]+(?:#[\w-]*)?)\)", readme)}
    assert {f"docs/{p.name}" for p in PAGES[1:]} <= linked
    assert len(COMMANDS) > 30  # the extraction finds what the pages show


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_configs_and_scripts_exist(page):
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if not target.startswith("http"):
            assert (page.parent / target).exists(), f"{page.name}: link to {target}"
    for config in re.findall(r"\bconfigs/([\w.-]+\.yaml)", text):
        assert (ROOT / "configs" / config).is_file(), f"{page.name}: configs/{config}"
    for script in re.findall(r"\bbenchmarks/(\w+\.py)", text):
        assert (ROOT / "benchmarks" / script).is_file(), f"{page.name}: benchmarks/{script}"


@pytest.mark.parametrize(("page", "command"), COMMANDS, ids=[f"{p}: {c[:60]}" for p, c in COMMANDS])
def test_every_shown_command_parses_and_builds_its_config(page, command, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    argv = shlex.split(command, comments=True)
    try:
        args, rest = build_parser().parse_known_args(argv)
    except SystemExit as e:
        pytest.fail(f"{page}: `hardcse {command}` does not parse (exit {e.code})")
    stray = [a for a in rest if a.startswith("-") or "=" not in a or not hasattr(args, "overrides")]
    assert not stray, f"{page}: `hardcse {command}`: unrecognized {stray}"
    if not hasattr(args, "config") or (args.resume and args.config is None):
        return  # no config to build (or the folder's own, which exists only after a run)
    args.overrides = [*args.overrides, *rest]
    args.out = str(tmp_path / "out")  # nothing is written: the stand-in stops before the run

    def built(cls, arguments, extra=None):
        real_run_config(cls, arguments, extra)
        raise Built

    from hardcse.cli.common import run_config as real_run_config

    for group in GROUPS:
        if hasattr(group, "run_config"):
            monkeypatch.setattr(group, "run_config", built)
    with pytest.raises(Built):
        args.func(args)
