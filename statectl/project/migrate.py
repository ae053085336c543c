"""`migrate`'s writes: a migrated copy through LangGraph's saver, or the store rewritten in place.

A copy (`--to`) is `copy`'s: the thread's rows as stored go to the writer in the project's
interpreter, each checkpoint and pending write migrated on the way (`core.migrate`), the rest of
its bytes unchanged.

In place, as `prune --apply` deletes: a thread at a time, each in its own transaction, its rows
read again inside it and migrated as that transaction sees them, with UPDATE (and, for a dropped
key, DELETE) statements on the rows that change. SQLite: `BEGIN IMMEDIATE` (a writer waits for
the thread's transaction, then goes on: nothing it writes is lost). Postgres: REPEATABLE READ
with a bounded `lock_timeout`; a concurrent change to the same rows aborts that thread's
transaction (skipped, reported). Ctrl+C rolls the current thread back; the threads done stay done.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from statectl.codec.formats import PG_TYPE
from statectl.core.migrate import DROP, Counts, Migration
from statectl.errors import SourceError, StatectlError

if TYPE_CHECKING:
    from statectl.core.reader import StoreReader
    from statectl.model import CheckpointRecord, WriteRecord
    from statectl.sources.base import Source
    from statectl.sources.postgres.source import PostgresSource
    from statectl.sources.sqlite import SqliteSource

AGAIN = 3
"""In place on Postgres: how many more transactions migrate rows a run wrote during the last."""
MIGRATED, NOTHING, LOCKED, CHANGED, ROLLED_BACK = (
    "migrated",
    "nothing to change",
    "skipped: locked",
    "skipped: changed meanwhile",
    "rolled back (interrupted)",
)


@dataclass
class Outcome:
    thread_id: str
    status: str
    counts: Counts = field(default_factory=Counts)
    note: str | None = None
    again: int = 0
    """Rows a run wrote during the thread's transaction (Postgres), migrated by another one."""
    left: int = 0
    """Rows still holding the old names after the last round (a run kept writing)."""
    repickled: int | None = None
    """`--repickle`: pickled values encoded again in msgpack (None: not asked)."""
    kept: dict[str, int] = field(default_factory=dict)
    """`--repickle`: pickled values left as stored, by the type that has no msgpack form."""

    def to_json(self) -> dict[str, Any]:
        out = {"thread_id": self.thread_id, "status": self.status, **self.counts.to_json()}
        if self.again or self.left:
            out |= {"written_meanwhile": self.again, "left_unmigrated": self.left}
        if self.repickled is not None:
            out |= {"repickled": self.repickled, "left_pickled": self.kept}
        if self.note:
            out["note"] = self.note
        return out


# -- rows, migrated -------------------------------------------------------------------------------
def _same_bytes(data: Any) -> Any:
    return data


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def migrate_row(migration: Migration, row: dict[str, Any], counts: Counts, raw: bool = False) -> dict[str, Any] | None:
    """One of `core.copy`'s rows migrated (None: a write row whose every item was dropped);
    `raw`: its values are bytes (`InPlace`'s rows), not base64."""
    decode, encode = (_same_bytes, _same_bytes) if raw else (base64.b64decode, _b64)
    op = row["op"]
    if op == "checkpoint":
        data = None if row["checkpoint"] is None else decode(row["checkpoint"])
        new = migration.checkpoint_row(row["type"], data, counts)
        if new is not None:
            row = {**row, "checkpoint": encode(new)}
        md = migration.metadata(row.get("metadata"))
        if md is not None:  # (its `writes`, kept by LangGraph before 0.6)
            counts.checkpoints += new is None
            row = {**row, "metadata": md}
    elif op == "writes":
        items = []
        for idx, channel, type_, blob in row["items"]:
            data = None if blob is None else decode(blob)
            done = migration.write(channel, type_, data, counts)
            if done is DROP:
                continue
            if done is not None:
                assert isinstance(done, tuple)
                channel, data = done
                blob = None if data is None else encode(data)
            items.append([idx, channel, type_, blob])
        if not items:
            return None
        row = {**row, "items": items}
    return row


