"""Threads of a PostgresSaver database: pages by id or by newest activity, statuses, and the
filters narrowed in SQL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from statectl.errors import NotFoundError
from statectl.model import ThreadPage, ThreadSummary
from statectl.sources.base import chunks_after, like, metadata_of
from statectl.sources.postgres.session import Queries
from statectl.sources.status import idle, thread_summary


def may_plan_tasks(shallow: bool = False) -> str:
    """SQL on a checkpoints row `c`: it may plan tasks (`status.plans_tasks` of it may be true):
    a Send channel, or a trigger channel whose version its node has not seen, that holds a value
    (inline in the JSONB, or a blob that is not `empty`: LangGraph empties a trigger channel as
    its node reads it, under a new version, so a version unseen alone says nothing). A superset,
    to narrow `interrupted` to the threads that may wait at a breakpoint before their status is
    computed. `shallow`: a ShallowPostgresSaver's blobs, one per channel."""
    version = "" if shallow else " AND b.version = v.ver"
    return (
        "EXISTS (SELECT 1 FROM jsonb_each_text(CASE jsonb_typeof(c.checkpoint->'channel_versions') WHEN 'object' "
        "THEN c.checkpoint->'channel_versions' END) AS v(ch, ver) WHERE (v.ch = '__pregel_tasks' OR ((v.ch = "
        "'__start__' OR v.ch LIKE 'branch:%%' OR v.ch LIKE 'join:%%') AND v.ver IS DISTINCT FROM "
        "(c.checkpoint->'versions_seen'->(CASE WHEN v.ch = '__start__' THEN '__start__' ELSE "
        "regexp_replace(v.ch, '^.*:', '') END)->>v.ch))) AND (jsonb_typeof(c.checkpoint->'channel_values') = "
        "'object' AND c.checkpoint->'channel_values' ? v.ch OR EXISTS (SELECT 1 FROM checkpoint_blobs b WHERE "
        f"b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = v.ch{version} AND "
        "b.type <> 'empty')))"
    )


PULL = "~__pregel_pull, "
"""How the task path of a node's own task starts (then the node's name); a Send's starts
`~__pregel_push, `."""


