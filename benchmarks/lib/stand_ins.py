"""Stand-in models for the speed benchmarks: what they time does not depend on what a model learnt."""

from __future__ import annotations

from pathlib import Path


def random_discriminator(path: Path) -> None:
    """An untrained three-label cross-encoder on the bundled MiniLM, saved in ``path``: the discriminator's shape and
    cost, none of its knowledge."""
    from sentence_transformers.cross_encoder import CrossEncoder

    from hardcse.data.nli import LABEL_ID, LABELS
    from hardcse.resources import resolve_model

    model = CrossEncoder(
        str(resolve_model("bundled:minilm-l6")),
        num_labels=3,
        config_kwargs={"id2label": dict(enumerate(LABELS)), "label2id": dict(LABEL_ID)},
    )
    model.save_pretrained(str(path))
