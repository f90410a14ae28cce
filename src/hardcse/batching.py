"""Batch samplers for sentence-transformers' trainers: length-grouped (less padding, same data, still shuffled)
and fixed-order batches (a curriculum: rows laid out batch after batch)."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from datasets import Dataset
from sentence_transformers.base.sampler import DefaultBatchSampler


class LengthGroupedBatchSampler(DefaultBatchSampler):
    """Shuffle, cut into pools of ``pool_batches`` batches, sort each pool by text length, batch, shuffle batches.

    Like transformers' ``group_by_length``, but for datasets of raw text: the length of a row is the number
    of characters over its text columns. Every row is used once an epoch; the order depends on seed and epoch.
    """

    pool_batches = 50

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int,
        drop_last: bool,
        valid_label_columns: list[str] | None = None,
        generator: torch.Generator | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(dataset, batch_size, drop_last, valid_label_columns, generator, seed)
        text_columns = [c for c in dataset.column_names if c not in (valid_label_columns or [])]
        self.lengths = [sum(len(str(row[c])) for c in text_columns) for row in dataset]

    def __len__(self) -> int:
        n = len(self.lengths)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        order = torch.randperm(len(self.lengths), generator=g).tolist()
        pool = self.batch_size * self.pool_batches
        batches = []
        for start in range(0, len(order), pool):
            chunk = sorted(order[start : start + pool], key=lambda i: self.lengths[i])
            batches += [chunk[i : i + self.batch_size] for i in range(0, len(chunk), self.batch_size)]
        if self.drop_last:
            batches = [b for b in batches if len(b) == self.batch_size]
        for i in torch.randperm(len(batches), generator=g).tolist():
            yield batches[i]


class PlanBatchSampler(DefaultBatchSampler):
    """Yields the plan's batches in the plan's order (the dataset rows are laid out batch after batch)."""

    def __init__(self, dataset: Dataset, sizes: list[int], **kwargs: object) -> None:
        super().__init__(dataset, **kwargs)
        self.sizes = sizes

    def __len__(self) -> int:
        return len(self.sizes)

    def __iter__(self) -> Iterator[list[int]]:
        start = 0
        for size in self.sizes:
            yield list(range(start, start + size))
            start += size


class PlanBatches:
    """The trainer's ``batch_sampler`` argument: builds a :class:`PlanBatchSampler` (picklable, unlike a lambda,
    because the trainer saves its arguments with every checkpoint)."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes

    def __call__(self, dataset: Dataset, **kwargs: object) -> PlanBatchSampler:
        return PlanBatchSampler(dataset, self.sizes, **kwargs)


def ordered_batches(n_rows: int, batch_size: int) -> PlanBatches:
    """The rows in dataset order, in batches of ``batch_size`` (the last one smaller)."""
    return PlanBatches([min(batch_size, n_rows - start) for start in range(0, n_rows, batch_size)])
