"""``hardcse eval``: the STS suite (seven tasks + STS-B dev), or a user's own pair files."""

from __future__ import annotations

import argparse
from pathlib import Path

from hardcse.cli.common import add_skip_bad_rows, on_error, print_sts
from hardcse.data.sts import ALL_TASKS
from hardcse.encoder import POOLINGS


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="evaluate an encoder on the seven STS tasks and STS-B dev")
    p.add_argument("--model", required=True, help="bundled:minilm-l6, a folder (or a run folder), or a hub id")
    p.add_argument("--tasks", nargs="+", default=ALL_TASKS, metavar="TASK", help=f"default: {' '.join(ALL_TASKS)}")
    p.add_argument("--pairs", nargs="+", metavar="FILE", help="your own pair files (sentence1, sentence2, score)")
    p.add_argument("--pooling", default="default", choices=POOLINGS)
    add_skip_bad_rows(p)
    p.add_argument("--out", help="folder for eval.json and eval.md")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from hardcse.atomic import write_json_atomic
    from hardcse.data.sts import read_scored_pairs
    from hardcse.encoder.build import load_encoder
    from hardcse.errors import HardcseError
    from hardcse.evaluation.sts import sts_record
    from hardcse.run_folder import check_output_folder

    if args.out:
        check_output_folder(Path(args.out))
    unknown = [t for t in args.tasks if t not in ALL_TASKS]
    if unknown:
        raise HardcseError(f"unknown task(s) {unknown}; known: {', '.join(ALL_TASKS)}")
    tasks = [read_scored_pairs(path, on_error=on_error(args)) for path in args.pairs] if args.pairs else args.tasks
    record = sts_record(load_encoder(args.model, args.pooling), args.model, tasks)
    out = Path(args.out) if args.out else None
    if out is not None:
        write_json_atomic(out / "eval.json", record)
    print_sts({args.model: record}, out, f" of `{args.model}`")
