"""``hardcse simcse train``: supervised or unsupervised SimCSE, evaluated before and after."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hardcse.cli.common import (
    add_group,
    add_run_command,
    add_skip_bad_rows,
    on_error,
    print_decontamination,
    print_sts,
    run_config,
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    commands = add_group(sub, "simcse", "SimCSE: train an encoder on triplets (sup) or sentences (unsup)")
    p = add_run_command(
        commands,
        "train",
        "train with SimCSE; STS before and after; the model in OUT/model",
        train,
        "SimCSEConfig keys: configs/simcse-sup.yaml",
        "mode=unsup training.batch_size=32",
    )
    p.add_argument("--data", help="sup: triplet CSV (sent0,sent1,hard_neg); unsup: one sentence a line")
    add_skip_bad_rows(p)


def train(args: argparse.Namespace) -> None:
    from hardcse.encoder.simcse import SimCSEConfig, simcse_run

    config = run_config(SimCSEConfig, args, [f"data={args.data}"] if args.data else [])
    records = simcse_run(config, args.out, resume=args.resume, overwrite=args.overwrite, on_error=on_error(args))
    out = Path(args.out)
    print_decontamination(out)
    best = json.loads((out / "model" / "training.json").read_text(encoding="utf-8"))
    print(f"best STS-B dev {best['best_dev']:.2f} at step {best['best_step']}; model: {out / 'model'}")
    if records:
        labels = {"before": f"{config.encoder} (before)", "after": f"{out / 'model'} (after)"}
        print_sts({labels[k]: v for k, v in records.items()}, out)
