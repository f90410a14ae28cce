"""``hardcse nli train|eval|triplets``: ART's NLI discriminator, and SimCSE triplets from NLI files."""

from __future__ import annotations

import argparse
from pathlib import Path

from hardcse.cli.common import add_group, add_run_command, add_skip_bad_rows, on_error, run_config


def add_parser(sub: argparse._SubParsersAction) -> None:
    commands = add_group(sub, "nli", "the NLI discriminator (train, eval) and NLI triplets")

    p = add_run_command(
        commands,
        "train",
        "train the 3-way NLI discriminator (cross-encoder + MLP head)",
        train,
        "NLITrainConfig keys: configs/nli-discriminator.yaml",
        "training.epochs=2",
    )
    p.add_argument("--no-eval", action="store_true", help="skip the held-out evaluation")

    p = commands.add_parser("eval", help="accuracy and per-class F1 on the held-out NLI sets")
    p.add_argument("--model", required=True, help="a folder from `hardcse nli train`, or any 3-way NLI cross-encoder")
    p.add_argument("--out", help="folder for nli_eval.json")
    p.set_defaults(func=evaluate)

    p = commands.add_parser("triplets", help="SimCSE triplets (premise, entailment, contradiction) from NLI files")
    p.add_argument("--nli", nargs="+", required=True, help="NLI files (names under data/ or paths)")
    p.add_argument("--out", required=True, help="triplet CSV to write")
    add_skip_bad_rows(p)
    p.set_defaults(func=triplets)


def train(args: argparse.Namespace) -> None:
    from hardcse.discriminator.train import NLITrainConfig, nli_run
    from hardcse.tables import nli_table_markdown

    config = run_config(NLITrainConfig, args)
    results = nli_run(config, args.out, evaluate=not args.no_eval, resume=args.resume, overwrite=args.overwrite)
    print(f"discriminator: {Path(args.out) / 'model'}")
    if results:
        print(nli_table_markdown(results))


def evaluate(args: argparse.Namespace) -> None:
    from hardcse.atomic import write_json_atomic
    from hardcse.discriminator.nli import NLIDiscriminator, evaluate_nli
    from hardcse.folder_checks import check_output_folder
    from hardcse.tables import nli_table_markdown

    if args.out:
        check_output_folder(Path(args.out))
    results = evaluate_nli(NLIDiscriminator.load(args.model))
    print(nli_table_markdown(results))
    if args.out:
        write_json_atomic(Path(args.out) / "nli_eval.json", results)


def triplets(args: argparse.Namespace) -> None:
    from hardcse.data.nli import read_nli_files
    from hardcse.data.triplets import nli_triplets, write_triplets
    from hardcse.errors import HardcseError
    from hardcse.folder_checks import check_output_file

    check_output_file(Path(args.out))
    pairs = read_nli_files(args.nli, on_error=on_error(args))
    found = nli_triplets(pairs)
    if not found:
        raise HardcseError(f"no premise in {args.nli} has both an entailment and a contradiction hypothesis")
    write_triplets(args.out, found)
    print(f"{len(found)} triplets from {len(pairs)} NLI pairs -> {args.out}")
