"""The settings of one command: secrets and bounds the user gave, carried down as one object.

The CLI builds a `Settings` from its options (`--api-key`, `--aes-key`, `--unpickle-inert`,
`--timeout`) and runs the command inside `settings.applied()`; a library user passes one to
`statectl.open(..., settings=...)`. The codec and the sources read `current()`: the value in force
for this command (a context variable, so it is reset when the command ends and never leaks into
the next one, nor across threads of a test run).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from statectl.model import Record, record


@record
class Settings(Record):
    """What a command may use and how long it may wait."""

    api_key: str | None = None
    """A LangGraph deployment's key (`--api-key`), sent only to the server named by --db."""
    aes_key: bytes | None = None
    """An EncryptedSerializer's key (`--aes-key`), for checkpoints written encrypted."""
    unpickle: bool = False
    """Read `pickle` rows with statectl's inert unpickler (imports nothing, calls nothing)."""
    timeout: float | None = None
    """`--timeout SECONDS`: the longest a source may make a command wait (None: each source's
    default, or $STATECTL_TIMEOUT)."""
    insecure: bool = False
    """`--insecure`: send an API key over plain http:// to a host that is not this machine."""

    @contextmanager
    def applied(self) -> Iterator[Settings]:
        """These settings in force for the code run inside the block."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)


DEFAULT = Settings()
_CURRENT: ContextVar[Settings] = ContextVar("statectl_settings", default=DEFAULT)


def current() -> Settings:
    """The settings in force (the defaults outside any `applied()` block)."""
    return _CURRENT.get()
