"""Example reward terms for ART (docs/art.md "Your own reward terms").

Use one from a config or the command line, from the repository's folder:

    hardcse art run --config quickstart --out runs/copy-penalty \
        "reward.terms=[{fn: 'examples/reward_terms.py:demonstration_copy', weight: -0.5}]"

A term is called once per batch and kind with the rows of that kind; it returns one float per row (the values of
rows whose answer the parser rejected, ``None`` here, are not used).
"""

import re

import numpy as np

from hardcse.art.reward.terms import TermContext

# The demonstration the shipped configs (cpu-full, quickstart) show the generator before each anchor.
DEMONSTRATION = {
    "positive": "The new budget was approved by the committee following a lengthy discussion.",
    "negative": "The committee rejected the new budget without any debate.",
}
DEMONSTRATION_ANCHOR = "The committee approved the new budget after a long debate."


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z']+", text.lower()))


def demonstration_copy(anchors: list[str], answers: list[str | None], kind: str, context: TermContext) -> list[float]:
    """The share of an answer's words that come from the demonstration and not from its own anchor: 0 for an
    answer built from its anchor's words and new ones, near 1 for an answer that copies the example. Give it a
    negative weight to make it a penalty."""
    demonstration = _words(DEMONSTRATION[kind]) | _words(DEMONSTRATION_ANCHOR)
    values = []
    for anchor, answer in zip(anchors, answers, strict=True):
        if answer is None:
            values.append(np.nan)
            continue
        words = _words(answer)
        borrowed = (words & demonstration) - _words(anchor)
        values.append(len(borrowed) / max(len(words), 1))
    return values


def closeness_to_anchor(anchors: list[str], answers: list[str | None], kind: str, context: TermContext) -> np.ndarray:
    """cos(f(anchor), f(answer)) by the current encoder, read from the context (what r2 is built on)."""
    return context.cosine
