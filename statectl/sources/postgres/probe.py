"""What a Postgres database holds where `PostgresSaver` would write, read before anything is
written there (`copy --to`, `fork --to`, `replay --to`), and which database it is."""

from __future__ import annotations

from dataclasses import dataclass

from statectl.errors import SourceError
from statectl.sources.postgres.session import Queries

SAVER_TABLES = ("checkpoint_migrations", "checkpoints", "checkpoint_blobs", "checkpoint_writes")
"""The tables `PostgresSaver.setup()` creates (in the first schema of the search path)."""


@dataclass(frozen=True)
class Place:
    """A Postgres database as its server names it, and the schema meant."""

    identity: tuple[str, str, str | None]
    """(the server's system identifier, the database, the schema): the same for every URL that
    reaches it (a socket or a host, an address, a user, options)."""
    label: str
    tables: dict[str, tuple[str, frozenset[str]]]
    """LangGraph's table names present in the schema: name -> (pg_class.relkind, its columns)."""


class _Probe(Queries):
    def __init__(self, url: str) -> None:
        self._open(url)


def _server(probe: _Probe) -> str:
    """The server's system identifier (`pg_control_system()`, Postgres 9.6+; a replica has its
    primary's), else where it listens and since when (a role that may not call it)."""
    try:
        return str(probe._query("SELECT system_identifier FROM pg_control_system()")[0][0])
    except SourceError:  # (the function refused: the session was rolled back)
        row = probe._query("SELECT pg_postmaster_start_time()::text, current_setting('port')")[0]
        return f"{row[0]}:{row[1]}"


def place(url: str, where: str = "write") -> Place:
    """The database `url` reaches, read-only. `where`: `write`, the schema `CREATE TABLE` would
    write in (`current_schema()`, the first of the search path that exists; None if none does)
    with LangGraph's tables there; `read`, the schema where `checkpoints` is found through the
    search path, as a source reads it."""
    probe = _Probe(url)
    try:
        database, schema = probe._query(
            "SELECT current_database(), "
            + (
                "current_schema()"
                if where == "write"
                else "(SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.oid = to_regclass('checkpoints'))"
            )
        )[0]
        tables: dict[str, tuple[str, frozenset[str]]] = {}
        if where == "write" and schema is not None:
            rows = probe._query(
                "SELECT c.relname, c.relkind::text, a.attname FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
                "WHERE n.nspname = %s AND c.relname = ANY(%s)",
                (schema, list(SAVER_TABLES)),
            )
            found: dict[str, tuple[str, set[str]]] = {}
            for name, kind, column in rows:
                columns = found.setdefault(name, (kind, set()))[1]
                if column is not None:
                    columns.add(column)
            tables = {name: (kind, frozenset(cols)) for name, (kind, cols) in found.items()}
        return Place((_server(probe), database, schema), probe.label, tables)
    finally:
        probe.conn.close()
