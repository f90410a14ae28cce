"""``hardcse eval``: the STS suite (seven tasks + STS-B dev), or a user's own pair files."""

from __future__ import annotations

import argparse
from pathlib import Path

from hardcse.cli.common import add_skip_bad_rows, on_error, print_sts
from hardcse.data.sts import ALL_TASKS, KNOWN_TASKS
from hardcse.devices import DTYPES
from hardcse.encoder import POOLINGS
from hardcse.engines import ENGINES, Engine


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="evaluate an encoder on the seven STS tasks and STS-B dev")
    p.add_argument("--model", required=True, help="bundled:minilm-l6, a folder (or a run folder), or a hub id")
    p.add_argument(
        "--tasks",
        nargs="+",
        default=ALL_TASKS,
        metavar="TASK",
        help=f"default: {' '.join(ALL_TASKS)}; also SICK-R-full (MTEB's SICK-R: all 9,927 pairs); with --backend mteb, "
        "any MTEB task name (its data from the hub)",
    )
    p.add_argument(
        "--backend",
        choices=["hardcse", "mteb"],
        default="hardcse",
        help="hardcse: the built-in suite; mteb: MTEB's own evaluator (pip install 'hardcse[mteb]'), its result "
        "files in OUT/mteb/",
    )
    p.add_argument("--pairs", nargs="+", metavar="FILE", help="your own pair files (sentence1, sentence2, score)")
    p.add_argument("--pooling", default="default", choices=POOLINGS)
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="what encodes: auto (OpenVINO on a CPU where installed, else PyTorch), torch or openvino",
    )
    p.add_argument(
        "--precision",
        choices=DTYPES,
        default="auto",
        help="OpenVINO's precision: auto (bfloat16 where the CPU computes it natively; scores within ~0.01 of "
        "PyTorch's) or float32 (PyTorch's scores to ~0.002, PyTorch's speed)",
    )
    add_skip_bad_rows(p)
    p.add_argument("--out", help="folder for eval.json and eval.md")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from hardcse.atomic import write_json_atomic
    from hardcse.data.sts import read_scored_pairs
    from hardcse.encoder.build import load_encoder
    from hardcse.errors import HardcseError
    from hardcse.evaluation.sts import sts_record
    from hardcse.folder_checks import check_output_folder

    if args.out:
        check_output_folder(Path(args.out))
    engine = Engine.resolve(args.engine, "--engine", args.precision)
    unknown = [t for t in args.tasks if t not in KNOWN_TASKS]
    if unknown and args.backend == "hardcse":
        raise HardcseError(f"unknown task(s) {unknown}; known: {', '.join(KNOWN_TASKS)} (more with --backend mteb)")
    out = Path(args.out) if args.out else None
    if args.backend == "mteb":
        if args.pairs:
            raise HardcseError("--pairs works with the hardcse backend only; leave out --backend mteb")
        from hardcse.evaluation.mteb_backend import mteb_record, mteb_tasks

        tasks = mteb_tasks(args.tasks)  # the extra installed and every task known, before the model loads
        record = mteb_record(load_encoder(args.model, args.pooling), args.model, args.tasks, tasks, out)
    else:
        tasks = [read_scored_pairs(p, on_error=on_error(args)) for p in args.pairs] if args.pairs else args.tasks
        record = sts_record(load_encoder(args.model, args.pooling), args.model, tasks, engine=engine)
    if out is not None:
        write_json_atomic(out / "eval.json", record)
    print_sts({args.model: record}, out, f" of `{args.model}`")
