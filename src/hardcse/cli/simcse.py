"""``hardcse simcse train``: supervised or unsupervised SimCSE, evaluated before and after."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from hardcse.cli.common import (
    add_group,
    add_run_command,
    add_skip_bad_rows,
    on_error,
    print_decontamination,
    print_sts,
    run_config,
)

if TYPE_CHECKING:
    from hardcse.data.table import OnError
    from hardcse.encoder.simcse import SimCSEConfig


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
    from hardcse.encoder.simcse import SimCSEConfig

    config = run_config(SimCSEConfig, args, [f"data={args.data}"] if args.data else [])
    records = simcse_run(config, args.out, resume=args.resume, overwrite=args.overwrite, on_error=on_error(args))
    out = Path(args.out)
    print_decontamination(out)
    best = json.loads((out / "model" / "training.json").read_text(encoding="utf-8"))
    print(f"best STS-B dev {best['best_dev']:.2f} at step {best['best_step']}; model: {out / 'model'}")
    if records:
        labels = {"before": f"{config.encoder} (before)", "after": f"{out / 'model'} (after)"}
        print_sts({labels[k]: v for k, v in records.items()}, out)


def simcse_run(
    config: SimCSEConfig, out: str | Path, *, resume: bool = False, overwrite: bool = False, on_error: OnError = "raise"
) -> dict[str, dict]:
    """``hardcse simcse train`` as a run folder: ``decontamination.json`` + ``decontaminated.jsonl`` (the rows
    dropped as matches of evaluation texts), ``eval_before.json`` (the starting encoder), ``model/`` (trained,
    best on STS-B dev, with ``training.json``), ``eval.json``. Returns the STS records {"before", "after"}."""
    from hardcse.data.decontamination import Decontamination, sentence_texts, triplet_texts
    from hardcse.distributed import is_main
    from hardcse.encoder.build import load_encoder
    from hardcse.encoder.simcse import read_training_data, train_simcse
    from hardcse.engines import Engine
    from hardcse.errors import HardcseError
    from hardcse.evaluation.sts import dev_evaluator, write_sts_eval
    from hardcse.model_card import write_model_card
    from hardcse.resources import resolve_model
    from hardcse.run_folder import RunFolder

    if config.data is None:
        raise HardcseError("no training data: give --data FILE (or data: in the config)")
    data = read_training_data(config.mode, config.data, on_error)  # a bad file fails before the folder exists
    if not data:
        raise HardcseError(f"{config.data}: no rows to train on")
    resolve_model(config.encoder)
    check = Decontamination(config.decontamination)
    data = check.filter(config.data, data, triplet_texts if config.mode == "sup" else sentence_texts)
    if not data:
        raise HardcseError(
            f"{config.data}: every row matches an evaluation text; train on other data or set "
            "decontamination.enabled=false"
        )
    engine = Engine.resolve(config.engine)
    records: dict[str, dict] = {}
    with RunFolder(out, config, resume=resume, overwrite=overwrite, command="simcse train", engine=engine) as run:
        # written beside its list of dropped texts, itself last: the stage is done once the counts exist
        run.stage("decontamination", check.COUNTS, lambda path: check.write(path.parent), in_place=True)
        if config.eval_tasks:
            before = run.stage(
                "eval_before",
                "eval_before.json",
                lambda partial: write_sts_eval(
                    partial, config.encoder, config.eval_tasks, config.pooling, engine=engine
                ),
            )
            records["before"] = json.loads(before.read_text(encoding="utf-8"))

        def train_model(partial: Path) -> None:
            model = load_encoder(
                config.encoder, config.pooling, head_seed=config.training.seed, device=config.training.device
            )
            evaluator = dev_evaluator(model.max_seq_length, engine)
            train_simcse(model, data, config.mode, config, partial, evaluator=evaluator, tracking=run.tracking)

        model_dir = run.stage("model", "model", train_model, keep_partial=True, all_ranks=True)
        if config.eval_tasks:
            after = run.stage(
                "eval",
                "eval.json",
                lambda partial: write_sts_eval(partial, str(model_dir), config.eval_tasks, engine=engine),
            )
            records["after"] = json.loads(after.read_text(encoding="utf-8"))
        if is_main():
            what = "triplets (anchor, positive, hard negative)" if config.mode == "sup" else "sentences"
            data_line = f"{len(data)} {what} of `{config.data}`"
            write_model_card(model_dir, run.dir, "simcse", eval_path=run.dir / "eval.json", data=data_line)
        run.finish()
    return records
