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


def script_at(rev: str, path: str) -> bool:
    """Whether commit ``rev`` holds ``path``; True where this checkout lacks the commit (a shallow clone), whose
    history cannot say."""
    import subprocess

    def git(*args: str) -> bool:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True).returncode == 0

    return git("cat-file", "-e", f"{rev}:{path}") or not git("cat-file", "-e", f"{rev}^{{commit}}")


def test_a_removed_script_is_named_at_a_commit_that_holds_it():
    import subprocess

    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert script_at(head, "benchmarks/warm_assay.py")
    assert not script_at(head, "benchmarks/no_such_script.py")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_configs_and_scripts_exist(page):
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if not target.startswith("http"):
            assert (page.parent / target).exists(), f"{page.name}: link to {target}"
    for folder, config in re.findall(r"(?<![\w/])((?:benchmarks/)?)configs/([\w.-]+\.yaml)", text):
        assert (ROOT / folder / "configs" / config).is_file(), f"{page.name}: {folder}configs/{config}"
    for rev, script in re.findall(r"(?:\b([0-9a-f]{7,40}):)?\bbenchmarks/(\w+\.py)", text):
        if rev:  # a script removed once its record was final, named at a commit that holds it
            assert script_at(rev, f"benchmarks/{script}"), f"{page.name}: {rev}:benchmarks/{script}"
        else:
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


def _defined_names(path: Path) -> set[str]:
    """What a module defines (not imports): top-level functions, classes and assignments, and each class's members
    (methods, fields, ``self.x`` attributes) both bare and as ``Class.member``."""
    import ast

    def assigned(node: ast.AST) -> list[str]:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [t.id for t in targets if isinstance(t, ast.Name)]

    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            names |= set(assigned(node))
        if isinstance(node, ast.ClassDef):
            members = set()
            for m in node.body:
                if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef):
                    members.add(m.name)
                elif isinstance(m, ast.Assign | ast.AnnAssign):
                    members |= set(assigned(m))
            for sub in ast.walk(node):
                is_self = isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self"
                if is_self and isinstance(sub.ctx, ast.Store):
                    members.add(sub.attr)
            names |= members | {f"{node.name}.{m}" for m in members}
    return names


TEST_REFERENCE = re.compile(r"(tests/\w+\.py)?::(test_\w+)|(tests/\w+\.py)")
CODE_REFERENCE = re.compile(r"`(src/hardcse/[\w/]+\.py)(?:: ([^`]+))?`")


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def missing_citations(text: str, name: str) -> list[str]:
    """``tests/test_x.py::test_y`` (and a following ``::test_z``, the same file's) and ``src/hardcse/m.py: a, B.c``
    in ``text`` that do not exist, as ``name:line: what``."""
    missing, current = [], None
    for match in TEST_REFERENCE.finditer(text):
        file = match.group(1) or match.group(3)
        if file:
            current = file
            if not (ROOT / file).is_file():
                missing.append(f"{name}:{_line(text, match.start())}: {file}")
                continue
        test = match.group(2)
        if test and current and (ROOT / current).is_file() and test not in _defined_names(ROOT / current):
            missing.append(f"{name}:{_line(text, match.start())}: {current}::{test}")
    for match in CODE_REFERENCE.finditer(text):
        module = ROOT / match.group(1)
        if not module.is_file():
            missing.append(f"{name}:{_line(text, match.start())}: {match.group(1)}")
            continue
        defined = _defined_names(module)
        for item in re.split(r",\s*", match.group(2) or ""):
            item = item.strip().split(" ")[0].rstrip(".;")
            if item and re.fullmatch(r"[A-Za-z_][\w.]*", item) and item not in defined:
                missing.append(f"{name}:{_line(text, match.start())}: {match.group(1)}: {item}")
    return missing


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_test_module_and_name_a_page_cites_exists(page):
    """A renamed test or function fails here with the page and line, not in a reader's hands."""
    missing = missing_citations(page.read_text(encoding="utf-8"), page.name)
    assert not missing, "\n".join(missing)


# names in capitals a page may use besides those the code knows: venues, tasks, other tools' words, a CPU's name,
# and the metavariables of the commands the pages show (runs/quickstart-DATE, data=FOLDER)
KNOWN_CAPITALS = {
    "LREC",
    "COLING",
    "EMNLP",
    "STS17",
    "MNRL",
    "MASK",
    "EPYC",
    "H100",
    "H200",
    "DATE",
    "FOLDER",
    "FILE_OR_ART_RUN",
    "MODE_AUTO",  # OpenVINO GenAI's LoRA adapter modes (benchmarks/results/rollout_adapter_modes.md)
    "MODE_DYNAMIC",
    "MODE_STATIC_RANK",
}


