"""Shortcuts a generator takes instead of writing hard and correct data: text measures, and reward terms against
them (issue 41; built-in terms for ``reward.terms``, e.g. ``{fn: 'hardcse.art.reward.shortcuts:deletion_positive',
weight: -0.3}``).

- **A deletion positive**: an answer made by dropping words of the anchor (at least 90% of its words are the
  anchor's and it has fewer words): entailed and close, so the reward pays for it, yet it teaches little.
- **A cue-word negative**: a negative that adds a negation word the anchor lacks ("not", "no", "never", "n't",
  ...): a contradiction an encoder tells apart by one word (CausalNeg's "source-dependent shortcut").
- **A demonstration leak**: an answer using words of the shown demonstration's answer that are in neither that
  demonstration's anchor nor this anchor (e.g. "rejected" from "The committee rejected the new budget ..."):
  copied, not written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import numpy as np

from hardcse.art.config import GeneratorConfig
from hardcse.art.generator.prompts import shown_demonstrations
from hardcse.art.reward.terms import TermContext

WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
# word_overlap's words keep every apostrophe (the filter's rule since it was written; the recorded rates use it):
# one splitter for both would move recorded figures, so the two stay until the records are made again (issue 41)
OVERLAP_WORD = re.compile(r"[a-z0-9']+")
NEGATIONS = frozenset("not no never nobody nothing none neither nor nowhere without cannot".split())
# function words: shared by chance, not copied
STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or but as is are was were be been being it its this that these "
    "those he she they we you i his her their our your him them us after before over under into about than then "
    "there here which who whom whose what when where while all any some".split()
)
DELETION_SHARE = 0.9


def words(text: str) -> list[str]:
    """The lowercased words of ``text`` ("isn't" is one word)."""
    return WORD.findall(text.lower())


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of two texts' sets of words (1.0: the same words): how far a positive is its negative (the
    filter's ``max_pair_overlap``) or a negative its anchor."""
    x, y = set(OVERLAP_WORD.findall(a.lower())), set(OVERLAP_WORD.findall(b.lower()))
    return len(x & y) / len(x | y) if x | y else 1.0


def is_deletion(anchor: str, answer: str, share: float = DELETION_SHARE) -> bool:
    """True when ``answer`` has fewer words than ``anchor`` and at least ``share`` of them are the anchor's."""
    said, source = words(answer), set(words(anchor))
    return 0 < len(said) < len(words(anchor)) and sum(w in source for w in said) >= share * len(said)


def anchor_cover(anchor: str, answer: str) -> float:
    """The share of ``answer``'s content words (function words aside) that ``anchor`` has (1.0: none new, or no
    content word): near 1 for an answer that edits its anchor, near 0 for one about something else."""
    said, source = [w for w in words(answer) if w not in STOPWORDS], set(words(anchor))
    return sum(w in source for w in said) / len(said) if said else 1.0


def added_negations(anchor: str, answer: str) -> set[str]:
    """The negation words of ``answer`` that ``anchor`` does not have."""
    return {w for w in words(answer) if w in NEGATIONS or w.endswith("n't")} - set(words(anchor))


def leaked_words(anchor: str, answer: str, demonstrations: Iterable[dict], kind: str) -> set[str]:
    """Words of ``answer`` that a shown demonstration's ``kind`` answer has and its own anchor has not, and that
    ``anchor`` has not either (function words aside)."""
    shown: set[str] = set()
    for demonstration in demonstrations:
        if kind in demonstration:
            shown |= set(words(demonstration[kind])) - set(words(demonstration["anchor"]))
    return (set(words(answer)) & shown) - set(words(anchor)) - STOPWORDS


def deletion_positive(anchors: list[str], answers: list[str | None], kind: str, context: TermContext) -> list[float]:
    """1 for a parsed positive that is a deletion of its anchor, else 0 (negatives: 0): a penalty with a negative
    weight."""
    pairs = zip(anchors, answers, strict=True)
    return [float(kind == "positive" and y is not None and is_deletion(x, y)) for x, y in pairs]


def cue_word_negative(anchors: list[str], answers: list[str | None], kind: str, context: TermContext) -> list[float]:
    """1 for a parsed negative that adds a negation word to its anchor, else 0 (positives: 0): a penalty with a
    negative weight."""
    pairs = zip(anchors, answers, strict=True)
    return [float(kind == "negative" and y is not None and bool(added_negations(x, y))) for x, y in pairs]


def shortcut_flags(records: list[dict], generator: GeneratorConfig | None = None) -> dict[str, np.ndarray]:
    """Per record (anchor, positive, negative; NaN where the answer is missing): 1.0 when its positive is a
    deletion of its anchor (``positive_deletion``), when its negative adds a negation word
    (``negative_added_negation``), and, with the ``generator`` config that prompted it (one with demonstrations),
    when its KIND uses words of the demonstrations its prompt showed (``KIND_leak``); else 0.0."""

    def flags(kind: str, shortcut: Callable[[str, str], object]) -> np.ndarray:
        return np.array([np.nan if r[kind] is None else float(bool(shortcut(r["anchor"], r[kind]))) for r in records])

    out = {
        "positive_deletion": flags("positive", is_deletion),
        "negative_added_negation": flags("negative", added_negations),
    }
    if generator is not None and generator.few_shot:
        for kind in ("positive", "negative"):
            out[f"{kind}_leak"] = flags(
                kind, lambda x, y, k=kind: leaked_words(x, y, shown_demonstrations(x, k, generator), k)
            )
    return out
