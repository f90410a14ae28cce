"""The one exception type that speaks to the user: the CLI prints its message without a stack trace."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class HardcseError(Exception):
    """A user-facing error: the message says what was wrong, where, and what to do."""


def not_a_file(path: str | Path, detail: str = "") -> HardcseError:
    """The error for a path that should name a file: a folder is called a folder, not a missing file."""
    kind = "a folder, not a file" if Path(path).is_dir() else "no such file"
    return HardcseError(f"{path}: {kind}{detail}")


@contextmanager
def loading(what: str, folder: str | Path | None = None) -> Iterator[None]:
    """Translate a library's complaint about a file or folder the user named (a missing or corrupt weight file, a
    config that is not JSON) into one line naming it. Only around the load itself: other errors are bugs.
    ``folder``: the model folder being loaded; when a load fails, its files are checked
    (:mod:`hardcse.model_files`) so the message names the damaged file."""
    try:
        yield
    except HardcseError:
        raise
    except Exception as e:  # libraries raise plain Exception for a bad tokenizer or weights file
        detail = (str(e).strip().splitlines() or [type(e).__name__])[0]
        if folder is not None:
            from hardcse.model_files import damaged_file

            found = damaged_file(folder)
            if found is not None:
                path, problem = found
                raise HardcseError(
                    f"{what}: {path}: {problem}; replace this file (copy or download the model again)"
                ) from None
        raise HardcseError(f"{what}: could not be loaded ({type(e).__name__}: {detail})") from None
