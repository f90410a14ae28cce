"""Logging set-up: readable lines on the terminal, optionally also in a file of the run folder."""

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def setup_logging(level: int = logging.INFO, log_file: str | Path | None = None) -> None:
    """Log hardcse at ``level`` to stderr (and to ``log_file``); libraries stay at WARNING."""
    handlers: list[logging.Handler] = [logging.StreamHandler()]
    if log_file is not None:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    logging.basicConfig(level=logging.WARNING, format=_FORMAT, handlers=handlers, force=True)
    logging.getLogger("hardcse").setLevel(level)


@contextmanager
def log_to_file(path: str | Path) -> Iterator[None]:
    """Within the block, hardcse's log also goes to ``path`` (appended)."""
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(_FORMAT))
    logger = logging.getLogger("hardcse")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        handler.close()
