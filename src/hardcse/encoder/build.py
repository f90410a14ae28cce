"""Load a sentence encoder from a model source, optionally with another pooling head."""

from __future__ import annotations

import json
from pathlib import Path

from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Dense, Normalize
from sentence_transformers.sentence_transformer.modules import Pooling

from hardcse.devices import resolve_device
from hardcse.encoder import POOLINGS
from hardcse.errors import HardcseError, loading
from hardcse.resources import resolve_model
from hardcse.seeding import seeded_torch


def loads_hardcse_modules(path: Path) -> bool:
    """Whether the folder's modules.json names hardcse's own modules (DiffAug's prefixed transformer). They are
    imported from the installed package, which sentence-transformers 6 allows only with trust_remote_code."""
    modules = path / "modules.json"
    if not modules.is_file():
        return False
    types = [entry.get("type", "") for entry in json.loads(modules.read_text(encoding="utf-8"))]
    return any(t.startswith("hardcse.") for t in types) and all(
        t.startswith(("hardcse.", "sentence_transformers.")) for t in types
    )


def load_encoder(
    source: str,
    pooling: str = "default",
    max_seq_length: int | None = None,
    head_seed: int = 0,
    device: str = "auto",
    device_key: str = "device",
) -> SentenceTransformer:
    """A SentenceTransformer from ``source`` (see ``resolve_model``).

    ``pooling``: ``default`` keeps the model's own head; ``cls`` and ``mean`` replace its pooling;
    ``cls_mlp`` is SimCSE's head, [CLS] then Linear + tanh. A final Normalize module is kept if present.
    A plain transformers checkpoint (no sentence-transformers config) gets mean pooling by default.
    ``head_seed``: the fresh ``cls_mlp`` layer's initial weights, drawn without touching the global RNG.
    ``device``: auto | cpu | cuda | cuda:N (:mod:`hardcse.devices`; ``device_key`` names the config key in errors).
    """
    if pooling not in POOLINGS:
        raise HardcseError(f"pooling {pooling!r}: choose one of {', '.join(POOLINGS)}")
    path = resolve_model(source)
    where = str(resolve_device(device, device_key))
    with loading(f"encoder {source}", path):
        model = SentenceTransformer(
            str(path), device=where, local_files_only=True, trust_remote_code=loads_hardcse_modules(path)
        )
    if max_seq_length is not None:
        model.max_seq_length = max_seq_length
    if pooling == "default":
        return model
    transformer = model[0]
    dim = transformer.get_embedding_dimension()
    modules = [transformer, Pooling(dim, "mean" if pooling == "mean" else "cls")]
    if pooling == "cls_mlp":
        with seeded_torch(head_seed):
            modules.append(Dense(dim, dim))  # SimCSE's MLP: Linear + tanh (Dense's default activation)
    if any(isinstance(m, Normalize) for m in model):
        modules.append(Normalize())
    return SentenceTransformer(modules=modules, device=str(model.device))
