"""Seeded blocks, never a global reseed: what a block draws is the same in every run, and the caller's random
state is as it was once the block ends (``torch.random.fork_rng``)."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator

import numpy as np
import torch


def cuda_devices() -> list[int]:
    """The CUDA devices whose generators a seeded block forks too: none before CUDA has started (reading a
    device's generator would start it; ``torch.manual_seed`` seeds it lazily when it starts inside the block)."""
    return list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []


@contextlib.contextmanager
def seeded_torch(seed: int) -> Iterator[None]:
    """torch's generators seeded with ``seed`` inside the block: the CPU's, and each CUDA device's; the caller's
    states back after it (the CPU's, and those of the CUDA devices already started)."""
    with torch.random.fork_rng(devices=cuda_devices()):
        torch.manual_seed(seed)
        yield


@contextlib.contextmanager
def callers_random_state() -> Iterator[None]:
    """The caller's random state of torch (CPU and CUDA), numpy and Python, put back after the block: transformers'
    Trainer seeds all three globally."""
    python, numpy_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=cuda_devices()):
        try:
            yield
        finally:
            random.setstate(python)
            np.random.set_state(numpy_state)
