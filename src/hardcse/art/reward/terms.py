"""The terms of ART's reward: the paper's r1 and r2, and any Python function a user adds from the config.

    r = sum_k weight_k * term_k       for a response the parser accepted
    r = invalid_penalty               for a response it rejected (no term counts)

A term is ``term(anchors, answers, kind, context) -> one float per row``. It is called once per batch and kind
("positive" or "negative") with that kind's rows: the anchors, the parsed answers (None where the parser rejected
the response) and a read-only :class:`TermContext` (the reward's discriminator probabilities and the current
encoder's cosines of those rows, and both models for any other texts). The values of rejected rows are not used
(they may be NaN); every parsed row needs a finite float. ``reward.terms`` names a term by
``package.module:function`` or ``path/to/file.py:function`` (a path relative to the working folder).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hardcse.art.term_loading import TermFn, one_line
from hardcse.errors import HardcseError


@dataclass(frozen=True)
class TermContext:
    """What a term may read besides its rows. ``nli_probs`` (n, 3): P(entailment, neutral, contradiction) of
    (anchor, answer) by the reward's discriminator; ``cosine`` (n,): cos(f(anchor), f(answer)) by the current
    encoder; both NaN in rejected rows and not writable. ``encode(texts)``: the current encoder's embeddings (n,
    dim); ``nli(premises, hypotheses)``: the discriminator's (n, 3) probabilities for any pairs."""

    nli_probs: np.ndarray
    cosine: np.ndarray
    encode: Callable[[list[str]], np.ndarray]
    nli: Callable[[list[str], list[str]], np.ndarray]

    def rows(self, index: np.ndarray) -> TermContext:
        return dataclasses.replace(
            self, nli_probs=_read_only(self.nli_probs[index]), cosine=_read_only(self.cosine[index])
        )


@dataclass(frozen=True)
class Term:
    name: str
    weight: float
    fn: TermFn
    source: str  # "built-in" or the config's fn


def _read_only(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a.flags.writeable = False
    return a


def evaluate_terms(
    terms: Sequence[Term],
    anchors: Sequence[str],
    answers: Sequence[str | None],
    kinds: Sequence[str],
    context: TermContext,
) -> dict[str, np.ndarray]:
    """Each term's value per row (NaN where the answer was rejected), called once per kind present; a term that
    raises, returns the wrong number of values or a non-finite value for a parsed row is a :class:`HardcseError`
    naming the term and the row."""
    n = len(anchors)
    parsed = np.array([a is not None for a in answers], dtype=bool)
    kinds_array = np.array(kinds)
    values = {term.name: np.full(n, np.nan) for term in terms}
    for kind in dict.fromkeys(kinds):  # positive, negative: in the batch's order
        index = np.flatnonzero(kinds_array == kind)
        rows_anchors, rows_answers = [anchors[i] for i in index], [answers[i] for i in index]
        rows_context = context.rows(index)
        for term in terms:
            out = _call(term, rows_anchors, rows_answers, kind, rows_context)
            if out.shape != (len(index),):
                raise HardcseError(
                    f"reward term {term.name!r} ({term.source}) returned {_shape(out)} for {len(index)} {kind} rows; "
                    "return one float per row"
                )
            bad = np.flatnonzero(~np.isfinite(out) & parsed[index])
            if len(bad):
                row = index[bad[0]]
                raise HardcseError(
                    f"reward term {term.name!r} ({term.source}) returned {out[bad[0]]} for row {row} of the batch "
                    f"({kind}, anchor {anchors[row][:60]!r}, answer {answers[row][:60]!r}); return a finite float "
                    "for every parsed answer"
                )
            values[term.name][index] = np.where(parsed[index], out, np.nan)
    return values


def _call(term: Term, anchors: list[str], answers: list[str | None], kind: str, context: TermContext) -> np.ndarray:
    try:
        out = term.fn(anchors, answers, kind, context)
    except HardcseError:
        raise
    except Exception as e:  # noqa: BLE001 - the user's function: any failure is reported in one line
        raise HardcseError(f"reward term {term.name!r} ({term.source}) raised {one_line(e)}") from None
    try:
        return np.asarray(out, dtype=np.float64)
    except (TypeError, ValueError):
        raise HardcseError(
            f"reward term {term.name!r} ({term.source}) returned {type(out).__name__} {str(out)[:60]!r}; "
            "return one float per row"
        ) from None


def _shape(out: np.ndarray) -> str:
    return f"{out.shape[0]} values" if out.ndim == 1 else f"an array of shape {out.shape}"
