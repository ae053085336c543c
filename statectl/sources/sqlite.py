"""SQLite checkpoint files written by `SqliteSaver`, read with statectl's own SQL, read-only."""

from __future__ import annotations

import copy
import heapq
import os
import shutil
import sqlite3
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from statectl.errors import NotFoundError, OnlyMemoryStore, SourceError
from statectl.model import CheckpointRecord, LazyCheckpointRecord, ThreadPage, ThreadSummary, WriteRecord
from statectl.sources.base import Source, by_checkpoint, chunks_after, ids_after, like, metadata_of, page, replay_order
from statectl.sources.status import idle, light_checkpoint, plans_tasks, thread_summary


def _wal_mode(path: Path) -> bool:
    """Does the file's header say WAL (format version 2), as SqliteSaver sets it?"""
    try:
        with path.open("rb") as fh:
            header = fh.read(20)
    except OSError:
        return False
    return header.startswith(b"SQLite format 3\0") and len(header) == 20 and 2 in (header[18], header[19])


def _open(uri: str) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
    conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    return conn


def _locked(path: Path) -> bool | None:
    """Does any process (this one included) hold a lock on the database or its -shm file, i.e.
    has it open? Every connection to a WAL database holds a shared lock on its -shm file while it
    is open. Read from /proc/locks, which opens neither file: closing any descriptor of a file drops
    every POSIX lock this process holds on it, so asking with fcntl would break the locks of a
    writer running in this process. None where there is no /proc/locks (the caller then assumes
    a writer whenever the -shm file exists)."""
    inodes = set()
    for p in (path, Path(f"{path}-shm")):
        try:
            st = p.stat()
        except OSError:
            continue
        inodes.add(f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}".encode())
    try:
        with open("/proc/locks", "rb") as fh:  # (bytes: no codec to import)
            table = fh.read()
    except OSError:
        return None
    for line in table.splitlines():
        parts = line.split()
        # "1: POSIX  ADVISORY  READ 3849 fd:01:1234567 128 128" (blocked waiters: "1: -> POSIX ...")
        if len(parts) >= 6 and any(f in inodes for f in parts[4:7]):
            return True
    return False


def _signature(path: Path) -> tuple:
    """What tells that the database changed since it was opened: size and mtime of the file, its
    -wal and its -journal."""
    out: list[tuple[int, int, int] | None] = []
    name = os.fspath(path)
    for p in (name, name + "-wal", name + "-journal"):  # (before every query: no Path made)
        try:
            st = os.stat(p)
            out.append((st.st_size, st.st_mtime_ns, st.st_ino))
        except OSError:
            out.append(None)
    return tuple(out)


class _Private:
    """A private folder holding the database (and its -wal or hot -journal) under the same names,
    for SQLite to keep its -shm index or roll the journal back there, never beside the user's
    file. Hard links where the folder is on the same file system and nothing will write (a WAL
    read read-only), else copies. Removed on close and at exit."""

    def __init__(self, path: Path, sidecar: str, copy: bool) -> None:
        import tempfile  # (only a WAL file or a hot journal needs the folder: 2 ms of every start)

        self.dir = Path(tempfile.mkdtemp(prefix="statectl-"))
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.dir, True)
        self.path = self.dir / path.name
        for suffix in ("", sidecar):
            src, dst = Path(f"{path}{suffix}"), Path(f"{self.path}{suffix}")
            if suffix and (src.is_symlink() or not src.is_file()):  # (never copy what a link points to)
                shutil.rmtree(self.dir, True)
                raise SourceError(
                    f"{src} is not a regular file (a link, a pipe or a device): not read",
                    "a -wal or -journal file is SQLite's own, beside the database",
                )
            if not copy:
                try:
                    os.link(src, dst)
                    continue
                except OSError:
                    pass
            shutil.copyfile(src, dst)

    def close(self) -> None:
        self._finalizer()


