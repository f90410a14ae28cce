"""The one writer of a benchmark's record (DESIGN.md, "Records"): benchmarks/results/NAME.md and NAME.json.

Every record names the command that made it, its date and its machine (tests/test_records.py checks each page).
:func:`write_record` writes them for every benchmark, so a script says only what it measured. The page opens with

    # TITLE (DATE)

    `COMMAND`ABOUT

    MACHINE

then the script's own lines; the JSON (when the script keeps one) holds ``command``, ``date`` and ``machine``
(:func:`hardcse.machine.machine_record`) beside the script's payload. COMMAND is this process's command line
(:func:`this_command`) unless the script names another (e.g. the one that rebuilds the page), MACHINE this machine
today (:func:`provenance.machine_line`). A page rebuilt from stored runs names the runs' machines and dates, never
today's: it passes them (``machine=provenance.recorded_runs(...)``, ``date=`` the runs' or ``False``), and the
layout options keep such a page byte-identical to the one its records made before.

hardcse's imports stay inside the functions: a script that times an older commit's code imports itself with that
commit's hardcse.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Sequence
from datetime import date as _date
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results"


def this_command(argv: Sequence[str] | None = None) -> str:
    """The command line of this process as a reader types it in the repository root:
    ``python benchmarks/NAME.py ARGS`` (each argument quoted where the shell needs it)."""
    argv = sys.argv if argv is None else argv
    return shlex.join(["python", f"benchmarks/{Path(argv[0]).name}", *argv[1:]])


def today() -> str:
    return str(_date.today())


def stamp(command: str | None = None) -> dict:
    """What every record made now says of itself: ``command`` (default :func:`this_command`), ``date`` (today)
    and ``machine`` (this machine's :func:`hardcse.machine.machine_record`)."""
    from hardcse.machine import machine_record

    return {"command": command or this_command(), "date": today(), "machine": machine_record()}


def header(
    title: str,
    command: str | Sequence[str],
    machine: str | Sequence[str],
    date: str | None = None,
    about: str = "",
    machine_first: bool = False,
    machine_inline: bool = False,
) -> list[str]:
    """The lines that open a record's page: ``# TITLE (DATE)`` (no date where ``date`` is None), the command in
    backticks followed by ``about`` (several commands: a code block under "Commands:"), and the machine's
    lines as a paragraph of their own after the command's (``machine_first``: before it; ``machine_inline``: at
    the end of the command's paragraph, after a space). Each paragraph is followed by a blank line."""
    lines = [f"# {title} ({date})" if date else f"# {title}", ""]
    said = [f"`{command}`{about}"] if isinstance(command, str) else ["Commands:", "", "```", *command, "```"]
    where = [machine] if isinstance(machine, str) else list(machine)
    if machine_inline:
        paragraphs = [[*said[:-1], " ".join([said[-1], *where])]]
    else:
        paragraphs = [where, said] if machine_first else [said, where]
    for paragraph in paragraphs:
        lines += [*paragraph, ""]
    return lines


def verdict(difference: dict) -> str:
    """A difference's word, from its interval as a record stores it (``Interval.to_dict``): "no detectable
    difference" where the interval holds zero, else "differs"."""
    return "no detectable difference" if difference["low"] <= 0 <= difference["high"] else "differs"


def interval_cell(d: dict) -> str:
    """An interval as a record stores it, as a table cell: ``estimate [low, high]``."""
    return f"{d['estimate']:.3f} [{d['low']:.3f}, {d['high']:.3f}]"


def number_cell(v: float | None) -> str:
    """A measure as a table cell, "-" where there is none."""
    return "-" if v is None else f"{v:.3f}"


def signed_interval(d: dict, digits: int = 3) -> str:
    """An interval as a record stores it, as text with signs: ``+0.123 [-0.010, +0.250]``."""
    return f"{d['estimate']:+.{digits}f} [{d['low']:+.{digits}f}, {d['high']:+.{digits}f}]"


def difference_cell(difference: dict) -> str:
    """A difference as a table cell: its estimate, its interval and its :func:`verdict`."""
    return f"{signed_interval(difference)} ({verdict(difference)})"


def write_json(name: str, payload: object, results: Path = RESULTS) -> Path:
    """``results/NAME.json``: ``payload`` as indented JSON (UTF-8, ending in a newline)."""
    from hardcse.atomic import write_text_atomic

    return write_text_atomic(results / f"{name}.json", json.dumps(payload, indent=2) + "\n")


def write_record(
    name: str,
    title: str,
    body: str | Sequence[str],
    payload: dict | None = None,
    *,
    command: str | Sequence[str] | None = None,
    about: str = "",
    machine: str | Sequence[str] | None = None,
    date: str | bool = True,
    machine_first: bool = False,
    machine_inline: bool = False,
    results: Path = RESULTS,
) -> str:
    """Write ``results/NAME.md`` (:func:`header`, then ``body``: its lines, joined by newlines; end it with "" for
    a final newline) and, given a ``payload``, ``results/NAME.json``: :func:`stamp` then the payload (a key of the
    payload's own, e.g. ``machine: None`` for figures no machine decides, wins). Returns the page's text.

    ``command``: what made the record (default :func:`this_command`; a list: several commands). ``machine``: the
    machine's paragraph (default: this machine's :func:`provenance.machine_line`, today). ``date``: True for today
    in the title, a string for another (the records' own dates), False for none (the machine's line dates it)."""
    from lib.provenance import machine_line

    command = command or this_command()
    made = (
        stamp(command if isinstance(command, str) else "; ".join(command))
        if payload is not None or machine is None
        else {}
    )
    if payload is not None:
        write_json(name, {**made, **payload}, results)
    day = today() if date is True else date or None
    if machine is None:
        machine = machine_line(made["machine"], None if day else today())
    lines = header(title, command, machine, day, about, machine_first, machine_inline)
    text = "\n".join([*lines, *([body] if isinstance(body, str) else body)])
    from hardcse.atomic import write_text_atomic

    write_text_atomic(results / f"{name}.md", text)
    return text
