"""The terms of ART's reward: the paper's r1 and r2, and any Python function a user adds from the config.

    r = sum_k weight_k * term_k       for a response the parser accepted
    r = invalid_penalty               for a response it rejected (no term counts)

A term is ``term(anchors, answers, kind, context) -> one float per row``. It is called once per batch and kind
("positive" or "negative") with that kind's rows: the anchors, the parsed answers (None where the parser rejected
the response) and a read-only :class:`TermContext` (the reward's discriminator probabilities and the current
encoder's cosines of those rows, and both models for any other texts). The values of rejected rows are not used
(they may be NaN); every parsed row needs a finite float. ``reward.terms`` names a term by
``package.module:function`` or ``path/to/file.py:function`` (a path relative to the working folder).

Before any model loads, :func:`check_terms` calls each of a config's terms once on two of the run's anchors with a
stand-in context (:func:`stand_in_context`), so a broken term fails in the first seconds, not at the first batch.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hardcse.art.reward.term_loading import TermFn, load_term_function, one_line
from hardcse.errors import HardcseError

if TYPE_CHECKING:
    from hardcse.art.reward.config import RewardTermConfig


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


def config_terms(configs: Sequence[RewardTermConfig]) -> list[Term]:
    """The terms a config adds (``reward.terms``), their functions loaded."""
    return [Term(t.term_name, t.weight, load_term_function(t.fn), t.fn) for t in configs]


STAND_IN_DIM = 8  # the stand-in encoder's embedding size


def stand_in_context(answers: Sequence[str | None]) -> TermContext:
    """What :func:`check_terms` gives a term in place of the models: P(entailment, neutral, contradiction) = 1/3
    each and cosine 0.5 for a parsed answer (NaN for a rejected one, as in a run); ``encode`` gives each text a unit
    vector of size 8 drawn from its sha256, ``nli`` 1/3 for every label of every pair."""
    parsed = np.array([a is not None for a in answers])

    def encode(texts: list[str]) -> np.ndarray:
        rows = [
            np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode()).digest()[:8])).normal(size=STAND_IN_DIM)
            for t in texts
        ]
        vectors = np.array(rows).reshape(len(texts), STAND_IN_DIM)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    return TermContext(
        nli_probs=np.where(parsed[:, None], np.full((len(answers), 3), 1 / 3), np.nan),
        cosine=np.where(parsed, 0.5, np.nan),
        encode=encode,
        nli=lambda premises, hypotheses: np.full((len(premises), 3), 1 / 3),
    )


def check_terms(terms: Sequence[Term], anchors: Sequence[str]) -> None:
    """Call each term once per kind on the first two of ``anchors``, the first with the second as its parsed answer
    and the second rejected (None), in the :func:`stand_in_context`: a term that raises, or returns a wrong count or
    a non-finite value for the parsed row, is a :class:`HardcseError` now, saying it came from this check."""
    if not terms or not anchors:
        return
    rows = list(anchors[:2])
    answers = [rows[-1], None][: len(rows)]
    for kind in ("positive", "negative"):
        try:
            evaluate_terms(terms, rows, answers, [kind] * len(rows), stand_in_context(answers))
        except HardcseError as e:
            raise HardcseError(
                f"{e} (checked before any model loads: two of the run's anchors, a stand-in context; docs/art.md, "
                "'Your own reward terms')"
            ) from None


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