def _code_words() -> set[str]:
    words: set[str] = {p.stem for p in ROOT.rglob("*.md") if ".venv" not in p.parts}  # README, PAPER_MAP, ...
    for folder in ("src", "benchmarks", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name != "test_docs.py":  # this file names placeholders to catch
                words |= set(re.findall(r"\b[A-Z][A-Z0-9_]{3,}\b", path.read_text(encoding="utf-8")))
    return words


def placeholders(text: str, name: str) -> list[str]:
    """Words in capitals of ``text`` that neither the code (a constant, an environment variable, a metavariable,
    an acronym it uses, a page's name) nor KNOWN_CAPITALS knows: placeholders someone meant to fill."""
    known = _code_words() | KNOWN_CAPITALS
    return [
        f"{name}:{_line(text, m.start())}: {m.group(0)}"
        for m in re.finditer(r"\b[A-Z][A-Z0-9_]{3,}\b", text)
        if m.group(0) not in known
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_placeholder_word_is_left_in_a_page(page):
    unknown = placeholders(page.read_text(encoding="utf-8"), page.name)
    assert not unknown, "\n".join(unknown)


def test_the_checks_catch_each_kind_of_drift():
    """The checks above on a scratch page with one drift of each kind: each is reported with its line."""
    page = "\n".join(
        [
            "| a | `tests/test_data.py::test_no_such_test` |",
            "| b | `tests/test_no_such_file.py` |",
            "| c | `src/hardcse/atomic.py: write_text_atomic, no_such_function` |",
            "| d | `src/hardcse/no_such_module.py: f` |",
            "measured TIMEFAST on 2 cores.",
            "`tests/test_data.py::test_triplets_roundtrip_with_commas_and_quotes`, `::test_default_corpus` exist.",
        ]
    )
    assert missing_citations(page, "scratch.md") == [
        "scratch.md:1: tests/test_data.py::test_no_such_test",
        "scratch.md:2: tests/test_no_such_file.py",
        "scratch.md:3: src/hardcse/atomic.py: no_such_function",
        "scratch.md:4: src/hardcse/no_such_module.py",
    ]
    assert placeholders(page, "scratch.md") == ["scratch.md:5: TIMEFAST"]


# README's tables: a figure is a decimal, or a signed number, with what is written beside it as one figure: a mean
# with its ``± sd``, a difference with its ``[low, high]`` interval (or an interval alone)
_NUMBER = r"[+-]?\d+\.\d+"
_INTERVAL = rf"\[{_NUMBER}, {_NUMBER}\]"
FIGURE = re.compile(rf"(?<![\w.+-])(?:{_INTERVAL}|{_NUMBER}(?: ± \d+\.\d+)?(?: {_INTERVAL})?|[+-]\d+)(?!\w|\.\d)")
RECORD = re.compile(r"benchmarks/results/[\w./-]*[\w/]")


def _record_texts(record: Path) -> list[str]:
    """The text of a record file, or of every text file under a record folder (images and archives left out)."""
    files = [record] if record.is_file() else sorted(p for p in record.rglob("*") if p.is_file())
    texts = []
    for path in files:
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            continue
    return texts


def _written_in(figure: str, text: str) -> bool:
    """``figure`` occurs in ``text`` as a whole figure: not part of a longer number, nor with a sign it lacks."""
    before = r"(?<![\w.])" if figure[0] in "+-[" else r"(?<![\w.+-])"
    return re.search(before + re.escape(figure) + r"(?!\d|\.\d)", text) is not None


def figures_not_in_records(text: str, name: str, root: Path = ROOT) -> list[str]:
    """Every figure of a Markdown table row in ``text`` that the record the row cites does not hold, as
    ``name:line: figure not in benchmarks/results/FILE``. A row cites a record by a link or a path to a file or
    folder under ``benchmarks/results/`` (a folder: any text file in it); each figure must occur there verbatim.
    A figure is a decimal or signed number, checked together with its ``± sd`` or ``[low, high]`` interval when
    the row writes one beside it; unsigned integers (counts, seeds, sizes) are not checked, nor what stands in
    inline code or a link's target. A row with a figure and no record, or citing a record that does not exist,
    is reported too."""
    problems = []
    for number, row in enumerate(text.splitlines(), start=1):
        if not row.startswith("|") or re.fullmatch(r"[|:\- ]+", row):
            continue
        records = sorted(set(RECORD.findall(row)))
        shown = re.sub(r"`[^`]*`", "", re.sub(r"\]\([^)]*\)", "]", row))
        figures = [m.group(0) for m in FIGURE.finditer(shown)]
        if not figures:
            continue
        if not records:
            problems.append(f"{name}:{number}: figures but no record cited")
            continue
        missing = [r for r in records if not (root / r).exists()]
        problems += [f"{name}:{number}: {r} does not exist" for r in missing]
        if missing:
            continue
        texts = [t for r in records for t in _record_texts(root / r)]
        for figure in figures:
            if not any(_written_in(figure, t) for t in texts):
                problems.append(f"{name}:{number}: {figure} not in {' or '.join(records)}")
    return problems


def test_every_figure_in_readme_tables_is_in_the_record_it_cites():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    checked = [row for row in text.splitlines() if row.startswith("|") and RECORD.search(row)]
    assert len(checked) >= 10  # the results tables' rows cite their records
    problems = figures_not_in_records(text, "README.md")
    assert not problems, "\n".join(problems)


def test_the_figure_check_catches_a_figure_its_record_does_not_hold(tmp_path):
    """The check above on a scratch page and scratch records: a matching row passes; each drift is reported."""
    results = tmp_path / "benchmarks" / "results"
    (results / "run").mkdir(parents=True)
    (results / "scores.md").write_text("| full | 79.30 ± 0.03 | -0.15 [-0.24, -0.05] * |\n| vanilla | 79.51 |\n")
    (results / "run" / "eval.json").write_text('{"avg7": 78.87, "delta": "+0.45"}')
    page = "\n".join(
        [
            "| setting | avg7 | against vanilla | record |",
            "|---|---:|---:|---|",
            "| full | 79.30 ± 0.03 | -0.15 [-0.24, -0.05] | [record](benchmarks/results/scores.md) |",
            "| full | 79.31 ± 0.03 | -0.15 [-0.24, -0.05] | [record](benchmarks/results/scores.md) |",
            "| full | 79.30 ± 0.03 | -0.15 [-0.24, -0.06] | [record](benchmarks/results/scores.md) |",
            "| vanilla | 9.51 | +0.15 | [record](benchmarks/results/scores.md) |",
            "| start, 3 seeds | 78.87 | +0.45 | `benchmarks/results/run/` |",
            "| start | 78.87 | | |",
            "| gone | 1.00 | | [record](benchmarks/results/missing.md) |",
            "| page | what, with 2 counts and MTEB 2.26.24 |",
        ]
    )
    assert figures_not_in_records(page, "scratch.md", tmp_path) == [
        "scratch.md:4: 79.31 ± 0.03 not in benchmarks/results/scores.md",
        "scratch.md:5: -0.15 [-0.24, -0.06] not in benchmarks/results/scores.md",
        "scratch.md:6: 9.51 not in benchmarks/results/scores.md",
        "scratch.md:6: +0.15 not in benchmarks/results/scores.md",
        "scratch.md:8: figures but no record cited",
        "scratch.md:9: benchmarks/results/missing.md does not exist",
    ]


# The user guides are read, not searched: plain sentences, one idea each. The evidence pages (how an answer was
# made, its history) and the developers' pages are not held to this.
USER_GUIDES = [
    ROOT / "README.md",
    *(
        ROOT / "docs" / f"{name}.md"
        for name in ("art", "commands", "compose", "data", "datacube", "diffaug", "engines", "scale")
    ),
]
MEDIAN_WORDS, MOST_WORDS = 25, 60


def prose_units(text: str) -> list[tuple[str, bool]]:
    """(text, is_table_cell) for each paragraph, list item and table cell of a Markdown page; code blocks,
    headings and table rules left out, a link's target dropped (its words are the link's text)."""
    text = re.sub(r"```.*?```", "\n\n", text, flags=re.S)
    units, paragraph = [], []

    def end_paragraph():
        if paragraph:
            units.append((" ".join(paragraph), False))
            paragraph.clear()

    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            end_paragraph()
        elif line.startswith("|"):
            end_paragraph()
            if not re.fullmatch(r"[|:\- ]+", line):
                units += [(cell, True) for cell in line.strip("|").split("|")]
        else:
            item = re.match(r"(?:[-*]|\d+\.)\s+", line)
            if item:
                end_paragraph()
                line = line[item.end() :]
            paragraph.append(line)
    end_paragraph()
    return [(re.sub(r"\]\([^)]*\)", "]", unit), cell) for unit, cell in units]


def sentence_lengths(text: str) -> list[tuple[int, bool, str]]:
    """(words, is_table_cell, sentence) for every sentence: a unit splits after ``.``, ``!`` or ``?`` followed by
    a space and a capital, a digit or an opening mark (so 0.05 and e.g. a list stay whole)."""
    found = []
    for unit, cell in prose_units(text):
        for sentence in re.split(r"(?<=[.!?])\s+(?=[\"'`*(\[]?[A-Z0-9])", unit):
            if sentence.split():
                found.append((len(sentence.split()), cell, sentence))
    return found


@pytest.mark.parametrize("page", USER_GUIDES, ids=lambda p: p.name)
def test_a_user_guide_is_written_in_plain_sentences(page):
    lengths = sentence_lengths(page.read_text(encoding="utf-8"))
    prose = sorted(words for words, cell, _ in lengths if not cell)  # a table's cells are not its prose
    median = prose[len(prose) // 2] if prose else 0
    too_long = [f"{words} words: {sentence[:90]}..." for words, _, sentence in lengths if words > MOST_WORDS]
    assert median <= MEDIAN_WORDS, f"{page.name}: a median sentence of {median} words (limit {MEDIAN_WORDS})"
    assert not too_long, f"{page.name}: sentences over {MOST_WORDS} words:\n" + "\n".join(too_long)


def test_the_sentence_measure_on_a_hand_counted_page():
    page = "\n".join(
        [
            "# A heading is not a sentence",
            "One two three. Four five, 0.05 and e.g. six seven!",
            "A paragraph goes on",
            "over lines. [A link](docs/x.md) counts its words.",
            "",
            "```",
            "code is not prose at all",
            "```",
            "- An item. Another one?",
            "| cell one | cell two words |",
            "|---|---:|",
        ]
    )
    assert [(w, c) for w, c, _ in sentence_lengths(page)] == [
        (3, False),
        (7, False),
        (6, False),
        (5, False),
        (2, False),
        (2, False),
        (2, True),
        (3, True),
    ]


def heading_anchors(text: str) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation but ``-`` and ``_`` dropped, spaces to ``-``."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.+)$", text, flags=re.M)
    }


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_to_a_section_finds_it_and_no_issue_number_is_shown(page):
    text = page.read_text(encoding="utf-8")
    for target, anchor in re.findall(r"\]\(([^)#\s]*)#([^)\s]+)\)", text):
        linked = page.parent / target if target else page
        if not target or (target.endswith(".md") and not target.startswith("http")):
            assert anchor in heading_anchors(linked.read_text(encoding="utf-8")), f"{page.name}: {target}#{anchor}"
    shown = re.findall(r"\bissues? #?\d+", re.sub(r"```.*?```", "", text, flags=re.S), flags=re.I)
    assert not shown, f"{page.name}: a reader cannot look up {shown}; say what was done instead"


def test_heading_anchors_follow_github():
    page = "# `hardcse eval`: the STS suite\n## ART's evidence, redone (issue 42)\n```\n# not a heading\n```"
    assert heading_anchors(page) == {"hardcse-eval-the-sts-suite", "arts-evidence-redone-issue-42"}


QUOTED_SECTION = re.compile(r"docs/([\w-]+\.md),? \"([^\"]+)\"")


def sections(text: str) -> list[str]:
    """A page's headings and the bold leads of its paragraphs and items (``**Resume.** ...``), as written."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.findall(r"^#+ (.+)$", text, flags=re.M) + re.findall(r"^(?:[-*] |\d+\. )?\*\*(.+?)\*\*", text, flags=re.M)


def test_every_section_a_comment_or_page_names_by_quote_exists():
    """``docs/PAGE.md "Heading"`` in the code, configs and pages names (part of) a heading or bold lead there."""
    sources = [*ROOT.glob("src/hardcse/**/*.py"), *ROOT.glob("benchmarks/*.py"), *ROOT.glob("configs/*.yaml"), *PAGES]
    missing = []
    for path in sources:
        text = path.read_text(encoding="utf-8")
        for page, quoted in QUOTED_SECTION.findall(text.replace("\n# ", " ").replace("\n    # ", " ")):
            target = ROOT / "docs" / page
            name = quoted.removesuffix("...").strip()
            named = [s.replace("`", "") for s in sections(target.read_text("utf-8"))] if target.is_file() else []
            if not any(name in s for s in named):
                missing.append(f'{path.relative_to(ROOT)}: docs/{page} "{quoted}"')
    assert not missing, "\n".join(missing)
