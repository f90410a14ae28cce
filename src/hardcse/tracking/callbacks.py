"""The Trainer's tracker integrations, guarded: a callback that fails is dropped with a warning, training goes on."""

from __future__ import annotations

import logging
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
