"""``hardcse datacube plan|train``: Data-CUBE's plan (task order + batches), and training from it."""

from __future__ import annotations

import argparse
import json

from hardcse.cli.common import add_group, add_run_command, print_decontamination, print_sts, run_config


def add_parser(sub: argparse._SubParsersAction) -> None:
    commands = add_group(sub, "datacube", "Data-CUBE: task and instance curriculum for multi-task training")
    add_run_command(
        commands,
        "plan",
        "task vectors, annealed task order, instance difficulties -> OUT/plan/",
        plan,
        "DataCubeConfig keys: configs/datacube-*.yaml",
        "max_per_task=200 task_order=random",
    )
    add_run_command(
        commands,
        "train",
        "plan (unless the folder has one), train in the plan's order, STS suite",
        train,
        "DataCubeConfig keys: configs/datacube-*.yaml",
        "max_per_task=200 task_order=random",
    )


def plan(args: argparse.Namespace) -> None:
    from hardcse.datacube.config import DataCubeConfig
    from hardcse.datacube.plan import load_plan
    from hardcse.datacube.run import datacube_run

    run = datacube_run(
        run_config(DataCubeConfig, args), args.out, train=False, resume=args.resume, overwrite=args.overwrite
    )
    made = load_plan(run.dir / "plan")
    masked = sum(len(b.mask) - sum(b.mask) for b in made.batches)
    rows = sum(len(b.rows) for b in made.batches)
    print(f"{len(made.tasks)} tasks, {rows} instances, {len(made.batches)} batches ({masked} rows masked)")
    print("task order: " + " -> ".join(made.tasks[t].name for t in made.task_order))
    start = made.anneal.get("start_similarity")
    print(
        f"tour similarity {made.anneal['tour_similarity']:.3f}"
        + (f" (random start {start:.3f})" if start is not None else "")
    )
    print(f"plan: {run.dir / 'plan' / 'plan.json'}; similarity matrix: {run.dir / 'plan' / 'task_similarity.png'}")
    print_decontamination(run.dir / "plan")


def train(args: argparse.Namespace) -> None:
    from hardcse.datacube.config import DataCubeConfig
    from hardcse.datacube.run import datacube_run

    config = run_config(DataCubeConfig, args)
    out = datacube_run(config, args.out, resume=args.resume, overwrite=args.overwrite).dir
    print_decontamination(out / "plan")
    record = json.loads((out / "model" / "training.json").read_text(encoding="utf-8"))
    print(
        f"best STS-B dev {record['best_dev']:.2f} at step {record['best_step']}; margin < "
        f"{config.underfit_margin}: {record['underfit_share_before'] * 100:.1f}% of instances before, "
        f"{record['underfit_share_after'] * 100:.1f}% after; {record['masked_rows']} rows masked"
    )
    if (out / "eval.json").is_file():
        print_sts({str(out / "model"): json.loads((out / "eval.json").read_text(encoding="utf-8"))}, out)
