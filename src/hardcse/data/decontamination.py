"""Training texts that are evaluation texts: exact matches after normalisation and near duplicates.

Every sentence of the evaluation sets (the seven STS test sets and STS-B dev, by default) is normalised
(lower case, punctuation to spaces, whitespace collapsed). A training text *matches* when its normalised form is
one of them (``exact``) or when the Jaccard similarity of the two texts' sets of word n-grams is at least
``threshold`` (``near``). Texts shorter than n words are one n-gram: the whole text.

Near duplicates are found exactly, without comparing against all ~26,000 evaluation texts: with n-grams in one
global order (rarest in the evaluation set first), two sets with Jaccard >= t share an n-gram among the first
``|x| - ceil(t |x|) + 1`` of each (prefix filtering; Chaudhuri, Ganti and Kaushik, ICDE 2006). Only the
evaluation texts indexed under a query's prefix n-grams are compared.

The default, Jaccard >= 0.8 on word trigrams, is strict: it flags an evaluation text with a word added or removed
at an end (texts of 6 words or more) and rewordings that keep 80% of the trigrams; one changed word inside a
w-word text leaves (w - 5) / (w + 1) (0.4 for 9 words), so such paraphrases pass. Lower thresholds flag captions
built on the same template with other content ("the man is holding a tuba" / "... a skunk": 0.6 on trigrams);
``ngram: 1`` compares word sets, order ignored.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypeVar

from hardcse.atomic import write_text_atomic
from hardcse.config import Checked, check_positive, check_range
from hardcse.data.jsonl import jsonl_text
from hardcse.data.sts import ALL_TASKS, load_sts_task
from hardcse.errors import HardcseError
from hardcse.paths import data_dir

T = TypeVar("T")
log = logging.getLogger(__name__)
_PUNCTUATION = re.compile(r"[^\w\s]")


@dataclass
class DecontaminationConfig(Checked):
    """Drop training texts that match an evaluation text (on by default in every method's data building)."""

    enabled: bool = True
    ngram: int = 3  # word n-grams of the normalised texts
    threshold: float = 0.8  # Jaccard of the n-gram sets at or above which a text is a near duplicate
    tasks: list[str] = field(default_factory=lambda: list(ALL_TASKS))  # the evaluation sets checked against

    def check(self) -> None:
        check_positive("ngram", self.ngram)
        check_range("threshold", self.threshold, 0.0, 1.0)
        if self.threshold == 0:
            raise HardcseError("threshold: 0 would match every text; use a value above 0")
        unknown = sorted(set(self.tasks) - set(ALL_TASKS))
        if unknown:
            raise HardcseError(f"tasks: unknown {unknown}; known: {', '.join(ALL_TASKS)}")


def normalise(text: str) -> str:
    """Lower case, punctuation to spaces, runs of whitespace to one space."""
    return " ".join(_PUNCTUATION.sub(" ", text.lower()).split())


def ngrams(normalised: str, n: int) -> frozenset[str]:
    words = normalised.split()
    if len(words) < n:
        return frozenset([normalised])
    return frozenset(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))


@dataclass(frozen=True)
class Match:
    text: str  # the training text
    eval_text: str  # the evaluation text it matches (as in the evaluation file)
    eval_task: str
    kind: str  # exact | near
    similarity: float  # Jaccard of the n-gram sets (1.0 for exact)


class EvalIndex:
    """The evaluation texts of ``config.tasks``, ready to be matched against training texts."""

    def __init__(self, config: DecontaminationConfig, texts: Iterable[tuple[str, str]] | None = None) -> None:
        """``texts``: (task, text) pairs; default the sentences of ``config.tasks`` from the vendored data."""
        if texts is None:
            texts = (
                (task, s)
                for task in config.tasks
                for p in [load_sts_task(task)]
                for s in (*p.sentences1, *p.sentences2)
            )
        self.config = config
        self.exact: dict[str, tuple[str, str]] = {}  # normalised -> (text, task), the first occurrence
        for task, text in texts:
            self.exact.setdefault(normalise(text), (text, task))
        self.keys = list(self.exact)
        self.sets = [ngrams(k, config.ngram) for k in self.keys]
        frequency = Counter(g for s in self.sets for g in s)
        self._rank = {g: (c, g) for g, c in frequency.items()}
        self.index: dict[str, list[int]] = defaultdict(list)
        for i, s in enumerate(self.sets):
            for g in self._prefix(s):
                self.index[g].append(i)

    def _order(self, grams: frozenset[str]) -> list[str]:
        # rarest first; n-grams no evaluation text has come first of all (they index nothing)
        return sorted(grams, key=lambda g: self._rank.get(g, (0, g)))

    def _prefix(self, grams: frozenset[str]) -> list[str]:
        return self._order(grams)[: len(grams) - math.ceil(self.config.threshold * len(grams)) + 1]

    def match(self, text: str) -> Match | None:
        """The evaluation text ``text`` matches (exact first, else the most similar near duplicate), or None."""
        key = normalise(text)
        if key in self.exact:
            original, task = self.exact[key]
            return Match(text, original, task, "exact", 1.0)
        x = ngrams(key, self.config.ngram)
        best, best_similarity = None, 0.0
        for i in sorted({i for g in self._prefix(x) for i in self.index.get(g, ())}):
            y = self.sets[i]
            shared = len(x & y)
            similarity = shared / (len(x) + len(y) - shared)
            if similarity >= self.config.threshold and similarity > best_similarity:
                best, best_similarity = i, similarity
        if best is None:
            return None
        original, task = self.exact[self.keys[best]]
        return Match(text, original, task, "near", best_similarity)


