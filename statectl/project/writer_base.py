"""What the writer (`writer.py`) and the readers it runs (`safeload.py`) share, with nothing but
the standard library (both run in the project's interpreter): the row types statectl hands over
and `WriteError`; and how statectl starts the writer and reads its answers (`BOOT`, `MARK`, for
`launch.py`). Apart, so that none of them imports another back."""

from __future__ import annotations

PG_TYPE, INMEM_TYPE, SERVER_TYPE = "statectl+pg", "statectl+inmem", "statectl+server"

BOOT = "import sys; sys.path.append(sys.argv.pop(1)); from statectl.project.entry import main; main(sys.argv[1:])"
"""The writer process's start (`python -c BOOT STATECTL_DIR copy|travel`): `entry.main`."""
MARK = "\x1estatectl-writer\x1e"
"""Precedes each answer of the writer on stdout (the project's modules may print while they load)."""


class WriteError(Exception):
    """A row or a destination that cannot be written: one line for the user, with a hint."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message, self.hint = message, hint
