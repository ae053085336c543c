"""What differs between the store kinds statectl writes, one class a kind: `SqliteTarget`,
`PostgresTarget`, on the `WriteTarget` contract. A new writable store type adds one class here
and its entry in `TARGETS`, under the `kind` its `core.store_kinds` class declares (with the SQL
`prune --sql` prints and what a `--to` destination of the kind must hold); every command that
writes asks `write_target(kind)`.

A target's duties, in statectl's process: the writer's `dest` row (`dest_row`), what `--backup`
means there (`backs_up`, `refuse_backup`), the object `prune --apply` deletes through
(`pruner`) and the one `migrate --in-place` rewrites through (`migrator`). In the writer's
process (the project's interpreter, `statectl.project.writer`): opening LangGraph's saver on
it, with the lock or transaction a write holds (`open`), whether a thread is there
(`has_thread`), `commit` and `rollback`, and the layout a checkpoint's channel values take
(`blob_per_version`). A kind with no class here (a `langgraph dev` folder, an export, a
server) is not written: `write_target` gives None.

The writer's duties import only the standard library and LangGraph's saver (never anything of
statectl's dependencies: this module runs in the project's interpreter too); statectl's
writers (prune, migrate) are imported where they are asked for.
"""

from __future__ import annotations

import sqlite3
import sys
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from statectl.core.store_kinds import PostgresKind, SqliteKind
from statectl.project.writer_base import WriteError

if TYPE_CHECKING:
    import os
    from datetime import datetime

    from langgraph.checkpoint.serde.base import SerializerProtocol

    from statectl.core.reader import StoreReader
    from statectl.project.migrate import InPlace, Migration
    from statectl.project.prune import Applier

LOCK_HINT = "another process is writing to it; try again, or give a longer --timeout"


def pg_message(exc: Exception) -> str:
    """The first line of a database error (Postgres' DETAIL quotes the failing row: the user's data)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class WriteTarget(ABC):
    """A store kind statectl writes: every duty that differs between kinds, declared once."""

    kind: ClassVar[str]
    """The sources' `kind` this target writes (`Source.kind`), a kind `core.store_kinds` declares."""
    blob_per_version: ClassVar[bool]
    """The layout of a checkpoint's channel values: one blob a channel version beside the
    checkpoint (Postgres), or the whole checkpoint in one blob (SQLite), as the kind declares it
    (`core.store_kinds`)."""
    backs_up: ClassVar[bool]
    """Whether `--backup FILE` copies the store itself before it is written."""
    backup_hint: ClassVar[str | None] = None
    """Where `--backup` is refused: how to back the store up instead."""

    conn: Any
    saver: Any
    atomic: bool

    # -- in statectl's process --------------------------------------------------------------------
    @staticmethod
    @abstractmethod
    def dest_row(where: str, timeout: float | None) -> dict[str, Any]:
        """The writer's `dest` (the `open` row of a copy): where to write, and how long to wait."""

    @classmethod
    def refuse_backup(cls, label: str) -> None:
        """One line where `--backup` does not copy this kind of store."""
        if not cls.backs_up:
            from statectl.errors import StatectlError

            raise StatectlError(f"{label}: --backup copies SQLite files", cls.backup_hint)

    @staticmethod
    @abstractmethod
    def pruner(store: StoreReader, keep_last: int, older_than: datetime | None, batch: int) -> Applier:
        """What `prune --apply` deletes through, opened (a read-only store is said here)."""

    @staticmethod
    @abstractmethod
    def migrator(store: StoreReader, migration: Migration) -> InPlace:
        """What `migrate --in-place` rewrites through, opened."""

    # -- in the writer's process (the project's interpreter) ------------------------------------
    @abstractmethod
    def open(self, spec: dict[str, Any], serde: SerializerProtocol, atomic: bool) -> None:
        """LangGraph's saver on `spec` (a `dest_row`) as `saver`, its tables set up, with `serde`.
        `atomic`: everything written in one transaction, held from here to `commit`; else each
        checkpoint as the saver commits it. A store that cannot be written is a `WriteError`."""

    @abstractmethod
    def has_thread(self, thread_id: str) -> bool:
        """Whether the store holds a checkpoint of `thread_id`."""

    @abstractmethod
    def commit(self) -> None:
        """Commit and close: the store is whole once this returns."""

    @abstractmethod
    def rollback(self) -> None:
        """Nothing of the transaction kept; closed. Never raises."""


# -- SQLite ---------------------------------------------------------------------------------------
class _HeldConnection(sqlite3.Connection):
    """A connection whose commits wait for the end of the copy: the saver commits after each
    statement; here the whole copy is one transaction (`BEGIN IMMEDIATE`), committed once."""

    held = True

    def commit(self) -> None:
        if not self.held:
            super().commit()