def plan(source: Source, migration: Migration, ids: list[str]) -> Iterator[tuple[str, Counts]]:
    """Each thread and what migrating it would change (nothing written): its rows as stored
    bytes, as in place reads them (no base64 round trip)."""
    for thread_id in ids:
        counts = Counts()
        for _row, _new, row_counts in _thread_rows(source, migration, thread_id, None):
            counts.add(row_counts)
        yield thread_id, counts


class OnePass:
    """`--to` in one walk of the values: `copy_threads`' row transform (`raw`: the values as
    stored bytes), each row migrated on its way to the writer and counted by thread. At the
    end, before the commit row, `check` runs (the options against every name the threads hold);
    when it refuses (or a row did, or nothing changes), the commit row is held back and the
    writer rolls everything back: nothing written."""

    def __init__(self, migration: Migration, check: Callable[[], None]) -> None:
        self.migration, self.check = migration, check
        self.counts: dict[str, Counts] = {}
        self.refused: StatectlError | None = None
        self.nothing = False
        self._current = Counts()

    def __call__(self, row: dict[str, Any]) -> dict[str, Any] | None:
        if self.refused is not None:
            return None
        op = row.get("op")
        try:
            if op == "thread":
                self._current = self.counts.setdefault(row["as"], Counts())
            elif op in ("checkpoint", "writes"):
                return migrate_row(self.migration, row, self._current, raw=True)
            elif op == "commit":
                self.check()
                self.nothing = not any(c.changed for c in self.counts.values())
                return None if self.nothing else row
        except StatectlError as exc:
            self.refused = exc
            return None
        return row


def migrated_rows(migration: Migration, raw: bool = False) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    """`copy_threads`' row transform: each row migrated (`raw`: its values as stored bytes)."""
    counts = Counts()
    return lambda row: migrate_row(migration, row, counts, raw)


def check_classes(python: str | None, migration: Migration) -> None:
    """Every class the migrated values will name is found in the project's interpreter (by its
    finders and the module's syntax tree: nothing is imported); else one line."""
    if not migration.renamed_to:
        return
    from statectl.project.classes import OK, check_there
    from statectl.project.launch import writer_python

    pairs = sorted(migration.renamed_to)
    there, answers = check_there(writer_python(python), pairs)
    for (module, name), answer in zip(pairs, answers, strict=True):
        if answer["status"] != OK:
            why = answer["status"] + (f" {answer['missing']}" if answer.get("missing") else "")
            raise StatectlError(
                f"--rename-class: {module}.{name} does not import in {there} ({why}): nothing written "
                "(the values would name a class no one can load)",
                "run from the project's folder, or give --python the project's interpreter",
            )


