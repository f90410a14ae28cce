"""A sentence encoder's transformer in OpenVINO Runtime, its pooling and normalisation still in PyTorch.

sentence-transformers' own ``backend="openvino"`` needs optimum-intel, whose releases pin transformers below the
5.x line this project needs, so the conversion is OpenVINO's own: ``openvino.convert_model`` traces the loaded
module (``auto_model``: the Hugging Face model inside the first ``Transformer`` module) with dynamic batch and
length, and the CPU plugin compiles it. Only that module changes engine: the modules after it (Pooling,
Normalize, a dense layer) run unchanged on its token embeddings, so the sentence embedding is the same function.

Compiled models are kept by what decides their output, never by the module object: a digest of the module's class,
its submodule tree, its config and attention implementation, and the name, dtype, shape and bytes of every
parameter and buffer (:func:`weights_digest`), with the precision and the input names. Why this is sound for the
changes training makes: the traced function depends on the weights only through those bytes, so any change of a
weight (an optimizer step, fused or not, a ``load_state_dict``, a write under ``torch.no_grad()``, a LoRA merge,
weights trained in another process and loaded) changes the key. What it does not see: a patched ``forward``, a hook,
or weights held outside parameters and buffers (some quantized modules); hardcse makes none of these. Storage
pointers and in-place version counters are not enough: a fused AdamW step (the Trainer's default optimizer,
``adamw_torch_fused``) moves neither, which once made every in-run evaluation score the weights of the first one.
The digest reads every byte (BLAKE2b: about 0.07 s for MiniLM-L6's 91 MB, about 1 s for a 1.3 GB encoder), once
per ``encode`` call, whose batches all run on the weights as they were at its start; converting MiniLM-L6 takes ~2
s, so the two most recent compiled models are kept (each with its own copy of the weights), and an evaluation of
weights already seen (the best checkpoint reloaded at the end of training, a saved encoder loaded again) reuses its
compiled model.
Models whose first module is anything else (DiffAug's prefix encoder, an image model) are not converted:
:func:`supports_openvino` says so and ``encode`` keeps PyTorch for them.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

from hardcse.engines import openvino_precision, quiet_tracing

log = logging.getLogger(__name__)

KEPT_COMPILED = 2  # compiled models kept at once (a training job's latest weights and its best, say)
_compiled: OrderedDict[tuple[str, str, tuple[str, ...]], Any] = OrderedDict()  # (digest, dtype, names) -> compiled


def supports_openvino(model: SentenceTransformer) -> bool:
    """True when the first module is a text ``Transformer`` whose output is the model's last hidden state."""
    first = model[0]
    if type(first).__name__ != "Transformer" or not hasattr(first, "auto_model"):
        return False
    text = getattr(first, "modality_config", {}).get("text", {})
    return (
        text.get("method") == "forward"
        and text.get("method_output_name") == "last_hidden_state"
        and getattr(first, "module_output_name", "token_embeddings") == "token_embeddings"
        and not getattr(first.auto_model.config, "output_hidden_states", False)
    )


def weights_digest(module: torch.nn.Module) -> str:
    """A digest of what the module's forward computes with: its class, its submodule tree (``repr``), its config and
    attention implementation, and the name, dtype, shape and bytes of every parameter and buffer (non-persistent
    buffers too)."""
    digest = hashlib.blake2b(digest_size=20)
    digest.update(f"{type(module).__module__}.{type(module).__qualname__}\0".encode())
    digest.update(repr(module).encode())  # the submodule tree: a swapped module without weights changes it
    config = getattr(module, "config", None)
    if config is not None:
        digest.update(config.to_json_string(use_diff=False).encode())
        digest.update(f"\0attention {getattr(config, '_attn_implementation', None)}\0".encode())  # not in the JSON
    for name, tensor in (*module.named_parameters(), *module.named_buffers()):
        tensor = tensor.detach()
        digest.update(f"\0{name}\0{tensor.dtype}\0{tuple(tensor.shape)}\0".encode())
        digest.update(tensor.cpu().contiguous().reshape(-1).view(torch.uint8).numpy())
    return digest.hexdigest()


class _LastHiddenState(torch.nn.Module):
    """The traced function: named inputs in, the last hidden state out."""

    def __init__(self, model: torch.nn.Module, names: tuple[str, ...]) -> None:
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(self.names, inputs, strict=True))).last_hidden_state


def input_names(features: dict[str, Any]) -> tuple[str, ...]:
    """The tokenizer outputs the traced function takes, in its argument order."""
    return tuple(k for k in ("input_ids", "attention_mask", "token_type_ids") if k in features)


def _compile(model: SentenceTransformer, features: dict[str, torch.Tensor], dtype: str) -> Any:
    import openvino as ov

    auto_model = model[0].auto_model
    names = input_names(features)
    example = tuple(features[k][:2, :8].cpu() for k in names)
    was_training = auto_model.training
    auto_model.eval()
    try:
        with torch.no_grad(), quiet_tracing():
            converted = ov.convert_model(
                _LastHiddenState(auto_model, names),
                example_input=example,
                input=[ov.PartialShape([-1, -1])] * len(names),
                # copy the weights: shared (the default), the compiled model reads PyTorch's memory, and a later
                # in-place update of the module leaks into a model compiled and kept for the earlier weights
                share_weights=False,
            )
    finally:
        auto_model.train(was_training)
    compiled = ov.Core().compile_model(converted, "CPU", {"PERFORMANCE_HINT": "LATENCY", **openvino_precision(dtype)})
    return compiled


def openvino_forward(model: SentenceTransformer, dtype: str = "auto") -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A function that does ``model(features)`` with the first module in OpenVINO and every later module in PyTorch,
    for the weights ``model`` holds now: the digest is taken here, once, so take a new one after the weights change
    (:func:`hardcse.encoder.encode.encode` takes one per call). Converted the first time these weights are seen."""
    digest = weights_digest(model[0].auto_model)

    def forward(features: dict[str, Any]) -> dict[str, Any]:
        names = input_names(features)
        key = (digest, dtype, names)
        compiled = _compiled.get(key)
        if compiled is None:
            log.info("converting the encoder to OpenVINO (%s)", type(model[0].auto_model).__name__)
            compiled = _compile(model, features, dtype)
            _compiled[key] = compiled
            while len(_compiled) > KEPT_COMPILED:
                _compiled.popitem(last=False)
        _compiled.move_to_end(key)
        out = compiled([np.ascontiguousarray(features[name].cpu().numpy()) for name in names])
        features = dict(features)
        features["token_embeddings"] = torch.from_numpy(np.array(out[0], dtype=np.float32))
        for module in list(model)[1:]:
            features = module(features)
        return features

    return forward
