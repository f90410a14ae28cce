"""A sentence encoder's transformer in OpenVINO Runtime, its pooling and normalisation still in PyTorch.

sentence-transformers' own ``backend="openvino"`` needs optimum-intel, whose releases pin transformers below the
5.x line this project needs, so the conversion is OpenVINO's own: ``openvino.convert_model`` traces the loaded
module (``auto_model``: the Hugging Face model inside the first ``Transformer`` module) with dynamic batch and
length, and the CPU plugin compiles it. Only that module changes engine: the modules after it (Pooling,
Normalize, a dense layer) run unchanged on its token embeddings, so the sentence embedding is the same function.

The compiled model is kept per loaded module and made again when its weights change: the key is every
parameter's storage and in-place version counter, which an optimizer step or a ``load_state_dict`` moves.
Converting MiniLM-L6 takes ~2 s. Models whose first module is anything else (DiffAug's prefix encoder, an image
model) are not converted: :func:`supports_openvino` says so and ``encode`` keeps PyTorch for them.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

from hardcse.engines import openvino_precision, quiet_tracing

log = logging.getLogger(__name__)

_compiled: weakref.WeakKeyDictionary[torch.nn.Module, tuple[tuple, Any, tuple[str, ...]]] = weakref.WeakKeyDictionary()


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


def _weights_key(module: torch.nn.Module) -> tuple:
    return tuple((p.data_ptr(), p._version) for p in module.parameters())


class _LastHiddenState(torch.nn.Module):
    """The traced function: named inputs in, the last hidden state out."""

    def __init__(self, model: torch.nn.Module, names: tuple[str, ...]) -> None:
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(self.names, inputs, strict=True))).last_hidden_state


def _compile(model: SentenceTransformer, features: dict[str, torch.Tensor], dtype: str) -> tuple[Any, tuple]:
    import openvino as ov

    auto_model = model[0].auto_model
    names = tuple(k for k in ("input_ids", "attention_mask", "token_type_ids") if k in features)
    example = tuple(features[k][:2, :8].cpu() for k in names)
    was_training = auto_model.training
    auto_model.eval()
    try:
        with torch.no_grad(), quiet_tracing():
            converted = ov.convert_model(
                _LastHiddenState(auto_model, names),
                example_input=example,
                input=[ov.PartialShape([-1, -1])] * len(names),
            )
    finally:
        auto_model.train(was_training)
    compiled = ov.Core().compile_model(converted, "CPU", {"PERFORMANCE_HINT": "LATENCY", **openvino_precision(dtype)})
    return compiled, names


def openvino_token_embeddings(
    model: SentenceTransformer, features: dict[str, torch.Tensor], dtype: str = "auto"
) -> torch.Tensor:
    """The first module's token embeddings for a padded batch, computed by OpenVINO (converted on first use and
    again after the weights change)."""
    auto_model = model[0].auto_model
    key = _weights_key(auto_model)
    entry = _compiled.get(auto_model)
    if entry is None or entry[0] != (key, dtype):
        log.info("converting the encoder to OpenVINO (%s)", type(auto_model).__name__)
        compiled, names = _compile(model, features, dtype)
        entry = ((key, dtype), compiled, names)
        _compiled[auto_model] = entry
    _, compiled, names = entry
    out = compiled([np.ascontiguousarray(features[name].cpu().numpy()) for name in names])
    return torch.from_numpy(np.array(out[0], dtype=np.float32))


def openvino_forward(model: SentenceTransformer, features: dict[str, Any], dtype: str = "auto") -> dict[str, Any]:
    """``model(features)`` with the first module in OpenVINO and every later module in PyTorch."""
    features = dict(features)
    features["token_embeddings"] = openvino_token_embeddings(model, features, dtype)
    for module in list(model)[1:]:
        features = module(features)
    return features
