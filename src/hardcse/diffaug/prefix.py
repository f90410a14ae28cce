"""Prefix modules inside a sentence-transformers encoder: DiffAug's two learned augmentations.

A prefix module is prefix-tuning's (PEFT's ``PrefixEncoder``): ``l`` virtual-token embeddings passed through a
two-layer MLP (the reparametrisation) into one key and one value vector per attention layer and virtual token.
Every attention layer then attends over [prefix keys; token keys]. The tokens keep their positions 0..L-1 (the
prefix is not a run of tokens, so it does not shift the position embeddings as a key/value cache would).

A *view* says which prefix modules an encoding sees: view 0 is f(x; theta_1), view 1 is f(x; theta_2) and
``None`` concatenates all of them. An encoding that names no view (``encode()``, inference) uses the module's
``inference_view``: ``None`` (both, the paper) unless the run chose one prefix on STS-B dev. In training mode the
prefix keys and values pass through dropout (``prefix_dropout``, the released code's 0.1).

PEFT's own PeftModel is not used: on encoders it cannot disable a prefix adapter, does not select prefixes per
call and does not round-trip through sentence-transformers' save and load. :class:`PrefixedTransformer` is a
sentence-transformers ``Transformer`` that owns the prefixes and saves them next to the encoder weights
(``prefixes.safetensors``); ``hardcse.encoder.build.load_encoder`` and
``SentenceTransformer(path, trust_remote_code=True)`` load the folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from peft import PrefixEncoder, PrefixTuningConfig
from safetensors.torch import load_file, save_file
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from torch import nn
from transformers import DynamicCache

from hardcse.errors import HardcseError

VIEW_KEY = "prefix_view"  # a features key: which prefix module(s) one forward pass uses
PREFIX_WEIGHTS = "prefixes.safetensors"


class PrefixedTransformer(Transformer):
    """A sentence-transformers ``Transformer`` whose attention layers see learned prefix keys and values."""

    config_keys = [
        *Transformer.config_keys,
        *("prefix_length", "prefix_hidden_size", "num_prefixes", "prefix_dropout", "inference_view"),
    ]

    def __init__(
        self,
        model_name_or_path: str,
        *,
        prefix_length: int = 8,
        prefix_hidden_size: int = 512,
        num_prefixes: int = 2,
        prefix_dropout: float = 0.0,
        inference_view: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(model_name_or_path, **kwargs)
        if prefix_length < 1 or num_prefixes < 1 or prefix_hidden_size < 1:
            raise HardcseError("prefix_length, prefix_hidden_size and num_prefixes must be at least 1")
        if inference_view not in (None, 0, 1):
            raise HardcseError(f"inference_view {inference_view!r}: use 0, 1 or None (both prefixes)")
        config = self.model.config
        if getattr(config, "is_decoder", False) or not hasattr(config, "num_attention_heads"):
            raise HardcseError(f"prefixes need an encoder with attention layers; got {type(self.model).__name__}")
        self.prefix_length = prefix_length
        self.prefix_hidden_size = prefix_hidden_size
        self.num_prefixes = num_prefixes
        self.prefix_dropout = prefix_dropout
        self.inference_view = inference_view
        self.dropout = nn.Dropout(prefix_dropout)
        self.num_layers = config.num_hidden_layers
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        prefix_config = PrefixTuningConfig(
            task_type="FEATURE_EXTRACTION",
            num_virtual_tokens=prefix_length,
            token_dim=config.hidden_size,
            num_layers=config.num_hidden_layers,
            num_attention_heads=config.num_attention_heads,
            encoder_hidden_size=prefix_hidden_size,
            prefix_projection=True,
        )
        self.prefixes = nn.ModuleList(PrefixEncoder(prefix_config) for _ in range(num_prefixes))
        self.register_buffer("prefix_tokens", torch.arange(prefix_length), persistent=False)

    def view_indices(self, view: int | None) -> list[int]:
        """The prefix modules a view sees: one (view 0 or 1; with a single shared module, that one) or all."""
        if view is None:
            return list(range(self.num_prefixes))
        if view not in (0, 1):
            raise HardcseError(f"prefix view {view!r}: use 0, 1 or None (all prefixes)")
        return [min(view, self.num_prefixes - 1)]

    def prefix_key_values(self, view: int | None) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per layer, the (key, value) prefix of ``view``, each (heads, n_prefix_tokens, head_dim)."""
        layers: list[list[tuple[torch.Tensor, torch.Tensor]]] = [[] for _ in range(self.num_layers)]
        for index in self.view_indices(view):
            out = self.dropout(self.prefixes[index](self.prefix_tokens))  # (l, layers * 2 * hidden)
            out = out.view(self.prefix_length, self.num_layers * 2, self.num_heads, self.head_dim).permute(1, 2, 0, 3)
            for layer in range(self.num_layers):  # PEFT's layout: (key, value) of layer i at rows 2i, 2i + 1
                layers[layer].append((out[2 * layer], out[2 * layer + 1]))
        return [(torch.cat([k for k, _ in kv], dim=1), torch.cat([v for _, v in kv], dim=1)) for kv in layers]

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        view = features.pop(VIEW_KEY, self.inference_view)
        input_ids = features["input_ids"]
        batch, length = input_ids.shape
        cache = DynamicCache(config=self.model.config)
        for layer, (key, value) in enumerate(self.prefix_key_values(view)):
            cache.update(key.expand(batch, -1, -1, -1), value.expand(batch, -1, -1, -1), layer)
        n_prefix = cache.get_seq_length()
        token_mask = features["attention_mask"]
        mask = torch.cat([token_mask.new_ones(batch, n_prefix), token_mask], dim=1)
        positions = torch.arange(length, device=input_ids.device).expand(batch, -1)
        return super().forward(features, past_key_values=cache, attention_mask=mask, position_ids=positions, **kwargs)

    def save(self, output_path: str, *args: Any, safe_serialization: bool = True, **kwargs: Any) -> None:
        super().save(output_path, *args, safe_serialization=safe_serialization, **kwargs)
        state = {name: tensor.detach().contiguous().cpu() for name, tensor in self.prefixes.state_dict().items()}
        save_file(state, str(Path(output_path) / PREFIX_WEIGHTS))

    @classmethod
    def with_fresh_prefixes(
        cls,
        source: str | Path,
        prefix_length: int,
        prefix_hidden_size: int,
        num_prefixes: int,
        prefix_dropout: float = 0.0,
    ) -> PrefixedTransformer:
        """The transformer saved in the folder ``source`` with new, randomly initialised prefix modules."""
        settings = {"prefix_length": prefix_length, "prefix_hidden_size": prefix_hidden_size}
        settings |= {"num_prefixes": num_prefixes, "prefix_dropout": prefix_dropout}
        return super().load(str(source), local_files_only=True, init_defaults=settings)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", **kwargs: Any) -> PrefixedTransformer:
        """A saved prefixed transformer: encoder weights, config and ``prefixes.safetensors``."""
        module = super().load(model_name_or_path, subfolder=subfolder, **kwargs)
        path = Path(model_name_or_path, subfolder, PREFIX_WEIGHTS)
        if not path.is_file():
            raise HardcseError(f"{path} is missing: the folder has no trained prefixes (was it saved by hardcse?)")
        module.prefixes.load_state_dict(load_file(str(path)))
        return module


