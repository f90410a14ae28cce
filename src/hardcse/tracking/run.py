"""Experiment trackers (``report_to``): a run folder's curves, tables and plots where users already look.

One run folder is one tracker run, named after the folder, with the resolved config as its parameters; a resumed
folder continues the same runs (their ids are kept in ``OUT/tracking.json``). Offline by design: TensorBoard writes
event files into ``OUT/tensorboard/`` (``tensorboard --logdir OUT``, or the folder above several runs); MLflow
writes to ``$MLFLOW_TRACKING_URI`` or, by default, a SQLite store beside the run folders, ``OUT/../mlflow.db`` with
artifacts in ``OUT/../mlartifacts`` (``mlflow ui --backend-store-uri sqlite:///OUT/../mlflow.db``), experiment
``$MLFLOW_EXPERIMENT_NAME`` or ``hardcse``; W&B writes offline runs under ``OUT/wandb/`` (or ``$WANDB_DIR``;
``wandb sync`` uploads them), Trackio to its local store (``$TRACKIO_DIR``; ``trackio show``).

What goes there: each training job (its loss, learning rate and in-run dev scores) as a run of its own, named
after the job's folder in the run (JOB, e.g. ``round_1/encoder``): a TensorBoard run ``OUT/tensorboard/JOB``, a
nested MLflow run, a W&B or Trackio run in the group named after the run folder; hardcse's own metrics (every RL
step's reward, its parts, KL, lengths in the RL job's run; each finished stage's numbers, e.g. a round's STS
scores); the RL completions as a table; the run folder's plots as images when it finishes. A tracker that fails
mid-run is logged once and dropped: a dashboard never costs a run.

The trackers are a value, never process-wide state: :func:`tracking` opens a :class:`Tracking`, the run folder keeps
it (``RunFolder.tracking``) and hands it to each job that reports (a training job, the RL log, a finished stage). A
job given none reports nowhere.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hardcse.atomic import write_json_atomic
from hardcse.tracking.backends import Backend
from hardcse.tracking.values import environment_set, flatten, is_number, metric_name

log = logging.getLogger(__name__)

STATE = "tracking.json"  # in the run folder: the tracker runs' ids, so a resumed folder continues them
TRACKER_FOLDERS = {"tensorboard", "wandb"}  # what the trackers write inside the run folder


class Tracking:
    """The trackers of one run folder (none: every call does nothing)."""

    def __init__(self, run_dir: Path | None = None, backends: list[Backend] | None = None) -> None:
        self.run_dir = run_dir
        self.backends = backends or []
        self.save_state: Callable[[], None] = lambda: None  # writes tracking.json (set by :func:`tracking`)

    def __bool__(self) -> bool:
        return bool(self.backends)

    def _each(self, what: str, call: Any) -> None:
        for backend in list(self.backends):
            try:
                call(backend)
            except Exception as error:  # noqa: BLE001 - a tracker's failure must not stop the run
                log.warning("%s failed to %s (%s); the run goes on without it", backend.name, what, error)
                self.backends.remove(backend)
                try:  # its run marked failed, its files closed, where it still can
                    backend.close("FAILED")
                except Exception:  # noqa: BLE001 - it failed already; nothing more to say
                    pass

    def job(self, folder: str | Path) -> str:
        """A folder of the run as a tracker name: its path in the run folder, without ``.partial``."""
        path = Path(folder).resolve()
        try:
            path = path.relative_to(self.run_dir.resolve()) if self.run_dir else Path(path.name)
        except ValueError:
            path = Path(path.name)
        return "/".join(part.removesuffix(".partial") for part in path.parts) or "run"

    def metrics(self, values: dict, step: int, prefix: str = "", job: str | None = None) -> None:
        """The numbers of ``values`` (nested dicts flattened with ``/``; lists, text and None left out); ``job``:
        the training job they belong to (None: the run folder's own)."""
        numbers = {
            metric_name(f"{prefix}/{k}" if prefix else k): v for k, v in flatten(values, "/").items() if is_number(v)
        }
        if numbers:
            self._each("log metrics", lambda b: b.metrics(numbers, step, job))

    def table(self, name: str, rows: list[dict], step: int, job: str | None = None) -> None:
        if rows:
            self._each("log a table", lambda b: b.table(name, rows, step, job))

    def images(self) -> None:
        """Every PNG in the run folder (its plots), not the copies the trackers keep in their own folders."""
        for path in sorted(self.run_dir.rglob("*.png")) if self.run_dir else []:
            if TRACKER_FOLDERS & set(path.relative_to(self.run_dir).parts):
                continue
            name = self.job(path.with_suffix(""))
            self._each("log an image", lambda b, n=name, p=path: b.image(n, p))

    @contextmanager
    def training_job(self, folder: str | Path) -> Iterator[list[Any]]:
        """The trackers' callbacks for a Trainer job writing to ``folder`` (each guarded): a tracker's own callback
        where it has one, else the Trainer's integration with the environment it reads set while the job runs."""
        if not self.backends:
            yield []
            return
        from transformers.integrations import INTEGRATION_TO_CALLBACK

        from hardcse.tracking.callbacks import Guarded

        job = self.job(folder)
        environment: dict[str, str] = {}
        own: dict[str, Any] = {}

        def start(backend: Backend) -> None:
            environment.update(backend.job_environment(job))
            own[backend.name] = backend.job_callback(job)

        self._each("start a training job", start)
        self.save_state()  # a new job's tracker run, before it starts
        status = "FAILED"  # unless the job returns
        try:
            with environment_set(environment):  # an integration may read its environment when it is made
                yield [Guarded(own[b.name] or INTEGRATION_TO_CALLBACK[b.name](), b.name) for b in self.backends]
            status = "FINISHED"
        finally:
            self._each("end a training job", lambda b: b.end_job(job, status))

    def close(self, status: str = "FINISHED") -> None:
        """``status``: FINISHED, or FAILED when the command stopped on an error."""
        self._each("close", lambda b: b.close(status))


@contextmanager
def tracking(run_dir: Path, report_to: list[str], params: dict) -> Iterator[Tracking]:
    """Open ``report_to``'s trackers for ``run_dir`` (continuing the runs ``tracking.json`` names); close them at
    the end. A tracker that cannot start is a warning, not an error."""
    state_path = run_dir / STATE
    state = json.loads(state_path.read_text(encoding="utf-8")) if state_path.is_file() else {}
    opened = Tracking(run_dir)
    for name in report_to:
        try:
            opened.backends.append(open_backend(name, run_dir, params, state))
        except Exception as error:  # noqa: BLE001
            log.warning("%s could not start (%s); the run goes on without it", name, error)
    opened.save_state = lambda: write_json_atomic(state_path, state)  # now: a killed run resumes the same ids
    for backend in opened.backends:  # a run a backend opens later (a job's) is saved at once too
        backend.save_state = opened.save_state
    opened.save_state()
    status = "FAILED"
    try:
        yield opened
        opened.images()  # the command finished: its plots are made
        status = "FINISHED"
    finally:
        opened.close(status)
        opened.save_state()


def open_backend(name: str, run_dir: Path, params: dict, state: dict) -> Backend:
    """The tracker ``name``'s run of ``run_dir`` (continuing the one ``state`` names)."""
    from hardcse.tracking.backends import MLflow, TensorBoard
    from hardcse.tracking.job_runs import Trackio, WandB

    if name == "tensorboard":
        return TensorBoard(run_dir, params)
    return {"mlflow": MLflow, "wandb": WandB, "trackio": Trackio}[name](run_dir, params, state)