# -- pickled values encoded again, in place --------------------------------------------------------
class Repickler:
    """`migrate --repickle --in-place`: a writer in the project's interpreter (`--python`) reads
    each pickled value with statectl's restricted unpickler and encodes it with LangGraph's
    serializer without `pickle_fallback` (`writer.repickle_values`); statectl's process writes
    the result. A class not allowed: `StatectlError` (the writer's refusal, by name)."""

    def __init__(self, python: str | None, allowed: list[str]) -> None:
        from statectl.project.launch import Writer, writer_python

        self.writer = Writer(writer_python(python), "repickle")
        self.converted = 0
        self.kept: Counter[str] = Counter()
        try:
            self.writer.line({"allow": allowed}, _json_line)
            self.writer.answer()
        except BaseException:
            self.writer.stop()
            raise

    def values(self, pickled: list[tuple[str, bytes]]) -> list[tuple[str, bytes | None] | None]:
        """Each (what, pickle) encoded again: (type, bytes), or None when kept (counted in `kept`)."""
        if not pickled:
            return []
        self.writer.line({"values": [[what, _b64(data)] for what, data in pickled]}, _json_line)
        out: list[tuple[str, bytes | None] | None] = []
        for new_type, text in self.writer.answer()["values"]:
            if new_type is None:
                self.kept[text] += 1
                out.append(None)
            else:
                self.converted += 1
                out.append((new_type, None if text is None else base64.b64decode(text)))
        return out

    def row(self, row: dict[str, Any]) -> dict[str, Any]:
        """A row (`InPlace._rows`', values as bytes) with its pickled values encoded again."""
        where = f"checkpoint {row['checkpoint_id']}"
        if row["op"] == "writes":
            at = [i for i, (_, _, t, blob) in enumerate(row["items"]) if t == "pickle" and blob is not None]
            done = self.values([(f"a write to {row['items'][i][1]!r} on {where}", row["items"][i][3]) for i in at])
            items = [list(item) for item in row["items"]]
            for i, new in zip(at, done, strict=True):
                if new is not None:
                    items[i][2:] = new
            return {**row, "items": items} if any(d is not None for d in done) else row
        if row["type"] == "pickle" and row["checkpoint"] is not None:  # (a whole SQLite checkpoint)
            (new,) = self.values([(where, row["checkpoint"])])
            return row if new is None else {**row, "type": new[0], "checkpoint": new[1]}
        if row["type"] != PG_TYPE or b'"pickle"' not in (row["checkpoint"] or b""):
            return row
        doc = json.loads(row["checkpoint"])
        at = [i for i, (_, _, t, blob) in enumerate(doc["blobs"]) if t == "pickle" and blob is not None]
        what = [(f"{where}'s channel {doc['blobs'][i][0]!r}", base64.b64decode(doc["blobs"][i][3])) for i in at]
        done = self.values(what)
        if all(d is None for d in done):
            return row
        for i, new in zip(at, done, strict=True):
            if new is not None:
                doc["blobs"][i][2:] = [new[0], None if new[1] is None else _b64(new[1])]
        return {**row, "checkpoint": json.dumps(doc).encode()}

    def take(self) -> tuple[int, dict[str, int]]:
        """The values converted and kept since the last `take`."""
        out = self.converted, dict(self.kept)
        self.converted, self.kept = 0, Counter()
        return out

    def close(self) -> None:
        self.writer.send([], _json_line)  # (its stdin closed: it ends)
        try:
            self.writer.proc.wait(timeout=10)
        except Exception:
            self.writer.stop()


def _json_line(row: Any) -> bytes:
    return json.dumps(row).encode()


def repickle_note(converted: int, kept: dict[str, int], done: bool) -> str | None:
    """What `--repickle` did (or would do) to one thread, in words; None: nothing."""
    parts = [f"{converted} pickled value(s) {'converted' if done else 'would be converted'} to msgpack"] * bool(
        converted
    )
    parts += [f"{n} value(s) left pickled ({what} has no msgpack form)" for what, n in sorted(kept.items())]
    return "; ".join(parts) or None


def repickle_plan(
    source: Source, migration: Migration, planned: list[tuple[str, Counts]], repickler: Repickler
) -> list[tuple[str, Counts]]:
    """Before anything is written in place: every pickled value of the threads read and encoded
    (a class not allowed refuses the whole run here, nothing written); the threads that change
    or hold pickled values."""
    out = []
    for thread_id, counts in planned:
        for _ in _thread_rows(source, migration, thread_id, repickler):
            pass
        converted, kept = repickler.take()
        if counts.changed or converted or kept:
            out.append((thread_id, counts))
    return out


# -- in place -------------------------------------------------------------------------------------
class InPlace:
    """Migrates threads of the store being read, each in its own transaction."""

    finished: Outcome | None = None

    def migrate(self, thread_id: str, planned: Counts) -> Outcome:
        raise NotImplementedError

    def backup(self, target: Path) -> int:
        raise StatectlError("--backup copies SQLite files", "back Postgres up with pg_dump first")

    def close(self) -> None:
        raise NotImplementedError

    def _rows(self, reader: Source, thread_id: str) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None, Counts]]:
        return _thread_rows(reader, self.migration, thread_id, self.repickler, self._metadata)

    def _metadata(self, thread_id: str, ns: str, checkpoint_id: str) -> Any:
        """A checkpoint's metadata column as stored (JSON text or bytes)."""
        raise NotImplementedError

    migration: Migration
    repickler: Repickler | None = None


