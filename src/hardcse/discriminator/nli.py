"""The NLI discriminator: a cross-encoder over (premise, hypothesis) with a one-hidden-layer MLP head.

On a BERT-style checkpoint, sentence-transformers' ``CrossEncoder(num_labels=3)`` puts the model's pooler
(Linear + tanh on [CLS], pretrained) under a fresh Linear classifier: that is the paper's "encoder + MLP with
one hidden layer". Probabilities always come in the order of ``hardcse.data.nli.LABELS``, whatever label
order a loaded model was trained with.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from sentence_transformers.cross_encoder import CrossEncoder

from hardcse.data.nli import EVAL_FILES, LABELS, read_nli_files
from hardcse.devices import resolve_device
from hardcse.errors import HardcseError, loading
from hardcse.resources import resolve_model

log = logging.getLogger(__name__)


class NLIDiscriminator:
    """Wraps a 3-way cross-encoder; ``predict_proba`` returns P(entailment, neutral, contradiction)."""

    def __init__(self, model: CrossEncoder) -> None:
        self.model = model
        self.column_of_label = self._label_columns(model)

    @staticmethod
    def _label_columns(model: CrossEncoder) -> list[int]:
        id2label = {int(i): str(name).lower() for i, name in model.config.id2label.items()}
        by_name = {name: i for i, name in id2label.items()}
        if len(id2label) != 3 or not all(label in by_name for label in LABELS):
            raise HardcseError(
                f"the NLI model's labels are {id2label}; expected the three labels {list(LABELS)} "
                "(train one with `hardcse nli train` or pass a 3-way NLI cross-encoder)"
            )
        return [by_name[label] for label in LABELS]

    @classmethod
    def load(
        cls, source: str, max_length: int | None = None, device: str = "auto", device_key: str = "device"
    ) -> NLIDiscriminator:
        """``device``: auto | cpu | cuda | cuda:N (:mod:`hardcse.devices`; ``device_key`` names it in errors)."""
        path = resolve_model(source)
        where = str(resolve_device(device, device_key))
        with loading(f"NLI model {source}", path):
            model = CrossEncoder(str(path), local_files_only=True, max_length=max_length, device=where)
        return cls(model)

    def predict_proba(
        self,
        premises: Sequence[str],
        hypotheses: Sequence[str],
        batch_size: int = 64,
        show_progress: bool = False,
    ) -> np.ndarray:
        """(n, 3) probabilities in ``LABELS`` order; batches are length-sorted by the cross-encoder."""
        if len(premises) != len(hypotheses):
            raise HardcseError(f"{len(premises)} premises but {len(hypotheses)} hypotheses")
        if not premises:
            return np.zeros((0, 3), dtype=np.float32)
        pairs = list(zip(premises, hypotheses, strict=True))
        with torch.inference_mode():
            logits = self.model.predict(
                pairs, batch_size=batch_size, show_progress_bar=show_progress, activation_fn=torch.nn.Identity()
            )
        probs = torch.softmax(torch.as_tensor(np.asarray(logits), dtype=torch.float32), dim=-1).numpy()
        return probs[:, self.column_of_label]

    def save(self, path: str | Path) -> None:
        self.model.save_pretrained(str(path))


def load_discriminator(source: str, device: str = "auto") -> NLIDiscriminator:
    """The discriminator at ``source``, with an error that says how to make one when there is none."""
    try:
        resolve_model(source)
    except HardcseError as e:
        raise HardcseError(
            f"{e}\n  no NLI discriminator there: train one with `hardcse nli train --out {source}`"
        ) from None
    return NLIDiscriminator.load(source, device=device)


def nli_metrics(probs: np.ndarray, labels: Sequence[int]) -> dict:
    """Accuracy and per-class F1 (x 100) of argmax predictions."""
    labels = np.asarray(labels)
    pred = probs.argmax(axis=1)
    result = {"n": int(len(labels)), "accuracy": float((pred == labels).mean() * 100)}
    for i, name in enumerate(LABELS):
        tp = int(((pred == i) & (labels == i)).sum())
        precision = tp / max(int((pred == i).sum()), 1)
        recall = tp / max(int((labels == i).sum()), 1)
        result[f"f1_{name}"] = 0.0 if tp == 0 else float(200 * precision * recall / (precision + recall))
    return result


def evaluate_nli(
    discriminator: NLIDiscriminator, files: dict[str, str] | None = None, batch_size: int = 64
) -> dict[str, dict]:
    """Accuracy and per-class F1 on the held-out NLI sets (SNLI test, MNLI dev m/mm, SICK test by default)."""
    results = {}
    for name, path in (files or EVAL_FILES).items():
        pairs = read_nli_files([path])
        probs = discriminator.predict_proba(pairs.premises, pairs.hypotheses, batch_size=batch_size)
        results[name] = nli_metrics(probs, pairs.labels)
    return results
