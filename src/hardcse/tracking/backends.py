"""TensorBoard and MLflow: the trackers whose Trainer integrations hardcse uses as they are (a training job's run
is chosen through the environment they read), with hardcse's own numbers in the run folder's run."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from hardcse.tracking.values import EXPERIMENT, environment_set, flatten, markdown_table

if TYPE_CHECKING:
    from transformers import TrainerCallback


class Backend:
    """One tracker's side of :class:`~hardcse.tracking.run.Tracking` (each method may raise: Tracking drops a
    failing backend). ``job``: the training job (``round_1/rl``) a value belongs to, None for the run folder's own
    numbers; TensorBoard and MLflow keep every value in the folder's run, its key naming the job."""

    name = ""
    save_state: Callable[[], None] = staticmethod(lambda: None)  # writes tracking.json (set by ``tracking``)

    def metrics(self, values: dict[str, float], step: int, job: str | None = None) -> None: ...
    def table(self, name: str, rows: list[dict], step: int, job: str | None = None) -> None: ...
    def image(self, name: str, path: Path) -> None: ...
    def job_environment(self, job: str) -> dict[str, str]:
        """The environment the Trainer's own integration reads while the training job ``job`` runs."""
        return {}

    def job_callback(self, job: str) -> TrainerCallback | None:
        """This tracker's callback for the training job ``job``; None: the Trainer's own integration."""
        return None

    def end_job(self, job: str, status: str) -> None: ...
    def close(self, status: str) -> None: ...


class TensorBoard(Backend):
    name = "tensorboard"

    def __init__(self, run_dir: Path, params: dict) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.root = run_dir / "tensorboard"
        self.writer = SummaryWriter(log_dir=str(self.root / "run"))
        self.writer.add_text("config", "```\n" + json.dumps(params, indent=1) + "\n```")

    def metrics(self, values: dict[str, float], step: int, job: str | None = None) -> None:
        for key, value in values.items():
            self.writer.add_scalar(key, value, step)
        self.writer.flush()

    def table(self, name: str, rows: list[dict], step: int, job: str | None = None) -> None:
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


class MLflow(Backend):
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

    def metrics(self, values: dict[str, float], step: int, job: str | None = None) -> None:
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        self.client.log_batch(self.run_id, metrics=[Metric(k, float(v), stamp, step) for k, v in values.items()])

    def table(self, name: str, rows: list[dict], step: int, job: str | None = None) -> None:
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