def _thread_rows(
    reader: Source,
    migration: Migration,
    thread_id: str,
    repickler: Repickler | None,
    metadata: Callable[[str, str, str], Any] | None = None,
) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None, Counts]]:
    """A thread's rows as `core.copy.thread_rows` gives them (every namespace, oldest checkpoint
    first), their values as stored bytes (no base64: nothing leaves the process), each with its
    migrated row (its pickled values encoded again, with a `repickler`). `metadata`: reads a
    checkpoint's metadata as stored, whose `writes` a key rename rewrites (langgraph before 0.6)."""
    keyed = bool(migration.keys or migration.drop)
    from statectl.errors import NotFoundError

    records = reader.checkpoints(thread_id, None)
    if not records:
        raise NotFoundError(f"no thread {thread_id!r} in {reader.label}")
    raws = reader.raw_checkpoints(thread_id)  # (one query, up to RAW_BYTES; the rest read one at a time)
    for ns in sorted({r.checkpoint_ns for r in records}):
        in_ns = list(reversed([r for r in records if r.checkpoint_ns == ns]))
        for rec, writes in _with_writes(reader, thread_id, ns, in_ns):
            found = raws.get((ns, rec.checkpoint_id))
            type_, blob = reader.raw_checkpoint(thread_id, ns, rec.checkpoint_id) if found is None else found
            key = {"checkpoint_ns": ns, "checkpoint_id": rec.checkpoint_id}
            rows: list[dict[str, Any]] = [
                {"op": "checkpoint", **key, "type": type_, "checkpoint": None if blob is None else bytes(blob)}
            ]
            if keyed and metadata is None:  # (a plan: the metadata as read, to count what changes)
                if isinstance(rec.metadata, dict) and rec.metadata.get("writes"):
                    rows[0]["metadata"] = rec.metadata
            elif keyed:
                assert metadata is not None
                raw = metadata(thread_id, ns, rec.checkpoint_id)
                if raw is not None and b'"writes"' in (raw if isinstance(raw, bytes) else raw.encode()):
                    try:
                        rows[0]["metadata"] = json.loads(raw)
                    except ValueError:
                        pass  # (not JSON: left as stored)
            tasks: dict[str, list[list[Any]]] = {}
            for w in writes:
                item = [w.idx, w.channel, w.type, None if w.blob is None else bytes(w.blob)]
                tasks.setdefault(w.task_id, []).append(item)
            rows += [{"op": "writes", **key, "task_id": t, "items": items} for t, items in tasks.items()]
            for row in rows:
                counts = Counts()
                new = migrate_row(migration, row, counts, raw=True)
                if repickler is not None and new is not None:
                    new = repickler.row(new)
                yield row, new, counts


WRITES_AT_ONCE = 300
"""How many checkpoints' pending writes one query reads (`Source.writes_of`)."""


def _with_writes(
    reader: Source, thread_id: str, ns: str, records: list[CheckpointRecord]
) -> Iterator[tuple[CheckpointRecord, list[WriteRecord]]]:
    """Each checkpoint with its pending writes, read `WRITES_AT_ONCE` checkpoints a query."""
    for at in range(0, len(records), WRITES_AT_ONCE):
        chunk = records[at : at + WRITES_AT_ONCE]
        writes = reader.writes_of([(thread_id, ns, r.checkpoint_id) for r in chunk])
        for rec in chunk:
            yield rec, writes.get((thread_id, ns, rec.checkpoint_id), [])


