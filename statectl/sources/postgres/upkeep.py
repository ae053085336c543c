"""What `size`, `prune` and `doctor` read of a PostgresSaver database: the tables' and threads'
bytes, and a batch of threads' rows per query (`sources.ahead`)."""

from __future__ import annotations

from typing import Any

import orjson

from statectl.errors import NotFoundError
from statectl.sources import base
from statectl.sources.postgres.session import Queries, envelope


class Upkeep(Queries):
    """`PostgresSource`'s reads for `size`, `prune` and `doctor`."""

    TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")

    def _state_size(self, alias: str = "c") -> str:
        """SQL: the stored bytes of checkpoint row `alias` with the blobs its versions name."""
        version = "" if self.shallow else " AND b.version = v.value"
        return (
            f"(pg_column_size({alias}.checkpoint) + coalesce((SELECT SUM(pg_column_size(b.blob)) FROM "
            f"checkpoint_blobs b, jsonb_each_text({alias}.checkpoint->'channel_versions') v WHERE "
            f"b.thread_id = {alias}.thread_id AND b.checkpoint_ns = {alias}.checkpoint_ns AND "
            f"b.channel = v.key{version}), 0))"
        )

    def storage(self, limit: int | None = 20) -> Any:
        """`statectl size`: each table (with its TOAST) and its indexes as Postgres reports them,
        and the largest threads by the stored bytes of their rows (`pg_column_size`: compressed,
        as stored)."""
        from statectl.sizes import Part, StoreSize, ThreadSize

        parts = []
        for table in self.TABLES:
            heap, index = self._query(
                "SELECT pg_table_size(%s::regclass), pg_indexes_size(%s::regclass)", (table, table)
            )[0]
            parts += [Part(table, heap, "rows and TOAST"), Part(f"{table} indexes", index)]
        rows = self._query(
            "WITH c AS (SELECT thread_id AS t, COUNT(*) AS n, COUNT(DISTINCT checkpoint_ns) AS ns, "
            "SUM(pg_column_size(checkpoint) + pg_column_size(metadata)) AS bytes FROM checkpoints GROUP BY thread_id), "
            "b AS (SELECT thread_id AS t, SUM(pg_column_size(blob)) AS bytes FROM checkpoint_blobs "
            "GROUP BY thread_id), "
            "w AS (SELECT thread_id AS t, SUM(pg_column_size(blob)) AS bytes FROM checkpoint_writes "
            "GROUP BY thread_id) "
            "SELECT c.t, c.n, c.ns, c.bytes + coalesce(b.bytes, 0) + coalesce(w.bytes, 0), count(*) OVER () FROM c "
            "LEFT JOIN b ON b.t = c.t LEFT JOIN w ON w.t = c.t ORDER BY 4 DESC, 1" + (" LIMIT %s" if limit else ""),
            (limit,) if limit else (),
        )  # (the largest `limit` threads and how many there are: not a row a thread into Python)
        shown = [ThreadSize(t, n, ns, int(b or 0)) for t, n, ns, b, _ in rows]
        count = rows[0][4] if rows else 0
        if shown:
            ends = {
                t: (first, last)
                for t, first, last in self._query(
                    f"SELECT k.t, (SELECT {self._state_size()} FROM checkpoints c WHERE c.thread_id = k.t AND "
                    f"c.checkpoint_ns = '' ORDER BY {self._id('c')} LIMIT 1), (SELECT {self._state_size()} FROM "
                    f"checkpoints c WHERE c.thread_id = k.t AND c.checkpoint_ns = '' ORDER BY {self._id('c')} DESC "
                    "LIMIT 1) FROM unnest(%s::text[]) AS k(t)",
                    ([t.thread_id for t in shown],),
                )
            }
            for t in shown:
                t.first, t.last = ends.get(t.thread_id, (None, None))
        dead, notes = self._dead_rows()
        total = sum(p.bytes for p in parts)
        if dead is not None:
            parts.append(Part("dead rows", dead, "what VACUUM gives back (estimated; inside the tables above)"))
        return StoreSize(self.label, total, parts, shown, count, notes)

    def _dead_rows(self) -> tuple[int | None, list[str]]:
        """What VACUUM would give back: each table's size times its share of dead rows, from
        the statistics Postgres keeps (`pg_stat_user_tables`; exact needs pgstattuple). Plain
        VACUUM makes that space reusable; only VACUUM FULL returns it to the file system."""
        rows = self._query(
            "SELECT relname, n_live_tup, n_dead_tup, pg_table_size(relid), last_autovacuum, last_vacuum "
            "FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = ANY(%s)",
            (list(self.TABLES),),
        )
        if not rows:
            return None, ["what VACUUM would give back is unknown: no statistics for these tables"]
        dead_bytes, dead_rows = 0, 0
        for _name, live, dead, size, _auto, _manual in rows:
            live, dead = int(live or 0), int(dead or 0)
            if live + dead:
                dead_bytes += int(size * dead / (live + dead))
            dead_rows += dead
        return dead_bytes, [
            f"dead rows: {dead_rows:,} (Postgres' statistics, pg_stat_user_tables); plain "
            "VACUUM makes their space reusable, VACUUM FULL returns it to the file system"
        ]

    def channel_storage(self, thread_id: str) -> Any:
        """A thread's bytes by channel: each channel version's blob is stored once (and small values
        inline in the checkpoint's JSONB, in every checkpoint)."""
        found = self.channel_storage_of([thread_id]).get(thread_id)
        if found is None:
            raise NotFoundError(f"no checkpoint in thread {thread_id!r}")
        return found

    def channel_storage_of(self, thread_ids: list[str]) -> dict[str, Any]:
        """`channel_storage` of many threads, in six queries, the rows left in the store (`doctor`
        reads the rows too: `rows_and_channels_of`); a thread with no root checkpoint is left out."""
        from statectl.sizes import ChannelSize

        ids = (list(thread_ids),)
        channels: dict[str, dict[str, ChannelSize]] = {t: {} for t in thread_ids}
        for t, ch, size, n in self._query(
            "SELECT thread_id, channel, SUM(pg_column_size(blob)), COUNT(*) FROM checkpoint_blobs WHERE "
            "thread_id = ANY(%s) AND checkpoint_ns = '' GROUP BY thread_id, channel",
            ids,
        ):
            channels[t][ch] = ChannelSize(ch, int(size or 0), 0, n)
        in_blobs = {t: sum(c.history for c in chs.values()) for t, chs in channels.items()}
        for t, ch, size, n in self._query(
            "SELECT c.thread_id, v.key, SUM(pg_column_size(v.value)), COUNT(*) FROM checkpoints c, "
            "jsonb_each(c.checkpoint->'channel_values') v WHERE c.thread_id = ANY(%s) AND c.checkpoint_ns = '' "
            "GROUP BY c.thread_id, v.key",
            ids,
        ):
            c = channels[t].setdefault(ch, ChannelSize(ch, 0, 0))
            c.history += int(size or 0)
            c.stored += n
        steps: dict[str, list[tuple[int | None, int]]] = {}
        for t, md_step, size in self._query(
            f"SELECT c.thread_id, (c.metadata->>'step')::int, {self._state_size()} FROM checkpoints c WHERE "
            f"c.thread_id = ANY(%s) AND c.checkpoint_ns = '' ORDER BY c.thread_id, {self._id('c')}",
            ids,
        ):
            steps.setdefault(t, []).append((md_step, int(size)))
        version = "" if self.shallow else " AND b.version = v.value"
        for t, ch, size in self._query(
            f"WITH c AS (SELECT DISTINCT ON (thread_id) thread_id, checkpoint FROM checkpoints WHERE thread_id = "
            f"ANY(%s) AND checkpoint_ns = '' ORDER BY thread_id, {self._id()} DESC) SELECT c.thread_id, v.key, "
            "coalesce(pg_column_size(c.checkpoint->'channel_values'->v.key), 0) + coalesce((SELECT "
            "SUM(pg_column_size(b.blob)) FROM checkpoint_blobs b WHERE b.thread_id = c.thread_id AND "
            f"b.checkpoint_ns = '' AND b.channel = v.key{version}), 0) "
            "FROM c, jsonb_each_text(c.checkpoint->'channel_versions') v",
            ids,
        ):
            channels[t].setdefault(ch, ChannelSize(ch, 0, 0)).latest = int(size or 0)
        for t, ch, size in self._query(
            "SELECT thread_id, channel, SUM(pg_column_size(blob)) FROM checkpoint_writes WHERE "
            "thread_id = ANY(%s) AND checkpoint_ns = '' GROUP BY thread_id, channel",
            ids,
        ):
            channels[t].setdefault(ch, ChannelSize(ch, 0, 0)).writes = int(size or 0)
        rows = dict(
            self._query(
                "SELECT thread_id, SUM(pg_column_size(checkpoint)) FROM checkpoints WHERE thread_id = ANY(%s) "
                "AND checkpoint_ns = '' GROUP BY thread_id",
                ids,
            )
        )
        return {t: _channels(t, channels[t], in_blobs[t], found, int(rows.get(t) or 0)) for t, found in steps.items()}

    def rows_and_channels_of(self, thread_ids: list[str]) -> dict[str, dict[str, Any]]:
        """`raw_checkpoints_of` and `channel_storage_of` of many threads (`doctor` reads both of
        every thread) in three queries instead of eight: the sizes are read beside the rows, and
        summed here as `channel_storage_of`'s queries sum them. Read -> thread -> its answer."""
        from statectl.sizes import ChannelSize

        if self.shallow or not thread_ids:
            return {
                "raw_checkpoints": self.raw_checkpoints_of(thread_ids),
                "channel_storage": self.channel_storage_of(thread_ids),
            }
        ids = (list(thread_ids),)
        blobs, held, sized = self._blobs_within(thread_ids)
        blob_size: dict[tuple[str, str, str], int] = {}  # (thread, channel, version) -> bytes, root only
        channels: dict[str, dict[str, ChannelSize]] = {t: {} for t in thread_ids}
        for t, ns, ch, ver, size in sized:
            if ns == "":
                blob_size[(t, ch, ver)] = blob_size.get((t, ch, ver), 0) + int(size or 0)
                c = channels[t].get(ch)
                if c is None:
                    channels[t][ch] = ChannelSize(ch, int(size or 0), 0, 1)
                else:
                    c.history += int(size or 0)
                    c.stored += 1
        in_blobs = {t: sum(c.history for c in chs.values()) for t, chs in channels.items()}
        raws: dict[str, dict[tuple[str, str], tuple[str, bytes]]] = {t: {} for t in thread_ids}
        steps: dict[str, list[tuple[int | None, int]]] = {}
        rows: dict[str, int] = {}
        newest: dict[str, tuple[dict, dict]] = {}  # thread -> (its newest root checkpoint's versions, inline sizes)
        values = "CASE jsonb_typeof(checkpoint->'channel_values') WHEN 'object' THEN checkpoint->'channel_values' END"
        for t, ns, cid, text, size, step, inline, is_newest, latest in self._query(
            # (each size as `channel_storage_of`'s queries take it: a value from jsonb_each for the
            # history, a value taken out with -> for the newest checkpoint's)
            "SELECT thread_id, checkpoint_ns, checkpoint_id, checkpoint::text, pg_column_size(checkpoint), "
            "CASE WHEN root THEN metadata->>'step' END, CASE WHEN root THEN (SELECT jsonb_object_agg(key, "
            f"pg_column_size(value)) FROM jsonb_each({values}))::text END, root AND newest, "
            f"CASE WHEN root AND newest THEN (SELECT jsonb_object_agg(key, pg_column_size(({values})->key)) "
            f"FROM jsonb_object_keys({values}) AS k(key))::text END "
            "FROM (SELECT thread_id, checkpoint_ns, checkpoint_id, checkpoint, metadata, checkpoint_ns = '' AS root, "
            "checkpoint_id = max(checkpoint_id) OVER (PARTITION BY thread_id, checkpoint_ns) AS newest "
            "FROM checkpoints WHERE thread_id = ANY(%s)) c ORDER BY thread_id, checkpoint_id",
            ids,
        ):
            versions, raw = _raw(blobs, t, ns, text, whole=t in held)
            if raw is not None:
                raws[t][(ns, cid)] = raw
            if ns != "":
                continue
            for ch, n in (orjson.loads(inline) if inline else {}).items():
                c = channels[t].setdefault(ch, ChannelSize(ch, 0, 0))
                c.history += int(n or 0)
                c.stored += 1
            texts = _version_texts(versions)
            steps.setdefault(t, []).append(
                (_int(step), int(size) + sum(blob_size.get((t, ch, ver), 0) for ch, ver in texts.items()))
            )
            rows[t] = rows.get(t, 0) + int(size)
            if is_newest:
                newest[t] = (texts, orjson.loads(latest) if latest else {})
        for t, (texts, sizes) in newest.items():
            for ch, ver in texts.items():
                found = sizes.get(ch) or 0
                channels[t].setdefault(ch, ChannelSize(ch, 0, 0)).latest = int(found) + blob_size.get((t, ch, ver), 0)
        for t, ch, size in self._query(
            "SELECT thread_id, channel, SUM(pg_column_size(blob)) FROM checkpoint_writes WHERE "
            "thread_id = ANY(%s) AND checkpoint_ns = '' GROUP BY thread_id, channel",
            ids,
        ):
            channels[t].setdefault(ch, ChannelSize(ch, 0, 0)).writes = int(size or 0)
        return {
            "raw_checkpoints": raws,
            "channel_storage": {
                t: _channels(t, channels[t], in_blobs[t], found, rows.get(t, 0)) for t, found in steps.items()
            },
        }

    def raw_checkpoints(self, thread_id: str) -> dict[tuple[str, str], tuple[str, bytes]]:
        """Every checkpoint of a thread as `raw_checkpoint` gives it, in two queries (`doctor`
        reads a whole thread: one round trip per checkpoint costs more than the rows)."""
        return self.raw_checkpoints_of([thread_id]).get(thread_id, {})

    def raw_checkpoints_of(self, thread_ids: list[str]) -> dict[str, dict[tuple[str, str], tuple[str, bytes]]]:
        """`raw_checkpoints` of many threads, in two queries (`doctor` reads a batch at a time)."""
        if self.shallow:
            return {}
        blobs, held, _sized = self._blobs_within(thread_ids)
        out: dict[str, dict[tuple[str, str], tuple[str, bytes]]] = {t: {} for t in thread_ids}
        for t, ns, cid, text in self._query(
            "SELECT thread_id, checkpoint_ns, checkpoint_id, checkpoint::text FROM checkpoints "
            "WHERE thread_id = ANY(%s)",
            (list(held),),
        ):
            raw = _raw(blobs, t, ns, text)[1]
            if raw is not None:
                out[t][(ns, cid)] = raw
        return out

    def _blobs_within(
        self, thread_ids: list[str]
    ) -> tuple[dict[tuple[str, str, str, str], tuple[str, Any]], set[str], list]:
        """A batch's blob rows by (thread, namespace, channel, version) for the threads whose blobs
        fit `RAW_BYTES` together (`_WITHIN`), those threads, and every row's
        (thread, namespace, channel, version, stored size)."""
        blobs: dict[tuple[str, str, str, str], tuple[str, Any]] = {}
        held = set(thread_ids)
        sized = []
        for t, ns, ch, ver, type_, blob, size, whole in self._query(
            _WITHIN, (list(thread_ids), base.RAW_BYTES, base.RAW_BYTES)
        ):
            if whole:
                blobs[(t, ns, ch, ver)] = (type_, blob)
            else:
                held.discard(t)
            sized.append((t, ns, ch, ver, size))
        return blobs, held, sized

    def channel_keys(self, thread_id: str) -> dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]]:
        """`prune`'s plan of a thread with delta channels, one query: (namespace, checkpoint id) ->
        (the channels its JSONB `channel_values` holds: a delta channel there is stored whole, its
        snapshot marked `true`; the channels it has a version for)."""
        return self.channel_keys_of([thread_id])[thread_id]

    def channel_keys_of(
        self, thread_ids: list[str]
    ) -> dict[str, dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]]]:
        """`channel_keys` of many threads, in one query."""
        out: dict[str, dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]]] = {t: {} for t in thread_ids}
        if not thread_ids:
            return out
        for t, ns, cid, values, versions in self._query(
            f"SELECT thread_id, checkpoint_ns, {self._id()}, ARRAY(SELECT jsonb_object_keys(CASE jsonb_typeof("
            "checkpoint->'channel_values') WHEN 'object' THEN checkpoint->'channel_values' ELSE '{}' END)), "
            "ARRAY(SELECT jsonb_object_keys(CASE jsonb_typeof(checkpoint->'channel_versions') WHEN 'object' "
            "THEN checkpoint->'channel_versions' ELSE '{}' END)) FROM checkpoints WHERE thread_id = ANY(%s)",
            (list(thread_ids),),
        ):
            out[t][(ns, cid)] = (frozenset(values), frozenset(versions))
        return out

    def write_tasks(self, thread_id: str) -> dict[tuple[str, str], set[str]]:
        """(namespace, checkpoint id) -> the tasks that wrote on it (`prune` finds the checkpoint
        whose task ran a subgraph), one query, no blob read."""
        return self.write_tasks_of([thread_id])[thread_id]

    def write_tasks_of(self, thread_ids: list[str]) -> dict[str, dict[tuple[str, str], set[str]]]:
        """`write_tasks` of many threads, in one query."""
        out: dict[str, dict[tuple[str, str], set[str]]] = {t: {} for t in thread_ids}
        for t, ns, cid, task in self._query(
            "SELECT DISTINCT thread_id, checkpoint_ns, checkpoint_id, task_id FROM checkpoint_writes "
            "WHERE thread_id = ANY(%s)",
            (list(thread_ids),),
        ):
            out[t].setdefault((ns, cid), set()).add(task)
        return out

    UUID6 = r"^[0-9a-f]{8}-[0-9a-f]{4}-6[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$"
    """A LangGraph checkpoint id (lowercase UUIDv6): its time sorts as the string does."""

    def simple_plans_of(
        self, thread_ids: list[str], keep_last: int, newer: tuple[str, str] | None
    ) -> dict[str, tuple[int, list[tuple[int, int]], list[str], int] | None]:
        """`prune`'s plan of each thread that needs no more than its checkpoints' ids and parents,
        in one query: thread -> (checkpoints, [(why kept, how many)] in order of the newest
        checkpoint kept for it, the ids that go (newest first), their bytes as `drop_bytes`
        counts them); None for a thread that must be planned by `core.prune` (a subgraph, delta
        channels, a checkpoint before v4 whose Sends are its parent's writes, an id that is not
        a UUIDv6, or one within `newer`'s margin of the cutoff).
        Why kept: 0 the newest, 1 `--keep-last`, 2 newer than `--older-than` (ids at or after
        `newer[1]`; those in `newer` are too close to tell), 3 a branch head, 4 a fork point:
        `core.prune`'s rules, in its order, for a thread of one namespace."""
        if self.shallow or not thread_ids:
            return {}
        low, high = newer if newer is not None else (None, None)
        rows = self._query(
            "WITH c AS (SELECT thread_id AS t, checkpoint_ns AS ns, checkpoint_id AS id, parent_checkpoint_id AS pid, "
            "row_number() OVER (PARTITION BY thread_id, checkpoint_ns ORDER BY checkpoint_id DESC) AS rn, "
            "coalesce(jsonb_typeof(metadata->'counters_since_delta_snapshot') = 'object', false) "
            "OR coalesce(checkpoint->'v' IN ('1'::jsonb, '2'::jsonb, '3'::jsonb), false) AS delta, "
            "pg_column_size(checkpoint) + pg_column_size(metadata) AS b FROM checkpoints "
            "WHERE thread_id = ANY(%(ids)s)), "
            "kids AS (SELECT t, ns, pid, count(*) AS n FROM c WHERE pid IS NOT NULL GROUP BY t, ns, pid), "
            "k AS (SELECT c.*, CASE WHEN rn = 1 THEN 0 WHEN rn <= %(keep)s THEN 1 "
            'WHEN %(high)s::text IS NOT NULL AND c.id COLLATE "C" >= %(high)s THEN 2 WHEN kids.n IS NULL THEN 3 '
            "WHEN kids.n > 1 THEN 4 END AS why FROM c LEFT JOIN kids ON kids.t = c.t AND kids.ns = c.ns "
            "AND kids.pid = c.id), "
            "simple AS (SELECT t FROM c GROUP BY t HAVING bool_and(ns = '') AND NOT bool_or(delta) AND "
            '(%(low)s::text IS NULL OR bool_and(id ~ %(uuid6)s AND NOT (id COLLATE "C" >= %(low)s AND '
            'id COLLATE "C" < %(high)s)))), '
            "w AS (SELECT k.t, sum(length(w.blob)) AS b FROM k JOIN checkpoint_writes w ON w.thread_id = k.t AND "
            "w.checkpoint_ns = k.ns AND w.checkpoint_id = k.id WHERE k.why IS NULL AND k.t IN (SELECT t FROM simple) "
            "GROUP BY k.t), "
            "r AS (SELECT t, why, count(*) AS n, min(rn) AS first FROM k WHERE why IS NOT NULL GROUP BY t, why), "
            "rs AS (SELECT t, array_agg(ARRAY[why, n] ORDER BY first) AS why FROM r GROUP BY t), "
            "a AS (SELECT t, count(*) AS n, coalesce(array_agg(id ORDER BY id DESC) FILTER (WHERE why IS NULL), '{}') "
            "AS drop, coalesce(sum(b) FILTER (WHERE why IS NULL), 0) AS b FROM k GROUP BY t) "
            "SELECT a.t, a.n, rs.why, a.drop, a.b + coalesce(w.b, 0) FROM simple s JOIN a ON a.t = s.t "
            "JOIN rs ON rs.t = s.t LEFT JOIN w ON w.t = s.t",
            {"ids": list(thread_ids), "keep": keep_last, "low": low, "high": high, "uuid6": self.UUID6},
        )
        out: dict[str, tuple[int, list[tuple[int, int]], list[str], int] | None] = dict.fromkeys(thread_ids)
        for t, n, why, drop, size in rows:
            out[t] = (int(n), [(int(a), int(b)) for a, b in why], list(drop), int(size))
        return out

    def drop_bytes(self, thread_id: str, drop: list[tuple[str, str]]) -> int:
        """`prune`'s plan: the bytes of these checkpoints' rows (JSONB and metadata) and their
        writes, in one query (blob versions are shared between checkpoints: not counted)."""
        if not drop:
            return 0
        ns, ids = [d[0] for d in drop], [d[1] for d in drop]
        return int(
            self._query(
                "SELECT (SELECT coalesce(sum(pg_column_size(c.checkpoint) + pg_column_size(c.metadata)), 0) "
                "FROM checkpoints c JOIN unnest(%s::text[], %s::text[]) AS d(ns, id) ON c.thread_id = %s AND "
                "c.checkpoint_ns = d.ns AND c.checkpoint_id = d.id) + (SELECT coalesce(sum(length(w.blob)), 0) "
                "FROM checkpoint_writes w JOIN unnest(%s::text[], %s::text[]) AS d(ns, id) ON w.thread_id = %s "
                "AND w.checkpoint_ns = d.ns AND w.checkpoint_id = d.id)",
                (ns, ids, thread_id, ns, ids, thread_id),
            )[0][0]
        )

    def drop_bytes_of(self, drops: list[tuple[str, list[tuple[str, str]]]]) -> dict[str, int]:
        """`drop_bytes` of many threads' plans in one query: thread -> bytes."""
        keys = [(t, ns, cid) for t, drop in drops for ns, cid in drop]
        if not keys:
            return {}
        ts, nss, ids = ([k[i] for k in keys] for i in range(3))
        rows = self._query(
            "WITH d(t, ns, id) AS (SELECT * FROM unnest(%s::text[], %s::text[], %s::text[])) "
            "SELECT t, sum(n) FROM (SELECT d.t, pg_column_size(c.checkpoint) + pg_column_size(c.metadata) AS n "
            "FROM d JOIN checkpoints c ON c.thread_id = d.t AND c.checkpoint_ns = d.ns AND c.checkpoint_id = d.id "
            "UNION ALL SELECT d.t, length(w.blob) FROM d JOIN checkpoint_writes w ON w.thread_id = d.t AND "
            "w.checkpoint_ns = d.ns AND w.checkpoint_id = d.id) x GROUP BY t",
            (ts, nss, ids),
        )
        return {t: int(n or 0) for t, n in rows}

    def orphans(self, limit: int = 1000) -> dict[str, list[tuple]]:
        """`doctor`: writes whose checkpoint is not in the table, per checkpoint they point to,
        (thread, namespace, checkpoint, rows, bytes, task ids); blob versions no checkpoint names,
        by channel, (thread, namespace, channel, versions, bytes, the first VERSIONS_LISTED
        (version, bytes)); and versions a checkpoint names whose value is gone, (thread,
        namespace, checkpoint, channel, whether it is a delta channel's snapshot).

        A version with neither a blob nor an inline value is how PostgresSaver stores a channel
        that holds nothing: one emptied by the step (an EphemeralValue, a Topic that does not
        accumulate, LangGraph's `__start__` and `branch:to:x`), and a DeltaChannel between its
        snapshots (`counters_since_delta_snapshot` names it: rebuilt from the writes). It is gone
        only where a task wrote the channel in the step that made the version (a write at the
        parent of a checkpoint holding it) and the channel is not a delta one: LangGraph reads it
        empty where it held what the task wrote (`__pregel_tasks`: the Sends the next step runs).
        A delta channel's snapshot is its JSONB `true` marker and a blob: without the blob,
        LangGraph reads `True` as the channel's value. Each checkpoint is joined to its parent
        alone (by key): no query here scans a thread once per checkpoint."""
        if self.shallow:
            return {}
        writes = self._query(
            "SELECT w.thread_id, w.checkpoint_ns, w.checkpoint_id, count(*), "
            "coalesce(sum(length(w.blob)), 0)::bigint, array_agg(DISTINCT w.task_id) FROM checkpoint_writes w "
            "WHERE NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = w.thread_id AND "
            "c.checkpoint_ns = w.checkpoint_ns AND c.checkpoint_id = w.checkpoint_id) "
            "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 LIMIT %s",
            (limit,),
        )
        blobs = self._query(
            "SELECT b.thread_id, b.checkpoint_ns, b.channel, count(*), coalesce(sum(length(b.blob)), 0)::bigint, "
            "(array_agg(b.version ORDER BY b.version))[1:%s], "
            "(array_agg(coalesce(length(b.blob), 0) ORDER BY b.version))[1:%s] "
            "FROM checkpoint_blobs b WHERE NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id "
            "AND c.checkpoint_ns = b.checkpoint_ns AND c.checkpoint->'channel_versions'->>b.channel = b.version) "
            "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 LIMIT %s",
            (VERSIONS_LISTED, VERSIONS_LISTED, limit),
        )
        missing = self._query(
            # versions named with neither a blob nor an inline value, outside delta channels, each
            # with whether its checkpoint made it (the parent names another) and a task wrote the
            # channel in that step (a write at the parent): a version is missing where the
            # checkpoint that made it was written, and then at every checkpoint that names it
            "WITH cand AS (SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, v.key, v.value, "
            "(p.checkpoint_id IS NULL OR (p.checkpoint->'channel_versions'->>v.key) IS DISTINCT FROM v.value) "
            "AND EXISTS (SELECT 1 FROM checkpoint_writes w WHERE w.thread_id = c.thread_id AND w.checkpoint_ns = "
            "c.checkpoint_ns AND w.checkpoint_id = c.parent_checkpoint_id AND w.channel = v.key) AS written "
            "FROM checkpoints c CROSS JOIN LATERAL jsonb_each_text(CASE "
            "jsonb_typeof(c.checkpoint->'channel_versions') WHEN 'object' THEN c.checkpoint->'channel_versions' END) "
            "AS v LEFT JOIN checkpoints p ON p.thread_id = c.thread_id AND p.checkpoint_ns = c.checkpoint_ns AND "
            "p.checkpoint_id = c.parent_checkpoint_id "
            "WHERE (v.key NOT LIKE '\\_\\_%%' OR v.key = '__pregel_tasks') AND v.key NOT LIKE '%%:%%' "
            "AND NOT (coalesce(c.checkpoint->'channel_values', '{}') ? v.key) "
            "AND NOT (CASE jsonb_typeof(c.metadata->'counters_since_delta_snapshot') WHEN 'object' THEN "
            "c.metadata->'counters_since_delta_snapshot' ? v.key ELSE false END) "
            "AND NOT EXISTS (SELECT 1 FROM checkpoint_blobs b WHERE b.thread_id = c.thread_id "
            "AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = v.key AND b.version = v.value)) "
            "SELECT thread_id, checkpoint_ns, checkpoint_id, key, false FROM cand WHERE (thread_id, checkpoint_ns, "
            "key, value) IN (SELECT thread_id, checkpoint_ns, key, value FROM cand WHERE written) "
            # a delta snapshot: the inline `true` marker of a channel its parent's metadata counts
            # (a bool channel's `true` has no counter)
            "UNION ALL SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, v.key, true FROM checkpoints c "
            "CROSS JOIN LATERAL jsonb_each_text(CASE jsonb_typeof(c.checkpoint->'channel_versions') WHEN 'object' "
            "THEN c.checkpoint->'channel_versions' END) AS v JOIN checkpoints p ON p.thread_id = c.thread_id AND "
            "p.checkpoint_ns = c.checkpoint_ns AND p.checkpoint_id = c.parent_checkpoint_id "
            "WHERE c.checkpoint->'channel_values'->v.key = 'true'::jsonb "
            "AND jsonb_typeof(p.metadata->'counters_since_delta_snapshot') = 'object' "
            "AND p.metadata->'counters_since_delta_snapshot' ? v.key AND NOT EXISTS (SELECT 1 FROM checkpoint_blobs b "
            "WHERE b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = v.key AND "
            "b.version = v.value) "
            "ORDER BY 1, 2, 3, 4 LIMIT %s",
            (limit,),
        )
        return {
            "writes": [tuple(r) for r in writes],
            "blobs": [(t, ns, ch, n, size, list(zip(vs, bs, strict=True))) for t, ns, ch, n, size, vs, bs in blobs],
            "missing": [tuple(r) for r in missing],
        }


