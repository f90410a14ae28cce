"""Encoding many sentences fast on a CPU, with the same numbers as ``SentenceTransformer.encode``.

Sentences are tokenized once to learn their lengths, sorted by token length, and grouped into batches of
about ``tokens_per_batch`` tokens: short sentences go in large batches, long ones in small batches, and
almost no position is padding. On 2 cores this is ~1.5x faster than ``encode`` at its best batch size.
Under the OpenVINO engine (the :class:`hardcse.engines.Engine` a caller passes) the first module runs in
OpenVINO Runtime (:mod:`hardcse.encoder.openvino`): the same numbers in float32, within bfloat16's rounding at
``auto`` precision.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

from hardcse.engines import Engine
from hardcse.progress import progress_bar


def token_budget_batches(lengths: Sequence[int], tokens_per_batch: int) -> list[np.ndarray]:
    """Indices grouped into batches, shortest first, each with at most ``tokens_per_batch`` padded tokens
    (a single longer sentence still forms its own batch)."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    batches, start = [], 0
    while start < len(order):
        end = start + 1
        while end < len(order) and (end - start + 1) * lengths[order[end]] <= tokens_per_batch:
            end += 1
        batches.append(order[start:end])
        start = end
    return batches


def _pretokenized(model: SentenceTransformer) -> bool:
    """True when the first module is a plain text Transformer: its features are exactly the tokenizer's output,
    so the tokenization that measured lengths can be padded and reused instead of tokenizing twice."""
    first = model[0]
    return type(first).__name__ == "Transformer" and not getattr(first, "do_lower_case", False)


def encoding_engine(model: SentenceTransformer, engine: Engine) -> str:
    """What :func:`encode` runs ``model`` with under ``engine``: ``openvino`` where ``engine`` resolves to it on the
    model's device and the model converts (a text Transformer first module), else ``torch``."""
    if engine.on(model.device) != "openvino":
        return "torch"
    from hardcse.encoder.openvino import supports_openvino

    return "openvino" if supports_openvino(model) else "torch"


def encode(
    model: SentenceTransformer,
    sentences: Sequence[str],
    batch_size: int = 64,
    tokens_per_batch: int = 3072,
    show_progress: bool = False,
    engine: Engine | None = None,
) -> np.ndarray:
    """Sentence embeddings as a float32 array (n, dim), in the order of ``sentences``, computed in ``engine`` (the
    caller's command's; default: :meth:`Engine.from_environment`).

    Models whose first module has no tokenizer fall back to ``model.encode(batch_size=batch_size)``.
    """
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None or not callable(tokenizer):
        return model.encode(list(sentences), batch_size=batch_size, convert_to_numpy=True)
    sentences = list(sentences)
    if not sentences:
        return np.zeros((0, model.get_embedding_dimension() or 0), dtype=np.float32)
    tokens = tokenizer(sentences, truncation=True, max_length=model.max_seq_length)
    batches = token_budget_batches([len(ids) for ids in tokens["input_ids"]], tokens_per_batch)
    reuse = _pretokenized(model)
    forward = model
    engine = engine or Engine.from_environment()
    if encoding_engine(model, engine) == "openvino":
        from hardcse.encoder.openvino import openvino_forward

        forward = openvino_forward(model, engine.precision)  # for the weights as they are now

    out: np.ndarray | None = None
    model.eval()
    with (
        torch.inference_mode(),
        progress_bar(total=len(sentences), desc="encode", unit="sent", disable=not show_progress) as progress,
    ):
        for idx in batches:
            if reuse:
                features = tokenizer.pad({k: [v[i] for i in idx] for k, v in tokens.items()}, return_tensors="pt")
            else:
                features = model.preprocess([sentences[i] for i in idx])
            features = {k: v.to(model.device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}
            emb = forward(features)["sentence_embedding"].float().cpu().numpy()
            if out is None:
                out = np.empty((len(sentences), emb.shape[1]), dtype=np.float32)
            out[idx] = emb
            progress.update(len(idx))
    return out


def row_cosines(ex: np.ndarray, ey: np.ndarray) -> np.ndarray:
    """cos(ex_i, ey_i) for each row of two embedding matrices."""
    ex = ex / np.linalg.norm(ex, axis=1, keepdims=True)
    ey = ey / np.linalg.norm(ey, axis=1, keepdims=True)
    return np.sum(ex * ey, axis=1)


def pair_cosines(
    model: SentenceTransformer, xs: Sequence[str], ys: Sequence[str], engine: Engine | None = None
) -> np.ndarray:
    """cos(f(x_i), f(y_i)) for each pair, encoded in ``engine`` (as :func:`encode`)."""
    if not xs:
        return np.zeros(0)
    emb = encode(model, [*xs, *ys], engine=engine)
    return row_cosines(emb[: len(xs)], emb[len(xs) :])
