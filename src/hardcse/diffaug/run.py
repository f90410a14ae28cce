"""``hardcse diffaug train``: DiffAug (or its SimCSE baseline) as one resumable run folder.

OUT/stage1/    the encoder with its tuned prefixes, classifier.safetensors, stage1.json, config.yaml,
               diagnostics.jsonl + diagnostics.png (delta and kappa against the step), decontamination.json
               (NLI pairs dropped as matches of evaluation texts) + decontaminated.jsonl (their texts)
OUT/model/     the final encoder (stage 2's best checkpoint on STS-B dev, or stage 1's for prefix-tuning
               only) with training.json and decontamination.json (the NLI pairs' and unlabeled sentences'
               counts); it encodes with both prefixes
OUT/eval.json  the STS suite on it
"""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

from hardcse.data.corpus import read_sentences
from hardcse.diffaug.config import DiffAugConfig
from hardcse.diffaug.data import nli_data
from hardcse.diffaug.train import run_stage1, run_stage2, stage1_folder
from hardcse.distributed import is_main
from hardcse.engines import Engine
from hardcse.errors import HardcseError
from hardcse.evaluation.sts import write_sts_eval
from hardcse.model_card import write_model_card
from hardcse.resources import resolve_model
from hardcse.run_folder import RunFolder


def diffaug_run(config: DiffAugConfig, out: str | Path, *, resume: bool = False, overwrite: bool = False) -> Path:
    """Run (or continue) the stages of ``config`` in the run folder ``out``; returns the final model folder."""
    resolve_model(config.encoder)  # a missing model fails here, not after stage 1
    reused = stage1_folder(config) if config.stage1_from else None
    if config.setting == "semi" and (2 in config.stages or config.method == "simcse") and not resume:
        if not read_sentences(config.unlabeled):  # stage 2's sentences, checked before stage 1 spends its time
            raise HardcseError(f"{config.unlabeled}: no sentences")
    needs_nli = not (resume and (Path(out) / "model").is_dir())  # a finished run's resume reads no data
    data = functools.cache(lambda: nli_data(config))
    if needs_nli:
        data()  # the NLI files read and checked before any stage spends its time
    engine = Engine.resolve(config.engine)
    with RunFolder(out, config, resume=resume, overwrite=overwrite, command="diffaug train", engine=engine) as run:
        stage1 = run.dir / "stage1"
        if config.method == "diffaug":
            if reused is not None:
                run.stage("stage1", "stage1", lambda partial: shutil.copytree(reused, partial))
            else:
                run.stage(
                    "stage1",
                    "stage1",
                    lambda partial: run_stage1(config, data(), partial, run.tracking),
                    all_ranks=True,
                )
        if 2 in config.stages or config.method == "simcse":
            model = run.stage(
                "stage2",
                "model",
                lambda partial: run_stage2(config, data(), stage1, partial, engine, run.tracking),
                keep_partial=True,
                all_ranks=True,
            )
        else:  # prefix-tuning only: stage 1's encoder is the result
            model = run.stage("model", "model", lambda partial: shutil.copytree(stage1, partial))
        if config.eval_tasks:
            run.stage(
                "eval",
                "eval.json",
                lambda partial: write_sts_eval(partial, str(model), config.eval_tasks, engine=engine),
            )
        if is_main():
            unlabeled = f"unlabeled sentences of `{config.unlabeled or 'the vendored Wikipedia sample'}`, "
            write_model_card(
                model,
                run.dir,
                "diffaug" if config.method == "diffaug" else "simcse",
                eval_path=run.dir / "eval.json",
                data=f"{config.setting}: {unlabeled if config.setting == 'semi' else ''}NLI "
                f"{', '.join(config.nli_files)} (a {config.nli_fraction:g} share of the triplets)",
            )
        run.finish()
    return model
