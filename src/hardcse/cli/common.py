"""What every command group shares: the run-folder flags, the bad-row flag, config loading, printing."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def add_group(sub: argparse._SubParsersAction, name: str, help: str) -> argparse._SubParsersAction:
    """A command group (``hardcse NAME COMMAND``) and the sub-parsers of its commands."""
    group = sub.add_parser(name, help=help)
    return group.add_subparsers(dest=f"{name}_command", required=True, metavar="COMMAND")


def add_run_command(
    commands: argparse._SubParsersAction, name: str, help: str, func: object, config_help: str, example: str
) -> argparse.ArgumentParser:
    """A long command: its parser with the run-folder flags, handled by ``func``."""
    parser = commands.add_parser(name, help=help)
    add_run_flags(parser, config_help, example)
    parser.set_defaults(func=func)
    return parser


def add_run_flags(parser: argparse.ArgumentParser, config_help: str, overrides_example: str) -> None:
    """--config, --out, --resume, --overwrite and key=value overrides: the flags of every long command."""
    parser.add_argument("--config", help=f"YAML config ({config_help}); with --resume: the folder's config.yaml")
    parser.add_argument("--out", required=True, help="the run folder (config.yaml, manifest.json, run.log, outputs)")
    parser.add_argument("--resume", action="store_true", help="continue the folder: finished stages are skipped")
    parser.add_argument("--overwrite", action="store_true", help="empty a finished folder and start it again")
    parser.add_argument(
        "--report-to",
        nargs="+",
        metavar="TRACKER",
        help="experiment trackers to report to: tensorboard, mlflow, wandb, trackio, several, or none (config key "
        "report_to; docs/commands.md 'Experiment trackers')",
    )
    parser.add_argument("overrides", nargs="*", metavar="key=value", help=f"config overrides, e.g. {overrides_example}")
    parser.set_defaults(run_command=parser.prog.removeprefix("hardcse "))  # as the run folder's manifest names it


def add_skip_bad_rows(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--skip-bad-rows", action="store_true", help="count and skip malformed rows instead of stopping"
    )


def on_error(args: argparse.Namespace) -> str:
    return "skip" if getattr(args, "skip_bad_rows", False) else "raise"


def run_config(cls: type[T], args: argparse.Namespace, extra_overrides: list[str] | None = None) -> T:
    """The config of a run command: --config (or, with --resume, the folder's frozen config.yaml) + overrides."""
    from hardcse.config import load_config
    from hardcse.errors import HardcseError
    from hardcse.folder_checks import check_resumable, saved_config

    if args.resume:  # the folder's kind first: another command's config.yaml would fail on keys, not say why
        check_resumable(args.out, args.run_command)
    path = args.config
    if path is None:
        if not args.resume:
            raise HardcseError("give --config FILE (or --resume an existing run folder, which reads its config.yaml)")
        path = saved_config(args.out)
    trackers = getattr(args, "report_to", None)
    if trackers is not None:  # --report-to none: no tracker (the config's own report_to is replaced)
        extra_overrides = [*(extra_overrides or []), f"report_to=[{', '.join(t for t in trackers if t != 'none')}]"]
    return load_config(cls, path, [*args.overrides, *(extra_overrides or [])])


def print_sts(records: dict[str, dict], out: Path | None = None, title: str = "") -> None:
    """The STS table of ``eval.json`` records (label -> record); with ``out``, also ``out/eval.md``."""
    from hardcse.evaluation.sts import sts_rows
    from hardcse.tables import sts_table_markdown

    table = sts_table_markdown(sts_rows(records))
    print(table)
    for label, record in records.items():
        if "backend" in record:  # MTEB encodes both sides of every pair
            counted = f"sentences encoded by {record['backend']}'s evaluator (both sides of each pair)"
        else:
            counted = "distinct sentences"
        print(f"({label}: {record['n_sentences']} {counted}, {record['seconds']:.1f} s)")
    if out is not None:
        (out / "eval.md").write_text(f"# STS evaluation{title}\n\n{table}\n", encoding="utf-8")


def print_decontamination(folder: Path) -> None:
    """The run's decontamination total, from ``folder``'s decontamination.json (nothing if it has none)."""
    from hardcse.data.decontamination import recorded_line

    line = recorded_line(folder)
    if line:
        print(line)
