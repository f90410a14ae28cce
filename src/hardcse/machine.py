"""What machine and libraries a result came from: for run manifests, benchmark records and cache keys.

A number computed on a CPU depends on more than its inputs: the kernels a library picks follow the CPU's
instruction sets (AVX2, AVX-512, AVX-512-BF16, AMX), bfloat16 is used only where the CPU has it, and a reduction
split over threads adds in another order. :func:`machine_record` names all of it in a record; :func:`machine_kind`
is the part that can change a cached result's bits, for cache keys (hardcse/cache.py).
"""

from __future__ import annotations

import functools
import os
import platform
from importlib import metadata

# the libraries whose versions decide what hardcse computes (or how fast); absent ones are recorded as None
LIBRARIES = (
    "hardcse",
    "torch",
    "transformers",
    "sentence-transformers",
    "peft",
    "accelerate",
    "datasets",
    "tokenizers",
    "safetensors",
    "numpy",
    "scipy",
    "gguf",
    "openvino",
    "openvino-genai",
    "openvino-tokenizers",
    "nncf",
)
# CPU flags that change which kernels run (and so, for some, the low bits of a result)
KERNEL_FLAGS = (
    "avx2",
    "fma",
    "avx512f",
    "avx512bw",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
)


def library_versions(names: tuple[str, ...] = LIBRARIES) -> dict[str, str | None]:
    """Python's version and each installed library's (None where not installed)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


@functools.cache  # the CPU does not change while a process runs
def cpu_info() -> dict:
    """The CPU's model name, its :data:`KERNEL_FLAGS` present, and its logical core count (Linux's
    /proc/cpuinfo; elsewhere the model from ``platform`` and no flags)."""
    model, flags = None, set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model is None:
                    model = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    return {
        "cpu": model or platform.processor() or platform.machine(),
        "cpu_flags": [f for f in KERNEL_FLAGS if f in flags],
        "cores": os.cpu_count(),
    }


def gpu_name(device: object = None) -> str | None:
    """The name of the GPU a ``torch.device`` of type cuda names (None for a CPU or where none is visible)."""
    import torch

    if device is not None and getattr(device, "type", "cpu") != "cuda":
        return None
    if not torch.cuda.is_available():
        return None
    index = getattr(device, "index", None) or 0
    return f"{torch.cuda.get_device_name(index)}, CUDA {torch.version.cuda}"


KERNEL_CAPS = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")


def machine_kind(device: object) -> str:
    """What of the machine can change the bits a computation on ``device`` gives: the GPU's name and CUDA version,
    or the CPU's model, kernel flags and torch's thread count."""
    gpu = gpu_name(device)
    if gpu is not None:
        return f"gpu {gpu}"
    import torch

    info = cpu_info()
    kind = f"cpu {info['cpu']} [{' '.join(info['cpu_flags'])}] threads {torch.get_num_threads()}"
    # the instruction-set caps change the kernels, and so the bits, as the flags do (make test-avx2 sets them)
    capped = {name: os.environ[name] for name in KERNEL_CAPS if name in os.environ}
    capability = torch.backends.cpu.get_cpu_capability()
    return f"{kind} kernels {capability} {' '.join(f'{k}={v}' for k, v in sorted(capped.items()))}".rstrip()


def machine_record(engine: str | None = None) -> dict:
    """The machine and libraries, for a record: CPU model, kernel flags, cores, torch's threads, the GPU if one
    is visible, the inference engine where one was chosen, and the libraries' versions."""
    import torch

    return {
        **cpu_info(),
        "threads": torch.get_num_threads(),
        "gpu": gpu_name(),
        **({"engine": engine} if engine is not None else {}),
        "os": platform.platform(),
        "versions": library_versions(),
    }
