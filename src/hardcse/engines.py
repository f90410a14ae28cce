"""Which library runs the forward passes that train nothing: ``engine: auto | torch | openvino``.

Inference (synthesis, the held-out comparison, STS evaluation, the reward's cosines) can run in
PyTorch or in OpenVINO (OpenVINO GenAI for generation, OpenVINO Runtime for the encoder). Training always runs in
PyTorch. ``auto`` picks OpenVINO when it is installed and the work runs on a CPU, PyTorch on a GPU.

The choice is a value, :class:`Engine`: each command resolves it once (:meth:`Engine.resolve`) from its config's
``engine`` key or ``--engine``, where ``auto`` defers to ``HARDCSE_ENGINE`` (the test suite pins ``torch`` and runs
the OpenVINO path in tests of its own), and passes it down to everything that encodes or generates: evaluation,
rewards, synthesis, the held-out comparison, the dev evaluator of training. No module keeps a choice, so two
commands in one process never see each other's. A library call made without one reads ``HARDCSE_ENGINE`` then
(:meth:`Engine.from_environment`).

Precision: an OpenVINO model computes in float32 when asked (``float32``); ``auto`` lets the CPU plugin choose
(bfloat16 on CPUs with AVX512-BF16 or AMX, float32 elsewhere), like the generator's ``dtype: auto`` in PyTorch.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hardcse.config import check_choice
from hardcse.devices import DTYPES
from hardcse.errors import HardcseError

if TYPE_CHECKING:
    import torch

ENGINES = ("auto", "torch", "openvino")
INSTALL_HINT = "pip install 'hardcse[openvino]' (make install does)"


def check_engine(key: str, value: str) -> None:
    """A config check: ``value`` is one of :data:`ENGINES`."""
    check_choice(key, value, ENGINES)


def openvino_installed() -> bool:
    """Whether OpenVINO Runtime and OpenVINO GenAI can be imported (checked without importing them)."""
    return all(importlib.util.find_spec(name) is not None for name in ("openvino", "openvino_genai"))


@dataclass(frozen=True)
class Engine:
    """A command's engine: ``choice`` torch, openvino or auto (OpenVINO on a CPU where installed, per device), and
    ``precision``, what an OpenVINO encoder computes in (auto: the CPU plugin's choice, see module doc)."""

    choice: str = "auto"
    precision: str = "auto"
    key: str = field(default="engine", compare=False, repr=False)  # where the choice was made: error messages name it

    @classmethod
    def resolve(cls, value: str = "auto", key: str = "engine", precision: str = "auto") -> Engine:
        """The engine a command runs with: ``value`` (a config's ``engine`` or ``--engine``, named ``key``), where
        ``auto`` defers to ``HARDCSE_ENGINE`` (read now); checked, and OpenVINO refused where it is not installed."""
        check_engine(key, value)
        check_choice("precision", precision, DTYPES)  # a dtype key's names: openvino_precision maps both
        if value == "auto":
            value, key = os.environ.get("HARDCSE_ENGINE", "auto"), "HARDCSE_ENGINE"
            check_engine(key, value)
        if value == "openvino" and not openvino_installed():
            raise HardcseError(f"{key}: openvino: OpenVINO is not installed; {INSTALL_HINT}, or set {key}: torch")
        return cls(value, precision, key)

    @classmethod
    def from_environment(cls) -> Engine:
        """The engine of a library call made outside a command: ``HARDCSE_ENGINE`` as it is now, else auto."""
        return cls.resolve()

    def on(self, device: torch.device) -> str:
        """``torch`` or ``openvino`` for work on ``device``."""
        if self.choice == "auto":
            return "openvino" if device.type == "cpu" and openvino_installed() else "torch"
        if self.choice == "openvino" and device.type != "cpu":
            raise HardcseError(f"{self.key}: openvino runs on the CPU, not on {device}; set {self.key}: torch or auto")
        return self.choice


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
