"""Which library runs the forward passes that train nothing: ``engine: auto | torch | openvino``.

Inference (synthesis, the held-out comparison, STS evaluation, the reward's cosines) can run in
PyTorch or in OpenVINO (OpenVINO GenAI for generation, OpenVINO Runtime for the encoder). Training always runs in
PyTorch. ``auto`` picks OpenVINO when it is installed and the work runs on a CPU, PyTorch on a GPU.

The choice is process-wide: the CLI sets it once from ``--engine`` or a config's ``engine`` key
(:func:`select_engine`); :func:`hardcse.encoder.encode.encode` asks :func:`encoder_engine` on every call and the
generator's synthesis asks :func:`resolve_engine`, so evaluation, rewards and synthesis in every method
follow the one switch. ``HARDCSE_ENGINE`` sets the starting choice (the test suite pins ``torch`` and runs the
OpenVINO path in tests of its own).

Precision: an OpenVINO model computes in float32 when asked (``float32``); ``auto`` lets the CPU plugin choose
(bfloat16 on CPUs with AVX512-BF16 or AMX, float32 elsewhere), like the generator's ``dtype: auto`` in PyTorch.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from hardcse.config import check_choice
from hardcse.errors import HardcseError

if TYPE_CHECKING:
    import torch

ENGINES = ("auto", "torch", "openvino")
INSTALL_HINT = "pip install 'hardcse[openvino]' (make install does)"

PRECISIONS = ("auto", "float32", "bfloat16")

_selected = os.environ.get("HARDCSE_ENGINE", "auto")
_encoder_precision = "auto"


def check_engine(key: str, value: str) -> None:
    """A config check: ``value`` is one of :data:`ENGINES`."""
    check_choice(key, value, ENGINES)


def openvino_installed() -> bool:
    """Whether OpenVINO Runtime and OpenVINO GenAI can be imported (checked without importing them)."""
    return all(importlib.util.find_spec(name) is not None for name in ("openvino", "openvino_genai"))


def _require_openvino(key: str) -> None:
    if not openvino_installed():
        raise HardcseError(f"{key}: openvino: OpenVINO is not installed; {INSTALL_HINT}, or set {key}: torch")


def resolve_engine(value: str, device: torch.device, key: str = "engine") -> str:
    """``torch`` or ``openvino`` for a checked ``value`` and the device the work would run on. ``auto`` defers to
    the process-wide choice (:func:`select_engine`, ``HARDCSE_ENGINE``) and, where that is ``auto`` too, picks
    OpenVINO on a CPU when it is installed."""
    check_engine(key, value)
    if value == "auto":
        value = _selected
        check_engine("HARDCSE_ENGINE", value)  # the one way a process-wide choice is not yet checked
    if value == "auto":
        return "openvino" if device.type == "cpu" and openvino_installed() else "torch"
    if value == "openvino":
        if device.type != "cpu":
            raise HardcseError(f"{key}: openvino runs on the CPU, not on {device}; set {key}: torch or auto")
        _require_openvino(key)
    return value


def select_engine(value: str, key: str = "engine", precision: str = "auto") -> None:
    """Set the process-wide choice (the CLI calls this once per command with ``--engine`` or a config's
    ``engine``); ``auto`` is the starting choice (``HARDCSE_ENGINE``, else detection), whatever an earlier command
    of the same process chose. ``precision``: what an OpenVINO encoder computes in (auto: the CPU plugin's choice,
    see module doc)."""
    global _selected, _encoder_precision
    check_engine(key, value)
    check_choice("precision", precision, PRECISIONS)
    if value == "openvino":
        _require_openvino(key)
    _selected = os.environ.get("HARDCSE_ENGINE", "auto") if value == "auto" else value
    _encoder_precision = precision


def encoder_precision() -> str:
    """The OpenVINO encoders' precision (auto | float32 | bfloat16)."""
    return _encoder_precision


def encoder_engine(device: torch.device) -> str:
    """``torch`` or ``openvino`` for an encoder on ``device`` under the process-wide choice."""
    return resolve_engine("auto", device)


@contextmanager
def quiet_tracing() -> Iterator[None]:
    """Silence the tracer's warnings while a model is converted: they name Python branches that the conversion
    freezes, which hardcse's traced functions keep off the dynamic dimensions (hardcse/art/generator/openvino.py)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def openvino_precision(dtype: str) -> dict[str, str]:
    """OpenVINO compile properties for a ``dtype`` name (auto | float32 | bfloat16)."""
    hint = {"auto": None, "float32": "f32", "bfloat16": "bf16"}[dtype]
    return {} if hint is None else {"INFERENCE_PRECISION_HINT": hint}