def connect_file(path: Path) -> tuple[sqlite3.Connection, str, _Private | None]:
    """Open read-only: (connection, how, private folder). Never runs a PRAGMA that writes, never
    creates tables (unlike SqliteSaver), never leaves a file beside the database.

    how: `immutable` (no -wal file: every row is in the main file; no locks, no -shm),
    `shared` (a live writer has the WAL open: read through its -wal and -shm, as any reader),
    `private` (a -wal or a hot -journal that no process has open: read from a private folder,
    where SQLite may keep its -shm or roll the journal back), `plain` (a rollback-journal file)."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    wal, journal = Path(f"{path}-wal"), Path(f"{path}-journal")
    shm = Path(f"{path}-shm")
    # A file beside it says a writer may have it open (a WAL's -wal and -shm while it is open, a
    # rollback journal while it writes); with none, it is read as it lies, whoever reads it too,
    # and /proc/locks is not read (its first read costs ~10 ms of wall time on some kernels)
    live = _locked(path) if wal.exists() or shm.exists() or journal.exists() else False
    if live is None:
        live = shm.exists()
    try:
        if live:
            # read as any reader does, through the writer's -wal and -shm (both exist), and
            # without opening the file here first (see _locked)
            return _open(uri), "shared", None
        if wal.exists():
            if wal.stat().st_size == 0 and _wal_mode(path):
                return _open(f"{uri}&immutable=1"), "immutable", None
            private = _Private(path, "-wal", copy=False)
        elif journal.exists() and journal.stat().st_size > 0:
            # a hot journal: an interrupted write whose rollback SQLite does before any read; done
            # on a private copy, the user's file is read as its last commit left it
            private = _Private(path, "-journal", copy=True)
            return _open(f"file:{quote(str(private.path))}"), "private", private
        elif _wal_mode(path):
            # A WAL database that no writer has open (it would have made the -wal file): every
            # row is in the main file. Opened plainly, SQLite would create -wal and -shm beside
            # it; `immutable` reads it without them (and without locks, which nobody holds).
            return _open(f"{uri}&immutable=1"), "immutable", None
        else:
            return _open(uri), "plain", None
    except sqlite3.DatabaseError as exc:
        if "unable to open" in str(exc) and not wal.exists():
            # a read-only folder without a -shm file: the immutable flag skips locking
            try:
                return _open(f"{uri}&immutable=1"), "immutable", None
            except sqlite3.DatabaseError as again:
                exc = again
        raise SourceError(f"cannot read {path} as SQLite: {exc}") from None
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return _open(f"file:{quote(str(private.path))}?mode=ro"), "private", private
    except sqlite3.DatabaseError as exc:
        private.close()
        raise SourceError(f"cannot read {path} as SQLite: {exc}") from None


MAX_OBJECTS = 1000
"""The tables, views and triggers of a file `objects_of` names at most (a hostile file may hold millions)."""


def objects_of(path: Path, columns_of: tuple[str, ...]) -> tuple[list[tuple[str, str]], dict[str, frozenset[str]]]:
    """What a SQLite file holds, read as the sources read (nothing written, no file left beside
    it): its tables, views and triggers as (type, name), SQLite's own `sqlite_*` tables left
    out, at most MAX_OBJECTS; and the columns of the tables named in `columns_of` it has."""
    conn, _how, private = connect_file(path)
    try:
        objects = [
            (kind, name)
            for kind, name in conn.execute(
                "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view', 'trigger') "
                "AND NOT (type = 'table' AND name LIKE 'sqlite\\_%' ESCAPE '\\') ORDER BY name LIMIT ?",
                (MAX_OBJECTS,),
            )
        ]
        tables = {name for kind, name in objects if kind == "table"}
        columns = {
            name: frozenset(str(r[0]) for r in conn.execute("SELECT name FROM pragma_table_info(?)", (name,)))
            for name in columns_of
            if name in tables
        }
    except sqlite3.DatabaseError as exc:
        raise SourceError(f"cannot read {path} as SQLite: {exc}") from None
    finally:
        conn.close()
        if private is not None:
            private.close()
    return objects, columns


CHUNK = 500
"""Threads summarized per round of queries (and held at once while a whole store is listed)."""


class SqliteSource(Source):
    """A `SqliteSaver` database (tables `checkpoints` and `writes`)."""

    kind = "sqlite"
    """What the store is, for the commands that act on one kind only (`Source.kind`)."""
    recorded_graph: Any = None
    has_index = reads_many = reads_row_together = True

    def __init__(self, path: Path) -> None:
        self.label, self.path = str(path), path
        try:
            self.conn, self._how, self._private = connect_file(path)
            self._sig = _signature(path)
            tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as exc:
            raise SourceError(f"cannot read {path} as SQLite: {exc}") from None
        if "checkpoints" not in tables:
            found = ", ".join(sorted(tables)) or "no tables"
            if "store" in tables:  # (SqliteStore's table: a memory store kept in a file of its own)
                self.conn.close()
                raise OnlyMemoryStore(
                    f"{path} holds a LangGraph long-term memory store and no checkpoints",
                    f"statectl store --db {path} reads it",
                )
            raise SourceError(
                f"{path} has no LangGraph checkpoint tables (found: {found})",
                "is this the file your SqliteSaver writes to?",
            )
        ccols = {r[1] for r in self.conn.execute("PRAGMA table_info(checkpoints)")}
        if not ({"thread_id", "checkpoint"} <= ccols and ({"checkpoint_id", "thread_ts"} & ccols)):
            raise SourceError(
                f"{path} has a `checkpoints` table that LangGraph did not write (its "
                f"columns: {', '.join(sorted(ccols)) or 'none'})",
                "is this the file your SqliteSaver writes to?",
            )
        wcols = {r[1] for r in self.conn.execute("PRAGMA table_info(writes)")} if "writes" in tables else set()
        self.has_writes = {"thread_id", "task_id", "idx", "channel", "value"} <= wcols
        # The generations of SqliteSaver's tables (FORMAT.md §8, README "Databases statectl reads"):
        # langgraph 0.0.x / 0.1.x keyed checkpoints by `thread_ts` (no namespaces, no `type`
        # column; 0.1.x added `writes`); 0.2 renamed it `checkpoint_id` and added `checkpoint_ns`
        # and `type`; a later langgraph-checkpoint-sqlite (after 2.0.1) added `task_path` to writes.
        self.era = "thread_ts" if "checkpoint_id" not in ccols else "checkpoint_ns"
        self.col = {
            "cid": "checkpoint_id" if self.era == "checkpoint_ns" else "thread_ts",
            "pid": "parent_checkpoint_id"
            if "parent_checkpoint_id" in ccols
            else "parent_ts"
            if "parent_ts" in ccols
            else "NULL",
            "ns": "checkpoint_ns" if "checkpoint_ns" in ccols else "''",
            "type": "type" if "type" in ccols else "NULL",
            "md": "metadata" if "metadata" in ccols else "NULL",
            "wcid": "checkpoint_id" if "checkpoint_id" in wcols else "thread_ts",
            "wns": "checkpoint_ns" if "checkpoint_ns" in wcols else "''",
            "wtype": "type" if "type" in wcols else "NULL",
            "tp": "task_path" if "task_path" in wcols else "''",
        }
        self._task_path = self.col["tp"]

    @property
    def notes(self) -> list[str]:
        """What this generation of the tables cannot say (printed under human output)."""
        out = []
        if self.era == "thread_ts":
            out.append(
                "written by langgraph 0.0.x/0.1.x (checkpoints keyed by thread_ts, one namespace, "
                "checkpoint format v1); LangGraph 1.x cannot open this file"
            )
        if getattr(self, "_odd_ids", 0):
            out.append(
                f"{self._odd_ids} group(s) of rows have a thread id, namespace or checkpoint "
                "id that is not text (LangGraph writes text): not listed"
            )
        if not self.has_writes:
            out.append(
                "this database has no writes table: what ran and changed comes from each "
                "checkpoint's metadata where it was kept; errors, interrupts and pending "
                "writes were never stored"
            )
        return out

    # -- queries ------------------------------------------------------------------------------
    def _reconnect(self) -> None:
        self.conn.close()
        if self._private is not None:
            self._private.close()
        self._sig = _signature(self.path)
        self.conn, self._how, self._private = connect_file(self.path)

    def _current(self) -> None:
        """A connection that does not share the writer's locks (immutable, or private) reads the
        files as they were when it opened: when they have changed since (a writer opened the
        database, as when the TUI follows a live run, or checkpointed its WAL), open again."""
        if self._how != "shared" and _signature(self.path) != self._sig:
            self._reconnect()

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        sql = sql.format_map(self.col)  # the column names of this generation
        self._current()
        for attempt in range(3):
            try:
                return self.conn.execute(sql, args).fetchall()
            except sqlite3.DatabaseError as exc:
                # pages that changed under a connection that holds no lock read as "malformed":
                # never report corruption that a fresh connection does not confirm
                if self._how == "shared" or attempt == 2 or _signature(self.path) == self._sig:
                    raise SourceError(f"cannot read {self.label}: {exc}") from None
                self._reconnect()
        raise AssertionError("unreachable")

    def default_sort(self) -> str:
        return "recent"

    def threads_where(
        self, where: Any, sort: str | None = None, match: str | None = None, status: frozenset[str] | None = None
    ) -> list[ThreadSummary]:
        """Every thread that may pass `where` (a `status.ThreadFilter`), summarised: the bounds of
        `since`/`until` drop threads by their newest checkpoint id (UUIDv6 ids sort by time)
        before any row is read. A superset: the caller applies `where` exactly."""
        import re

        from statectl.sources.status import UUID6_TIME

        low, high = where.id_bounds()
        uuid6 = re.compile(UUID6_TIME).match

        def keep(cid: str) -> bool:
            return not uuid6(cid) or ((low is None or cid >= low) and (high is None or cid < high))

        return self.threads(None, None, sort, match, status, keep if low or high else None)

    def threads(
        self,
        limit: int | None = None,
        after: str | None = None,
        sort: str | None = None,
        match: str | None = None,
        status: frozenset[str] | None = None,
        keep: Callable[[str], bool] | None = None,
    ) -> ThreadPage:
        # the first page of the newest: its rows picked from the groups, not all of them sorted
        top = limit + 1 if limit and after is None and not status and keep is None and sort != "id" else None
        threads, rows = self._grouped(sort, match, keep, top)
        if status:  # every thread's status is needed to page the ones that have it
            kept = [s for chunk in self._summaries(threads, rows) for s in chunk if s.status in status]
            return page(kept, limit, after, key=lambda s: s.thread_id)
        paged = page(rows, limit, after, key=lambda r: r[1])
        summaries = ThreadPage(s for chunk in self._summaries(threads, paged) for s in chunk)
        summaries.total, summaries.more = paged.total, paged.more
        if top is not None:
            summaries.total = len(threads)
        return summaries

    def stream_threads(
        self,
        sort: str | None = None,
        match: str | None = None,
        status: frozenset[str] | None = None,
        after: str | None = None,
    ) -> Iterator[list[ThreadSummary]]:
        """Every thread's summary (after thread `after`), in chunks as they are read (`threads
        --json`): the newest checkpoints are read a chunk at a time and not kept, so memory does
        not grow with the number of threads beyond one small row each."""
        threads, rows = self._grouped(sort, match, None)
        if after is not None and not status:
            rows = page(rows, None, after, key=lambda r: r[1])
        chunks = ([s for s in chunk if not status or s.status in status] for chunk in self._summaries(threads, rows))
        yield from chunks_after(chunks, after, key=lambda s: s.thread_id) if after is not None and status else chunks

    def _grouped(
        self, sort: str | None, match: str | None, keep: Callable[[str], bool] | None, top: int | None = None
    ) -> tuple[dict[str, list], list[tuple[str, str]]]:
        """One pass over the primary-key index, grouped by (thread, namespace): counts and newest
        ids without reading a row; the threads as (newest id, thread), in the order asked (`top`:
        only the newest so many, newest first)."""
        threads: dict[str, list] = {}  # thread -> [checkpoints, namespaces, cid, ns]
        self._odd_ids = 0
        for t, ns, n, cid in self._groups(match):
            if not isinstance(t, str) or not isinstance(ns, str) or not isinstance(cid, str):
                self._odd_ids += 1  # a BLOB or number where LangGraph writes text: not its row
                continue
            row = threads.get(t)
            if row is None:
                threads[t] = [n, 1, cid, ns]
                continue
            row[0] += n
            row[1] += 1
            if ns == "" or (row[3] != "" and cid > row[2]):  # the root's newest, else the newest
                row[2:] = [cid, ns]
        if top is not None:
            return threads, heapq.nlargest(top, ((r[2], t) for t, r in threads.items()))
        rows = sorted(((r[2], t) for t, r in threads.items() if keep is None or keep(r[2])), reverse=True)
        if sort == "id":
            rows.sort(key=lambda r: r[1])
        return threads, rows

    GROUPS_PART = 10_000
    """(thread, namespace) groups `_groups` reads as one row off the main thread."""

    def _groups(self, match: str | None) -> Iterator[tuple[Any, Any, int, Any]]:
        """(thread, namespace, checkpoints, newest id) of every group of the primary-key index,
        off the main thread read GROUPS_PART to a row as JSON (a row whose thread, namespace or id
        is not text: None in each place). Row by row, the thread reading them takes Python's lock
        back at each row, and beside another busy thread (the TUI's: it reads the first page while
        Textual starts, and the next pages beside the screen) it waited for it every time: 100,000
        groups, 0.75 s alone, took 744 s beside a thread busy in Python, and 0.83 s as JSON. On
        the main thread (the CLI) no other thread runs, and row by row is faster (100,000 groups:
        `threads` 0.96 s, 1.25 s as JSON). Where the JSON does not parse, row by row."""
        import threading

        args: tuple[str, ...]
        where, args = ("WHERE thread_id LIKE ? ESCAPE ?", (like(match), "\\")) if match else ("", ())
        if match and len(match.encode()) > 40_000:  # (past SQLite's LIKE pattern limit, 50,000 bytes)
            where, args = "WHERE instr(lower(thread_id), lower(?)) > 0", (match,)
        grouped = (
            "SELECT thread_id AS t, {ns} AS ns, COUNT(*) AS n, MAX({cid}) AS c "
            f"FROM checkpoints {where} GROUP BY thread_id, {{ns}}"
        )
        if threading.current_thread() is threading.main_thread():
            yield from self._query(grouped, args)
            return
        text = "typeof(t) = 'text' AND typeof(ns) = 'text' AND typeof(c) = 'text'"
        parts = self._query(
            f"SELECT json_group_array(CASE WHEN {text} THEN json_array(t, ns, n, c) "
            "ELSE json_array(NULL, NULL, n, NULL) END) "
            f"FROM (SELECT *, (row_number() OVER ()) / {self.GROUPS_PART} AS part FROM ({grouped})) GROUP BY part",
            args,
        )
        try:
            every = [orjson.loads(part) for (part,) in parts]
        except orjson.JSONDecodeError:
            yield from self._query(grouped, args)
            return
        for groups in every:
            yield from groups

    def _summaries(self, threads: dict[str, list], rows: list[tuple[str, str]]) -> Iterator[list[ThreadSummary]]:
        """The summaries of `rows`, a chunk at a time: the newest checkpoint's metadata and pending
        writes (reading `metadata` walks past the checkpoint blob stored before it), and the blob
        itself only for a thread no task wrote to (is it done, or stopped before its tasks?)."""
        for i in range(0, len(rows), CHUNK):
            chunk = rows[i : i + CHUNK]
            latest = self._latest([(t, threads[t][3], cid) for cid, t in chunk])
            idle_keys = []
            parsed: dict[str, tuple[dict, list]] = {}
            for cid, t in chunk:
                md, w = latest.get(t, (None, None))
                w = [tuple(x.split("\x1f", 1)) for x in w.split("\x1e")] if w else []
                parsed[t] = (metadata_of(md), w)
                if idle(parsed[t][0], w):
                    idle_keys.append((t, threads[t][3], cid))
            # no writes: done, unless the checkpoint plans tasks (a run stopped at a breakpoint)
            due = {t: plans_tasks(light_checkpoint(type_, blob)) for t, type_, blob in self._blobs(idle_keys)}
            out = []
            for cid, t in chunk:
                n, n_ns, _cid, _ns = threads[t]
                md, w = parsed[t]
                out.append(thread_summary(t, n, n_ns, cid, md, w, due.get(t)))
            yield out

    def _latest(self, keys: list[tuple[str, str, str]]) -> dict[str, tuple]:
        """thread -> (metadata, pending writes as 'task_id US channel' joined by RS) of the given
        (thread, namespace, checkpoint) rows, a few hundred per query (SQLite's variable limit)."""
        writes = (
            "(SELECT group_concat(task_id || char(31) || channel, char(30)) FROM writes w WHERE "
            "w.thread_id = p.t AND {wns} = p.ns AND {wcid} = p.cid)"
            if self.has_writes
            else "NULL"
        )
        return {
            t: (md, w)
            for t, md, w in self._joined(
                keys,
                "t, ns, cid",
                f"SELECT p.t, {{md}}, {writes} FROM p JOIN checkpoints c "
                "ON c.thread_id = p.t AND {ns} = p.ns AND {cid} = p.cid",
            )
        }

    def _blobs(self, keys: list[tuple[str, str, str]]) -> list[tuple]:
        """(thread, type, checkpoint blob) of the given rows."""
        if not keys:
            return []
        return self._joined(
            keys,
            "t, ns, cid",
            "SELECT p.t, {type}, checkpoint FROM p JOIN checkpoints c "
            "ON c.thread_id = p.t AND {ns} = p.ns AND {cid} = p.cid",
        )

    def _joined(self, keys: list[tuple], columns: str, sql: str, args: tuple = ()) -> list[tuple]:
        """The rows of `sql`, which reads the keys as the table `p(columns)`, a few hundred keys per
        query (SQLite's variable limit); `args` follow the keys' values."""
        row = f"({', '.join('?' * (columns.count(',') + 1))})"
        out: list[tuple] = []
        for i in range(0, len(keys), 300):
            chunk = keys[i : i + 300]
            out += self._query(
                f"WITH p({columns}) AS (VALUES {', '.join([row] * len(chunk))}) {sql}",
                (*(x for k in chunk for x in k), *args),
            )
        return out

    def checkpoints(self, thread_id: str, checkpoint_ns: str | None = "") -> list[CheckpointRecord]:
        if checkpoint_ns is None:
            rows = self._query(
                "SELECT {ns}, {cid}, {pid}, {md} FROM checkpoints WHERE thread_id = ? ORDER BY {cid} DESC", (thread_id,)
            )
        else:  # ids and parents only: each row's metadata is read when asked for (`_MetadataPages`)
            rows = self._query(
                "SELECT {cid}, {pid} FROM checkpoints WHERE thread_id = ? AND {ns} = ? ORDER BY {cid} DESC",
                (thread_id, checkpoint_ns),
            )
            pages = _MetadataPages(self, thread_id, checkpoint_ns)
            pages.records = [LazyCheckpointRecord.later(thread_id, checkpoint_ns, c, p, pages) for c, p in rows]
            return list[CheckpointRecord](pages.records)
        return [CheckpointRecord(thread_id, ns, cid, parent, metadata_of(md)) for ns, cid, parent, md in rows]

    def thread_ids(self, prefix: str, limit: int) -> list[str]:
        """Thread ids starting with `prefix`, in order (shell completion: the primary-key index
        alone, no row read)."""
        rows = self._query(
            "SELECT DISTINCT thread_id FROM checkpoints WHERE thread_id >= ? ORDER BY thread_id LIMIT ?",
            (prefix, limit),
        )
        return [t for (t,) in rows if isinstance(t, str) and t.startswith(prefix)]

    def thread_ids_after(self, after: str | None, limit: int) -> list[str]:
        """A page of thread ids in the index's order (`base.ids_after`)."""
        return ids_after(self._query, "?", after, limit, "typeof(thread_id) = 'text'")

    def count_threads(self) -> int:
        return self._query(
            "SELECT COUNT(*) FROM (SELECT 1 FROM checkpoints WHERE typeof(thread_id) = 'text' GROUP BY thread_id)"
        )[0][0]

    def first_checkpoints(self, thread_ids: list[str], checkpoint_ns: str = "") -> dict[str, CheckpointRecord]:
        """The oldest checkpoint of a namespace in each thread (one indexed row each, a few hundred
        threads per query; not their histories)."""
        rows = self._joined(
            [(t,) for t in thread_ids],
            "t",
            "SELECT p.t, {cid}, {pid}, {md} FROM p JOIN checkpoints c ON c.thread_id = p.t "
            "AND {ns} = ? AND {cid} = (SELECT MIN({cid}) FROM checkpoints f WHERE "
            "f.thread_id = p.t AND {ns} = ?)",
            (checkpoint_ns, checkpoint_ns),
        )
        return {t: CheckpointRecord(t, checkpoint_ns, cid, parent, metadata_of(md)) for t, cid, parent, md in rows}

    def drop_bytes(self, thread_id: str, drop: list[tuple[str, str]]) -> int:
        """`prune`'s plan: the bytes of these checkpoints' blobs and their writes' values, by SQL
        `length()` a few hundred checkpoints a query (no blob is read into Python)."""
        keys = [(thread_id, ns, cid) for ns, cid in drop]
        if not keys:
            return 0
        rows = self._joined(
            keys,
            "t, ns, cid",
            "SELECT coalesce(SUM(length(checkpoint)), 0) FROM p JOIN checkpoints c "
            "ON c.thread_id = p.t AND {ns} = p.ns AND {cid} = p.cid",
        )
        if self.has_writes:
            rows += self._joined(
                keys,
                "t, ns, cid",
                "SELECT coalesce(SUM(length(value)), 0) FROM p JOIN writes w "
                "ON w.thread_id = p.t AND {wns} = p.ns AND {wcid} = p.cid",
            )
        return sum(int(n or 0) for (n,) in rows)

    def namespace_names(self, thread_id: str) -> set[str]:
        """The thread's namespaces, from the primary-key index alone (no row is read)."""
        return {ns for (ns,) in self._query("SELECT DISTINCT {ns} FROM checkpoints WHERE thread_id = ?", (thread_id,))}

    def writes_of(self, keys: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], list[WriteRecord]]:
        """`writes` of several (thread, namespace, checkpoint) at once, a few hundred per query."""
        out: dict[tuple[str, str, str], list[WriteRecord]] = {k: [] for k in keys}
        if not self.has_writes:
            return out
        for t, ns, cid, task, path, idx, chan, type_, blob in self._joined(
            keys,
            "t, ns, cid",
            "SELECT p.t, p.ns, p.cid, task_id, {tp}, idx, channel, {wtype}, value "
            "FROM p JOIN writes w ON w.thread_id = p.t AND {wns} = p.ns AND {wcid} = p.cid",
        ):
            out[(t, ns, cid)].append(WriteRecord(task, path or "", idx, chan, type_, blob, checkpoint_id=cid))
        return {k: replay_order(v) for k, v in out.items()}

    def raw_checkpoint(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> tuple[str | None, bytes | None]:
        rows = self._query(
            "SELECT {type}, checkpoint FROM checkpoints WHERE thread_id = ? AND {ns} = ? AND {cid} = ?",
            (thread_id, checkpoint_ns, checkpoint_id),
        )
        if not rows:
            raise NotFoundError(f"no checkpoint {checkpoint_id} in thread {thread_id!r}")
        return rows[0]

    def raw_row(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> tuple[str | None, bytes | None, dict]:
        """`raw_checkpoint` and the row's metadata, read together (`export`): the metadata sits
        after the blob, so reading it apart walks the blob's pages a second time (issue 54: a
        long thread's export read its file twice, 3x slower)."""
        rows = self._query(
            "SELECT {type}, checkpoint, {md} FROM checkpoints WHERE thread_id = ? AND {ns} = ? AND {cid} = ?",
            (thread_id, checkpoint_ns, checkpoint_id),
        )
        if not rows:
            raise NotFoundError(f"no checkpoint {checkpoint_id} in thread {thread_id!r}")
        type_, blob, md = rows[0]
        return type_, blob, metadata_of(md)

    def checkpoint(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, channels: frozenset[str] | None = None
    ) -> dict:  # one blob: decoded whole
        from statectl.codec.formats import checked_checkpoint  # `threads` and `log` decode no blob

        return checked_checkpoint(
            thread_id, checkpoint_id, *self.raw_checkpoint(thread_id, checkpoint_ns, checkpoint_id)
        )

    def task_paths(self, thread_id: str, checkpoint_ns: str) -> list[str]:
        if not self.has_writes or self._task_path == "''":
            return []
        return [
            r[0]
            for r in self._query(
                "SELECT task_path FROM writes WHERE thread_id = ? AND {wns} = ? ORDER BY {wcid}, task_path",
                (thread_id, checkpoint_ns),
            )
        ]

    def _writes(self, where: str, args: tuple) -> list[WriteRecord]:
        if not self.has_writes:
            return []
        rows = self._query(
            f"SELECT {{wcid}}, task_id, {{tp}}, idx, channel, {{wtype}}, value FROM writes WHERE {where}", args
        )
        return [
            WriteRecord(task, path or "", idx, chan, type_, blob, checkpoint_id=cid)
            for cid, task, path, idx, chan, type_, blob in rows
        ]

    def writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> list[WriteRecord]:
        rows = self._writes("thread_id = ? AND {wns} = ? AND {wcid} = ?", (thread_id, checkpoint_ns, checkpoint_id))
        return replay_order(rows)

    def channel_writes(self, thread_id: str, checkpoint_ns: str, channel: str) -> dict[str, list[WriteRecord]]:
        return by_checkpoint(
            self._writes("thread_id = ? AND {wns} = ? AND channel = ?", (thread_id, checkpoint_ns, channel))
        )

    def storage(self, limit: int | None = 20) -> Any:
        """`statectl size`: the file's parts (SQLite's `dbstat` where compiled in, else the rows'
        bytes), its free pages, and the largest threads by the bytes of their rows."""
        from statectl.sizes import Part, StoreSize, ThreadSize

        page = self._query("PRAGMA page_size")[0][0]
        free = self._query("PRAGMA freelist_count")[0][0] * page
        notes: list[str] = []
        try:
            parts = [
                Part(name, n)
                for name, n in self._query("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC")
            ]
        except SourceError:  # (no dbstat in this SQLite build: the rows' own bytes)
            parts = [
                Part(
                    "checkpoints",
                    self._query(
                        "SELECT coalesce(SUM(length(checkpoint) + coalesce(length({md}), 0)), 0) FROM checkpoints"
                    )[0][0],
                )
            ]
            if self.has_writes:
                parts.append(Part("writes", self._query("SELECT coalesce(SUM(length(value)), 0) FROM writes")[0][0]))
            notes.append("this SQLite has no dbstat: the tables' row bytes, without page overhead or indexes")
        parts.append(Part("free pages", free, "what VACUUM gives back"))
        files = [Path(f"{self.path}{s}") for s in ("", "-wal")]
        total = sum(p.stat().st_size for p in files if p.exists())
        # the largest `limit` threads and how many there are, in one query (not a row a thread)
        writes = (
            "LEFT JOIN (SELECT thread_id AS t, SUM(length(value)) AS b FROM writes GROUP BY thread_id) w ON w.t = c.t"
            if self.has_writes
            else "LEFT JOIN (SELECT NULL AS t, NULL AS b) w ON 0"
        )
        rows = self._query(
            "SELECT c.t, c.n, c.ns, coalesce(c.b, 0) + coalesce(w.b, 0) AS bytes, count(*) OVER () FROM "
            "(SELECT thread_id AS t, COUNT(*) AS n, COUNT(DISTINCT {ns}) AS ns, "
            "SUM(length(checkpoint) + coalesce(length({md}), 0)) AS b FROM checkpoints "
            f"WHERE typeof(thread_id) = 'text' GROUP BY thread_id) c {writes} ORDER BY bytes DESC, c.t"
            + (" LIMIT ?" if limit else ""),
            (limit,) if limit else (),
        )
        shown = [ThreadSize(t, n, n_ns, b) for t, n, n_ns, b, _ in rows]
        count = rows[0][4] if rows else 0
        for t in shown:  # growth: the oldest and the newest root checkpoint's size
            ends = self._query(
                "SELECT length(checkpoint) FROM checkpoints WHERE thread_id = ? AND {ns} = '' "
                "AND {cid} IN ((SELECT MIN({cid}) FROM checkpoints WHERE thread_id = ? AND {ns} = ''), "
                "(SELECT MAX({cid}) FROM checkpoints WHERE thread_id = ? AND {ns} = '')) ORDER BY {cid}",
                (t.thread_id, t.thread_id, t.thread_id),
            )
            if ends:
                t.first, t.last = ends[0][0], ends[-1][0]
        return StoreSize(self.label, total, parts, shown, count, notes)

    def locate(self, checkpoint_id: str) -> list[tuple[str, str]]:
        return [
            tuple(r) for r in self._query("SELECT thread_id, {ns} FROM checkpoints WHERE {cid} = ?", (checkpoint_id,))
        ]

    def raw_checkpoints(self, thread_id: str) -> dict[tuple[str, str], tuple[str | None, bytes | None]]:
        """Every checkpoint of a thread as `raw_checkpoint` gives it, in one query (`doctor`), up to
        `RAW_BYTES` of them: the rest are left out, for the caller to read one at a time."""
        from statectl.sources.base import RAW_BYTES

        sql = "SELECT {ns}, {cid}, {type}, checkpoint FROM checkpoints WHERE thread_id = ?".format_map(self.col)
        self._current()
        out: dict[tuple[str, str], tuple[str | None, bytes | None]] = {}
        held = 0
        try:
            for ns, cid, type_, blob in self.conn.execute(sql, (thread_id,)):  # (a row at a time, not all)
                out[(ns, cid)] = (type_, blob)
                held += len(blob or b"")
                if held > RAW_BYTES:
                    break
        except sqlite3.DatabaseError:
            return {}  # (each row is then read by `raw_checkpoint`, which says what is wrong)
        return out

    def orphans(self, limit: int = 1000) -> dict[str, list[tuple]]:
        """`doctor`: writes whose checkpoint is not in the table, per checkpoint they point to:
        (thread, namespace, checkpoint, rows, bytes, task ids)."""
        if not self.has_writes:
            return {}

        def col(alias: str, name: str) -> str:
            return name if name.startswith("'") else f"{alias}.{name}"

        wns = col("w", self.col["wns"])
        same_ns = f"{col('c', self.col['ns'])} = {wns}"
        same_id = f"c.{self.col['cid']} = w.{self.col['wcid']}"
        rows = self._query(
            f"SELECT w.thread_id, {wns}, w.{self.col['wcid']}, COUNT(*), COALESCE(SUM(LENGTH(w.value)), 0), "
            "json_group_array(DISTINCT CAST(w.task_id AS TEXT)) FROM writes w WHERE NOT EXISTS "
            f"(SELECT 1 FROM checkpoints c WHERE c.thread_id = w.thread_id AND {same_ns} AND {same_id}) "
            "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 LIMIT ?",
            (limit,),
        )
        return {
            "writes": [
                (t, ns, cid, n, size, sorted(str(task) for task in orjson.loads(tasks or "[]")))
                for t, ns, cid, n, size, tasks in rows
                if isinstance(t, str)
            ]
        }

    def over(self, conn: sqlite3.Connection) -> SqliteSource:
        """This source reading through `conn` instead (`prune --apply`: the plan made again inside
        its write transaction, on what that transaction sees). Do not close it: `conn` is the
        caller's."""
        clone = copy.copy(self)
        clone.conn, clone._how, clone._private = conn, "shared", None
        return clone

    def close(self) -> None:
        self.conn.close()
        if self._private is not None:
            self._private.close()

    def abandon(self) -> None:
        if self._private is not None:  # (the open connection keeps its files until the exit)
            self._private.close()


class _MetadataPages:
    """Reads the metadata of a thread's lazily listed checkpoints (`LazyCheckpointRecord`) a page
    of neighbours at a time, by a range of the primary key: a walk over the thread (`log`, the
    TUI) reads each row once, one step (`show`, `diff`) reads a page, not the thread."""

    PAGE = 256
    """At most this many rows a query; the first reads 4, each next one twice the last (a long
    thread's newest rows hold its largest blobs, whose pages the read passes over)."""

    def __init__(self, source: SqliteSource, thread_id: str, checkpoint_ns: str) -> None:
        self.source, self.thread_id, self.checkpoint_ns = source, thread_id, checkpoint_ns
        self.page = 2
        self.records: list[LazyCheckpointRecord] = []
        self._at: dict[str, int] | None = None

    def load(self, rec: LazyCheckpointRecord) -> None:
        records = self.records
        if self._at is None:
            self._at = {r.checkpoint_id: i for i, r in enumerate(records)}
        i = self._at.get(rec.checkpoint_id)
        if i is None:  # (not of this listing: read alone)
            records, i = [rec], 0
        self.page = size = min(self.PAGE, self.page * 2)
        end = i + 1
        while end < len(records) and end - i < size and not records[end].loaded:
            end += 1
        start = i
        while start > 0 and end - start < size and not records[start - 1].loaded:
            start -= 1
        rows = self.source._query(
            "SELECT {cid}, {md} FROM checkpoints WHERE thread_id = ? AND {ns} = ? AND {cid} BETWEEN ? AND ?",
            (self.thread_id, self.checkpoint_ns, records[end - 1].checkpoint_id, records[start].checkpoint_id),
        )
        found = dict(rows)
        for r in records[start:end]:
            if r.loaded:
                continue
            if r.checkpoint_id not in found:  # (an id the range missed, as one not stored as text: asked by itself)
                found.update(
                    self.source._query(
                        "SELECT {cid}, {md} FROM checkpoints WHERE thread_id = ? AND {ns} = ? AND {cid} = ?",
                        (self.thread_id, self.checkpoint_ns, r.checkpoint_id),
                    )
                )
            # (a row gone since the listing, as under a running prune: no metadata)
            object.__setattr__(r, "metadata", metadata_of(found[r.checkpoint_id]) if r.checkpoint_id in found else {})