def prefixed(model: SentenceTransformer) -> PrefixedTransformer | None:
    """The model's prefixed transformer, or None for a plain encoder (a model DDP wraps: the wrapped one's)."""
    first = getattr(model, "module", model)[0]
    return first if isinstance(first, PrefixedTransformer) else None


def with_view(features: dict[str, torch.Tensor], view: int | None) -> dict[str, Any]:
    """A copy of tokenised ``features`` that a prefixed encoder encodes through ``view``."""
    return {**features, VIEW_KEY: view}


def add_prefixes(
    model: SentenceTransformer,
    source: Path,
    prefix_length: int,
    prefix_hidden_size: int,
    num_prefixes: int,
    prefix_dropout: float = 0.0,
) -> SentenceTransformer:
    """``model`` (loaded from the folder ``source``) with its transformer replaced by a prefixed one that has
    fresh prefix modules; pooling and any later modules are kept. A model that has prefixes is returned as it is."""
    if prefixed(model) is not None:
        return model
    if not isinstance(model[0], Transformer):
        raise HardcseError(f"prefixes need a Transformer as the first module; got {type(model[0]).__name__}")
    transformer = PrefixedTransformer.with_fresh_prefixes(
        source, prefix_length, prefix_hidden_size, num_prefixes, prefix_dropout
    )
    transformer.max_seq_length = model.max_seq_length
    return SentenceTransformer(modules=[transformer, *list(model)[1:]], device=str(model.device))
