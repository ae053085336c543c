"""What the writer (`writer.py`) and the readers it runs (`safeload.py`) share, with nothing but
the standard library (both run in the project's interpreter): the row types statectl hands over
and `WriteError`. Apart, so that neither imports the other back."""

from __future__ import annotations

PG_TYPE, INMEM_TYPE, SERVER_TYPE = "statectl+pg", "statectl+inmem", "statectl+server"


class WriteError(Exception):
    """A row or a destination that cannot be written: one line for the user, with a hint."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message, self.hint = message, hint
