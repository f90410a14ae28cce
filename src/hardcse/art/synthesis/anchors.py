"""Anchor sentences for the generator: a seeded, length-filtered sample of an unlabeled corpus, read as a stream.

The corpus (any format of :mod:`hardcse.data.corpus_stream`) is read one sentence at a time. Each distinct
sentence with ``min_words..max_words`` words gets a keyed hash (BLAKE2b keyed by the seed); the anchors are the
sentences in the order of their hashes, a seeded uniform random permutation of the distinct usable sentences.
With ``max_anchors`` only the N smallest hashes are kept while reading (a bottom-N sample: uniform over the
distinct sentences, the same N whatever the file order, memory for N sentences only); the last ``held_out`` of
the kept anchors are set apart.
"""

from __future__ import annotations

import hashlib
import heapq
from dataclasses import dataclass

from hardcse.art.config import AnchorConfig
from hardcse.data.corpus import WIKI_SENTENCES
from hardcse.data.corpus_stream import stream_sentences
from hardcse.errors import HardcseError
from hardcse.paths import data_dir


@dataclass
class AnchorSplit:
    train: list[str]
    held_out: list[str]


def _key(sentence: str, seed: int) -> int:
    digest = hashlib.blake2b(sentence.encode(), digest_size=8, key=seed.to_bytes(8, "little", signed=True))
    return int.from_bytes(digest.digest(), "little")


def split_anchors(config: AnchorConfig) -> AnchorSplit:
    """The usable distinct corpus sentences in seeded random order (the first ``max_anchors`` of that order when
    it is set); the last ``held_out`` of them are set apart. The same config always gives the same split."""
    corpus = config.corpus or data_dir() / WIKI_SENTENCES
    usable = (
        s for s in stream_sentences(corpus, config.column) if config.min_words <= len(s.split()) <= config.max_words
    )
    if config.max_anchors is None:
        keyed = {(_key(s, config.seed), s) for s in usable}
    else:
        heap: list[tuple[int, str]] = []  # (-key, sentence): the largest kept key on top
        kept: set[str] = set()
        for s in usable:
            if s in kept:
                continue
            key = _key(s, config.seed)
            if len(heap) < config.max_anchors:
                heapq.heappush(heap, (-key, s))
                kept.add(s)
            elif key < -heap[0][0]:
                kept.discard(heapq.heapreplace(heap, (-key, s))[1])
                kept.add(s)
        keyed = {(-k, s) for k, s in heap}
    ordered = [s for _, s in sorted(keyed)]
    if len(ordered) <= config.held_out:
        raise HardcseError(
            f"only {len(ordered)} corpus sentences have {config.min_words}-{config.max_words} words"
            f"{' (anchors.max_anchors)' if config.max_anchors is not None else ''}; "
            f"need more than held_out={config.held_out}"
        )
    cut = len(ordered) - config.held_out
    return AnchorSplit(train=ordered[:cut], held_out=ordered[cut:])


def anchors_for_step(train: list[str], step: int, batch_size: int) -> list[str]:
    """The anchors of RL step ``step`` (1-based): consecutive slices of ``train``, wrapping around."""
    start = (step - 1) * batch_size
    return [train[(start + i) % len(train)] for i in range(batch_size)]
