"""`prune --apply` on PostgresSaver's tables (`project.prune` says how a thread is pruned)."""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING, cast

from statectl.core.prune import ThreadPlan, by_ns
from statectl.core.store_kinds import PostgresKind
from statectl.errors import SourceError, StatectlError
from statectl.project.prune import CHANGED, FAILED, LOCKED, Applier, Outcome, Vacuumed, batches

if TYPE_CHECKING:
    from statectl.core.reader import StoreReader
    from statectl.sources.postgres.source import PostgresSource

GONE_BLOBS = (
    "DELETE FROM checkpoint_blobs b USING unnest(%s::text[], %s::text[], %s::text[]) AS g(ns, channel, version) "
    "WHERE b.thread_id = %s AND b.checkpoint_ns = g.ns AND b.channel = g.channel AND b.version = g.version "
    "AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id AND "
    "c.checkpoint_ns = b.checkpoint_ns AND c.checkpoint->'channel_versions'->>b.channel = b.version)"
)
"""The blob versions that dropped checkpoints named and no remaining checkpoint names. Only
those: a blob no checkpoint names may be one a run has just written, its checkpoint row not yet
committed (PostgresSaver writes blobs first, without a transaction around both)."""


class PostgresApplier(Applier):
    kind = PostgresKind.kind

    def __init__(self, store: StoreReader, keep_last: int, older_than: datetime | None, batch: int) -> None:
        super().__init__(store, keep_last, older_than, batch)
        source = cast("PostgresSource", store.source)
        self.source = source
        self.conn = source.connect_writable()
        psycopg = source.psycopg
        self.errors = psycopg.errors
        try:
            ro, may = self.conn.execute(
                "SELECT current_setting('transaction_read_only') = 'on', "
                "has_table_privilege('checkpoints', 'DELETE') AND has_table_privilege('checkpoint_writes', 'DELETE') "
                "AND has_table_privilege('checkpoint_blobs', 'DELETE')"
            ).fetchone()
            self.conn.rollback()
        except psycopg.Error as exc:
            self.conn.close()
            raise SourceError(f"cannot write to {source.label}: {source.clean(exc)}") from None
        if ro:
            self.conn.close()
            raise StatectlError(f"{source.label} is read-only (a standby, or default_transaction_read_only)")
        if not may:
            self.conn.close()
            raise StatectlError(
                f"{source.label}: this role may not DELETE from the checkpoint tables",
                "run prune --apply as the role your app's PostgresSaver uses",
            )
        self.conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        self.reader = source.over(self.conn)

    def _delete(self, thread_id: str, drop: list[tuple[str, str]]) -> int:
        gone: set[tuple[str, str, str]] = set()
        for ns, ids in by_ns(drop).items():
            for chunk in batches(ids, self.batch):
                args = (thread_id, ns, chunk)
                self.conn.execute(
                    "DELETE FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_ns = %s "
                    "AND checkpoint_id = ANY(%s)",
                    args,
                )
                rows = self.conn.execute(
                    "WITH d AS (DELETE FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = %s AND "
                    "checkpoint_id = ANY(%s) RETURNING checkpoint_ns, checkpoint->'channel_versions' AS v) "
                    "SELECT DISTINCT d.checkpoint_ns, e.key, e.value FROM d, jsonb_each_text(CASE "
                    "jsonb_typeof(d.v) WHEN 'object' THEN d.v END) AS e",
                    args,
                ).fetchall()
                gone.update((n, ch, str(v)) for n, ch, v in rows)
        if not gone:
            return 0
        cols = [list(x) for x in zip(*sorted(gone), strict=True)]
        return self.conn.execute(GONE_BLOBS, (*cols, thread_id)).rowcount

    def apply(self, plan: ThreadPlan) -> Outcome:
        out = Outcome(plan.thread_id, len(plan.drop))
        e = self.errors
        self.finished = None
        began = time.perf_counter()
        try:
            with self.conn.transaction():
                fresh, changed = self.replan(self.reader, plan)
                out.bytes = fresh.bytes
                out.blobs = self._delete(plan.thread_id, fresh.drop)
            self._done(out, fresh, changed, began)
        except (e.LockNotAvailable, e.SerializationFailure, e.DeadlockDetected) as exc:
            out.bytes, out.blobs = 0, 0
            locked = isinstance(exc, e.LockNotAvailable)
            out.status = LOCKED if locked else CHANGED
            out.note = (
                f"rows locked by another session past {self.source.waits['lock']:g} s"
                if locked
                else "another session changed its rows meanwhile: nothing deleted"
            )
            return out
        except self.source.psycopg.Error as exc:
            raise SourceError(f"cannot write to {self.source.label}: {self.source.clean(exc)}") from None
        except SourceError as exc:  # (the fresh read, which rolled the transaction back)
            out.status, out.note, out.bytes = FAILED, exc.message, 0
            return out
        return out

    def _bytes(self) -> int:
        return self.conn.execute(
            "SELECT sum(pg_total_relation_size(t::regclass))::bigint FROM unnest(%s::text[]) AS t",
            (["checkpoints", "checkpoint_blobs", "checkpoint_writes"],),
        ).fetchone()[0]

    def vacuum(self) -> Vacuumed:
        self.conn.rollback()
        before = self._bytes()
        self.conn.rollback()
        self.conn.autocommit = True  # (VACUUM runs outside a transaction)
        try:
            self.conn.execute("VACUUM (ANALYZE) checkpoints, checkpoint_blobs, checkpoint_writes")
        except self.source.psycopg.Error as exc:
            raise StatectlError(
                f"VACUUM failed ({self.source.clean(exc)}); the pruning is done and kept",
                "run VACUUM as the tables' owner",
            ) from None
        finally:
            self.conn.autocommit = False
        after = self._bytes()
        self.conn.rollback()
        return Vacuumed(
            before,
            after,
            "VACUUM makes the space reusable by new rows; the files shrink only with VACUUM FULL, "
            "which locks the tables while it runs",
        )

    def close(self) -> None:
        try:
            self.conn.rollback()
            self.conn.close()
        except self.source.psycopg.Error:  # (closing: nothing more to say)
            pass
