"""hardcse: better sentence encoders from hard contrastive data (ART, Data-CUBE, DiffAug)."""

import os

# Before anything can import huggingface_hub: no usage reports leave the machine (a user may set it to 0).
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

__version__ = "0.1.0"
