"""The one exception type that speaks to the user: the CLI prints its message without a stack trace."""

from collections.abc import Iterator
from contextlib import contextmanager


class HardcseError(Exception):
    """A user-facing error: the message says what was wrong, where, and what to do."""


@contextmanager
def loading(what: str) -> Iterator[None]:
    """Translate a library's complaint about a file or folder the user named (a missing or corrupt weight file, a
    config that is not JSON) into one line naming it. Only around the load itself: other errors are bugs."""
    try:
        yield
    except (OSError, ValueError) as e:
        detail = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise HardcseError(f"{what}: could not be loaded ({type(e).__name__}: {detail})") from None
