"""The ``hardcse`` command: ``hardcse GROUP COMMAND`` (``eval`` and ``compare`` stand alone), one module per group.

Parsers import nothing heavy: every handler imports the library it needs, so ``--help`` answers at once.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import NoReturn

from hardcse.cli import art, assay, cache, compare, datacube, decontaminate, diffaug, evaluate, nli, prepare, simcse
from hardcse.errors import HardcseError

GROUPS = (evaluate, compare, assay, decontaminate, prepare, cache, simcse, nli, art, datacube, diffaug)


class Parser(argparse.ArgumentParser):
    """argparse, with a usage mistake reported like every other: one line, exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="hardcse", description="Better sentence encoders from hard contrastive data.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="GROUP")
    for group in GROUPS:
        group.add_parser(sub)
    return parser


def _quiet_libraries() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def _join_launched_processes() -> None:
    """Under ``accelerate launch`` or ``torchrun``: join the process group; only rank 0 prints results."""
    from hardcse.distributed import is_main, join_process_group, launched_world_size

    if launched_world_size() > 1:
        join_process_group()
        if not is_main():
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115  (for the life of the process)


def main(argv: list[str] | None = None) -> int:
    from hardcse.logs import setup_logging

    parser = build_parser()
    try:
        # key=value overrides may stand anywhere among the flags (argparse takes positionals in one run only)
        args, rest = parser.parse_known_args(argv)
        stray = [a for a in rest if a.startswith("-") or "=" not in a or not hasattr(args, "overrides")]
        if stray:
            parser.error(f"unrecognized arguments: {' '.join(stray)}")
    except SystemExit as e:  # --help (0) or a usage mistake (2): a status to return, as for every other outcome
        return int(e.code or 0)
    if rest:
        args.overrides = [*args.overrides, *rest]
    setup_logging(logging.DEBUG if args.verbose else logging.INFO)
    _quiet_libraries()
    from hardcse import run_folder
    from hardcse.distributed import end_launched_process, launched_world_size, leave_process_group

    run_folder.INVOCATION = ["hardcse", *(sys.argv[1:] if argv is None else argv)]
    status = 0
    try:
        _join_launched_processes()
        args.func(args)
    except HardcseError as e:
        print(f"error: {e}", file=sys.stderr)
        status = 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        status = 130
    finally:
        run_folder.INVOCATION = None  # a library call later in this process is no CLI invocation
        if launched_world_size() > 1:
            leave_process_group()
    if argv is None and launched_world_size() > 1:  # the command line of a launched process: exit here
        end_launched_process(status)  # without interpreter shutdown, where gloo's threads could abort it
    return status
