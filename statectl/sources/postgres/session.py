"""A Postgres session for statectl's queries: its settings, how arguments are sent, and the
query plumbing every part of `PostgresSource` shares (`Queries`)."""

from __future__ import annotations

import os
from typing import Any

import orjson

from statectl.codec.decode import b64
from statectl.codec.formats import PG_TYPE
from statectl.errors import SourceError, install_hint
from statectl.secrets import redact, scrub, secrets_of
from statectl.sources.base import timeout

WAIT_HINT = "--timeout SECONDS (or STATECTL_TIMEOUT) waits longer"


class Texts(list):
    """A list of strings sent as one text[] literal (`settle` registers its dumper): psycopg's own array dumper
    quotes each element through a regular expression, which took 12 of 43 s of `threads --json`
    over 133,675 threads (the batches' ids, namespaces and versions)."""


def _texts_literal(values: list) -> bytes:
    r"""The text[] literal of `values`: each element double-quoted with `\` and `"` escaped
    (so commas, braces, spaces and the word NULL stay text); None is NULL."""
    return (
        "{"
        + ",".join(
            "NULL" if v is None else '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values
        )
        + "}"
    ).encode()


def _args(args: Any) -> Any:
    """Query arguments with each list of strings as `Texts`."""

    def one(v: Any) -> Any:
        return Texts(v) if type(v) is list and all(x is None or type(x) is str for x in v) else v

    if isinstance(args, dict):
        return {k: one(v) for k, v in args.items()}
    return tuple(one(v) for v in args)


def settle(conn: Any) -> None:
    """Session settings for statectl's queries, kept whatever a later transaction does. They read
    a few rows each, some for a batch of threads (`= ANY(%s)`):
    - no JIT compiler (Postgres 11+): a batch's plan costs enough that Postgres would compile it,
      which takes longer than running it (0.42 of 0.50 s for 200 threads' channel sizes);
    - lists of strings sent as one text[] literal (`Texts`);
    - a plan made for each query's values (Postgres 12+): psycopg prepares a query it has run
      five times, and Postgres may then keep one plan for any array, which scanned 1.2 s where
      the plan for the array given takes 0.15 (a prune batch of 2,000 threads)."""
    from psycopg.adapt import Dumper

    class TextsDumper(Dumper):
        oid = conn.adapters.types["text"].array_oid

        def dump(self, obj: Any) -> bytes:
            return _texts_literal(obj)

    conn.adapters.register_dumper(Texts, TextsDumper)
    version = conn.info.server_version
    if version >= 110000:
        conn.execute("SET jit = off")
    if version >= 120000:
        conn.execute("SET plan_cache_mode = force_custom_plan")
    conn.commit()


def envelope(jsonb: Any, blobs: Any) -> tuple[str, bytes]:
    """A checkpoint row and the (channel, version, type, blob) rows its versions name, as
    `raw_checkpoint` gives them (`PG_TYPE`: the JSONB, the blobs in base64)."""
    packed = [[ch, ver, t, b64(b)] for ch, ver, t, b in blobs]
    return PG_TYPE, orjson.dumps({"checkpoint": jsonb, "blobs": packed})


