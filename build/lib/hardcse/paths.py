"""Where the project's own files are: the data and configs shipped inside the package, and the model cache."""

import os
from importlib.resources import files
from pathlib import Path

SHIPPED = Path(str(files("hardcse") / "shipped"))  # installed with the package (the repository links to it)


def data_dir() -> Path:
    """The vendored benchmark data: $HARDCSE_DATA, else the copy shipped with the package."""
    return Path(os.environ.get("HARDCSE_DATA", SHIPPED / "data"))


def shipped_configs_dir() -> Path:
    """The configs shipped with the package (``configs/`` in the repository)."""
    return SHIPPED / "configs"


def shipped_config_names() -> list[str]:
    return sorted(p.stem for p in shipped_configs_dir().glob("*.yaml"))


def cache_dir() -> Path:
    """Converted checkpoints (de-quantised GGUF): $HARDCSE_CACHE, else ~/.cache/hardcse."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hardcse"
    return Path(os.environ.get("HARDCSE_CACHE", default))
