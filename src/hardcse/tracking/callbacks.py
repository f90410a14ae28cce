"""Tracker callbacks in the Trainer: any that fails is dropped with a warning (training goes on); a job's own log."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from transformers import TrainerCallback

log = logging.getLogger(__name__)


class Guarded(TrainerCallback):
    """A Trainer integration's callback whose failure is a warning: the callback is dropped, training goes on."""

    def __init__(self, inner: Any, name: str) -> None:
        self.inner = inner
        self.name = name


def _guard(event: str) -> Any:
    def handler(self: Guarded, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if self.inner is None:
            return None
        try:
            return getattr(self.inner, event)(args, state, control, **kwargs)
        except Exception as error:  # noqa: BLE001 - a dashboard must never cost a run
            log.warning("%s failed in the Trainer (%s: %s); training goes on without it", self.name, event, error)
            self.inner = None
            return None

    return handler


for _event in [name for name in dir(TrainerCallback) if name.startswith("on_")]:
    setattr(Guarded, _event, _guard(_event))


class JobLog(TrainerCallback):
    """A training job's logs (loss, learning rate, in-run dev scores) to ``log(values, step)``: the keys the
    Trainer's integrations write (``train/...``, ``eval/...``) at the job's global step. For W&B and Trackio, whose
    Trainer integrations log every job of a process into one process-wide run (W&B: "integrations that assume a
    single global run" are not supported with several runs in one process), so each job gets a run of its own."""

    def __init__(self, log: Callable[[dict, int], None]) -> None:
        self.log = log

    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any) -> None:
        from transformers.integrations.integration_utils import rewrite_logs

        from hardcse.tracking.values import is_number

        if state.is_world_process_zero and logs:
            self.log({k: v for k, v in rewrite_logs(logs).items() if is_number(v)}, state.global_step)
