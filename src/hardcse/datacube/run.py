"""``hardcse datacube plan|train``: Data-CUBE as one resumable run folder.

    OUT/plan/      plan.json (task order, batches with difficulties and masks) + task_similarity.png,
                   decontamination.json (instances dropped per task) + decontaminated.jsonl (their texts)
    OUT/model/     the encoder trained batch by batch in the plan's order (best on STS-B dev) + training.json
    OUT/eval.json  the STS suite on it

``datacube plan`` runs the first stage only; ``datacube train`` on the same folder (``--resume``) or on a new one
runs what is missing.
"""

from __future__ import annotations

from pathlib import Path

from hardcse.data.decontamination import Decontamination
from hardcse.data.multitask import triplet_task
from hardcse.datacube.config import DataCubeConfig
from hardcse.datacube.plan import build_plan, load_plan, load_tasks, save_plan
from hardcse.datacube.train import train_from_plan
from hardcse.distributed import is_main
from hardcse.engines import Engine
from hardcse.evaluation.sts import write_sts_eval
from hardcse.model_card import write_model_card
from hardcse.resources import resolve_model
from hardcse.run_folder import RunFolder


def datacube_run(
    config: DataCubeConfig, out: str | Path, *, train: bool = True, resume: bool = False, overwrite: bool = False
) -> RunFolder:
    """Plan (and with ``train``, train and evaluate) into the run folder ``out``; returns it."""
    resolve_model(config.encoder)  # a missing model fails here, before any work
    if config.scorer:
        resolve_model(config.scorer)
    # a user's task data is read and checked (a task emptied by decontamination too) before any folder is made
    if config.data != "builtin":
        load_tasks(config, Decontamination(config.decontamination))
    else:
        for source in config.triplet_tasks:
            triplet_task(source)
    command = "datacube train" if train else "datacube plan"
    engine = Engine.resolve(config.engine)
    with RunFolder(out, config, resume=resume, overwrite=overwrite, command=command, engine=engine) as run:
        plan_dir = run.stage("plan", "plan", lambda partial: save_plan(build_plan(config, engine), partial))
        if not train:
            run.finish()
            return run
        model_dir = run.stage(
            "model",
            "model",
            lambda partial: train_from_plan(load_plan(plan_dir), partial, engine, run.tracking),
            keep_partial=True,
            all_ranks=True,
        )
        if config.eval_tasks:
            run.stage(
                "eval",
                "eval.json",
                lambda partial: write_sts_eval(partial, str(model_dir), config.eval_tasks, engine=engine),
            )
        if is_main():
            data = "the built-in collection" if config.data == "builtin" else f"`{config.data}`"
            write_model_card(
                model_dir,
                run.dir,
                "datacube",
                eval_path=run.dir / "eval.json",
                data=f"{data} in the plan's order (`plan/plan.json`)",
                decontamination=plan_dir,
            )
        run.finish()
        return run
