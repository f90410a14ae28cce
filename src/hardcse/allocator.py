"""Freed memory kept in the process: glibc's malloc told not to hand large blocks back to the kernel at every free.

PyTorch on a CPU takes its activations and gradients from malloc. glibc serves a block above its mmap threshold
(128 KiB at first, raised as large blocks are freed) with fresh pages from the kernel and gives them back at free,
and trims the heap's free top as well: each forward then faults in and zeroes its large tensors anew. A forward of
the bundled generator over 16 prompts faulted in ~0.9 GB of pages a pass; with an OpenVINO model loaded in the same
process (RL's rollouts in OpenVINO) ~2 GB, and the pass took ~1.3x as long (benchmarks/results/rl_step_settings.md
has the RL step with and without).

:func:`keep_freed_memory` fixes the mmap threshold at 32 MiB (glibc's largest) and the trim threshold at 1 GiB, so
blocks up to 32 MiB are taken from, and returned to, the process's heap. No number computed changes; the process
keeps up to its peak of such blocks resident. hardcse's commands call it once, at the start of the process (the
``hardcse`` command line, each launched process); a script of your own may call it first thing. It is a setting of
the whole process, so no library function calls it. Where malloc is not glibc's (macOS, musl, a preloaded jemalloc
or tcmalloc) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX)
TRIM_THRESHOLD = 1024 * 1024 * 1024


def keep_freed_memory() -> bool:
    """Set glibc's thresholds (module doc); True where it did, False where malloc is not glibc's."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
