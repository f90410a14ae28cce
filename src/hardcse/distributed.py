"""Several processes (``accelerate launch`` or ``torchrun``): who this process is, and the collectives hardcse uses.

One process is the normal case, and then every function here is a no-op. Under a launcher (``WORLD_SIZE`` > 1) the
command line joins accelerate's process group before a command runs (NCCL on GPUs, gloo on CPUs), and:

- training: each rank encodes its slice of every batch (:class:`RankSlices`) and the contrastive losses gather the
  whole batch's embeddings (:func:`gather_rows`), so a step trains on the same batch with the same in-batch
  negatives as one process would (:func:`global_mean` makes DDP's average the batch's mean);
- files: rank 0 writes them and the other ranks wait (:func:`run_on_main`, :func:`barrier`); an error on rank 0
  is raised on every rank, so none waits for ever;
- synthesis: each rank generates its share of the batches and rank 0 merges them (:func:`gather_objects`);
- RL: each rank samples its share of a step's anchors; the gradients are averaged (:func:`average_gradients`).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from typing import Any, NoReturn, TypeVar

import torch

from hardcse.errors import HardcseError

log = logging.getLogger(__name__)
T = TypeVar("T")
WAIT_FOR_RANK_0 = timedelta(hours=6)  # torch's default (10 min with NCCL) is shorter than a long evaluation


def launched_world_size() -> int:
    """The number of processes the launcher started (``WORLD_SIZE``; 1 without a launcher)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def join_process_group() -> None:
    """Under a launcher, start accelerate's process group: NCCL on a GPU machine, gloo on a CPU-only one (accelerate
    leaves a CPU machine undistributed unless told ``cpu``); the trainer then joins the same group. The other ranks
    wait for rank 0's stages (an evaluation, a Data-CUBE plan) for up to ``WAIT_FOR_RANK_0``."""
    if launched_world_size() > 1 and not _initialized():
        from accelerate import PartialState

        PartialState(cpu=not torch.cuda.is_available(), timeout=WAIT_FOR_RANK_0)


def leave_process_group() -> None:
    """Destroy the process group (a command's end under a launcher; :func:`end_launched_process` then exits)."""
    if _initialized():
        torch.distributed.destroy_process_group()


def end_launched_process(status: int) -> NoReturn:
    """Exit a launched process with ``status`` without interpreter shutdown, after flushing logs and output.

    Why: ``destroy_process_group`` does not stop gloo's worker threads (gloo has no ``shutdown``; the threads are
    joined only when the last reference to the C++ process group goes, and DDP's reducer keeps one). A worker that
    finishes a collective after the main thread's ``work.wait()`` returned still holds that work's tensors; when it
    drops them, their Python objects are freed, which takes the GIL. If the main thread is by then in
    ``Py_FinalizeEx``, Python 3.11 ends the waiting thread with ``pthread_exit``, whose unwinding through a C++
    destructor calls ``std::terminate``: "terminate called without an active exception", SIGABRT, after a command
    that succeeded (pytorch/pytorch#190489). It needs the worker to be preempted in that window, so it showed under
    load only (docs/scale.md). ``os._exit`` never starts the shutdown. hardcse registers no ``atexit`` work."""
    leave_process_group()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(status)


def _initialized() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def world_size() -> int:
    return torch.distributed.get_world_size() if _initialized() else 1


def rank() -> int:
    return torch.distributed.get_rank() if _initialized() else 0


def is_main() -> bool:
    """Whether this process writes files (rank 0)."""
    return rank() == 0


def barrier() -> None:
    if world_size() > 1:
        torch.distributed.barrier()


def run_on_main(fn: Callable[[], T]) -> T:
    """``fn()`` on rank 0 while the others wait; every rank returns its value (so it must pickle). An exception on
    rank 0 is raised on every rank: a user error (:class:`HardcseError`) with its message, anything else as a
    bug."""
    if world_size() == 1:
        return fn()
    outcome: list[Any] = [None]
    if is_main():
        try:
            outcome = [("ok", fn())]
        except BaseException as e:  # every rank must hear of it, then rank 0 raises the original
            torch.distributed.broadcast_object_list([("user error" if isinstance(e, HardcseError) else "bug", str(e))])
            raise
    torch.distributed.broadcast_object_list(outcome, src=0)
    status, value = outcome[0]
    if status == "ok":
        return value
    raise HardcseError(value if status == "user error" else f"rank 0 failed: {value}")


def gather_objects(obj: T) -> list[T]:
    """Every rank's ``obj``, in rank order (on every rank)."""
    if world_size() == 1:
        return [obj]
    out: list[Any] = [None] * world_size()
    torch.distributed.all_gather_object(out, obj)
    return out


