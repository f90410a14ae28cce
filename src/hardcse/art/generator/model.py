"""Loading the generator: a causal LM by model source, optionally with a LoRA adapter (new or saved).

A saved generator folder holds the PEFT adapter plus ``generator.json`` naming the base model *source*
(``bundled:smollm2-135m``), so the folder stays valid on another machine whose cache lives elsewhere.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from hardcse.art.config import GeneratorConfig
from hardcse.devices import resolve_device, resolve_dtype
from hardcse.errors import loading
from hardcse.fingerprint import files_digest
from hardcse.resources import resolve_model

GENERATOR_FILE = "generator.json"


def load_tokenizer(path: Path) -> PreTrainedTokenizerBase:
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"  # generation appends on the right
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def is_generator_folder(source: str) -> bool:
    return (Path(source) / GENERATOR_FILE).is_file()


def base_model_source(source: str) -> str:
    """The raw LM under ``source``: the source itself, or the base recorded in a generator folder."""
    if is_generator_folder(source):
        return json.loads((Path(source) / GENERATOR_FILE).read_text())["base_model"]
    return source


def source_digest(source: str, digest: Any) -> None:
    """Feed ``digest`` with the files of ``source``: the base model's, and a generator folder's adapter files."""
    files_digest(resolve_model(base_model_source(source)), digest)
    if is_generator_folder(source):
        files_digest(Path(source), digest)


def load_generator(
    source: str, config: GeneratorConfig, trainable: bool = False
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The LM and its tokenizer.

    ``source`` is a model source (a raw LM) or a generator folder saved by :func:`save_generator` (base + LoRA).
    With ``trainable``, a raw LM gets a fresh LoRA adapter from ``config`` and a saved adapter is loaded trainable.
    """
    adapter_dir = Path(source) if is_generator_folder(source) else None
    base_source = base_model_source(source)
    base_path = resolve_model(base_source)
    device = resolve_device(config.device, "generator.device")
    with loading(f"generator {base_source} (a causal language model)", base_path):
        model = AutoModelForCausalLM.from_pretrained(base_path, dtype=resolve_dtype(config.dtype, device))
        tokenizer = load_tokenizer(base_path)
    if adapter_dir is not None:
        with loading(f"generator adapter {adapter_dir}", adapter_dir):
            model = PeftModel.from_pretrained(model, adapter_dir, is_trainable=trainable)
    elif trainable:
        lora = LoraConfig(
            r=config.lora_r,
            lora_alpha=config.lora_alpha,
            lora_dropout=config.lora_dropout,
            target_modules=list(config.lora_target_modules),
            task_type="CAUSAL_LM",
        )
        model = get_peft_model(model, lora)
    model.to(device)  # the base weights keep their dtype, LoRA's stay float32
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.eval()  # training code switches to train mode itself
    return model, tokenizer


def save_generator(model: PeftModel, base_source: str, path: str | Path) -> None:
    """Save the LoRA adapter and the base model's source; :func:`load_generator` reads the folder back."""
    path = Path(path)
    model.save_pretrained(str(path))
    (path / GENERATOR_FILE).write_text(json.dumps({"base_model": base_source}, indent=2))
