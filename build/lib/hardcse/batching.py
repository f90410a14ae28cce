"""Length-grouped batches for sentence-transformers' trainers: less padding, same data, still shuffled."""

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
