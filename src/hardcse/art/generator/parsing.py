"""From a raw LLM response to one sentence, or a named reason for rejecting it.

Small instruction models wrap the sentence they were asked for: they echo ``Original: "..."``, prefix
``Positive:`` or ``Variation:``, quote it, and add commentary after a line break. The parser removes that
wrapping; what remains must look like one sentence of text, different from the anchor.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REASONS = ("cut_off", "empty", "too_short", "too_long", "copy", "several_sentences", "non_text", "meta_text")

_LABEL = re.compile(
    r"^\s*(?:\*\*)?(?:positive|negative|variation|new|rewritten|paraphrased?|modified|generated|answer|output|"
    r"sentence|response)(?:\s+(?:variation|version|sentence))?(?:\s*\d+)?(?:\*\*)?\s*[:\-]\s*(?:\*\*)?\s*",
    re.IGNORECASE,
)
_ORIGINAL = re.compile(r"^\s*(?:\*\*)?original(?:\s+sentence)?(?:\s+is)?(?:\*\*)?\s*:", re.IGNORECASE)
_META = re.compile(
    r"^\s*(?:note|explanation|here is|here's|sure|i have|i've|this sentence|the sentence|in this)\b", re.IGNORECASE
)
# Talk about the task anywhere in the answer ("We changed the sentence to ...", "... a positive variation ...").
_META_ANYWHERE = re.compile(
    r"\b(?:original sentence|(?:positive|negative) variation|variation of|the sentence|this sentence|"
    r"we changed|i changed|has been (?:modified|changed|rewritten)|rephras\w*|rewrit\w*)\b|"
    r"\b(?:positive|negative|original)\s*:",
    re.IGNORECASE,
)
_QUOTES = "\"'“”‘’`"
_TYPOGRAPHY = set("“”‘’–—…")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


@dataclass(frozen=True)
class Parsed:
    """The extracted sentence, or ``None`` with the reason (one of ``REASONS``)."""

    sentence: str | None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.sentence is not None


def _normalise(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def parse_response(text: str, anchor: str, min_words: int = 3, max_words: int = 64, truncated: bool = False) -> Parsed:
    """The one sentence in ``text``; rejects cut-off answers (``truncated``: stopped by max_new_tokens, not by
    the model), empty, too short/long, copies, several sentences, non-text, meta."""
    if truncated:
        return Parsed(None, "cut_off")
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    # An "Original: ..." line is skipped when it echoes the anchor; when its text differs, the model has
    # written its answer under the wrong label, and that text is the candidate.
    kept = []
    for line in lines:
        match = _ORIGINAL.match(line)
        if match:
            echoed = line[match.end() :].strip()
            if not echoed or _normalise(echoed) == _normalise(anchor):
                continue
            line = echoed
        kept.append(line)
    lines = kept
    if not lines:
        return Parsed(None, "empty")
    candidate = lines[0]
    for _ in range(2):  # "Positive: Variation: ..." happens
        candidate = _LABEL.sub("", candidate, count=1)
    candidate = candidate.strip().strip(_QUOTES).strip()
    if not candidate:
        # The label sat alone on its line ("Positive:"): the sentence is on the next one.
        return (
            parse_response("\n".join(lines[1:]), anchor, min_words, max_words)
            if len(lines) > 1
            else Parsed(None, "empty")
        )
    if _META.match(candidate) or _META_ANYWHERE.search(candidate):
        return Parsed(None, "meta_text")
    # Non-ASCII is fine where the anchor has it ("5–0", "López"); characters foreign to the anchor and to
    # ordinary typography (another script, mojibake) mean the model left the task.
    foreign = {c for c in candidate if not c.isascii() and c not in anchor and c not in _TYPOGRAPHY}
    if foreign or not re.search(r"[A-Za-z]", candidate):
        return Parsed(None, "non_text")
    words = candidate.split()
    if len(words) < min_words:
        return Parsed(None, "too_short")
    if len(words) > max_words:
        return Parsed(None, "too_long")
    if len(_SENTENCE_END.split(candidate)) > 1:
        return Parsed(None, "several_sentences")
    if _normalise(candidate) == _normalise(anchor):
        return Parsed(None, "copy")
    return Parsed(candidate)
