"""The one error type statectl raises; the CLI turns it into one line on stderr."""

from __future__ import annotations


class StatectlError(Exception):
    """An error a user can act on: `message` says what is wrong, `hint` what to do. Itself: a
    usage error (an invalid option value, a missing argument), exit 2 as Typer's own; exit 1 is
    kept for `diff --exit-code` finding changes."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class SourceError(StatectlError):
    """The database cannot be opened or is not a LangGraph checkpoint store."""

    exit_code = 2


class NotFoundError(StatectlError):
    """A thread, namespace or checkpoint that the database does not hold."""

    exit_code = 3


class ThreadNotFound(NotFoundError):
    """No thread has this exact id (`Store.thread_id` then tries it as a prefix)."""


class DecodeError(StatectlError):
    """A stored value that cannot be decoded (corrupt bytes)."""

    exit_code = 4

    @classmethod
    def corrupt(cls, thread_id: str, checkpoint_id: str, why: str) -> DecodeError:
        """The one line for a checkpoint whose stored value cannot be read."""
        return cls(f"checkpoint {checkpoint_id} of thread {thread_id!r} is corrupt: {why}")
