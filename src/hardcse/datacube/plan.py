"""``hardcse datacube plan``: the task order and the batches, with their difficulties, as an inspectable file.

- Task vectors: the mean embedding (by the pre-learned model) of ``queries_per_task`` sampled instructed queries;
  their cosine similarities; the task order by annealing (or a random order for the ablation).
- Instance difficulty phi = sim(q, s+) - sim(q, s-) by the same model; each task's instances sorted easy to
  hard (phi descending) or shuffled, cut into batches; instances with phi < delta get mask 0 (no loss of their
  own, but their texts stay in the batch as negatives).
- Batches combined as Algorithm 1: walk the task order taking each task's next batch, repeat until all are
  used (``schedule: cycle``), or all batches shuffled (``schedule: shuffle``, the vanilla baseline).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

from hardcse.atomic import write_text_atomic  # noqa: E402
from hardcse.config import config_from_dict, config_to_dict  # noqa: E402
from hardcse.data.decontamination import Decontamination  # noqa: E402
from hardcse.data.multitask import (  # noqa: E402
    Task,
    builtin_collection,
    decontaminate_tasks,
    read_medi,
    read_task_folder,
    triplet_task,
)
from hardcse.datacube.config import DataCubeConfig  # noqa: E402
from hardcse.datacube.task_order import anneal_task_order, random_task_order, tour_similarity  # noqa: E402
from hardcse.encoder.build import load_encoder  # noqa: E402
from hardcse.encoder.encode import encode, pair_cosines  # noqa: E402
from hardcse.engines import Engine  # noqa: E402
from hardcse.errors import HardcseError  # noqa: E402
from hardcse.figures import save_png  # noqa: E402


@dataclass
class Batch:
    task: int  # index into Plan.tasks
    rows: list[int]  # instance indices within the task
    difficulty: list[float]  # phi of each row
    mask: list[int]  # 1: the row's loss counts; 0: too hard, its texts are negatives only


@dataclass
class Plan:
    config: DataCubeConfig
    tasks: list[Task]
    similarity: np.ndarray
    task_order: list[int]
    anneal: dict
    batches: list[Batch]
    decontamination: Decontamination | None = None  # the check of a freshly built plan (not kept in plan.json)

    def instances_in_order(self) -> list[tuple[str, str, str, int]]:
        """(instructed query, positive, negative, mask) row by row in batch order."""
        rows = []
        for batch in self.batches:
            task = self.tasks[batch.task]
            for row, keep in zip(batch.rows, batch.mask, strict=True):
                rows.append((*task.instructed(task.instances[row]), keep))
        return rows


def load_tasks(config: DataCubeConfig, check: Decontamination | None = None) -> list[Task]:
    """The configured collection and ``triplet_tasks``, with at most ``max_per_task`` instances per task (a seeded
    sample); with
    ``check``, without the instances that match an evaluation text (dropped before the sample)."""
    extra = [triplet_task(source) for source in config.triplet_tasks]
    if config.data == "builtin":
        return builtin_collection(config.max_per_task, config.seed, check, extra)
    path = Path(config.data)
    tasks = [*(read_task_folder(path) if path.is_dir() else read_medi(path)), *extra]
    if check is not None:
        decontaminate_tasks(tasks, check)
    rng = random.Random(config.seed)
    for task in tasks:
        if config.max_per_task is not None and len(task.instances) > config.max_per_task:
            task.instances = rng.sample(task.instances, config.max_per_task)
    return tasks


def task_vectors(model: SentenceTransformer, tasks: list[Task], n: int, seed: int, engine: Engine) -> np.ndarray:
    """One row per task: the mean of the unit-normalised embeddings (in ``engine``) of ``n`` sampled instructed
    queries."""
    rng = random.Random(seed)
    vectors = []
    for task in tasks:
        sample = rng.sample(task.instances, min(n, len(task.instances)))
        emb = encode(model, [task.instructed(i)[0] for i in sample], show_progress=False, engine=engine)
        emb = emb / np.linalg.norm(emb, axis=1, keepdims=True)
        vectors.append(emb.mean(axis=0))
    return np.stack(vectors)


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit @ unit.T


def difficulties(model: SentenceTransformer, task: Task, engine: Engine) -> np.ndarray:
    """phi = cos(q, s+) - cos(q, s-) for every instance of the task (instructed texts, encoded in ``engine``)."""
    texts = [task.instructed(i) for i in task.instances]
    queries = [t[0] for t in texts]
    positives, negatives = [t[1] for t in texts], [t[2] for t in texts]
    return pair_cosines(model, queries, positives, engine) - pair_cosines(model, queries, negatives, engine)


def task_batches(phi: np.ndarray, config: DataCubeConfig, rng: random.Random) -> list[tuple[list[int], list[float]]]:
    """A task's instances in curriculum order, cut into batches of ``batch_size`` (the last may be smaller)."""
    if config.instance_order == "easy_to_hard":
        order = sorted(range(len(phi)), key=lambda i: (-phi[i], i))
    else:
        order = list(range(len(phi)))
        rng.shuffle(order)
    size = config.training.batch_size
    return [(order[s : s + size], [float(phi[i]) for i in order[s : s + size]]) for s in range(0, len(order), size)]


