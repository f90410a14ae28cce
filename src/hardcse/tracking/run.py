"""Experiment trackers (``report_to``): a run folder's curves, tables and plots where users already look.

One run folder is one tracker run, named after the folder, with the resolved config as its parameters; a resumed
folder continues the same run. Offline by design: TensorBoard writes event files into ``OUT/tensorboard/``
(``tensorboard --logdir OUT``, or the folder above several runs); MLflow writes to ``$MLFLOW_TRACKING_URI`` or, by
default, a SQLite store beside the run folders, ``OUT/../mlflow.db`` with artifacts in ``OUT/../mlartifacts``
(``mlflow ui --backend-store-uri sqlite:///OUT/../mlflow.db``), experiment ``$MLFLOW_EXPERIMENT_NAME`` or
``hardcse``.

What goes there: each training job through the Trainer's own integration (its loss, learning rate and in-run dev
scores: a TensorBoard run ``OUT/tensorboard/JOB``, a nested MLflow run named JOB, where JOB is the job's folder in
the run, e.g. ``round_1/encoder``); hardcse's own metrics (every RL step's reward, its parts, KL, lengths; each
finished stage's numbers, e.g. a round's STS scores) through :func:`active`; the RL completions as a table; the run
folder's plots as images when it finishes. A tracker that fails mid-run is logged once and dropped: a dashboard
never costs a run.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hardcse.atomic import write_json_atomic

log = logging.getLogger(__name__)

STATE = "tracking.json"  # in the run folder: the tracker runs' ids, so a resumed folder continues them
EXPERIMENT = "hardcse"


class _Backend:
    """One tracker's side of :class:`Tracking` (each method may raise: Tracking drops a failing backend)."""

    name = ""

    def metrics(self, values: dict[str, float], step: int) -> None: ...
    def table(self, name: str, rows: list[dict], step: int) -> None: ...
    def image(self, name: str, path: Path) -> None: ...
    def job_environment(self, job: str) -> dict[str, str]:
        return {}

    def close(self, status: str) -> None: ...


class _TensorBoard(_Backend):
    name = "tensorboard"

    def __init__(self, run_dir: Path, params: dict) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.root = run_dir / "tensorboard"
        self.writer = SummaryWriter(log_dir=str(self.root / "run"))
        self.writer.add_text("config", "```\n" + json.dumps(params, indent=1) + "\n```")

    def metrics(self, values: dict[str, float], step: int) -> None:
        for key, value in values.items():
            self.writer.add_scalar(key, value, step)
        self.writer.flush()

    def table(self, name: str, rows: list[dict], step: int) -> None:
        self.writer.add_text(name, markdown_table(rows), step)  # TensorBoard has no tables: Markdown in its Text tab
        self.writer.flush()

    def image(self, name: str, path: Path) -> None:
        import numpy as np
        from PIL import Image

        self.writer.add_image(name, np.asarray(Image.open(path).convert("RGB")), dataformats="HWC")
        self.writer.flush()

    def job_environment(self, job: str) -> dict[str, str]:
        return {"TENSORBOARD_LOGGING_DIR": str(self.root / job)}

    def close(self, status: str) -> None:
        self.writer.close()


