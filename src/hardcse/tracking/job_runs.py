"""Weights & Biases and Trackio: trackers whose runs hardcse holds itself, one per training job.

Their Trainer integrations log every job of a process into one process-wide run, so a round's curves would share
keys with the previous round's. Here the run folder has a run (its config, stage numbers, rounds curve, plots) and
each training job (``round_1/rl``, ``round_1/encoder``, ...) a run of its own, all in the group named after the run
folder; a job's run opens when the job first logs and ends with it (an RL job's with the command). A run's id (W&B)
or name (Trackio, ``FOLDER-XXXXXX[/JOB]``) is kept in ``tracking.json`` when it opens, so a resumed folder, even
one killed mid-job, continues the same runs.

W&B runs offline unless ``WANDB_MODE`` says otherwise, under ``OUT/wandb/`` (or ``$WANDB_DIR``), project
``$WANDB_PROJECT`` or ``hardcse``; ``wandb sync OUT/wandb/offline-run-*`` uploads them. Offline, W&B does not resume a
run: a resumed folder writes its new steps into a second offline folder with the same run id (and W&B's sync of two
folders of one id may keep one of them: docs/commands.md). Trackio writes to its
local store (``$TRACKIO_DIR``, by default in the Hugging Face cache), project ``hardcse``; ``trackio show``. Nothing
leaves the machine unless the user sets ``WANDB_MODE``, ``TRACKIO_SPACE_ID`` or ``TRACKIO_SERVER_URL``.
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import logging
import os
import secrets
from pathlib import Path
from typing import Any

from hardcse.tracking.backends import Backend
from hardcse.tracking.callbacks import JobLog
from hardcse.tracking.values import EXPERIMENT

log = logging.getLogger(__name__)


class RunPerJob(Backend):
    """The run folder's run and one run per training job, in the group named after the folder. A subclass opens,
    logs to and finishes one run of its library."""

    def __init__(self, run_dir: Path, params: dict, state: dict) -> None:
        self.run_dir = run_dir
        self.group = run_dir.name
        self.state = state.setdefault(self.name, {})
        self.jobs: dict[str, Any] = {}
        self.closed = False
        self.folder_run = self.open(None, params)

    def run(self, job: str | None) -> Any:
        if self.closed:  # dropped after a failure: a callback still holding it opens nothing new
            raise RuntimeError(f"{self.name} was closed")
        if job is None:
            return self.folder_run
        if job not in self.jobs:
            self.jobs[job] = self.open(job, None)
            self.save_state()  # its id now: a run killed in this job continues it on resume
        return self.jobs[job]

    def run_name(self, job: str | None) -> str:
        return f"{self.group}/{job}" if job else self.group

    def metrics(self, values: dict[str, float], step: int, job: str | None = None) -> None:
        self.log(self.run(job), values, step)

    def table(self, name: str, rows: list[dict], step: int, job: str | None = None) -> None:
        columns = list(dict.fromkeys(k for row in rows for k in row))
        self.log(self.run(job), {name: self.new_table(columns, [[row.get(k) for k in columns] for row in rows])}, step)

    def image(self, name: str, path: Path) -> None:
        self.log(self.folder_run, {name: self.new_image(path)}, None)

    def job_callback(self, job: str) -> JobLog:
        return JobLog(lambda values, step: self.log(self.run(job), values, step))

    def end_job(self, job: str, status: str) -> None:
        run = self.jobs.pop(job, None)
        if run is not None:
            self.finish(run, status)

    def close(self, status: str) -> None:
        if self.closed:
            return
        self.closed = True
        for run in [*self.jobs.values(), self.folder_run]:
            self.finish(run, status)
        self.jobs.clear()

    # -- one library's side ----------------------------------------------------------------------------------------
    def open(self, job: str | None, params: dict | None) -> Any: ...
    def log(self, run: Any, values: dict, step: int | None) -> None: ...
    def new_table(self, columns: list[str], data: list[list]) -> Any: ...
    def new_image(self, path: Path) -> Any: ...
    def finish(self, run: Any, status: str) -> None: ...


class WandB(RunPerJob):
    """Several W&B runs at once (``reinit="create_new"``), each with ``step`` as its x-axis (W&B's own step must only
    grow, while a stage's numbers come at step 0 after a round's)."""

    name = "wandb"

    def open(self, job: str | None, params: dict | None) -> Any:
        import wandb

        ids = self.state.setdefault("ids", {})
        run = wandb.init(
            mode=os.environ.get("WANDB_MODE") or "offline",
            dir=None if os.environ.get("WANDB_DIR") else str(self.run_dir),
            project=os.environ.get("WANDB_PROJECT") or EXPERIMENT,
            group=self.group,
            job_type=job or "run",
            name=self.run_name(job),
            id=ids.get(job or ""),
            resume="allow",
            reinit="create_new",
            config=params,
            settings=wandb.Settings(console="off", silent=True, x_disable_stats=True, disable_git=True),
        )
        ids[job or ""] = run.id
        run.define_metric("step")
        run.define_metric("*", step_metric="step")
        return run

    def log(self, run: Any, values: dict, step: int | None) -> None:
        run.log(values if step is None else {**values, "step": step})

    def new_table(self, columns: list[str], data: list[list]) -> Any:
        import wandb

        return wandb.Table(columns=columns, data=data, allow_mixed_types=True)  # a column may hold None and text

    def new_image(self, path: Path) -> Any:
        import wandb

        return wandb.Image(str(path))

    def finish(self, run: Any, status: str) -> None:
        run.finish(exit_code=0 if status == "FINISHED" else 1)


class Trackio(RunPerJob):
    """Trackio runs found again by name (the run folder's name, then the job's), resumed with ``resume="allow"``.
    ``trackio.init`` finishes the process's current run, so each run is opened in a context of its own; Trackio's
    messages go to ``run.log``, not the command's output."""

    name = "trackio"

    def run_name(self, job: str | None) -> str:
        """``FOLDER-XXXXXX[/JOB]``: Trackio finds a run again by its name alone, so the folder's runs carry a
        random suffix of their own (kept in tracking.json), and another folder of the same name never shares them."""
        folder = f"{self.group}-{self.state.setdefault('suffix', secrets.token_hex(3))}"
        return f"{folder}/{job}" if job else folder

    def open(self, job: str | None, params: dict | None) -> Any:
        import trackio
        from trackio import context_vars

        opened = self.state.setdefault("runs", [])
        name = self.run_name(job)

        def start() -> Any:
            context_vars.current_run.set(None)  # in this context only: the runs already open stay open
            return trackio.init(
                project=EXPERIMENT,
                name=name,
                group=self.group,
                config=params,
                resume="allow" if name in opened else "never",
                embed=False,
                auto_log_cpu=False,
                auto_log_gpu=False,
            )

        with quiet():
            run = contextvars.copy_context().run(start)
        if name not in opened:
            opened.append(name)
        return run

    def log(self, run: Any, values: dict, step: int | None) -> None:
        run.log(values, step=step)

    def new_table(self, columns: list[str], data: list[list]) -> Any:
        import trackio

        return trackio.Table(columns=columns, data=data)

    def new_image(self, path: Path) -> Any:
        import trackio

        return trackio.Image(str(path))

    def finish(self, run: Any, status: str) -> None:
        with quiet():
            run.finish()


@contextlib.contextmanager
def quiet() -> Any:
    """A library's prints to the log (debug), not to the command's output."""
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        yield
    if captured.getvalue().strip():
        log.debug("%s", captured.getvalue().strip())