class Queries:
    """What the parts of `PostgresSource` share: its connection and how a query runs on it."""

    conn: Any
    _psycopg: Any
    label: str
    _url: str
    _secrets: list[str]
    waits: dict[str, float]
    shallow: bool
    """ShallowPostgresSaver's tables: the latest checkpoint only, its id in the JSONB."""
    _task_path: str
    """SQL for a write's task path ('' where the column is missing)."""

    @property
    def psycopg(self) -> Any:
        """The psycopg module this source connected with (its `Error` and `errors`, for a writer
        on the same server: `project/prune_postgres.py`)."""
        return self._psycopg

    def _id(self, alias: str = "") -> str:
        """SQL for a checkpoints row's id (a column, or inside the JSONB for a shallow saver)."""
        prefix = f"{alias}." if alias else ""
        return f"({prefix}checkpoint->>'id')" if self.shallow else f"{prefix}checkpoint_id"

    # -- the connection -------------------------------------------------------------------------
    def _open(self, url: str) -> None:
        """Connect read-only to `url` (a postgresql:// URL, a libpq key=value string, or "": libpq's
        PG* variables) with statectl's bounds."""
        self.label = redact(url) if url else "Postgres (from the PG* environment)"
        self._url, self._secrets = url, secrets_of(url)
        try:
            import psycopg
        except ImportError:
            raise SourceError("Postgres support needs psycopg", install_hint("postgres")) from None
        self._psycopg = psycopg
        # Every wait ends: connecting (10 s), waiting for a lock another session holds (10 s: a
        # migration, VACUUM FULL, LOCK TABLE), one query (60 s); --timeout / STATECTL_TIMEOUT
        # sets them (a query: twice as long)
        given = timeout(0)
        # (a query blocked by a lock is told as such: the lock's limit comes first)
        self.waits = {
            "connect": given or 10,
            "lock": given or 10,
            "statement": max(2 * given, given + 1) if given else 60,
        }
        self.conn = self._connect(writable=False)

    def _connect(self, writable: bool) -> Any:
        """A new connection to the database with statectl's bounds (connect, lock, statement) and
        settings (`settle`): read-only unless `writable`. Its errors are one line without the
        password."""
        psycopg, to = self._psycopg, " to write" if writable else ""
        ms = {k: max(1, int(v * 1000)) for k, v in self.waits.items()}
        bounds = (
            f"-c lock_timeout={ms['lock']} -c statement_timeout={ms['statement']} "
            f"-c idle_in_transaction_session_timeout={ms['statement'] * 10}"
        )
        if not writable:
            bounds = f"-c default_transaction_read_only=on {bounds}"
        try:
            # (an `options` argument replaces the URL's own, as `?options=-csearch_path=...`, and
            # PGOPTIONS: those come first, statectl's bounds after them)
            given = psycopg.conninfo.conninfo_to_dict(self._url).get("options") or os.environ.get("PGOPTIONS")
            conn = psycopg.connect(
                self._url,
                connect_timeout=max(1, round(self.waits["connect"])),
                autocommit=not writable,
                options=f"{given} {bounds}" if given else bounds,
            )
            if not writable:
                conn.read_only = True
            settle(conn)
            return conn
        except psycopg.OperationalError as exc:
            if "timeout expired" in str(exc):
                raise SourceError(
                    f"cannot connect to {self.label}{to}: no answer within {self.waits['connect']:g} s", WAIT_HINT
                ) from None
            raise SourceError(f"cannot connect to {self.label}{to}: {self._clean(exc)}") from None
        except psycopg.Error as exc:
            raise SourceError(f"cannot connect to {self.label}{to}: {self._clean(exc)}") from None
        except ValueError as exc:  # malformed URL
            raise SourceError(f"cannot use {self.label}: {self._clean(exc)}") from None

    # -- plumbing -------------------------------------------------------------------------------
    def _clean(self, exc: BaseException) -> str:
        text = " ".join(str(exc).split())
        if self._url:
            text = text.replace(self._url, self.label)  # libpq quotes a malformed URL whole
        for secret in sorted(self._secrets, key=len, reverse=True):
            text = text.replace(secret, "***")
        return scrub(text) or type(exc).__name__

    def _query(self, sql: str, args: Any = ()) -> list[tuple]:
        try:
            with self.conn.cursor(binary=False) as cur:
                cur.execute(sql, _args(args))
                return cur.fetchall()
        except self._psycopg.Error as exc:
            raise self._failed(exc) from None

    def _failed(self, exc: BaseException) -> SourceError:
        """The one line a failed query ends with (the session rolled back): a lock waited on past
        its limit, a statement past its limit, or the server's error without the password."""
        try:
            self.conn.rollback()
        except self._psycopg.Error:
            pass
        errors = self._psycopg.errors
        if isinstance(exc, errors.LockNotAvailable):
            return SourceError(
                f"{self.label}: the checkpoint tables are locked by another session "
                f"(a migration, VACUUM FULL or LOCK TABLE?); waited "
                f"{self.waits['lock']:g} s",
                WAIT_HINT,
            )
        if isinstance(exc, errors.QueryCanceled):
            return SourceError(
                f"{self.label}: a query ran longer than {self.waits['statement']:g} s and was cancelled", WAIT_HINT
            )
        return SourceError(f"cannot read {self.label}: {self._clean(exc)}")