class Listing(Queries):
    """`threads` and its filters (`PostgresSource`'s)."""

    def default_sort(self) -> str:
        return "id"

    # -- Source ---------------------------------------------------------------------------------
    def threads(
        self,
        limit: int | None = None,
        after: str | None = None,
        sort: str | None = None,
        match: str | None = None,
        status: frozenset[str] | None = None,
    ) -> ThreadPage:
        sort = sort or self.default_sort()
        pattern = like(match) if match else None
        if status:
            return self._with_status(limit, after, sort, pattern, status)
        ids, total, more = self._ids(limit, after, sort, pattern)
        out = ThreadPage(self._summaries(ids))
        out.total, out.more = total, more
        return out

    def _ids(
        self, limit: int | None, after: str | None, sort: str, pattern: str | None
    ) -> tuple[list[str], int | None, bool]:
        """A page of thread ids in `sort` order: (ids, total if known, more follow)."""
        if sort == "recent":
            past = self._past(after, pattern)
            if not limit:
                ids = [t for chunk in self._recent(pattern, past) for t in chunk]
                return ids, len(ids) if past is None else None, False
            rows = self._query(
                f"WITH l AS ({self._newest(pattern)}) SELECT t, (SELECT count(*) FROM l) FROM l "
                f"{self._after_sql(past)} ORDER BY newest DESC, t DESC LIMIT %(n)s",
                {"pattern": pattern, **self._past_args(past), "n": limit + 1},
            )
            ids = [t for t, _ in rows]
            total = (
                rows[0][1]
                if rows
                else self._query(f"SELECT count(*) FROM ({self._newest(pattern)}) l", {"pattern": pattern})[0][0]
            )
            return ids[:limit], total, len(ids) > limit
        self._known(after)
        if pattern:  # a substring cannot use the index: one scan, distinct ids in order
            ids = [
                r[0]
                for r in self._query(
                    "SELECT DISTINCT thread_id FROM checkpoints WHERE thread_id ILIKE %s AND "
                    "(%s::text IS NULL OR thread_id > %s) ORDER BY thread_id" + (" LIMIT %s" if limit else ""),
                    (pattern, after, after, *((limit + 1,) if limit else ())),
                )
            ]
        else:
            n = (limit or 0) + 1 if limit else None
            ids = [
                r[0]
                for r in self._query(
                    "WITH RECURSIVE t(id) AS ("
                    " (SELECT thread_id FROM checkpoints WHERE thread_id > %(after)s ORDER BY thread_id LIMIT 1)"
                    " UNION ALL SELECT (SELECT thread_id FROM checkpoints WHERE thread_id > t.id "
                    "  ORDER BY thread_id LIMIT 1) FROM t WHERE t.id IS NOT NULL"
                    ") SELECT id FROM t WHERE id IS NOT NULL" + (" LIMIT %(n)s" if n else ""),
                    {"after": after if after is not None else "", "n": n},
                )
            ]
            if after is None and self._query("SELECT 1 FROM checkpoints WHERE thread_id = '' LIMIT 1"):
                ids.insert(0, "")  # '' sorts first and is not > ''
        more = limit is not None and 0 < limit < len(ids)
        # (a first page that holds every thread counts them; else counting would read the whole index)
        return (ids[:limit] if limit else ids), None if more or after is not None else len(ids), more

    def _known(self, after: str | None) -> None:
        """An `after` that names no thread is an error (a page after it would be a guess)."""
        if after is not None and not self._query("SELECT 1 FROM checkpoints WHERE thread_id = %s LIMIT 1", (after,)):
            raise NotFoundError(f"no thread {after!r} to page after", "pass a thread id from the last page")

    def _newest(self, pattern: str | None) -> str:
        """SQL: each thread `t` (matching the argument `pattern`, if any) and its newest checkpoint id `newest`."""
        where = "WHERE thread_id ILIKE %(pattern)s" if pattern else ""
        return f"SELECT thread_id AS t, max({self._id()}) AS newest FROM checkpoints {where} GROUP BY thread_id"

    def _past(self, after: str | None, pattern: str | None) -> tuple[str, str] | None:
        """(newest checkpoint id, thread id) of the thread `after` (which must exist and match
        `pattern`): where a page newest first goes on from. One search of the index."""
        if after is None:
            return None
        where = " AND thread_id ILIKE %(pattern)s" if pattern else ""
        found = self._query(
            f"SELECT max({self._id()}) FROM checkpoints WHERE thread_id = %(after)s{where}",
            {"after": after, "pattern": pattern},
        )
        if not found or found[0][0] is None:
            raise NotFoundError(f"no thread {after!r} to page after", "pass a thread id from the last page")
        return found[0][0], after

    @staticmethod
    def _after_sql(past: tuple[str, str] | None) -> str:
        """SQL: the threads after `past` newest first (as ORDER BY newest DESC, t DESC orders them)."""
        return "" if past is None else "WHERE (newest, t) < (%(past_id)s::text, %(past_t)s::text)"

    @staticmethod
    def _past_args(past: tuple[str, str] | None) -> dict[str, str | None]:
        return {"past_id": past[0] if past else None, "past_t": past[1] if past else None}

    def _recent(self, pattern: str | None, past: tuple[str, str] | None = None) -> Iterator[list[str]]:
        """Every thread id (matching `pattern`) newest first, after `past` (`_past`), STATUS_BATCH
        at a time: ordered by Postgres and kept there (a cursor WITH HOLD: the order is made by
        one statement, then read a chunk at a time with no transaction open), so no list of
        every thread is held here."""
        name = f"statectl_recent_{id(self):x}"
        try:
            with self.conn.cursor(name=name, withhold=True, binary=False) as cur:
                cur.execute(
                    f"SELECT t FROM ({self._newest(pattern)}) l {self._after_sql(past)} ORDER BY newest DESC, t DESC",
                    {"pattern": pattern, **self._past_args(past)},
                )
                while rows := cur.fetchmany(self.STATUS_BATCH):
                    yield [r[0] for r in rows]
        except self._psycopg.Error as exc:
            raise self._failed(exc) from None

    STATUS_BATCH = 500
    """Threads whose status is computed per round of queries when filtering by status."""

    def _with_status(
        self, limit: int | None, after: str | None, sort: str, pattern: str | None, status: frozenset[str]
    ) -> ThreadPage:
        """Status needs each thread's newest checkpoint and its writes, so the ids are walked in
        order, a batch at a time, until the page is full. Errors and interrupts are first
        narrowed to the threads that ever wrote one (checkpoint_writes, a range of threads at a
        time: in id order the first ranges fill a first page)."""
        found: list[ThreadSummary] = []
        for ids in self._candidates(after, sort, pattern, status):
            for i in range(0, len(ids), self.STATUS_BATCH):
                found += [s for s in self._summaries(ids[i : i + self.STATUS_BATCH]) if s.status in status]
                if limit and len(found) > limit:
                    break
            if limit and len(found) > limit:
                break
        out = ThreadPage(found[:limit] if limit else found)
        out.total, out.more = None, limit is not None and 0 < limit < len(found)
        return out

    def _candidates(
        self, after: str | None, sort: str, pattern: str | None, status: frozenset[str]
    ) -> Iterator[list[str]]:
        """The ids of the threads that may have one of these statuses, in `sort` order, after
        `after`, a part at a time: in id order, a range of threads (errors, interrupts) or a page
        of ids (others) at a time, so that no list of every thread is held."""
        if sort == "id":
            self._known(after)
        if status <= {"error", "interrupted"}:
            channels = [{"error": "__error__", "interrupted": "__interrupt__"}[s] for s in status]
            wrote: set[str] = set()
            for lo, hi in self._id_ranges():  # (a statement a range: none outlasts the limit)
                bounds = self._bounds(lo, hi, pattern)
                args = {"after": lo, "upto": hi, "pattern": pattern, "channels": channels}
                part = {
                    r[0]
                    for r in self._query(
                        "SELECT DISTINCT thread_id FROM checkpoint_writes WHERE channel = ANY(%(channels)s)"
                        + "".join(f" AND {b}" for b in bounds),
                        args,
                    )
                }
                if "interrupted" in status:  # or waiting at a breakpoint: no write, tasks planned
                    part |= self._may_plan_tasks(bounds, args)
                if sort == "id":
                    yield sorted(t for t in part if after is None or t > after)
                else:
                    wrote |= part
            if sort == "id":
                return
            for ids in self._recent(pattern, self._past(after, pattern)):
                yield [t for t in ids if t in wrote]
        elif sort == "id":  # (a page of ids at a time from the index)
            while ids := self._ids(self.STATUS_BATCH, after, sort, pattern)[0]:
                yield ids
                after = ids[-1]
        else:
            yield from self._recent(pattern, self._past(after, pattern))

    def stream_threads(
        self,
        sort: str | None = None,
        match: str | None = None,
        status: frozenset[str] | None = None,
        after: str | None = None,
    ) -> Iterator[list[ThreadSummary]]:
        """Every thread's summary (with one of `status`; after thread `after`), in chunks as they
        are read: in id order unfiltered, a page of ids at a time (the primary key's index); else
        the ids first (a string each), then a batch of newest checkpoints at a time, not kept."""
        sort = sort or self.default_sort()
        pattern = like(match) if match else None
        if sort == "id" and not status:  # (a page of ids at a time: nothing held grows with the store)
            while ids := self._ids(self.STATUS_BATCH, after, sort, pattern)[0]:
                yield self._summaries(ids)
                after = ids[-1]
            return
        if not status:
            past = self._past(after, pattern)
            for ids in self._recent(pattern, past):
                for i in range(0, len(ids), self.STATUS_BATCH):
                    yield self._summaries(ids[i : i + self.STATUS_BATCH])
            return
        chunks = (
            [s for s in self._summaries(ids[i : i + self.STATUS_BATCH]) if s.status in status]
            for ids in self._candidates(None, sort, pattern, status)
            for i in range(0, len(ids), self.STATUS_BATCH)
        )
        yield from chunks_after(chunks, after, key=lambda s: s.thread_id) if after is not None else chunks

    def threads_where(
        self, where: Any, sort: str | None = None, match: str | None = None, status: frozenset[str] | None = None
    ) -> Iterator[ThreadSummary]:
        """Every thread that may pass `where` (a `status.ThreadFilter`), summarised a batch at a
        time as the caller reads on, in `sort` order: one aggregate over the primary key's index
        finds each thread's newest checkpoint id; the bounds of `since`/`until` (UUIDv6 ids sort by
        time), the newest checkpoint's metadata for `meta` and an error write for `failed_node`
        narrow them in SQL. A superset: the caller applies `where` exactly."""
        from statectl.sources.status import UUID6_TIME

        low, high = where.id_bounds()
        cond, args = [], {"pattern": like(match) if match else None, "low": low, "high": high, "uuid6": UUID6_TIME}
        if low is not None:
            cond.append("(root >= %(low)s OR root !~ %(uuid6)s)")
        if high is not None:
            cond.append("(root < %(high)s OR root !~ %(uuid6)s)")
        for i, (key, value) in enumerate(where.meta):
            args[f"k{i}"], args[f"v{i}"] = key, value
            same = (
                "c.metadata->%(k{i})s = 'null'::jsonb"
                if value == "null"
                else "(c.metadata->>%(k{i})s = %(v{i})s OR jsonb_typeof(c.metadata->%(k{i})s) "
                "IN ('number', 'object', 'array'))"
            ).format(i=i)  # (Python prints those its own way)
            cond.append(
                f"EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = t AND {self._id('c')} = root AND {same})"
            )
        if where.failed_node is not None:  # an error written on the newest checkpoint by a task
            # of that node: a node's own task names it in its path ("~__pregel_pull, NODE"); the
            # node of a Send's task (a tool call) is known only from the state, so those stay
            args["pull"], args["node"] = PULL, PULL + where.failed_node
            named = (
                ""
                if self._task_path == "''"
                else " AND (left(w.task_path, %(n)s) <> %(pull)s OR w.task_path = %(node)s)"
            )
            args["n"] = len(PULL)
            cond.append(
                "EXISTS (SELECT 1 FROM checkpoint_writes w WHERE w.thread_id = t AND "
                f"w.checkpoint_id = root AND w.channel = '__error__'{named})"
            )
        elif status and status <= {"error", "interrupted"}:  # an error or interrupt: a write on it
            args["channels"] = sorted({"error": "__error__", "interrupted": "__interrupt__"}[x] for x in status)
            waits = (
                (
                    f" OR EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = t AND {self._id('c')} = root "
                    f"AND {may_plan_tasks(self.shallow)})"
                )
                if "interrupted" in status
                else ""
            )  # (or at a breakpoint)
            cond.append(
                "(EXISTS (SELECT 1 FROM checkpoint_writes w WHERE w.thread_id = t AND "
                f"w.checkpoint_id = root AND w.channel = ANY(%(channels)s)){waits})"
            )
        recent = (sort or self.default_sort()) != "id"
        found: list[Any] = []  # (recent: every match with its newest id, to order them by after)
        for lo, hi in self._id_ranges():  # (a statement a range: none outlasts the limit)
            bounds = self._bounds(lo, hi, args["pattern"])
            rows = self._query(
                f"WITH latest AS ({self._latest('WHERE ' + ' AND '.join(bounds) if bounds else '')}) "
                f"SELECT t, newest FROM latest {'WHERE ' + ' AND '.join(cond) if cond else ''} ORDER BY t",
                {**args, "after": lo, "upto": hi},
            )
            if recent:
                found += rows
            else:  # (in id order: each range summarised as it is read, not every match held)
                yield from self._summarised([t for t, _ in rows], status)
        if recent:  # (ordered by Postgres, as it compares text: its collation, not Python's)
            ids = [
                t
                for (t,) in self._query(
                    "SELECT t FROM unnest(%s::text[], %s::text[]) AS x(t, newest) ORDER BY newest DESC, t DESC",
                    ([t for t, _ in found], [n for _, n in found]),
                )
            ]
            yield from self._summarised(ids, status)

    def _summarised(self, ids: list[str], status: frozenset[str] | None) -> Iterator[ThreadSummary]:
        """The summaries of `ids` (with one of `status`), STATUS_BATCH threads a round of queries."""
        for i in range(0, len(ids), self.STATUS_BATCH):
            yield from (x for x in self._summaries(ids[i : i + self.STATUS_BATCH]) if not status or x.status in status)

    RANGE_ROWS = 200_000
    """Checkpoint rows a store-wide filter reads per statement (a range of whole threads): a
    store of 10M rows is read in ~50 statements of a second or so, not in one that outlasts the
    statement limit (60 s, or --timeout) on a store that size."""

    def _id_ranges(self) -> Iterator[tuple[str | None, str | None]]:
        """(after, upto): consecutive ranges of thread ids (after < thread_id <= upto; None: no
        bound) of about RANGE_ROWS checkpoint rows each, in the primary key's order (Postgres'
        collation), together every thread; each bound read from the index."""
        after: str | None = None
        while True:
            found = self._query(
                "SELECT thread_id FROM checkpoints "
                + ("" if after is None else "WHERE thread_id > %(after)s ")
                + "ORDER BY thread_id OFFSET %(n)s LIMIT 1",
                {"after": after, "n": self.RANGE_ROWS},
            )
            upto = found[0][0] if found else None
            yield after, upto
            if upto is None:
                return
            after = upto

    def _latest(self, where: str = "") -> str:
        """SQL: each thread `t`, its newest root checkpoint id `root` (else its newest in any
        namespace) and its newest in any namespace `newest`; one pass over the primary key."""
        return (
            f"SELECT thread_id AS t, coalesce(max({self._id()}) FILTER (WHERE checkpoint_ns = ''), "
            f"max({self._id()})) AS root, max({self._id()}) AS newest FROM checkpoints {where} GROUP BY thread_id"
        )

    @staticmethod
    def _bounds(after: str | None, upto: str | None, pattern: str | None) -> list[str]:
        """SQL conditions on `thread_id`: within the range (`_id_ranges`), matching `pattern`;
        they read the arguments `after`, `upto` and `pattern`."""
        bounds = [b for b, v in (("thread_id > %(after)s", after), ("thread_id <= %(upto)s", upto)) if v is not None]
        return [*bounds, "thread_id ILIKE %(pattern)s"] if pattern else bounds

    def _may_plan_tasks(self, bounds: list[str], args: dict[str, Any]) -> set[str]:
        """Threads within `bounds` (`_bounds`) whose newest root checkpoint may plan tasks
        (`may_plan_tasks`)."""
        where = "WHERE " + " AND ".join(bounds) if bounds else ""
        return {
            r[0]
            for r in self._query(
                f"WITH latest AS ({self._latest(where)}) SELECT l.t FROM "
                f"latest l JOIN checkpoints c ON c.thread_id = l.t AND {self._id('c')} = l.root "
                f"WHERE {may_plan_tasks(self.shallow)}",
                args,
            )
        }

    def _summaries(self, ids: list[str]) -> list[ThreadSummary]:
        if not ids:
            return []
        counts = {
            t: (n, n_ns, root or any_)
            for t, n, n_ns, root, any_ in self._query(
                "SELECT thread_id, count(*), count(DISTINCT checkpoint_ns), "
                f"max({self._id()}) FILTER (WHERE checkpoint_ns = ''), max({self._id()}) "
                "FROM checkpoints WHERE thread_id = ANY(%s) GROUP BY thread_id",
                (ids,),
            )
        }
        keys = [(t, counts[t][2]) for t in ids if t in counts]
        meta = {
            (t, cid): (ns, md, ck)
            for t, ns, cid, md, ck in self._query(
                f"SELECT c.thread_id, c.checkpoint_ns, {self._id('c')}, c.metadata::text, c.checkpoint::text "
                "FROM unnest(%s::text[], %s::text[]) AS k(t, id) JOIN checkpoints c "
                f"ON c.thread_id = k.t AND {self._id('c')} = k.id ORDER BY c.checkpoint_ns",
                ([k[0] for k in keys], [k[1] for k in keys]),
            )
        }
        found = list(meta.items())  # ((thread, checkpoint id), (namespace, metadata, checkpoint))
        writes: dict[str, list[tuple[str, str]]] = {}
        for t, task, chan in self._query(
            "SELECT w.thread_id, w.task_id, w.channel FROM unnest(%s::text[], %s::text[], %s::text[]) "
            "AS k(t, ns, id) JOIN checkpoint_writes w ON w.thread_id = k.t AND w.checkpoint_ns = k.ns "
            "AND w.checkpoint_id = k.id",
            ([t for (t, _), _ in found], [ns for _, (ns, *_) in found], [cid for (_, cid), _ in found]),
        ):
            writes.setdefault(t, []).append((task, chan))
        metadata = {t: metadata_of(meta.get((t, cid), ("", None, None))[1]) for t, cid in keys}
        due = self._plans_tasks(
            {t: meta[(t, cid)] for t, cid in keys if (t, cid) in meta and idle(metadata[t], writes.get(t, []))}
        )
        return [
            thread_summary(t, counts[t][0], counts[t][1], cid, metadata[t], writes.get(t, []), due.get(t))
            for t, cid in keys
        ]

    def _plans_tasks(self, idle: dict[str, tuple]) -> dict[str, bool | None]:
        """thread -> `plans_tasks` of its newest checkpoint (given as (namespace, metadata, JSONB)):
        the JSONB holds the versions and the inline values; the values a task can be due by that
        are stored apart (a Send in `__pregel_tasks`, a join's set; with LangGraph.js, every
        trigger channel's) are read in one more query."""
        from statectl.sources.status import light_value, plans_tasks

        checkpoints: dict[str, dict] = {}
        wanted: list[tuple[str, str, str, str]] = []
        for t, (ns, _md, text) in idle.items():
            try:
                ck = orjson.loads(text) if text else None
            except orjson.JSONDecodeError:
                continue
            if not isinstance(ck, dict) or not isinstance(ck.get("channel_versions"), dict):
                continue
            ck["channel_values"] = dict(ck.get("channel_values") or {})
            checkpoints[t] = ck
            wanted += [
                (t, ns, ch, str(v))
                for ch, v in ck["channel_versions"].items()
                # (a trigger channel's value kept apart: LangGraph.js keeps every value in a blob)
                if (ch in ("__pregel_tasks", "__start__") or ch.startswith(("join:", "branch:")))
                and ch not in ck["channel_values"]
            ]
        if wanted:
            version = "" if self.shallow else " AND b.version = k.ver"
            for t, ch, type_, blob in self._query(
                "SELECT k.t, b.channel, b.type, b.blob FROM unnest(%s::text[], %s::text[], %s::text[], "
                "%s::text[]) AS k(t, ns, ch, ver) JOIN checkpoint_blobs b ON b.thread_id = k.t AND "
                f"b.checkpoint_ns = k.ns AND b.channel = k.ch{version}",
                tuple(list(x) for x in zip(*wanted, strict=True)),
            ):
                if type_ != "empty":
                    checkpoints[t]["channel_values"][ch] = light_value(type_, None if blob is None else bytes(blob))
        return {t: plans_tasks(ck) for t, ck in checkpoints.items()}
