"""Data-CUBE's configuration (``hardcse datacube plan|train``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from hardcse.config import ConfigValueError, check_choice, check_positive, check_range
from hardcse.data.decontamination import DecontaminationConfig
from hardcse.data.sts import ALL_TASKS
from hardcse.engines import check_engine
from hardcse.tracking.config import Tracked
from hardcse.training import MOVED_TO_TRAINING, TrainingSettings


def _datacube_training() -> TrainingSettings:
    # batch 32 (paper: 64), instructions make texts longer than SimCSE's 32 tokens
    return TrainingSettings(batch_size=32, learning_rate=2e-5, warmup_ratio=0.1, max_seq_length=64, eval_steps=50)


@dataclass
class DataCubeConfig(Tracked):
    """Data-CUBE: multi-task instruction-based contrastive training with a task and an instance curriculum.
    Paper values where given (INSTRUCTOR-large on MEDI: batch 64, lr 2e-5, warmup 0.1, tau 0.01, ~2M annealing
    iterations); the rest are documented defaults for a 2-core CPU. ``training.seed`` seeds the plan too."""

    RENAMED: ClassVar[dict[str, str]] = {
        **MOVED_TO_TRAINING,
        "model": "encoder",
        "temperature": "tau",
        "initial_temperature": "anneal_t0",
    }
    encoder: str = "bundled:minilm-l6"  # the encoder trained
    scorer: str | None = None  # the pre-learned model for task vectors and difficulties; null: ``encoder``
    data: str = "builtin"  # builtin (the vendored collection) | a MEDI .json/.jsonl | a task folder
    # more tasks, one per entry: a SimCSE triplet CSV or an ART run folder (its rounds' kept triplets), e.g. ART's
    # synthetic triplets as a task of the collection (configs/compose-art-in-datacube.yaml)
    triplet_tasks: list[str] = field(default_factory=list)
    max_per_task: int | None = 400  # instances kept per task (seeded sample); null: all
    task_order: Literal["anneal", "random"] = "anneal"  # anneal: the task curriculum
    instance_order: Literal["easy_to_hard", "random"] = "easy_to_hard"  # easy_to_hard: the instance curriculum
    # cycle: Algorithm 1 (walk the task order, one batch per task) | shuffle: all batches shuffled (vanilla)
    schedule: Literal["cycle", "shuffle"] = "cycle"
    queries_per_task: int = 100  # n_t: instructed queries averaged into a task vector
    anneal_iterations: int = 2_000_000  # paper: ~2M (800K to 5M alike)
    anneal_t0: float = 1.0  # T0, the starting annealing temperature (not given by the paper)
    cooling: float = 0.99999  # T <- cooling * T each iteration (not given by the paper)
    # delta: an instance with difficulty phi = sim(q,s+) - sim(q,s-) below it is too hard (likely noise): its loss
    # is masked out, its texts stay in the batch as negatives. The paper's text; its equation (9) says phi >= delta.
    mask_threshold: float | None = -0.2
    tau: float = 0.01  # the contrastive temperature (paper)
    underfit_margin: float = 0.05  # the share of instances with phi below this is reported (paper Fig. 2)
    eval_tasks: list[str] = field(default_factory=lambda: list(ALL_TASKS))  # after training; [] for none
    # what encodes for the plan's task vectors and difficulties, training's dev scores and the STS suite:
    # auto | torch | openvino (hardcse/engines.py)
    engine: str = "auto"
    # instances with a text that matches an STS test/dev text are dropped (hardcse/data/decontamination.py)
    decontamination: DecontaminationConfig = field(default_factory=DecontaminationConfig)
    training: TrainingSettings = field(default_factory=_datacube_training)

    @property
    def seed(self) -> int:
        return self.training.seed

    def check(self) -> None:
        check_engine("engine", self.engine)
        check_positive("max_per_task", self.max_per_task, allow_none=True)
        for key in ("queries_per_task", "anneal_iterations", "anneal_t0", "tau"):
            check_positive(key, getattr(self, key))
        check_range("cooling", self.cooling, 0.0, 1.0)
        check_range("mask_threshold", self.mask_threshold, -2.0, 2.0, allow_none=True)
        check_range("underfit_margin", self.underfit_margin, -2.0, 2.0)
        if self.training.batch_size < 2:
            raise ConfigValueError("training.batch_size", "must be at least 2 (the loss contrasts within a batch)")
        for task in self.eval_tasks:
            check_choice("eval_tasks", task, ALL_TASKS)
