"""What every tracker is given, in the form each takes: key names, numbers, tables; and the environment a training
job's integration reads while the job runs."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

EXPERIMENT = "hardcse"  # the MLflow experiment, W&B project and Trackio project unless the user names one


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
