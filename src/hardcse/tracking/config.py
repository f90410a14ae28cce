"""``report_to``: which experiment trackers a long command reports to (hardcse/tracking/run.py does it). Light:
configs import it without importing a tracker."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field

from hardcse.config import Checked, ConfigValueError

# tracker -> the module it needs (installed by the extra ``hardcse[tracking]``)
TRACKERS = {"tensorboard": "tensorboard", "mlflow": "mlflow", "wandb": "wandb", "trackio": "trackio"}
EXTRA = "pip install 'hardcse[tracking]'"


def check_report_to(names: list[str]) -> None:
    """Every name a tracker hardcse supports and that is installed here (a config mistake names ``report_to``)."""
    for name in names:
        if name not in TRACKERS:
            raise ConfigValueError("report_to", f"{name!r} is not a tracker; choose from {', '.join(TRACKERS)}")
        if importlib.util.find_spec(TRACKERS[name]) is None:
            raise ConfigValueError("report_to", f"{name} is not installed; {EXTRA} (or pip install {TRACKERS[name]})")
    if len(set(names)) != len(names):
        raise ConfigValueError("report_to", f"{names} names a tracker twice")


@dataclass
class Tracked(Checked):
    """Base of the configs of long commands: ``report_to`` (``--report-to``) lists the trackers a run reports to
    (default none). How a run is watched, not what it computes: a resumed run may change it."""

    report_to: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_report_to(self.report_to)
        super().__post_init__()
