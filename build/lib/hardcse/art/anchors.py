"""Anchor sentences for the generator: a seeded, length-filtered split of an unlabeled corpus."""

from __future__ import annotations

import random
from dataclasses import dataclass

from hardcse.art.config import AnchorConfig
from hardcse.data.corpus import read_sentences
from hardcse.errors import HardcseError


@dataclass
class AnchorSplit:
    train: list[str]
    held_out: list[str]


def split_anchors(config: AnchorConfig) -> AnchorSplit:
    """Distinct corpus sentences with ``min_words..max_words`` words, shuffled by seed; the last ``held_out``
    of them are set apart. The same config always gives the same split."""
    sentences = read_sentences(config.corpus)
    kept = list(dict.fromkeys(s for s in sentences if config.min_words <= len(s.split()) <= config.max_words))
    if len(kept) <= config.held_out:
        raise HardcseError(
            f"only {len(kept)} corpus sentences have {config.min_words}-{config.max_words} words; "
            f"need more than held_out={config.held_out}"
        )
    random.Random(config.seed).shuffle(kept)
    cut = len(kept) - config.held_out
    return AnchorSplit(train=kept[:cut], held_out=kept[cut:])


def anchors_for_step(train: list[str], step: int, batch_size: int) -> list[str]:
    """The anchors of PPO step ``step`` (1-based): consecutive slices of ``train``, wrapping around."""
    start = (step - 1) * batch_size
    return [train[(start + i) % len(train)] for i in range(batch_size)]
