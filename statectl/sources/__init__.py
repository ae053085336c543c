"""Checkpoint sources: one module per backend behind the small `Source` protocol (`base`).

`open_source` picks the backend from what --db names; no source imports another."""

from __future__ import annotations

import os
from pathlib import Path

from statectl.errors import SourceError
from statectl.settings import current
from statectl.sources.base import Source

__all__ = ["DEFAULT_DB_NAMES", "PG_ENV", "Source", "open_source", "resolve_db"]

DEFAULT_DB_NAMES = ("checkpoints.sqlite", "checkpoints.db", "checkpoints.sqlite3", "langgraph.db")
"""Looked for in the current folder when neither --db nor STATECTL_DB is given."""


PG_ENV = "postgresql:"
"""The source `resolve_db` gives when only libpq's variables (PGSERVICE, PGDATABASE, PGHOST) name
a database: an empty connection string, which libpq completes from them."""


def resolve_db(db: str | None) -> str:
    """The database to open: --db, then $STATECTL_DB, then a default file in the current folder."""
    if db:
        return db
    for var in ("STATECTL_DB", "DATABASE_URI"):  # DATABASE_URI: the LangGraph server's name
        if env := os.environ.get(var):
            return env
    for name in DEFAULT_DB_NAMES:
        if Path(name).is_file():
            return name
    if Path(".langgraph_api").is_dir():  # a langgraph dev app folder
        return ".langgraph_api"
    if any(os.environ.get(v) for v in ("PGSERVICE", "PGDATABASE", "PGHOST")):
        return PG_ENV  # libpq's own variables name a database, as psql reads them
    raise SourceError(
        "no database given",
        f"pass --db PATH or URL, or set STATECTL_DB; looked for {', '.join(DEFAULT_DB_NAMES)} "
        "and .langgraph_api in the current folder",
    )


def open_source(db: str | None, api_key: str | None = None) -> Source:
    """Open a checkpoint database read-only: a SQLite file, a statectl export file, a
    PostgresSaver database (`postgresql://` URL; libpq's PG* variables and .pgpass apply), or a
    `langgraph dev` folder (`.langgraph_api`, the app folder holding it, or one of its files), or a
    LangGraph server (`http(s)://` URL; `api_key`, else $LANGGRAPH_API_KEY / $LANGSMITH_API_KEY)."""
    from statectl.secrets import is_conninfo, redact, remember, secrets_of

    spec = resolve_db(db)
    remember(*secrets_of(spec), api_key or current().api_key)
    if spec.startswith(("http://", "https://")):
        from statectl.sources.server import ServerSource

        return ServerSource(spec, api_key or current().api_key)
    if spec.startswith(("postgres://", "postgresql://")) or is_conninfo(spec) or spec == PG_ENV:
        from statectl.sources.postgres import PostgresSource

        return PostgresSource("" if spec == PG_ENV else spec)
    path = Path(spec).expanduser()
    try:
        path.stat()
    except FileNotFoundError:
        raise SourceError(f"no such file: {redact(spec)}", "check the path given with --db or STATECTL_DB") from None
    except OSError as exc:  # (a folder on the way that this user may not enter, a loop of links)
        raise SourceError(f"cannot read {redact(spec)}: {exc.strerror or exc}") from None
    if path.is_dir() or path.name.endswith(".pckl"):
        from statectl.sources.langgraph_api import LanggraphApiSource, find_folder

        if folder := find_folder(path):
            return LanggraphApiSource(folder)
    if path.is_dir():
        raise SourceError(
            f"{spec} is a folder, not a database file",
            "point --db at the SQLite file the checkpointer writes, or at a "
            "langgraph dev app folder (the one holding .langgraph_api)",
        )
    if not path.is_file():  # (a FIFO would block the open forever; a device never ends)
        from statectl.sources.base import read_regular

        read_regular(path)  # (says which: one line)
    try:
        with path.open("rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise SourceError(f"cannot read {spec}: {exc.strerror}") from None
    if not head:
        raise SourceError(f"{spec} is empty", "it is not a checkpoint database")
    if head == b"SQLite format 3\x00":
        from statectl.sources.sqlite import SqliteSource

        return SqliteSource(path)
    if head.lstrip()[:1] in (b"{", b"["):
        from statectl.sources.export import ExportSource

        return ExportSource(path)
    raise SourceError(f"{spec} is neither a SQLite database nor a statectl export file")
