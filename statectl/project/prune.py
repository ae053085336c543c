"""`prune --apply`: a prune plan carried out, a thread at a time, each in its own transaction.

The one write statectl makes with its own SQL: LangGraph's savers have no way to delete a chosen
checkpoint (`SqliteSaver` has no prune at all; `PostgresSaver.prune` keeps only the latest and
refuses delta channels), so the rows go with the same DELETE statements `prune --sql` prints.

For each thread, inside its transaction, the plan is made again on what the transaction sees,
and only the checkpoints that the printed plan named *and* that are still safe to drop go. A
thread a run wrote to since the plan was printed is pruned on the fresh plan and reported as
"changed during prune"; a thread another writer keeps locked past `--timeout` is skipped and
reported. SQLite: `BEGIN IMMEDIATE` (the write lock first, so nothing changes between the fresh
read and the deletes; a writer waiting on it continues when the thread's transaction ends).
Postgres: REPEATABLE READ with a bounded `lock_timeout`; a concurrent change to the same rows
aborts that thread's transaction (skipped, reported); the blob versions that only the dropped
checkpoints named go in the same transaction. Ctrl+C rolls the current thread back; the threads
already done stay pruned.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from statectl.core.prune import ThreadPlan, by_ns, plan_thread
from statectl.core.store_kinds import SqliteKind
from statectl.errors import SourceError, StatectlError

if TYPE_CHECKING:
    from statectl.core.reader import StoreReader
    from statectl.sources.base import Source
    from statectl.sources.sqlite import SqliteSource

PRUNED, NOTHING, CHANGED, LOCKED, FAILED, ROLLED_BACK = (
    "pruned",
    "nothing to drop",
    "changed during prune",
    "skipped: locked",
    "skipped: error",
    "rolled back (interrupted)",
)


@dataclass(slots=True)
class Outcome:
    """What happened to one thread (slots: `--apply` holds one per thread of the store)."""

    thread_id: str
    planned: int
    """Checkpoints the printed plan would drop."""
    dropped: int = 0
    """Checkpoints deleted (with their writes)."""
    bytes: int = 0
    """Bytes of the deleted checkpoints and writes (as the plan measures them)."""
    status: str = PRUNED
    note: str | None = None
    blobs: int = 0
    """Postgres: blob versions deleted that no remaining checkpoint names."""
    held: float = 0.0
    """Seconds its transaction held the write lock (SQLite) or its rows (Postgres)."""

    def to_json(self) -> dict[str, Any]:
        out = {
            "thread_id": self.thread_id,
            "planned": self.planned,
            "dropped": self.dropped,
            "bytes": self.bytes,
            "status": self.status,
        }
        if self.blobs:
            out["blob_versions"] = self.blobs
        out["held_s"] = round(self.held, 4)
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class Vacuumed:
    before: int
    after: int
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"bytes_before": self.before, "bytes_after": self.after, "given_back": self.given_back}
        if self.note:
            out["note"] = self.note
        return out

    @property
    def given_back(self) -> int:
        return max(0, self.before - self.after)


class Applier:
    """Carries plans out on one store: `SqliteApplier` here, `prune_postgres.PostgresApplier`."""

    kind = ""

    def __init__(self, store: StoreReader, keep_last: int, older_than: datetime | None, batch: int) -> None:
        self.store, self.keep_last, self.older_than, self.batch = store, keep_last, older_than, max(1, batch)

    def replan(self, source: Source, planned: ThreadPlan) -> tuple[ThreadPlan, bool]:
        """The plan of one thread made again on what `source` (the transaction's) sees, through a
        new store of the given one's kind (no cached view), dropping only what the printed plan
        named (and what is still safe); and whether the thread changed since the printed plan."""
        named = list(planned.drop)  # (read once: a spooled list is read from its file)
        fresh = plan_thread(
            self.store.on(source), planned.thread_id, self.keep_last, self.older_than, allowed=set(named)
        )
        return fresh, fresh.drop != named or fresh.checkpoints != planned.checkpoints

    finished: Outcome | None = None
    """The outcome of the thread whose transaction committed last (Ctrl+C right after a COMMIT
    must not report it rolled back)."""

    def apply(self, plan: ThreadPlan) -> Outcome:
        raise NotImplementedError

    def _done(self, out: Outcome, fresh: ThreadPlan, changed: bool, began: float) -> Outcome:
        """`out` completed once its transaction committed (and remembered as `finished`)."""
        self.finished = out
        out.held = time.perf_counter() - began
        out.dropped = len(fresh.drop)
        out.status = CHANGED if changed else PRUNED if fresh.drop else NOTHING
        if changed:
            out.note = f"a run wrote to it meanwhile: planned {out.planned}, still safe {out.dropped}"
        return out

    def backup(self, target: Path) -> int:
        raise StatectlError(f"{self.store.label}: --backup copies SQLite files", "back Postgres up with pg_dump")

    def vacuum(self) -> Vacuumed:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


def batches(ids: list[str], n: int) -> Iterator[list[str]]:
    for i in range(0, len(ids), n):
        yield ids[i : i + n]


# -- SQLite ---------------------------------------------------------------------------------------
class SqliteApplier(Applier):
    kind = SqliteKind.kind

    def __init__(
        self, store: StoreReader, keep_last: int, older_than: datetime | None, batch: int, wait: float
    ) -> None:
        super().__init__(store, keep_last, older_than, batch)
        source = cast("SqliteSource", store.source)
        path: Path = source.path
        self.path, self.wait = path, wait
        if source.era == "thread_ts":
            raise StatectlError(
                f"{path}: written by langgraph 0.0.x/0.1.x, which LangGraph 1.x cannot open: not pruned",
                "prune --sql prints the SQL to review",
            )
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise StatectlError(f"{path} is not a regular file: not pruned")
        if not os.access(path, os.W_OK):
            raise StatectlError(f"{path} is read-only: prune --apply cannot delete from it", "check its permissions")
        if not os.access(path.parent, os.W_OK | os.X_OK):
            raise StatectlError(
                f"{path.parent} is read-only: SQLite needs to write its journal beside {path.name}",
                "check the folder's permissions",
            )
        try:
            # autocommit: every transaction is begun and ended here; SQLite's busy handler waits
            # up to `wait` seconds for another writer's lock
            self.conn = sqlite3.connect(path, timeout=wait, isolation_level=None, check_same_thread=False)
            self.conn.execute("SELECT 1 FROM checkpoints LIMIT 1").fetchall()
        except sqlite3.DatabaseError as exc:
            raise SourceError(f"cannot open {path} to write: {exc}") from None
        self.col = source.col
        self.reader = source.over(self.conn)
        # WAL: SQLite checkpoints the log after a COMMIT once it grows past 1,000 pages, in the
        # committing call; here that is done between threads instead (PASSIVE: it waits for no
        # one and no writer waits for it), so a thread's transaction is only its own work
        self.wal = self.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        if self.wal:
            self.conn.execute("PRAGMA wal_autocheckpoint = 0")  # (this connection's setting alone)

    def _delete(self, thread_id: str, drop: list[tuple[str, str]]) -> None:
        c = self.col
        for ns, ids in by_ns(drop).items():
            for chunk in batches(ids, min(self.batch, 500)):  # (SQLite's variable limit)
                marks = ", ".join("?" * len(chunk))
                args = (thread_id, ns, *chunk)
                if self.reader.has_writes:
                    self.conn.execute(
                        f"DELETE FROM writes WHERE thread_id = ? AND {c['wns']} = ? AND {c['wcid']} IN ({marks})", args
                    )
                self.conn.execute(
                    f"DELETE FROM checkpoints WHERE thread_id = ? AND {c['ns']} = ? AND {c['cid']} IN ({marks})", args
                )

    def apply(self, plan: ThreadPlan) -> Outcome:
        out = Outcome(plan.thread_id, len(plan.drop))
        self.finished = None
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            began = time.perf_counter()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                out.status, out.note = LOCKED, f"another writer held the database past {self.wait:g} s"
                return out
            raise SourceError(f"cannot write {self.path}: {exc}") from None
        try:
            fresh, changed = self.replan(self.reader, plan)
            drop = fresh.drop
            out.bytes = fresh.bytes
            self._delete(plan.thread_id, drop)
            self.conn.execute("COMMIT")
            self._done(out, fresh, changed, began)
            if self.wal:
                self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except BaseException as exc:
            if self.conn.in_transaction:  # (Ctrl+C after the COMMIT: nothing to roll back)
                self.conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError):
                if "locked" in str(exc) or "busy" in str(exc):
                    out.status, out.note, out.bytes = LOCKED, f"locked past {self.wait:g} s", 0
                    return out
                raise SourceError(f"cannot write {self.path}: {exc}") from None
            raise
        return out

    def backup(self, target: Path) -> int:
        """A copy of the database made with SQLite's backup API before anything is deleted; its
        size. A failure (a full disk) removes the partial copy and stops before any delete."""
        backup_target(target)
        try:  # (created here, private and new: a link put there since the check is not followed)
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
        except FileExistsError:
            raise StatectlError(f"--backup {target} exists: not replaced", "name a new file") from None
        except OSError as exc:
            raise StatectlError(f"cannot write --backup {target}: {exc.strerror}") from None
        try:
            dest = sqlite3.connect(target)
        except sqlite3.DatabaseError as exc:
            target.unlink(missing_ok=True)
            raise StatectlError(f"cannot write --backup {target}: {exc}") from None
        try:
            self.conn.backup(dest)
            dest.close()
        except BaseException as exc:  # (a full disk, or Ctrl+C: no half a backup is left)
            dest.close()
            for p in (target, Path(f"{target}-journal")):
                p.unlink(missing_ok=True)
            if isinstance(exc, sqlite3.DatabaseError | OSError):
                raise StatectlError(f"--backup {target} failed ({exc}): nothing was deleted") from None
            raise
        os.chmod(target, 0o600)
        return target.stat().st_size

    def _bytes(self) -> int:
        page = self.conn.execute("PRAGMA page_size").fetchone()[0]
        return page * self.conn.execute("PRAGMA page_count").fetchone()[0]

    def vacuum(self) -> Vacuumed:
        before = self._bytes()
        try:
            self.conn.execute("VACUUM")
        except (sqlite3.DatabaseError, OSError) as exc:
            raise StatectlError(
                f"VACUUM of {self.path} failed ({exc}); the pruning is done and kept",
                "VACUUM needs about the database's size free on disk, and no other writer",
            ) from None
        if self.wal:
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # (so the file itself shrinks)
        return Vacuumed(before, self._bytes())

    def close(self) -> None:
        self.conn.close()


def backup_target(target: Path) -> None:
    """--backup names a new file in a folder that exists (checked before planning, and again
    before the copy): one line otherwise."""
    if target.exists() or target.is_symlink():
        raise StatectlError(f"--backup {target} exists: not replaced", "name a new file")
    if not target.parent.is_dir():
        raise StatectlError(f"--backup {target}: no folder {target.parent}")


def apply_all(
    applier: Applier, plans: list[ThreadPlan], on_done: Callable[[Outcome], object] | None = None
) -> list[Outcome]:
    """Each plan carried out in its own transaction, in order. Ctrl+C: the current thread rolls
    back and is reported as such; KeyboardInterrupt then carries the outcomes so far
    (`Interrupted`)."""
    done: list[Outcome] = []
    for plan in plans:
        if not plan.drop:
            continue
        try:
            outcome = applier.apply(plan)
        except KeyboardInterrupt:
            finished = applier.finished
            if finished is not None and finished.thread_id == plan.thread_id:
                done.append(finished)  # (committed before Ctrl+C came)
            else:
                done.append(Outcome(plan.thread_id, len(plan.drop), status=ROLLED_BACK))
            raise Interrupted(done) from None
        except StatectlError as exc:  # (a write that failed: a full disk, a dropped connection)
            done.append(Outcome(plan.thread_id, len(plan.drop), status=FAILED, note=exc.message))
            raise Stopped(done, exc) from None
        done.append(outcome)
        if on_done is not None:
            on_done(outcome)
    return done


class Interrupted(KeyboardInterrupt):
    """Ctrl+C during `apply_all`: the outcomes so far (the last one rolled back)."""

    def __init__(self, outcomes: list[Outcome]) -> None:
        super().__init__()
        self.outcomes = outcomes


class Stopped(StatectlError):
    """A write failed during `apply_all`: the outcomes so far (the last one rolled back), and why."""

    def __init__(self, outcomes: list[Outcome], cause: StatectlError) -> None:
        super().__init__(
            f"{cause.message}; {sum(o.status in (PRUNED, CHANGED) for o in outcomes)} thread(s) were pruned "
            "before it, the one in progress was rolled back",
            cause.hint,
        )
        self.exit_code = cause.exit_code
        self.outcomes = outcomes
