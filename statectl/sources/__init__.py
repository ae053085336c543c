"""Checkpoint sources: one module per backend behind the small `Source` protocol."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol, TypeVar

import orjson

from statectl.errors import NotFoundError, SourceError
from statectl.model import CheckpointRecord, ThreadPage, ThreadSummary, WriteRecord

T = TypeVar("T")
API_KEY: str | None = None
TIMEOUT: float | None = None
"""`--timeout SECONDS` (else $STATECTL_TIMEOUT): how long a source may make a command wait."""


def timeout(default: float, env: str = "STATECTL_TIMEOUT") -> float:
    """`--timeout`, else the variable `env`, else `default` (seconds)."""
    if TIMEOUT is not None:
        return TIMEOUT
    raw = os.environ.get(env)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SourceError(f"{env} is not a number of seconds: {raw!r}") from None
    if value <= 0:
        raise SourceError(f"{env} must be more than 0 seconds")
    return value
"""`--api-key` of this command, for an http(s):// server (never printed)."""
DEFAULT_DB_NAMES = ("checkpoints.sqlite", "checkpoints.db", "checkpoints.sqlite3", "langgraph.db")
"""Looked for in the current folder when neither --db nor STATECTL_DB is given."""


class Source(Protocol):
    """Read-only access to one checkpoint store. Every method returns fresh data.

    Optional: `empty_channels(thread_id) -> {key: empty value}`, state keys the store proves are
    reducer channels read as their type's empty value before any write (a `langgraph dev`
    folder's server record; an export of one)."""

    label: str
    """What was opened, for messages (never contains a password)."""

    def threads(self, limit: int | None = None, after: str | None = None,
                sort: str | None = None, match: str | None = None,
                status: frozenset[str] | None = None) -> ThreadPage:
        """Threads from SQL and metadata alone: at most `limit`, starting after thread `after`
        (keyset pagination), ordered `recent` (newest checkpoint first) or by `id`; None: the
        source's default (`default_sort()`). `match`: only ids containing it, ignoring case;
        `status`: only threads with one of these statuses (`after` is then one of them too)."""

    def default_sort(self) -> str:
        """`recent` where ordering by recency is cheap, `id` where it needs a full scan."""

    def checkpoints(self, thread_id: str, checkpoint_ns: str | None = "") -> list[CheckpointRecord]:
        """Checkpoint rows of a thread (one namespace, or all with None), newest id first; none
        for a thread the store does not hold (a server that rejects the id: NotFoundError)."""

    def raw_checkpoint(self, thread_id: str, checkpoint_ns: str,
                       checkpoint_id: str) -> tuple[str | None, bytes | None]:
        """The stored `(type, blob)` of a checkpoint, undecoded."""

    def checkpoint(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str,
                   channels: frozenset[str] | None = None) -> dict:
        """The decoded Checkpoint dict (`v`, `id`, `ts`, `channel_values`, ...).

        `channels`: the state channels the caller will read (internal channels are always
        wanted); a source that stores channels apart (Postgres) fetches only those, others may
        return more."""

    def writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> list[WriteRecord]:
        """Writes pending on a checkpoint, in LangGraph's `(task_path, task_id, idx)` order."""

    def channel_writes(self, thread_id: str, checkpoint_ns: str,
                       channel: str) -> dict[str, list[WriteRecord]]:
        """Writes to one channel in a namespace, by checkpoint id, each list in replay order (what
        a delta channel is replayed from; none from a server, whose snapshots come whole)."""

    def task_paths(self, thread_id: str, checkpoint_ns: str) -> list[str]:
        """The task path of every write in a namespace, oldest checkpoint first and in task path
        order within one (no values read); empty where writes carry no task path."""

    def locate(self, checkpoint_id: str) -> list[tuple[str, str]]:
        """(thread_id, checkpoint_ns) of every checkpoint with this id (for error messages)."""

    def close(self) -> None: ...


def replay_order(writes: Iterable[WriteRecord]) -> list[WriteRecord]:
    """Writes in the order LangGraph applies them (`WriteRecord.sort_key`)."""
    return sorted(writes, key=lambda w: w.sort_key)


def by_checkpoint(writes: Iterable[WriteRecord]) -> dict[str, list[WriteRecord]]:
    """`channel_writes`' answer: writes grouped by checkpoint id, each group in replay order."""
    out: dict[str, list[WriteRecord]] = {}
    for w in writes:
        out.setdefault(w.checkpoint_id or "", []).append(w)
    return {k: replay_order(v) for k, v in out.items()}


