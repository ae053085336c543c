"""The `statectl` command line (Typer): `app.py` holds the app and `main`, one module per command
group, `argv.py` the pre-parse, `pager.py`, `output.py`, `options.py`, and `typer_compat.py` every
workaround for Typer's internals."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    """The `statectl` command. Its modules load here, not when the package is imported, so that
    Ctrl+C while they load is the exit code Ctrl+C has later (130), not a traceback."""
    try:
        from statectl.cli.app import main as run
    except KeyboardInterrupt:
        sys.exit(130)
    run(argv)
