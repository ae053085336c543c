"""The `statectl` command line (Typer): `app.py` holds the app and `main`, one module per command
group, `argv.py` the pre-parse, `pager.py`, `output.py`, `options.py`, and `typer_compat.py` every
workaround for Typer's internals."""

from statectl.cli.app import app, main

__all__ = ["app", "main"]
