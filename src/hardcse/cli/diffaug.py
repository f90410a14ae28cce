"""``hardcse diffaug train``: DiffAug's two stages (or its SimCSE baseline), then the STS suite."""

from __future__ import annotations

import argparse
import json

from hardcse.cli.common import add_group, add_run_command, print_decontamination, print_sts, run_config


def add_parser(sub: argparse._SubParsersAction) -> None:
    commands = add_group(sub, "diffaug", "DiffAug: two learned prefixes as augmentation, trained in two stages")
    add_run_command(
        commands,
        "train",
        "stage 1 (prefix-tuning), stage 2 (joint SimCSE), then the STS suite",
        train,
        "DiffAugConfig keys: configs/diffaug-*.yaml",
        "stage1.steps=300 training.max_steps=200",
    )


def train(args: argparse.Namespace) -> None:
    from hardcse.diffaug.config import DiffAugConfig
    from hardcse.diffaug.run import diffaug_run

    config = run_config(DiffAugConfig, args)
    final = diffaug_run(config, args.out, resume=args.resume, overwrite=args.overwrite)
    print_decontamination(final)
    print(f"model: {final}  (hardcse eval --model {final}; SentenceTransformer('{final}', trust_remote_code=True))")
    eval_path = final.parent / "eval.json"
    if eval_path.is_file():
        print_sts({str(final): json.loads(eval_path.read_text(encoding="utf-8"))}, final.parent)