def combine_batches(per_task: list[list], task_order: list[int]) -> list[tuple[int, int]]:
    """Algorithm 1: walk the task order, take each task's next batch, repeat until every batch is used.
    Returns (task, batch index within the task) pairs."""
    out, position = [], dict.fromkeys(task_order, 0)
    while len(out) < sum(len(b) for b in per_task):
        for t in task_order:
            if position[t] < len(per_task[t]):
                out.append((t, position[t]))
                position[t] += 1
    return out


def build_plan(config: DataCubeConfig, engine: Engine | None = None) -> Plan:
    """The plan of ``config`` (module doc), its scores encoded in ``engine`` (default: ``config.engine`` resolved)."""
    engine = engine or Engine.resolve(config.engine)
    check = Decontamination(config.decontamination)
    tasks = load_tasks(config, check)
    scorer = load_encoder(config.scorer or config.encoder)
    scorer.max_seq_length = config.training.max_seq_length
    similarity = cosine_matrix(task_vectors(scorer, tasks, config.queries_per_task, config.seed, engine))
    if config.task_order == "anneal":
        result = anneal_task_order(similarity, config.anneal_iterations, config.anneal_t0, config.cooling, config.seed)
        order = result.order
        anneal = {
            "iterations": result.iterations,
            "accepted": result.accepted,
            "start_similarity": result.start_similarity,
        }
    else:
        order = random_task_order(len(tasks), config.seed)
        anneal = {}
    anneal["tour_similarity"] = tour_similarity(order, similarity)

    rng = random.Random(config.seed)
    per_task = []
    for task in tasks:
        phi = difficulties(scorer, task, engine)
        per_task.append(task_batches(phi, config, rng))
    if config.schedule == "cycle":
        picks = combine_batches(per_task, order)
    else:
        picks = [(t, b) for t in range(len(tasks)) for b in range(len(per_task[t]))]
        rng.shuffle(picks)
    batches = []
    for t, b in picks:
        rows, phi = per_task[t][b]
        keep = [0 if config.mask_threshold is not None and p < config.mask_threshold else 1 for p in phi]
        batches.append(Batch(t, rows, phi, keep))
    return Plan(config, tasks, similarity, order, anneal, batches, check)


def save_plan(plan: Plan, out_dir: str | Path) -> Path:
    """``plan.json`` (config, tasks, similarity, order, every batch with its difficulties and mask),
    ``task_similarity.png`` (the matrix in tour order) and the decontamination counts and dropped texts."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if plan.decontamination is not None:
        plan.decontamination.write(out_dir)
    data = {
        "config": config_to_dict(plan.config),
        "tasks": [
            {
                "name": t.name,
                "instructions": [t.query_instruction, t.positive_instruction, t.negative_instruction],
                "instances": [[i.query, i.positive, i.negative] for i in t.instances],
            }
            for t in plan.tasks
        ],
        "similarity": np.round(plan.similarity, 5).tolist(),
        "task_order": [plan.tasks[t].name for t in plan.task_order],
        "anneal": plan.anneal,
        "batches": [
            {
                "task": plan.tasks[b.task].name,
                "rows": b.rows,
                "difficulty": np.round(b.difficulty, 5).tolist(),
                "mask": b.mask,
            }
            for b in plan.batches
        ],
    }
    path = write_text_atomic(out_dir / "plan.json", json.dumps(data, ensure_ascii=False))
    plot_similarity(plan, out_dir / "task_similarity.png")
    return path


def load_plan(path: str | Path) -> Plan:
    from hardcse.data.multitask import Instance

    path = Path(path)
    if path.is_dir():
        path = path / "plan.json" if (path / "plan.json").is_file() else path / "plan" / "plan.json"
    if not path.is_file():
        raise HardcseError(f"{path}: no plan (make one with `hardcse datacube plan`)")
    data = json.loads(path.read_text(encoding="utf-8"))
    config = config_from_dict(DataCubeConfig, data["config"], f"{path}: config")
    tasks = [Task(t["name"], *t["instructions"], [Instance(*i) for i in t["instances"]]) for t in data["tasks"]]
    index = {t.name: i for i, t in enumerate(tasks)}
    batches = [Batch(index[b["task"]], b["rows"], b["difficulty"], b["mask"]) for b in data["batches"]]
    return Plan(
        config, tasks, np.array(data["similarity"]), [index[n] for n in data["task_order"]], data["anneal"], batches
    )


def plot_similarity(plan: Plan, path: Path) -> None:
    order = plan.task_order
    matrix = plan.similarity[np.ix_(order, order)]
    names = [plan.tasks[t].name for t in order]
    fig, ax = plt.subplots(figsize=(1.0 + 0.45 * len(names), 0.6 + 0.45 * len(names)))
    image = ax.imshow(matrix, cmap="viridis")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_title(f"task similarity in tour order (tour sum {plan.anneal['tour_similarity']:.3f})", fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    save_png(fig, path, dpi=100)