class SqliteTarget(WriteTarget):
    """A SQLite file, written by `SqliteSaver`: the whole checkpoint in one blob; one writer at a
    time (`BEGIN IMMEDIATE`, waiting up to the timeout); `--backup` is SQLite's backup API."""

    kind = SqliteKind.kind
    blob_per_version = SqliteKind.blob_per_version
    backs_up = True

    @staticmethod
    def dest_row(where: str, timeout: float | None) -> dict[str, Any]:
        return {"kind": SqliteKind.kind, "path": where, "timeout": timeout}

    @staticmethod
    def pruner(store: StoreReader, keep_last: int, older_than: datetime | None, batch: int) -> Applier:
        from statectl.project.prune import SqliteApplier
        from statectl.sources.base import timeout

        return SqliteApplier(store, keep_last, older_than, batch, wait=timeout(10))

    @staticmethod
    def migrator(store: StoreReader, migration: Migration) -> InPlace:
        from statectl.project.migrate import SqliteInPlace
        from statectl.sources.base import timeout

        return SqliteInPlace(store, migration, wait=timeout(10))

    def open(self, spec: dict[str, Any], serde: SerializerProtocol, atomic: bool) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        self.atomic = atomic
        self.path = path = spec["path"]
        timeout = float(spec.get("timeout") or 10)
        before = _not_linked(path)
        try:
            self.conn = sqlite3.connect(
                path,
                factory=_HeldConnection if atomic else sqlite3.Connection,
                check_same_thread=False,
                timeout=timeout,
            )
            after = _not_linked(path)  # (what was connected is what was checked: no link swapped in)
            if before is not None and (after is None or (before.st_dev, before.st_ino) != (after.st_dev, after.st_ino)):
                self.conn.close()
                raise WriteError(f"{path} was replaced while statectl was about to write it: nothing written")
            self.saver = SqliteSaver(self.conn, serde=serde)
            self.saver.setup()
            if atomic:
                self.conn.execute("BEGIN IMMEDIATE")  # (waits up to `timeout` for another writer)
        except sqlite3.OperationalError as exc:
            hint = LOCK_HINT if "locked" in str(exc) else None
            raise WriteError(f"cannot write {path}: {exc}", hint) from None

    def has_thread(self, thread_id: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1", (thread_id,)).fetchone()
        return row is not None

    def commit(self) -> None:
        if self.atomic:
            self.conn.held = False
        self.conn.commit()
        # Into the file itself: a reader open at our close (the CLI showing a step) keeps the
        # -wal, and a copy of the file alone would miss what it holds. (TRUNCATE waits, up to
        # the connection's timeout, for readers of an older snapshot.)
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.conn.close()

    def rollback(self) -> None:
        try:
            self.conn.rollback()
            self.conn.close()
        except Exception:
            pass


def _not_linked(path: str) -> os.stat_result | None:
    """The file's `lstat` (None: it does not exist), refused when it or SQLite's files beside it
    are symlinks: SQLite follows links, and one planted after statectl checked the destination
    would have the write land in the file it names."""
    import os
    import stat

    for name in (path, path + "-wal", path + "-shm", path + "-journal"):
        try:
            st = os.lstat(name)
        except FileNotFoundError:
            if name == path:
                return None
            continue
        if stat.S_ISLNK(st.st_mode):
            raise WriteError(f"{name} is a symlink: not followed, nothing written", "name the file it points to")
        if name == path:
            found = st
    return found


# -- Postgres -------------------------------------------------------------------------------------
class PostgresTarget(WriteTarget):
    """A Postgres database, written by `PostgresSaver`: the checkpoint as JSONB, one blob a channel
    version; one transaction with a bounded `lock_timeout`; `--backup` is pg_dump's, not statectl's."""

    kind = PostgresKind.kind
    blob_per_version = PostgresKind.blob_per_version
    backs_up = False
    backup_hint = "back Postgres up with pg_dump first"

    @staticmethod
    def dest_row(where: str, timeout: float | None) -> dict[str, Any]:
        return {"kind": PostgresKind.kind, "url": where, "timeout": timeout}

    @staticmethod
    def pruner(store: StoreReader, keep_last: int, older_than: datetime | None, batch: int) -> Applier:
        from statectl.project.prune_postgres import PostgresApplier

        return PostgresApplier(store, keep_last, older_than, batch)

    @staticmethod
    def migrator(store: StoreReader, migration: Migration) -> InPlace:
        from statectl.project.migrate import PostgresInPlace

        return PostgresInPlace(store, migration)

    def open(self, spec: dict[str, Any], serde: SerializerProtocol, atomic: bool) -> None:
        self.atomic = atomic
        timeout = float(spec.get("timeout") or 10)
        try:
            import psycopg
            from langgraph.checkpoint.postgres import PostgresSaver
            from psycopg.rows import dict_row
        except ImportError as exc:
            raise WriteError(
                f"{sys.executable} cannot import {exc.name}: writing to Postgres needs "
                "langgraph-checkpoint-postgres and psycopg"
            ) from None
        try:
            self.conn = psycopg.connect(
                spec["url"],
                autocommit=True,
                prepare_threshold=0,
                row_factory=dict_row,
                connect_timeout=max(1, int(timeout)),
            )
            self.saver = PostgresSaver(self.conn, serde=serde)
            self.saver.setup()  # (its migrations run outside the copy's transaction, as LangGraph runs them)
            self.conn.execute(f"SET lock_timeout = '{int(timeout * 1000)}ms'")
            if atomic:
                self.tx = self.conn.transaction()
                self.tx.__enter__()
        except psycopg.Error as exc:
            raise WriteError(f"cannot write to Postgres: {pg_message(exc)}") from None

    def has_thread(self, thread_id: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM checkpoints WHERE thread_id = %s LIMIT 1", (thread_id,)).fetchone()
        return row is not None

    def commit(self) -> None:
        if self.atomic:
            self.tx.__exit__(None, None, None)
        self.conn.close()

    def rollback(self) -> None:
        try:
            if self.atomic:
                self.tx.__exit__(WriteError, WriteError("rolled back"), None)
            self.conn.close()
        except Exception:
            pass


TARGETS: dict[str, type[WriteTarget]] = {t.kind: t for t in (SqliteTarget, PostgresTarget)}
"""Every store kind statectl writes, by its sources' `kind`."""


def write_target(kind: str) -> WriteTarget | None:
    """A fresh target for a store of `kind` (a source's `kind`); None where statectl does not
    write that kind (a `langgraph dev` folder, an export, a server)."""
    target = TARGETS.get(kind)
    return None if target is None else target()