def _rewrite_writes(
    execute: Callable[..., Any],
    table: str,
    value: str,
    mark: str,
    key: tuple,
    row: dict[str, Any],
    new: dict[str, Any] | None,
) -> None:
    """A task's pending writes in place (SQLite `writes`/`value` with `?`, Postgres
    `checkpoint_writes`/`blob` with `%s`): a write the migration dropped deleted, a changed one
    updated, the rest left as they are."""
    kept = {item[0]: item for item in (new or {"items": []})["items"]}
    at = " AND ".join(f"{col} = {mark}" for col in ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"))
    for idx, channel, _type, blob in row["items"]:
        where = (*key, row["task_id"], idx)
        if idx not in kept:
            execute(f"DELETE FROM {table} WHERE {at}", where)
            continue
        _, new_channel, new_type, new_blob = kept[idx]
        if new_channel != channel or new_blob != blob or new_type != _type:
            set_ = f"channel = {mark}, type = {mark}, {value} = {mark}"
            execute(f"UPDATE {table} SET {set_} WHERE {at}", (new_channel, new_type, new_blob, *where))


def _repickled(out: Outcome, repickler: Repickler | None, notes: list[str]) -> None:
    """A thread's outcome once written: its status (nothing changed), and with `--repickle` the
    values converted and kept (SQLite's, taken from the repickler; Postgres' counted by round)."""
    if repickler is not None and out.repickled is None:
        out.repickled, out.kept = repickler.take()
    if not out.counts.changed and not out.repickled:
        out.status = NOTHING
    if repickler is not None:
        note = repickle_note(out.repickled or 0, out.kept, done=True)
        notes.extend([note] if note else [])


def _same(a: Counts, b: Counts) -> bool:
    return a.to_json() == b.to_json()


class SqliteInPlace(InPlace):
    def __init__(self, store: StoreReader, migration: Migration, wait: float) -> None:
        import os
        import stat

        source = cast("SqliteSource", store.source)
        path: Path = source.path
        self.path, self.wait, self.migration = path, wait, migration
        if source.era == "thread_ts":
            raise StatectlError(f"{path}: written by langgraph 0.0.x/0.1.x, which LangGraph 1.x cannot open")
        if not stat.S_ISREG(path.stat().st_mode):
            raise StatectlError(f"{path} is not a regular file: not migrated")
        if not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK | os.X_OK):
            raise StatectlError(f"{path} (or its folder) is read-only: migrate --in-place cannot write it")
        try:
            self.conn = sqlite3.connect(path, timeout=wait, isolation_level=None, check_same_thread=False)
            self.conn.execute("SELECT 1 FROM checkpoints LIMIT 1").fetchall()
        except sqlite3.DatabaseError as exc:
            raise SourceError(f"cannot open {path} to write: {exc}") from None
        self.reader = source.over(self.conn)

    def migrate(self, thread_id: str, planned: Counts) -> Outcome:
        self.finished = None
        out = Outcome(thread_id, MIGRATED)
        try:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    return Outcome(thread_id, LOCKED, note=f"another writer held the database past {self.wait:g} s")
                raise SourceError(f"cannot write {self.path}: {exc}") from None
            for row, new, counts in self._rows(self.reader, thread_id):
                out.counts.add(counts)
                if new == row:
                    continue
                self._write(thread_id, row, new)
            self.conn.execute("COMMIT")
        except BaseException as exc:
            if self.repickler is not None:
                self.repickler.take()
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc)):
                return Outcome(thread_id, LOCKED, note=f"locked past {self.wait:g} s")
            if isinstance(exc, sqlite3.DatabaseError):
                raise SourceError(f"cannot write {self.path}: {exc}") from None
            raise
        self.finished = out
        notes = ["a run wrote to it since the plan: migrated as it is now"] * (not _same(out.counts, planned))
        _repickled(out, self.repickler, notes)
        out.note = "; ".join(notes) or None
        return out

    def _write(self, thread_id: str, row: dict[str, Any], new: dict[str, Any] | None) -> None:
        key = (thread_id, row["checkpoint_ns"], row["checkpoint_id"])
        if row["op"] == "checkpoint":
            assert new is not None
            self.conn.execute(
                "UPDATE checkpoints SET type = ?, checkpoint = ? WHERE thread_id = ? AND checkpoint_ns = ? "
                "AND checkpoint_id = ?",
                (new["type"], new["checkpoint"], *key),
            )
            if new.get("metadata") is not row.get("metadata"):
                self.conn.execute(
                    "UPDATE checkpoints SET metadata = ? WHERE thread_id = ? AND checkpoint_ns = ? "
                    "AND checkpoint_id = ?",
                    (json.dumps(new["metadata"], ensure_ascii=False).encode(), *key),
                )
            return
        _rewrite_writes(self.conn.execute, "writes", "value", "?", key, row, new)

    def _metadata(self, thread_id: str, ns: str, checkpoint_id: str) -> Any:
        found = self.conn.execute(
            "SELECT metadata FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
            (thread_id, ns, checkpoint_id),
        ).fetchone()
        return None if found is None else found[0]

    def backup(self, target: Path) -> int:
        from statectl.project.prune import SqliteApplier

        return SqliteApplier.backup(self, target)  # type: ignore[arg-type]  # (it uses only `conn`)

    def close(self) -> None:
        if self.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
            try:
                self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.DatabaseError:
                pass
        self.conn.close()


