"""`PostgresSource`: the connection, read-only, and one thread's rows."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from statectl.codec.formats.postgres import assemble
from statectl.errors import DecodeError, NotFoundError, OnlyMemoryStore, SourceError
from statectl.model import CheckpointRecord, WriteRecord, wanted
from statectl.sources.base import Source, by_checkpoint, ids_after, metadata_of, replay_order
from statectl.sources.postgres.listing import Listing
from statectl.sources.postgres.session import envelope
from statectl.sources.postgres.upkeep import Upkeep

MIN_SCHEMA = 3  # checkpoint_writes exists from migration 3


class PostgresSource(Listing, Upkeep, Source):
    """A PostgresSaver database opened with psycopg 3, read-only."""

    kind = "postgres"
    """What the store is, for the commands that act on one kind only (`Source.kind`)."""
    notes: tuple[str, ...] = ()
    recorded_graph: Any = None
    has_index = reads_many = batches_threads = True

    def __init__(self, url: str) -> None:
        """`url`: a postgresql:// URL, a libpq key=value string, or "" (libpq's PG* variables)."""
        self._open(url)
        tables = self._query(
            "SELECT to_regclass('checkpoints') IS NOT NULL, "
            "to_regclass('checkpoint_blobs') IS NOT NULL, "
            "to_regclass('checkpoint_writes') IS NOT NULL, "
            "to_regclass('checkpoint_migrations') IS NOT NULL, "
            "to_regclass('store') IS NOT NULL"
        )[0]
        if not tables[0] or not tables[1]:
            if tables[4]:  # (PostgresStore's table: a memory store in a database of its own)
                self.close()
                raise OnlyMemoryStore(
                    f"{self.label} holds a LangGraph long-term memory store and no checkpoints",
                    "statectl store reads it (with the same --db)",
                )
            raise SourceError(
                f"{self.label} has no LangGraph checkpoint tables",
                "is this the database PostgresSaver writes to (after setup())?",
            )
        version = self._query("SELECT max(v) FROM checkpoint_migrations")[0][0] if tables[3] else None
        if version is None or version < MIN_SCHEMA or not tables[2]:
            raise SourceError(
                f"{self.label} has checkpoint schema version {version}, older than "
                f"statectl reads ({MIN_SCHEMA} or newer)",
                "run the application once with a current langgraph-checkpoint-postgres",
            )
        self.schema_version = version
        columns = {
            (t, c)
            for t, c in self._query(
                "SELECT attrelid::regclass::text, attname FROM pg_attribute WHERE attrelid IN "
                "('checkpoints'::regclass, 'checkpoint_writes'::regclass) AND attnum > 0 AND NOT attisdropped"
            )
        }
        self._task_path = "task_path" if ("checkpoint_writes", "task_path") in columns else "''"
        self.shallow = ("checkpoints", "checkpoint_id") not in columns
        """ShallowPostgresSaver's tables: the latest checkpoint only, its id in the JSONB."""

    def checkpoints(self, thread_id: str, checkpoint_ns: str | None = "") -> list[CheckpointRecord]:
        parent = "NULL" if self.shallow else "parent_checkpoint_id"
        sql = f"SELECT checkpoint_ns, {self._id()}, {parent}, metadata::text FROM checkpoints WHERE thread_id = %s"
        args: tuple = (thread_id,)
        if checkpoint_ns is not None:
            sql, args = sql + " AND checkpoint_ns = %s", (thread_id, checkpoint_ns)
        rows = self._query(sql + f" ORDER BY {self._id()} DESC", args)
        return [CheckpointRecord(thread_id, ns, cid, parent, metadata_of(md)) for ns, cid, parent, md in rows]

    def checkpoints_of(self, thread_ids: list[str]) -> dict[str, list[CheckpointRecord]]:
        """`checkpoints(t, None)` of many threads in one query (`prune` plans a batch at a time)."""
        parent = "NULL" if self.shallow else "parent_checkpoint_id"
        out: dict[str, list[CheckpointRecord]] = {t: [] for t in thread_ids}
        for t, ns, cid, pid, md in self._query(
            f"SELECT thread_id, checkpoint_ns, {self._id()}, {parent}, metadata::text FROM checkpoints "
            f"WHERE thread_id = ANY(%s) ORDER BY thread_id, {self._id()} DESC",
            (thread_ids,),
        ):
            out[t].append(CheckpointRecord(t, ns, cid, pid, metadata_of(md)))
        return out

    def thread_ids(self, prefix: str, limit: int) -> list[str]:
        """Thread ids starting with `prefix`, in order (shell completion: the primary key's index)."""
        rows = self._query(
            "SELECT DISTINCT thread_id FROM checkpoints WHERE thread_id >= %s ORDER BY thread_id LIMIT %s",
            (prefix, limit),
        )
        return [t for (t,) in rows if t.startswith(prefix)]

    def thread_ids_after(self, after: str | None, limit: int) -> list[str]:
        """A page of thread ids in the index's order (`base.ids_after`)."""
        return ids_after(self._query, "%s", after, limit)

    def count_threads(self) -> int:
        return self._query("SELECT count(*) FROM (SELECT DISTINCT thread_id FROM checkpoints) AS t")[0][0]

    def first_checkpoints(self, thread_ids: list[str], checkpoint_ns: str = "") -> dict[str, CheckpointRecord]:
        """The oldest checkpoint of a namespace in each thread (one index probe each, one query)."""
        parent = "NULL" if self.shallow else "c.parent_checkpoint_id"
        rows = self._query(
            f"SELECT t.id, c.cid, c.parent, c.md FROM unnest(%s::text[]) AS t(id) CROSS JOIN LATERAL "
            f"(SELECT {self._id()} AS cid, {parent} AS parent, c.metadata::text AS md FROM checkpoints c "
            f"WHERE c.thread_id = t.id AND c.checkpoint_ns = %s ORDER BY {self._id()} LIMIT 1) c",
            (list(thread_ids), checkpoint_ns),
        )
        return {t: CheckpointRecord(t, checkpoint_ns, cid, parent, metadata_of(md)) for t, cid, parent, md in rows}

    def namespace_names(self, thread_id: str) -> set[str]:
        """The thread's namespaces, from the primary key's index."""
        return {
            ns
            for (ns,) in self._query(
                "SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE thread_id = %s", (thread_id,)
            )
        }

    def writes_of(self, keys: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], list[WriteRecord]]:
        """`writes` of several (thread, namespace, checkpoint) at once, in one query."""
        if not keys:
            return {}
        return self._writes_by(
            "unnest(%s::text[], %s::text[], %s::text[]) AS k(t, ns, cid) JOIN checkpoint_writes w ON "
            "w.thread_id = k.t AND w.checkpoint_ns = k.ns AND w.checkpoint_id = k.cid",
            tuple(list(x) for x in zip(*keys, strict=True)),
            dict.fromkeys(keys),
        )

    def thread_writes_of(self, thread_ids: list[str]) -> dict[tuple[str, str, str], list[WriteRecord]]:
        """Every write of these threads, by (thread, namespace, checkpoint), in one query (`doctor`)."""
        return self._writes_by("checkpoint_writes w WHERE w.thread_id = ANY(%s)", (list(thread_ids),), {})

    def _writes_by(self, source: str, args: tuple, keys: dict) -> dict[tuple[str, str, str], list[WriteRecord]]:
        out: dict[tuple[str, str, str], list[WriteRecord]] = {k: [] for k in keys}
        for t, ns, cid, task, path, idx, chan, type_, blob in self._query(
            f"SELECT w.thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, {self._task_path}, w.idx, "
            f"w.channel, w.type, w.blob FROM {source}",
            args,
        ):
            out.setdefault((t, ns, cid), []).append(
                WriteRecord(
                    task, path or "", idx, chan, type_, None if blob is None else bytes(blob), checkpoint_id=cid
                )
            )
        return {k: replay_order(v) for k, v in out.items()}

    def _row(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, channels: frozenset[str] | None = None
    ) -> tuple[Any, list]:
        rows = self._query(
            "SELECT checkpoint::text FROM checkpoints WHERE thread_id = %s AND "
            f"checkpoint_ns = %s AND {self._id()} = %s",
            (thread_id, checkpoint_ns, checkpoint_id),
        )
        if not rows:
            raise NotFoundError(f"no checkpoint {checkpoint_id} in thread {thread_id!r}")
        try:
            jsonb = orjson.loads(rows[0][0])
        except orjson.JSONDecodeError:
            raise DecodeError.corrupt(thread_id, checkpoint_id, "its JSONB is not JSON") from None
        versions = jsonb.get("channel_versions") if isinstance(jsonb, dict) else None
        if not isinstance(versions, dict):
            raise DecodeError(
                f"checkpoint {checkpoint_id} of thread {thread_id!r} is not a "
                "LangGraph checkpoint (no channel_versions)"
            )
        if channels is not None:  # only the blobs of the channels that will be read
            versions = {k: v for k, v in versions.items() if wanted(str(k), channels)}
        # a shallow saver keeps one blob per channel: the latest checkpoint's
        version = "NULL" if self.shallow else "b.version"
        blobs = self._query(
            f"SELECT b.channel, {version}, b.type, b.blob FROM unnest(%s::text[], %s::text[]) AS v(ch, ver) "
            "JOIN checkpoint_blobs b ON b.thread_id = %s AND b.checkpoint_ns = %s "
            f"AND b.channel = v.ch{'' if self.shallow else ' AND b.version = v.ver'}",
            ([str(k) for k in versions], [str(v) for v in versions.values()], thread_id, checkpoint_ns),
        )
        return jsonb, blobs

    def raw_checkpoint(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> tuple[str | None, bytes | None]:
        jsonb, blobs = self._row(thread_id, checkpoint_ns, checkpoint_id)
        return envelope(jsonb, blobs)

    def checkpoint(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, channels: frozenset[str] | None = None
    ) -> dict:
        jsonb, blobs = self._row(thread_id, checkpoint_ns, checkpoint_id, channels)
        try:
            return assemble(jsonb, [(ch, t, None if b is None else bytes(b)) for ch, _v, t, b in blobs])
        except DecodeError as exc:
            raise DecodeError.corrupt(thread_id, checkpoint_id, exc.message) from None

    def _writes(self, where: str, args: tuple) -> list[WriteRecord]:
        rows = self._query(
            f"SELECT checkpoint_id, task_id, {self._task_path}, idx, channel, type, blob "
            f"FROM checkpoint_writes WHERE {where}",
            args,
        )
        return [
            WriteRecord(task, path or "", idx, chan, type_, None if blob is None else bytes(blob), checkpoint_id=cid)
            for cid, task, path, idx, chan, type_, blob in rows
        ]

    def writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> list[WriteRecord]:
        rows = self._writes(
            "thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s", (thread_id, checkpoint_ns, checkpoint_id)
        )
        return replay_order(rows)

    def channel_writes(self, thread_id: str, checkpoint_ns: str, channel: str) -> dict[str, list[WriteRecord]]:
        return by_checkpoint(
            self._writes("thread_id = %s AND checkpoint_ns = %s AND channel = %s", (thread_id, checkpoint_ns, channel))
        )

    def task_paths(self, thread_id: str, checkpoint_ns: str) -> list[str]:
        if self._task_path == "''":
            return []
        return [
            r[0]
            for r in self._query(
                "SELECT task_path FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_ns = %s "
                'ORDER BY checkpoint_id, task_path COLLATE "C"',
                (thread_id, checkpoint_ns),
            )
        ]

    def locate(self, checkpoint_id: str) -> list[tuple[str, str]]:
        return [
            tuple(r)
            for r in self._query(
                f"SELECT thread_id, checkpoint_ns FROM checkpoints WHERE {self._id()} = %s LIMIT 5", (checkpoint_id,)
            )
        ]

    def over(self, conn: Any) -> PostgresSource:
        """This source reading through `conn` instead (`prune --apply`: the plan made again inside
        its write transaction, on what that transaction sees). Do not close it: `conn` is the
        caller's."""
        clone = copy.copy(self)
        clone.conn = conn
        return clone

    def connect_writable(self) -> Any:
        """A second connection to the same database that may write, with the same bounds (connect,
        lock, statement): `prune --apply`'s alone; everything that reads uses the read-only one.
        Errors are one line without the password."""
        return self._connect(writable=True)

    def beside(self) -> PostgresSource:
        """This source on a second read-only connection of its own, for a query run in another
        thread while this one reads (`prune`'s plan: the next batch's SQL plans while this batch
        is planned in Python). Close it when done."""
        return self.over(self._connect(writable=False))

    def cancel(self) -> None:
        """Cancel the query this connection is running, if any, from another thread (`beside`)."""
        try:
            self.conn.cancel_safe(timeout=self.waits["connect"])
        except self._psycopg.Error:
            pass

    def clean(self, exc: BaseException) -> str:
        """An error's text, one line, without the password."""
        return self._clean(exc)

    def close(self) -> None:
        try:
            self.conn.rollback()  # a read-only transaction: nothing to keep
            self.conn.close()
        except self._psycopg.Error:
            pass
