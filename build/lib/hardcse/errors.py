"""The one exception type that speaks to the user: the CLI prints its message without a stack trace."""


class HardcseError(Exception):
    """A user-facing error: the message says what was wrong, where, and what to do."""