class PostgresInPlace(InPlace):
    def __init__(self, store: StoreReader, migration: Migration) -> None:
        source = cast("PostgresSource", store.source)
        self.source, self.migration = source, migration
        self.conn = source.connect_writable()
        psycopg = source.psycopg
        self.errors = psycopg.errors
        try:
            ro, may = self.conn.execute(
                "SELECT current_setting('transaction_read_only') = 'on', "
                "has_table_privilege('checkpoints', 'UPDATE') AND has_table_privilege('checkpoint_writes', 'UPDATE') "
                "AND has_table_privilege('checkpoint_blobs', 'UPDATE') "
                "AND has_table_privilege('checkpoint_writes', 'DELETE') "
                "AND has_table_privilege('checkpoint_blobs', 'DELETE')"
            ).fetchone()
            self.conn.rollback()
        except psycopg.Error as exc:
            self.conn.close()
            raise SourceError(f"cannot write to {source.label}: {source.clean(exc)}") from None
        if ro or not may:
            self.conn.close()
            raise StatectlError(f"{source.label}: read-only, or this role may not UPDATE the checkpoint tables")
        self.conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        self.reader = source.over(self.conn)

    def migrate(self, thread_id: str, planned: Counts) -> Outcome:
        """The thread in one transaction; then read again: rows a run inserted after that
        transaction's snapshot (REPEATABLE READ does not see them, nor conflict on them) are
        migrated by another transaction, up to `AGAIN` times, else counted in the note."""
        e = self.errors
        self.finished = None
        out = Outcome(thread_id, MIGRATED)
        left, rounds = 0, 0
        try:
            while True:
                counts = Counts()
                with self.conn.transaction():
                    blobs_done: set[tuple[str, str, str]] = set()
                    for row, new, row_counts in self._rows(self.reader, thread_id):
                        counts.add(row_counts)
                        if new != row:
                            self._write(thread_id, row, new, blobs_done)
                if self.repickler is not None:
                    converted, kept = self.repickler.take()
                    out.repickled = (out.repickled or 0) + converted
                    out.kept = kept if rounds == 0 else out.kept
                if rounds == 0:
                    out.counts = counts
                else:  # (a key a checkpoint names is counted once, by the first round)
                    counts.keys.clear()
                    out.counts.add(counts)
                    out.again += counts.checkpoints + counts.writes + counts.dropped_writes
                self.finished = out
                with self.conn.transaction():
                    left = sum(new != row for row, new, _ in self._rows(self.reader, thread_id))
                if self.repickler is not None:
                    self.repickler.take()  # (the count of what a run wrote meanwhile: not this thread's)
                if not left or rounds == AGAIN:
                    break
                rounds += 1
        except (e.LockNotAvailable, e.SerializationFailure, e.DeadlockDetected) as exc:
            if self.repickler is not None:
                self.repickler.take()
            if self.finished is not None:  # (a later round: the first committed)
                left = -1
            else:
                locked = isinstance(exc, e.LockNotAvailable)
                note = "rows locked by another session" if locked else "another session changed its rows meanwhile"
                return Outcome(thread_id, LOCKED if locked else CHANGED, note=note + ": nothing changed")
        except self.source.psycopg.Error as exc:
            raise SourceError(f"cannot write to {self.source.label}: {self.source.clean(exc)}") from None
        self.finished = out
        notes = ["a run wrote to it since the plan: migrated as it is now"] * (not _same(out.counts, planned))
        if out.again:
            notes.append(f"{out.again} row(s) a run wrote during its transaction migrated by another")
        if left:
            out.left = max(left, 0)
            notes.append(
                "rows a run keeps writing still hold the old names: run migrate again when it stops"
                if left < 0
                else f"{left} row(s) a run wrote meanwhile still hold the old names: run migrate again when it stops"
            )
        _repickled(out, self.repickler, notes)
        out.note = "; ".join(notes) or None
        return out

    def _write(
        self, thread_id: str, row: dict[str, Any], new: dict[str, Any] | None, blobs_done: set[tuple[str, str, str]]
    ) -> None:
        ns = row["checkpoint_ns"]
        key = (thread_id, ns, row["checkpoint_id"])
        if row["op"] == "checkpoint":
            assert new is not None
            old = json.loads(row["checkpoint"])
            doc = json.loads(new["checkpoint"])
            self.conn.execute(
                "UPDATE checkpoints SET checkpoint = %s::jsonb WHERE thread_id = %s AND checkpoint_ns = %s "
                "AND checkpoint_id = %s",
                (json.dumps(doc["checkpoint"]), *key),
            )
            if new.get("metadata") is not row.get("metadata"):
                self.conn.execute(
                    "UPDATE checkpoints SET metadata = %s::jsonb WHERE thread_id = %s AND checkpoint_ns = %s "
                    "AND checkpoint_id = %s",
                    (json.dumps(new["metadata"]), *key),
                )
            # (each blob as the migrated row holds it: renamed, dropped, its value rewritten or repickled)
            migrated = {(c, str(v)): (t, b) for c, v, t, b in doc["blobs"]}
            for channel, version, type_, blob in old["blobs"]:
                if (ns, channel, str(version)) in blobs_done:  # (a version several checkpoints name)
                    continue
                blobs_done.add((ns, channel, str(version)))
                at = (thread_id, ns, channel, version)
                renamed = self.migration.blob(channel, None, None, Counts())
                if renamed is DROP:
                    self.conn.execute(
                        "DELETE FROM checkpoint_blobs WHERE thread_id = %s AND checkpoint_ns = %s AND channel = %s "
                        "AND version = %s",
                        at,
                    )
                    continue
                new_channel = channel if renamed is None else renamed[0]
                new_type, new_blob = migrated[(new_channel, str(version))]
                if (new_channel, new_type, new_blob) != (channel, type_, blob):
                    self.conn.execute(
                        "UPDATE checkpoint_blobs SET channel = %s, type = %s, blob = %s WHERE thread_id = %s AND "
                        "checkpoint_ns = %s AND channel = %s AND version = %s",
                        (new_channel, new_type, None if new_blob is None else base64.b64decode(new_blob), *at),
                    )
            return
        _rewrite_writes(self.conn.execute, "checkpoint_writes", "blob", "%s", key, row, new)

    def _metadata(self, thread_id: str, ns: str, checkpoint_id: str) -> Any:
        found = self.conn.execute(
            "SELECT metadata::text FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s",
            (thread_id, ns, checkpoint_id),
        ).fetchone()
        return None if found is None else found[0]

    def close(self) -> None:
        try:
            self.conn.rollback()
            self.conn.close()
        except self.source.psycopg.Error:
            pass


class Interrupted(KeyboardInterrupt):
    def __init__(self, outcomes: list[Outcome]) -> None:
        super().__init__()
        self.outcomes = outcomes


def migrate_all(
    writer: InPlace, planned: list[tuple[str, Counts]], on_done: Callable[[Outcome], object] | None = None
) -> list[Outcome]:
    """Each thread in its own transaction; Ctrl+C: the current one rolls back (`Interrupted`)."""
    done: list[Outcome] = []
    for thread_id, counts in planned:
        try:
            outcome = writer.migrate(thread_id, counts)
        except KeyboardInterrupt:
            finished = writer.finished
            if finished is not None and finished.thread_id == thread_id:
                done.append(finished)
            else:
                done.append(Outcome(thread_id, ROLLED_BACK))
            raise Interrupted(done) from None
        done.append(outcome)
        if on_done is not None:
            on_done(outcome)
    return done