def eval_index(config: DecontaminationConfig) -> EvalIndex:
    """The evaluation sets' index for ``config``: built once per process for each setting and content of the
    evaluation data (the key holds a digest of the files it is built from), the last few kept."""
    import hashlib

    from hardcse.fingerprint import files_digest

    digest = hashlib.sha256()
    files_digest(data_dir() / "sts", digest)
    return _built_index(config.ngram, config.threshold, tuple(config.tasks), digest.hexdigest())


@functools.lru_cache(maxsize=4)  # bounded: an index holds every evaluation sentence's n-grams (a few MB)
def _built_index(ngram: int, threshold: float, tasks: tuple[str, ...], data_digest: str) -> EvalIndex:
    """``data_digest`` keys the index by the files EvalIndex reads (the data folder's STS sets), which it reads
    itself."""
    return EvalIndex(DecontaminationConfig(ngram=ngram, threshold=threshold, tasks=list(tasks)))


def triplet_texts(triplet: Sequence[str]) -> list[tuple[str, str]]:
    """A triplet's (column, text) pairs, for :meth:`Decontamination.filter` (negative, negative_2, ...)."""
    names = ["anchor", "positive", "negative", *(f"negative_{k}" for k in range(2, len(triplet) - 1))]
    return list(zip(names, triplet, strict=True))


def sentence_texts(sentence: str) -> list[tuple[str, str]]:
    return [("text", sentence)]


class Decontamination:
    """One run's check of its training sets: :meth:`filter` drops the rows that have a matching text and keeps,
    per source, how many rows it checked and dropped; :meth:`write` records both in a folder."""

    COUNTS = "decontamination.json"
    DROPPED = "decontaminated.jsonl"

    def __init__(self, config: DecontaminationConfig) -> None:
        self.config = config
        self.index = eval_index(config) if config.enabled else None
        self.counts: dict[str, dict[str, int]] = {}
        self.dropped: list[dict] = []

    def filter(self, source: str, rows: Sequence[T], texts: Callable[[T], Iterable[tuple[str, str]]]) -> list[T]:
        """The rows of ``source`` none of whose (column, text) pairs ``texts(row)`` matches an evaluation text."""
        counts = self.counts.setdefault(source, {"checked": 0, "exact": 0, "near": 0, "dropped": 0})
        counts["checked"] += len(rows)
        if self.index is None:
            return list(rows)
        kept = []
        for number, row in enumerate(rows, start=1):
            matches = [(column, m) for column, text in texts(row) if (m := self.index.match(text)) is not None]
            if not matches:
                kept.append(row)
                continue
            counts["dropped"] += 1
            counts[matches[0][1].kind] += 1
            for column, m in matches:
                self.dropped.append({"source": source, "row": number, "column": column, **asdict(m)})
        if self.index is not None:
            log.info("decontamination: %s", self.lines([source])[0])
        return kept

    def summary(self) -> dict:
        return {"enabled": self.config.enabled, "config": asdict(self.config), "sources": self.counts}

    def write(self, folder: Path) -> None:
        """``decontamination.json`` (the counts) and ``decontaminated.jsonl`` (every dropped text) in ``folder``."""
        self.write_matches(folder / self.DROPPED)
        write_text_atomic(folder / self.COUNTS, json.dumps(self.summary(), indent=2) + "\n")

    def write_matches(self, path: Path) -> None:
        write_text_atomic(path, jsonl_text(self.dropped))

    def lines(self, sources: Iterable[str] | None = None) -> list[str]:
        """One line a source (default all), for logs and reports."""
        if not self.config.enabled:
            return ["decontamination: off (decontamination.enabled: false)"]
        chosen = sources if sources is not None else self.counts
        return [f"{source}: {_counted(self.counts[source])}" for source in chosen]


def recorded_line(folder: Path) -> str | None:
    """One line totalling the ``decontamination.json`` in ``folder`` over its sources (None if it has none)."""
    path = folder / Decontamination.COUNTS
    if not path.is_file():
        return None
    summary = json.loads(path.read_text(encoding="utf-8"))
    if not summary["enabled"]:
        return "decontamination: off (decontamination.enabled: false)"
    total = {k: sum(c[k] for c in summary["sources"].values()) for k in ("checked", "dropped", "exact", "near")}
    return f"decontamination: {_counted(total)}; per source: {path}"


def _counted(c: dict[str, int]) -> str:
    """Counts of one source (or a total) in words."""
    return (
        f"{c['dropped']} of {c['checked']} rows dropped ({c['exact']} exact, {c['near']} near duplicates of "
        "evaluation texts)"
    )