class _MLflow(_Backend):
    """Through MlflowClient and run ids, never MLflow's active run: the Trainer's callback starts and ends the
    active run (and ends whichever is active when it is collected), so ours must not depend on it."""

    name = "mlflow"

    def __init__(self, run_dir: Path, params: dict, state: dict) -> None:
        from mlflow import MlflowClient

        parent = run_dir.resolve().parent
        self.uri = os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{parent / 'mlflow.db'}"
        self.client = client = MlflowClient(tracking_uri=self.uri)
        experiment = os.environ.get("MLFLOW_EXPERIMENT_NAME") or EXPERIMENT
        # one try, up front: a server that does not answer is a warning now, not ~100 s of MLflow's retries
        with environment_set({"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}):
            found = client.get_experiment_by_name(experiment)
        if found is None:
            artifacts = None if os.environ.get("MLFLOW_TRACKING_URI") else str(parent / "mlartifacts")
            self.experiment_id = client.create_experiment(experiment, artifact_location=artifacts)
        else:
            self.experiment_id = found.experiment_id
        self.state = state.setdefault("mlflow", {})
        if self.state.get("run_id") is not None and self.state.get("uri") == self.uri:  # a resumed folder
            self.run_id = self.state["run_id"]
            client.update_run(self.run_id, status="RUNNING")
        else:
            self.run_id = client.create_run(self.experiment_id, run_name=run_dir.name).info.run_id
            self.state.clear()
            self.state |= {"run_id": self.run_id, "uri": self.uri, "jobs": {}}
            self._params(params)

    def _params(self, params: dict) -> None:
        from mlflow.entities import Param

        items = [Param(k, str(v)[:6000]) for k, v in sorted(flatten(params).items())]
        for i in range(0, len(items), 100):  # MLflow takes at most 100 parameters a call
            self.client.log_batch(self.run_id, params=items[i : i + 100])

    def metrics(self, values: dict[str, float], step: int) -> None:
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        self.client.log_batch(self.run_id, metrics=[Metric(k, float(v), stamp, step) for k, v in values.items()])

    def table(self, name: str, rows: list[dict], step: int) -> None:
        columns = {key: [row.get(key) for row in rows] for key in dict.fromkeys(k for row in rows for k in row)}
        self.client.log_table(self.run_id, columns, artifact_file=f"{name}/step_{step}.json")

    def image(self, name: str, path: Path) -> None:
        self.client.log_artifact(self.run_id, str(path), artifact_path=str(Path("plots") / Path(name).parent))

    def job_environment(self, job: str) -> dict[str, str]:
        # the Trainer's MLflowCallback starts this run, nested under ours, by its id (created once per job, so a
        # resumed job continues it)
        jobs = self.state["jobs"]
        if job not in jobs:
            tags = {"mlflow.parentRunId": self.run_id}
            jobs[job] = self.client.create_run(self.experiment_id, run_name=job, tags=tags).info.run_id
        return {"MLFLOW_TRACKING_URI": self.uri, "MLFLOW_RUN_ID": jobs[job]}

    def close(self, status: str) -> None:
        self.client.set_terminated(self.run_id, status)


class Tracking:
    """The trackers of one run folder (none: every call does nothing)."""

    def __init__(self, run_dir: Path | None = None, backends: list[_Backend] | None = None) -> None:
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

    def metrics(self, values: dict, step: int, prefix: str = "") -> None:
        """The numbers of ``values`` (nested dicts flattened with ``/``; lists, text and None left out)."""
        numbers = {
            metric_name(f"{prefix}/{k}" if prefix else k): v for k, v in flatten(values, "/").items() if is_number(v)
        }
        if numbers:
            self._each("log metrics", lambda b: b.metrics(numbers, step))

    def table(self, name: str, rows: list[dict], step: int) -> None:
        if rows:
            self._each("log a table", lambda b: b.table(name, rows, step))

    def images(self) -> None:
        """Every PNG in the run folder (its plots)."""
        for path in sorted(self.run_dir.rglob("*.png")) if self.run_dir else []:
            name = self.job(path.with_suffix(""))
            self._each("log an image", lambda b, n=name, p=path: b.image(n, p))

    @contextmanager
    def training_job(self, folder: str | Path) -> Iterator[list[Any]]:
        """The Trainer's own integrations for a training job writing to ``folder``: yields their callbacks (each
        guarded), with the environment they read set while the job runs."""
        if not self.backends:
            yield []
            return
        from transformers.integrations import get_reporting_integration_callbacks

        from hardcse.tracking.callbacks import Guarded

        job = self.job(folder)
        environment: dict[str, str] = {}
        self._each("start a training job", lambda b: environment.update(b.job_environment(job)))
        self.save_state()  # a new job's tracker run, before it starts
        with environment_set(environment):
            names = [b.name for b in self.backends]
            yield [
                Guarded(cls(), name)
                for cls, name in zip(get_reporting_integration_callbacks(names), names, strict=True)
            ]

    def close(self, status: str = "FINISHED") -> None:
        """``status``: FINISHED, or FAILED when the command stopped on an error."""
        self._each("close", lambda b: b.close(status))


_ACTIVE = Tracking()


def active() -> Tracking:
    """The trackers of the run folder this process is running (none outside one, and on ranks other than 0)."""
    return _ACTIVE


@contextmanager
def tracking(run_dir: Path, report_to: list[str], params: dict) -> Iterator[Tracking]:
    """Open ``report_to``'s trackers for ``run_dir`` (continuing the runs ``tracking.json`` names) as the active
    ones; close them at the end. A tracker that cannot start is a warning, not an error."""
    global _ACTIVE
    state_path = run_dir / STATE
    state = json.loads(state_path.read_text(encoding="utf-8")) if state_path.is_file() else {}
    opened = Tracking(run_dir)
    for name in report_to:
        try:
            backend = _TensorBoard(run_dir, params) if name == "tensorboard" else _MLflow(run_dir, params, state)
            opened.backends.append(backend)
        except Exception as error:  # noqa: BLE001
            log.warning("%s could not start (%s); the run goes on without it", name, error)
    opened.save_state = lambda: write_json_atomic(state_path, state)  # now: a killed run resumes the same ids
    opened.save_state()
    _ACTIVE = opened
    status = "FAILED"
    try:
        yield opened
        opened.images()  # the command finished: its plots are made
        status = "FINISHED"
    finally:
        opened.close(status)
        _ACTIVE = Tracking()
        opened.save_state()


@contextmanager
def environment_set(values: dict[str, str]) -> Iterator[None]:
    """``values`` in ``os.environ`` for the block; what was there before comes back after."""
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def flatten(values: dict, separator: str = ".", prefix: str = "") -> dict[str, Any]:
    """Nested dicts as one level, keys joined by ``separator``."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = f"{prefix}{separator}{key}" if prefix else str(key)
        if isinstance(value, dict):
            out |= flatten(value, separator, name)
        else:
            out[name] = value
    return out


def metric_name(key: str) -> str:
    """``key`` as every tracker takes it: parts joined by one ``/`` (a path in a key, e.g. a data file's, would
    otherwise make ``//``), only letters, digits and ``_-. :/``."""
    return re.sub(r"[^0-9A-Za-z_\-. :/]", "_", re.sub(r"/+", "/", key).strip("/"))


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value  # NaN left out


def markdown_table(rows: list[dict]) -> str:
    """``rows`` as a Markdown table (cells on one line, pipes escaped)."""
    keys = list(dict.fromkeys(k for row in rows for k in row))

    def cell(value: object) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(cell(row.get(k, "")) for k in keys) + " |" for row in rows]
    return "\n".join(lines)