def all_ranks_true(flag: bool) -> bool:
    """Whether ``flag`` holds on every rank (a decision every rank must take the same way, e.g. to skip an update
    whose gradients the others would wait for)."""
    return all(gather_objects(bool(flag)))


def mean_over_ranks(numbers: dict) -> dict:
    """``numbers`` with each number replaced by the mean of the ranks' values (a rank whose value is None, e.g. a
    mean over none of its rows, is left out; None when every rank's is); ``step``, flags and text: rank 0's."""
    if world_size() == 1:
        return numbers
    shares = gather_objects(numbers)
    out = dict(shares[0])
    for key in out:
        values = [share.get(key) for share in shares]
        if key == "step" or any(isinstance(v, bool) or not isinstance(v, int | float | None) for v in values):
            continue
        present = [float(v) for v in values if v is not None]
        out[key] = sum(present) / len(present) if present else None
    return out


def gather_rows(x: torch.Tensor) -> tuple[torch.Tensor, int]:
    """The rows of ``x`` from every rank, in rank order, with gradients flowing back to each rank's own rows
    (ranks may hold different numbers of rows); and the index of this rank's first row among them."""
    if world_size() == 1:
        return x, 0
    import torch.distributed.nn  # noqa: F401  (the autograd-aware collectives)

    sizes = [int(n) for n in gather_objects(len(x))]
    padded = torch.nn.functional.pad(x, (0, 0, 0, max(sizes) - len(x)))
    with warnings.catch_warnings():  # deprecated for a private successor; sentence-transformers gathers with it too
        warnings.simplefilter("ignore", FutureWarning)
        parts = torch.distributed.nn.functional.all_gather(padded)
    return torch.cat([part[:n] for part, n in zip(parts, sizes, strict=True)]), sum(sizes[: rank()])


def global_mean(losses: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    """The weighted mean of per-row ``losses`` over the whole batch (every rank's rows), scaled so that DDP's
    average of the ranks' values is that mean: sum_local(w l) * world_size / sum_all(w). One process: the mean."""
    w = torch.ones_like(losses) if weights is None else weights.to(losses.dtype)
    total = w.sum().detach()
    if world_size() > 1:
        total = total.clone()
        torch.distributed.all_reduce(total)
    return (losses * w).sum() * world_size() / total.clamp(min=1.0)


def average_gradients(parameters: Iterable[torch.nn.Parameter]) -> None:
    """Replace each parameter's gradient by its mean over the ranks (parameters outside DDP: a loss's own)."""
    if world_size() == 1:
        return
    for p in parameters:
        if p.grad is not None:
            torch.distributed.all_reduce(p.grad)
            p.grad /= world_size()


def rank_share(n: int) -> range:
    """The indices ``range(n)`` this rank takes: every ``world_size``-th one from its rank."""
    return range(rank(), n, world_size())


def rank_block(n: int) -> slice:
    """The rows this rank takes of ``n`` rows that every rank shares equally: its consecutive block."""
    size = n // world_size()
    return slice(rank() * size, (rank() + 1) * size)


def split_slices(batch: list[int], parts: int) -> list[list[int]]:
    """``batch`` as ``parts`` consecutive slices that differ in length by at most one. A batch of fewer rows than
    ``parts`` repeats its rows so that no slice is empty (DDP needs every rank in every step)."""
    if len(batch) < parts:
        return [[batch[i % len(batch)]] for i in range(parts)]
    size, extra = divmod(len(batch), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (i < extra)
        out.append(batch[start:end])
        start = end
    return out


class RankSlices:
    """A batch sampler that yields each batch of ``inner`` as ``parts`` consecutive slices. accelerate hands the
    i-th batch a sampler yields to rank ``i % world_size``, so rank r trains on slice r of every batch and one
    optimiser step covers one whole batch, in the inner sampler's order. ``batch_size`` is None on purpose: the
    slices differ in size and accelerate must not drop or pad them."""

    batch_size = None
    drop_last = False

    def __init__(self, inner: Any, parts: int) -> None:
        self.inner = inner
        self.parts = parts
        self._warned = False

    def __len__(self) -> int:
        return len(self.inner) * self.parts

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.inner:
            if len(batch) < self.parts and not self._warned:
                log.warning(
                    "a batch of %d row(s) is shared by %d processes: its rows are repeated so that each process has "
                    "one (that step counts them more than once)",
                    len(batch),
                    self.parts,
                )
                self._warned = True
            yield from split_slices(list(batch), self.parts)

    def set_epoch(self, epoch: int) -> None:
        if hasattr(self.inner, "set_epoch"):
            self.inner.set_epoch(epoch)
