"""hardcse: better sentence encoders from hard contrastive data (ART, Data-CUBE, DiffAug)."""

import os

# Before anything can import huggingface_hub or mlflow (report_to): no usage reports leave the machine (a user may
# set them to 0 / false).
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

__version__ = "0.1.0"
