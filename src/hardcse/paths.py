"""Where the project's own folders are: vendored data and the model cache."""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    """The vendored benchmark data: $HARDCSE_DATA, else the repository's data/ folder."""
    return Path(os.environ.get("HARDCSE_DATA", REPO_ROOT / "data"))


def cache_dir() -> Path:
    """Converted checkpoints (de-quantised GGUF): $HARDCSE_CACHE, else ~/.cache/hardcse."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hardcse"
    return Path(os.environ.get("HARDCSE_CACHE", default))
