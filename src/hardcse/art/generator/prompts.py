"""The generator's prompts: the paper's positive/negative instructions, optional few-shot turns, chat template."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Literal

from transformers import PreTrainedTokenizerBase

from hardcse.art.config import GeneratorConfig
from hardcse.errors import HardcseError

Kind = Literal["positive", "negative"]
KINDS: tuple[Kind, Kind] = ("positive", "negative")


def instruction(anchor: str, kind: Kind, config: GeneratorConfig) -> str:
    template = config.positive_prompt if kind == "positive" else config.negative_prompt
    if "[X]" not in template:
        raise HardcseError(f"the {kind} prompt must contain [X] where the anchor goes: {template!r}")
    return template.replace("[X]", anchor)


def shown_demonstrations(anchor: str, kind: Kind, config: GeneratorConfig) -> list[dict]:
    """The few-shot examples shown before ``anchor``'s ``kind`` instruction: all of ``few_shot`` in order, or with
    ``demonstrations: k`` k of those that have ``kind``, drawn by a seed of (generator.seed, kind, anchor) (the same
    anchor shows the same examples in every round, engine and process)."""
    if config.demonstrations is None:
        return list(config.few_shot)
    pool = [e for e in config.few_shot if kind in e]
    key = hashlib.sha256(f"{config.seed}\0{kind}\0{anchor}".encode()).digest()
    return random.Random(int.from_bytes(key[:8], "little")).sample(pool, config.demonstrations)


def messages(anchor: str, kind: Kind, config: GeneratorConfig) -> list[dict[str, str]]:
    """Chat messages: optional system prompt, few-shot (user, assistant) turns, then the anchor's instruction."""
    turns: list[dict[str, str]] = []
    if config.system_prompt is not None:
        turns.append({"role": "system", "content": config.system_prompt})
    for example in shown_demonstrations(anchor, kind, config):
        missing = {"anchor", kind} - set(example)
        if missing:
            raise HardcseError(f"few_shot example {example} lacks {sorted(missing)}")
        turns.append({"role": "user", "content": instruction(example["anchor"], kind, config)})
        turns.append({"role": "assistant", "content": example[kind]})
    turns.append({"role": "user", "content": instruction(anchor, kind, config)})
    return turns


def render_prompts(
    tokenizer: PreTrainedTokenizerBase, anchors: Sequence[str], kinds: Sequence[Kind], config: GeneratorConfig
) -> list[str]:
    """Prompt strings through the tokenizer's chat template, or plain text when it has none."""
    if len(anchors) != len(kinds):
        raise HardcseError(f"{len(anchors)} anchors but {len(kinds)} kinds")
    if tokenizer.chat_template:
        return [
            tokenizer.apply_chat_template(messages(a, k, config), add_generation_prompt=True, tokenize=False)
            for a, k in zip(anchors, kinds, strict=True)
        ]
    prompts = []
    for anchor, kind in zip(anchors, kinds, strict=True):
        shown = shown_demonstrations(anchor, kind, config)
        shots = "".join(f"{instruction(e['anchor'], kind, config)} {e[kind]}\n\n" for e in shown if kind in e)
        prompts.append(shots + instruction(anchor, kind, config))
    return prompts
