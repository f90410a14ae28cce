"""hardcse's progress bars, which a caller can turn off for one call (hardcse/library_call.py).

The switch is a :class:`contextvars.ContextVar`: it holds for the call that set it (and the threads it starts with
a copied context) and is reset when the call ends, so two callers never see each other's setting of hardcse's bars
(the libraries' own switches are the process's: hardcse/library_call.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar

from tqdm.auto import tqdm

SHOWN: ContextVar[bool] = ContextVar("hardcse_progress_shown", default=True)


def shown() -> bool:
    """Whether the current call draws progress bars (the libraries' too: their trainers get ``disable_tqdm``)."""
    return SHOWN.get()


def progress_bar(iterable: Iterable | None = None, *, disable: bool = False, **options: object) -> tqdm:
    """A tqdm bar, off where the caller turned progress off."""
    return tqdm(iterable, disable=disable or not shown(), **options)
