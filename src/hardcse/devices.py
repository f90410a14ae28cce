"""Where a model runs: ``device: auto | cpu | cuda | cuda:N`` in a config, checked on load, resolved when used.

``auto`` is the process's own CUDA device when torch sees one (``cuda:LOCAL_RANK`` under ``accelerate launch`` or
``torchrun``, else ``cuda:0``), the CPU otherwise; ``cuda`` is ``cuda:0`` (``cuda:LOCAL_RANK`` likewise). Naming a
GPU on a machine without one is a user error, not a silent fall-back to the CPU.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import TYPE_CHECKING

from hardcse.config import ConfigValueError
from hardcse.errors import HardcseError

if TYPE_CHECKING:
    import torch

DEVICE_SYNTAX = re.compile(r"auto|cpu|cuda(:\d+)?")


def check_device(key: str, value: str) -> None:
    """A config check: ``value`` is auto, cpu, cuda or cuda:N."""
    if not isinstance(value, str) or not DEVICE_SYNTAX.fullmatch(value):
        raise ConfigValueError(key, f"{value!r}: give auto, cpu, cuda or cuda:N (N: the GPU's index)")


def resolve_device(value: str, key: str = "device") -> torch.device:
    """The torch device a checked ``value`` names on this machine (``key`` names it in an error)."""
    import torch  # here: configs check their device keys without importing torch

    check_device(key, value)
    if value == "cpu" or (value == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        raise HardcseError(f"{key}: {value}: torch sees no CUDA GPU on this machine; set {key}: auto or cpu")
    index = int(value.split(":")[1]) if ":" in value else int(os.environ.get("LOCAL_RANK", 0)) % count
    if index >= count:
        raise HardcseError(f"{key}: {value}: this machine has {count} CUDA GPU(s), cuda:0 to cuda:{count - 1}")
    return torch.device("cuda", index)


def check_config_devices(config: object, prefix: str = "") -> None:
    """Every ``device`` key of a config (nested blocks too) names a device this machine has: a run refuses a
    missing GPU before it writes anything."""
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if dataclasses.is_dataclass(value):
            check_config_devices(value, f"{prefix}{f.name}.")
        elif f.name == "device" and isinstance(value, str):
            resolve_device(value, prefix + f.name)


def supports_bfloat16(device: torch.device) -> bool:
    """Whether ``device`` computes bfloat16 natively (a CUDA GPU with bf16; a CPU with AVX512-BF16 or AMX)."""
    import torch

    if device.type == "cuda":  # Ampere and later; older GPUs only emulate it (is_bf16_supported says yes)
        return torch.cuda.get_device_capability(device)[0] >= 8
    return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()


DTYPES = ("auto", "float32", "bfloat16")  # the names a dtype key takes (generator.dtype, training.dtype)


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    """The dtype a ``dtype`` key names (``generator.dtype``, ``training.dtype``): float32, bfloat16, or for "auto"
    bfloat16 where ``device`` computes it natively (:func:`supports_bfloat16`), else float32."""
    import torch

    if name == "auto":
        return torch.bfloat16 if supports_bfloat16(device) else torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16}[name]