def metadata_of(raw: bytes | str | None) -> dict:
    """A checkpoint's metadata column (SQLite's JSON text or bytes, Postgres' JSONB as text) as
    a dict: what is not JSON says so (`$undecoded`), a pickle (langgraph 0.0.x) is read inertly
    when asked, JSON that is not an object is kept under `$value`."""
    if raw is None:
        return {}
    data = raw if isinstance(raw, bytes) else str(raw).encode()
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        from statectl.decode import Options, decode_typed, sniff

        if not data or sniff(data) != "pickle":
            return {"$undecoded": "metadata is not JSON"}
        if not Options.unpickle:  # langgraph 0.0.x with serde=pickle pickled the metadata too
            return {"$undecoded": "metadata is a pickle (--unpickle-inert reads it)"}
        value = decode_typed("pickle", data)
    if isinstance(value, dict) and b'"lc"' in data:
        # langgraph before 0.6 kept what nodes returned (`writes`), messages as LangChain's `lc: 1`
        # constructor dicts: read as the messages they are, like the checkpoints' JSON rows
        from statectl.decode import decode_typed

        value = decode_typed("json", data)
    return value if isinstance(value, dict) else {"$value": value}


def like(text: str) -> str:
    """A LIKE pattern for ids containing `text` (its `%`, `_` and `\\` escaped with `\\`)."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def page_summaries(out: list[ThreadSummary], recent: Callable[[ThreadSummary], str], limit: int | None,
                   after: str | None, sort: str | None, status: frozenset[str] | None) -> ThreadPage:
    """Threads read whole into memory (export files, langgraph dev folders): ordered newest first
    by `recent` (ties by id) or by id, filtered by status, then paged."""
    out = sorted(out, key=lambda s: (recent(s), s.thread_id), reverse=True)
    if sort == "id":
        out.sort(key=lambda s: s.thread_id)
    if status:
        out = [s for s in out if s.status in status]
    return page(out, limit, after, key=lambda s: s.thread_id)


def page(rows: list[T], limit: int | None, after: str | None, key: Callable[[T], str]) -> ThreadPage:
    """The rows after the one whose key is `after`, at most `limit` of them (None or 0: all)."""
    total = len(rows)
    if after is not None:
        keys = [key(r) for r in rows]
        if after not in keys:
            raise NotFoundError(f"no thread {after!r} to page after", "pass a thread id from the last page")
        rows = rows[keys.index(after) + 1:]
    out = ThreadPage(rows[:limit] if limit else rows)
    out.total, out.more = total, len(out) < len(rows)
    return out


def page_lazily(rows: Iterable[T], limit: int | None, after: str | None, key: Callable[[T], str]) -> ThreadPage:
    """`page` over rows read only as far as the page needs: `total` is None unless all were read."""
    it, seen = iter(rows), 0
    if after is not None:
        for seen, r in enumerate(it, 1):  # noqa: B007 (counted for `total`)
            if key(r) == after:
                break
        else:
            raise NotFoundError(f"no thread {after!r} to page after", "pass a thread id from the last page")
    out = ThreadPage()
    for r in it:
        if limit and len(out) == limit:
            out.more = True
            return out
        out.append(r)
    out.total = seen + len(out)
    return out


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
    raise SourceError("no database given",
                      f"pass --db PATH or URL, or set STATECTL_DB; looked for {', '.join(DEFAULT_DB_NAMES)} "
                      "and .langgraph_api in the current folder")


def open_source(db: str | None, api_key: str | None = None) -> Source:
    """Open a checkpoint database read-only: a SQLite file, a statectl export file, a
    PostgresSaver database (`postgresql://` URL; libpq's PG* variables and .pgpass apply), or a
    `langgraph dev` folder (`.langgraph_api`, the app folder holding it, or one of its files), or a
    LangGraph server (`http(s)://` URL; `api_key`, else $LANGGRAPH_API_KEY / $LANGSMITH_API_KEY)."""
    from statectl.secrets import is_conninfo, redact, remember, secrets_of

    spec = resolve_db(db)
    remember(*secrets_of(spec), api_key or API_KEY)
    if spec.startswith(("http://", "https://")):
        from statectl.sources.server import ServerSource

        return ServerSource(spec, api_key or API_KEY)
    if spec.startswith(("postgres://", "postgresql://")) or is_conninfo(spec) or spec == PG_ENV:
        from statectl.sources.postgres import PostgresSource

        return PostgresSource("" if spec == PG_ENV else spec)
    path = Path(spec).expanduser()
    if not path.exists():
        raise SourceError(f"no such file: {redact(spec)}", "check the path given with --db or STATECTL_DB")
    if path.is_dir() or path.name.endswith(".pckl"):
        from statectl.sources.langgraph_api import LanggraphApiSource, find_folder

        if folder := find_folder(path):
            return LanggraphApiSource(folder)
    if path.is_dir():
        raise SourceError(f"{spec} is a folder, not a database file",
                          "point --db at the SQLite file the checkpointer writes, or at a "
                          "langgraph dev app folder (the one holding .langgraph_api)")
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
