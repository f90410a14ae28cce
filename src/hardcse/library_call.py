"""What a library call owes its caller: it leaves the caller's process as it found it.

hardcse's stages seed torch, numpy and Python's ``random`` (transformers' Trainer reseeds them too) and may set
torch's thread count. Around a call from Python (hardcse/api.py) :func:`library_call` saves those and restores them
after; with ``progress=False`` the call draws no progress bar: hardcse's own (hardcse/progress.py), the trainers'
(``disable_tqdm``), and those of transformers, datasets and huggingface_hub (their own switches, set back after).
Those three switches are the process's, so two calls in threads at once may leave them as the other found them;
hardcse's own switch is the calling context's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hardcse.progress import SHOWN


@contextmanager
def library_call(progress: bool = True) -> Iterator[None]:
    """Restore torch's threads and the global random states (torch, numpy, ``random``) after the block; without
    ``progress``, no progress bar during it."""
    import datasets
    import huggingface_hub.utils as hub_utils
    import torch
    from transformers.utils import logging as transformers_logging

    from hardcse.seeding import callers_random_state  # imports torch: not at `import hardcse`

    threads = torch.get_num_threads()
    switches = [  # (on now, turn on, turn off) of each library's bars
        (transformers_logging.is_progress_bar_enabled(), transformers_logging.enable_progress_bar,
         transformers_logging.disable_progress_bar),
        (datasets.is_progress_bar_enabled(), datasets.enable_progress_bars, datasets.disable_progress_bars),
        (not hub_utils.are_progress_bars_disabled(), hub_utils.enable_progress_bars, hub_utils.disable_progress_bars),
    ]  # fmt: skip
    token = SHOWN.set(progress)
    if not progress:
        for _, _, off in switches:
            off()
    try:
        with callers_random_state():  # torch's (CPU and started CUDA devices), numpy's and Python's
            yield
    finally:
        SHOWN.reset(token)
        for on, turn_on, turn_off in switches:
            (turn_on if on else turn_off)()
        torch.set_num_threads(threads)
