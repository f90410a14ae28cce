"""``hardcse eval --backend mteb``: MTEB's own STS evaluator (mteb 2.x, the optional extra ``hardcse[mteb]``).

The tasks are MTEB's registered task classes (their metadata, main score ``cosine_spearman`` and evaluator) with
their data taken from the vendored files instead of the hub, which is not reachable here: STS12-16 (all subsets
of a year in one test split, as MTEB's), STSBenchmark (its test split for STS-B, validation for STS-B-dev) and
SICK-R. One convention differs: MTEB's SICK-R scores all 9,927 SICK pairs (train + trial + test), SentEval (and
hardcse's SICK-R) the 4,927 test pairs. hardcse's ``SICK-R`` runs under MTEB's evaluator as the task
``SICK-R-SentEval`` (the test pairs); ``SICK-R-full`` is MTEB's SICK-R. Any other name is looked up in MTEB's
registry and loaded from the hub (only where the hub is reachable).

MTEB's result files (``OUT/mteb/results/MODEL/REVISION/TASK.json``) are written beside hardcse's ``eval.json``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hardcse.data.sts import DEV_TASK, KNOWN_TASKS, STSPairs, load_sts_task
from hardcse.errors import HardcseError
from hardcse.evaluation.sts import seven_task_average

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

# hardcse task -> (MTEB task, split, MTEB's name for it when it is not MTEB's data)
MTEB_TASKS = {
    **{t: (t, "test", None) for t in ("STS12", "STS13", "STS14", "STS15", "STS16")},
    "STS-B": ("STSBenchmark", "test", None),
    DEV_TASK: ("STSBenchmark", "validation", None),
    "SICK-R": ("SICK-R", "test", "SICK-R-SentEval"),
    "SICK-R-full": ("SICK-R", "test", None),
}


def _import_mteb():  # noqa: ANN202  (the module, when the extra is installed)
    try:
        import mteb
    except ImportError:
        raise HardcseError(
            "--backend mteb needs the mteb package: pip install 'hardcse[mteb]' (or pip install 'mteb>=2,<3')"
        ) from None
    return mteb


def mteb_tasks(names: Sequence[str]) -> list:
    """MTEB task objects for hardcse task names (data from the vendored files) and MTEB task names (the hub)."""
    from datasets import Dataset, DatasetDict

    mteb = _import_mteb()
    grouped: dict[tuple[str, str], dict[str, STSPairs]] = {}  # (MTEB task, name it runs as) -> split -> pairs
    tasks = []
    for name in names:
        if name in MTEB_TASKS:
            base, split, alias = MTEB_TASKS[name]
            grouped.setdefault((base, alias or base), {})[split] = load_sts_task(name)
        else:
            try:
                tasks.append(mteb.get_task(name))
            except KeyError:
                raise HardcseError(
                    f"unknown task {name!r}: neither hardcse's ({', '.join(KNOWN_TASKS)}) nor MTEB's"
                ) from None
    for (base, new_name), splits in grouped.items():
        task = mteb.get_task(base)
        task.metadata = task.metadata.model_copy(update={"name": new_name, "eval_splits": list(splits)})
        task.dataset = DatasetDict(
            {
                split: Dataset.from_dict(
                    {"sentence1": p.sentences1, "sentence2": p.sentences2, "score": [float(s) for s in p.scores]}
                )
                for split, p in splits.items()
            }
        )
        # the data is hardcse's vendored copy, not the hub revision MTEB's metadata names
        task.metadata.dataset = {"path": f"hardcse vendored data ({base})", "revision": "vendored"}
        task.data_loaded = True
        tasks.append(task)
    return tasks


def mteb_record(model: SentenceTransformer, source: str, names: Sequence[str], tasks: list, out: Path | None) -> dict:
    """Run MTEB's evaluator on ``tasks`` (``mteb_tasks(names)``); the hardcse record (scores x 100 by hardcse task
    name, avg7), with MTEB's result files under ``out/mteb`` when ``out`` is given."""
    mteb = _import_mteb()
    start = time.perf_counter()
    cache = mteb.ResultCache(out / "mteb") if out is not None else None
    # the name MTEB files the results under (owner/name, as MTEB's model names are)
    model.model_card_data.model_name = "hardcse/" + re.sub(r"[^\w.-]+", "-", source).strip("-")
    result = mteb.evaluate(
        model,
        tasks,
        cache=cache,
        overwrite_strategy="always",
        show_progress_bar=False,
        raise_error=True,
        encode_kwargs={"batch_size": 128},
    )
    by_task = {r.task_name: r for r in result.task_results}
    scores = {}
    for name in names:
        base, split, alias = MTEB_TASKS.get(name, (name, None, None))
        task_result = by_task[alias or base]
        split = split or next(iter(task_result.scores))
        scores[name] = float(task_result.scores[split][0]["cosine_spearman"]) * 100
    local = [t for t in tasks if t.metadata.dataset["revision"] == "vendored"]  # hardcse's tasks (hub ones aside)
    return {
        "model": source,
        "backend": f"mteb {mteb.__version__}",
        "scores": scores,
        "avg7": seven_task_average(scores),
        "seconds": round(time.perf_counter() - start, 2),
        "n_sentences": sum(2 * len(t.dataset[split]) for t in local for split in t.metadata.eval_splits),
    }
