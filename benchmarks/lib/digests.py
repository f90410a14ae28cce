"""A model folder named by its files: the SHA-256 of all of them, or of what decides its outputs (its weights and
config, not its training history). Records name the NLI models and generators they ran with these."""

from __future__ import annotations

from pathlib import Path

# what a trained model folder keeps of how its training went (the model card's minutes, training.json's seconds a
# step): two trainings of identical weights differ there, so the weights' digest leaves them out
TRAINING_HISTORY = ("README.md", "training.json")


def model_digest(source: str | None, skip: tuple[str, ...] = ()) -> str | None:
    """The SHA-256 of a model folder's files (``source/model`` for a run folder) but those named in ``skip``; None
    where there is none."""
    import hashlib

    from hardcse.fingerprint import files_digest

    folder = Path(source) / "model" if source and (Path(source) / "model").is_dir() else Path(source or "")
    if not source or not folder.is_dir():
        return None
    digest = hashlib.sha256()
    files_digest(folder, digest, skip)
    return digest.hexdigest()


def weights_digest(source: str | None) -> str | None:
    """The SHA-256 of what decides a model's outputs: its folder's files but the TRAINING_HISTORY."""
    return model_digest(source, TRAINING_HISTORY)
