"""hardcse: better sentence encoders from hard contrastive data (ART, Data-CUBE, DiffAug)."""

import os

# Before anything can import huggingface_hub or mlflow (report_to): no usage reports leave the machine (a user may
# set them to 0 / false).
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

__version__ = "0.1.0"

# The Python API (docs/python.md), imported on first use: `import hardcse` loads no model and no torch.
API = (
    *("generate_triplets", "train_discriminator", "art_run", "run_assay", "evaluate_sts"),
    *("load_encoder", "model_folder", "GeneratedTriplets", "ArtRun"),
)
__all__ = [*API, "HardcseError", "__version__"]


def __getattr__(name: str) -> object:
    if name in API:
        from hardcse import api

        return getattr(api, name)
    if name == "HardcseError":
        from hardcse.errors import HardcseError

        return HardcseError
    raise AttributeError(f"module 'hardcse' has no attribute {name!r}")
