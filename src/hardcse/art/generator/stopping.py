"""Where a response ends: the end-of-sequence token, optionally the end of the first line, and a token budget per
row, the same in both engines (PyTorch's sampler and OpenVINO GenAI).

The parser reads one sentence from the first line of a response (:mod:`hardcse.art.generator.parsing`); what a
small model writes after that line (a note, a second variation) is thrown away, and a model that runs on past
``max_new_tokens`` has its answer rejected as cut off. Two set-ups make the raw generator answer in format without
any training (measured: benchmarks/results/generator_format.md):

- ``generator.stop: line`` ends a row at the first token that contains a line break, as well as at the
  end-of-sequence token (``eos``, the paper's). It is a set of stop tokens (every vocabulary entry whose text holds
  ``\\n`` or ``\\r``), so PyTorch and OpenVINO stop at the same token; a row so stopped is not cut off.
- ``generator.length_budget: k`` gives each row ``ceil(k * anchor tokens) + length_extra`` new tokens (at most
  ``max_new_tokens``) instead of ``max_new_tokens`` for all: a rewrite of a long anchor is long, and one of a short
  anchor that runs on past its budget has left the task.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from weakref import WeakKeyDictionary

from transformers import PreTrainedTokenizerBase

from hardcse.art.config import GeneratorConfig

# tokenizer -> (its vocabulary size then, its line-break token ids): a tokenizer's tokens only change by tokens
# added to it, which grows its size, so an entry of another size is computed again
_LINE_BREAK_IDS: WeakKeyDictionary = WeakKeyDictionary()


def line_break_ids(tokenizer: PreTrainedTokenizerBase) -> list[int]:
    """Every token whose text holds a line break (``\\n``, ``\\r``): 129 of SmolLM2's 49,152 (0.3 s, cached)."""
    size, ids = _LINE_BREAK_IDS.get(tokenizer, (None, []))
    if size != len(tokenizer):
        texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
        ids = [i for i, text in enumerate(texts) if "\n" in text or "\r" in text]
        _LINE_BREAK_IDS[tokenizer] = (len(tokenizer), ids)
    return list(ids)


def stop_ids(tokenizer: PreTrainedTokenizerBase, eos_ids: Sequence[int], config: GeneratorConfig) -> list[int]:
    """The tokens that end a row: the end-of-sequence tokens, and under ``stop: line`` the line breaks too."""
    ids = set(eos_ids)
    if config.stop == "line":
        ids.update(line_break_ids(tokenizer))
    return sorted(ids)


def token_limits(tokenizer: PreTrainedTokenizerBase, anchors: Sequence[str], config: GeneratorConfig) -> list[int]:
    """Each row's ``max_new_tokens``: from its anchor's length under ``length_budget``, else the config's for all."""
    if config.length_budget is None:
        return [config.max_new_tokens] * len(anchors)
    lengths = [len(ids) for ids in tokenizer(list(anchors), add_special_tokens=False)["input_ids"]]
    return [min(config.max_new_tokens, math.ceil(config.length_budget * n) + config.length_extra) for n in lengths]