VERSIONS_LISTED = 5
"""Orphan blob versions listed by version per channel (all are counted)."""

_WITHIN = (
    "WITH b AS (SELECT thread_id, checkpoint_ns, channel, version, type, blob FROM checkpoint_blobs "
    "WHERE thread_id = ANY(%s)), "
    "s AS (SELECT thread_id, SUM(octet_length(blob)) AS n FROM b GROUP BY thread_id), "
    "k AS (SELECT thread_id, SUM(n) OVER (ORDER BY n, thread_id) AS upto FROM s) "
    "SELECT b.thread_id, checkpoint_ns, channel, version, type, CASE WHEN upto <= %s THEN blob END, "
    "pg_column_size(blob), COALESCE(upto <= %s, true) FROM b LEFT JOIN k USING (thread_id)"
)
"""A batch's blob rows, with the bytes of the threads whose blobs together fit `RAW_BYTES`, the
smallest threads first (sizes from the TOAST headers: `octet_length` reads no value), and
whether they are there. Each checkpoint of the others is read by itself (`raw_checkpoint`): a
thread whose every version of `messages` holds its whole transcript is never held at once."""


def _raw(
    blobs: dict[tuple[str, str, str, str], tuple[str, Any]], t: str, ns: str, text: str, whole: bool = True
) -> tuple[Any, Any]:
    """A checkpoint row's channel versions and the envelope `raw_checkpoint` gives it, with the
    blob rows (by thread, namespace, channel, version) its versions name; (None, None) where its
    JSONB is not JSON or names no versions (left to `raw_checkpoint`, which says what is wrong).
    Not `whole`: the versions alone (its blobs were not read: `_WITHIN`)."""
    try:
        jsonb = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None, None
    versions = jsonb.get("channel_versions") if isinstance(jsonb, dict) else None
    if not isinstance(versions, dict):
        return None, None
    if not whole:
        return versions, None
    named = ((ch, ver, blobs.get((t, ns, str(ch), str(ver)))) for ch, ver in versions.items())
    # (the version as the blob table keeps it, text, as `raw_checkpoint` gives it: LangGraph.js
    # writes an integer in the JSONB)
    return versions, envelope(jsonb, [(ch, str(ver), *found) for ch, ver, found in named if found is not None])


def _channels(t: str, channels: dict[str, Any], in_blobs: int, steps: list, rows: int) -> Any:
    """A thread's `ThreadChannels` from its sums (`channel_storage_of`)."""
    from statectl.sizes import ThreadChannels

    ordered = sorted(channels.values(), key=lambda c: (-(c.history + c.writes), c.channel))
    inline = sum(c.history for c in ordered) - in_blobs  # (values kept in the checkpoints' JSONB)
    return ThreadChannels(
        t,
        len(steps),
        ordered,
        steps,
        "each channel version is stored once (PostgresSaver): history counts each "
        "version; the size per step counts the values a checkpoint names",
        max(0, rows - inline),
    )


def _version_texts(versions: Any) -> dict[str, str]:
    """A checkpoint's channel versions as `jsonb_each_text` gives them (how its blobs are matched
    in SQL): a JSON null matches nothing."""
    if not isinstance(versions, dict):
        return {}
    out = {}
    for ch, ver in versions.items():
        if ver is None:
            continue
        out[str(ch)] = ("true" if ver else "false") if isinstance(ver, bool) else str(ver)
    return out


def _int(text: str | None) -> int | None:
    """`(metadata->>'step')::int`, None where that would fail."""
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
