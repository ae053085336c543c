"""PostgresSaver databases, read-only (FORMAT §1.2).

* Every query runs in a READ ONLY transaction of its own (autocommit, on a connection whose
  `default_transaction_read_only` is on): none stays open between queries, so a long command
  never holds the lock a migration or VACUUM FULL waits on (nor every session queued behind
  it), and an idle TUI is never "idle in transaction". `setup()` and migrations are never run.
* A checkpoint is its `checkpoints.checkpoint` JSONB (primitive channel values inline, `true`
  marking a delta snapshot) merged with the `checkpoint_blobs` rows named by its
  `channel_versions`, exactly as `PostgresSaver` reads it.
* A `ShallowPostgresSaver` database (one checkpoint per thread and namespace, its id inside the
  JSONB, blobs keyed by channel alone, no parent) is read through the same queries.
* `threads` pages by thread id with a loose index scan, so a page reads only its own threads'
  rows; `--sort recent` must group the whole table and says so.
* The password of a URL is never printed: not in messages, labels or `--debug`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import orjson

from statectl.codec.decode import b64
from statectl.codec.formats import PG_TYPE
from statectl.codec.formats.postgres import assemble
from statectl.errors import DecodeError, NotFoundError, SourceError
from statectl.model import CheckpointRecord, ThreadPage, ThreadSummary, WriteRecord, wanted
from statectl.secrets import redact, scrub, secrets_of
from statectl.sources.base import by_checkpoint, like, metadata_of, page, replay_order, timeout
from statectl.sources.status import idle, thread_summary

MIN_SCHEMA = 3  # checkpoint_writes exists from migration 3
WAIT_HINT = "--timeout SECONDS (or STATECTL_TIMEOUT) waits longer"


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


class Texts(list):
    """A list of strings sent as one text[] literal (`_TextsDumper`): psycopg's own array dumper
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


def _settle(conn: Any) -> None:
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


def _envelope(jsonb: Any, blobs: Any) -> tuple[str, bytes]:
    """A checkpoint row and the (channel, version, type, blob) rows its versions name, as
    `raw_checkpoint` gives them (`PG_TYPE`: the JSONB, the blobs in base64)."""
    packed = [[ch, ver, t, b64(b)] for ch, ver, t, b in blobs]
    return PG_TYPE, orjson.dumps({"checkpoint": jsonb, "blobs": packed})


class PostgresSource:
    """A PostgresSaver database opened with psycopg 3, read-only."""

    kind = "postgres"
    """What the store is, for the commands that act on one kind only (`Source.kind`)."""
    notes: tuple[str, ...] = ()
    recorded_graph: Any = None

    def __init__(self, url: str) -> None:
        """`url`: a postgresql:// URL, a libpq key=value string, or "" (libpq's PG* variables)."""
        self.label = redact(url) if url else "Postgres (from the PG* environment)"
        self._url, self._secrets = url, secrets_of(url)
        try:
            import psycopg
        except ImportError:
            raise SourceError("Postgres support needs psycopg", "pip install 'statectl[postgres]'") from None
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
        ms = {k: max(1, int(v * 1000)) for k, v in self.waits.items()}
        try:
            self.conn = psycopg.connect(
                url,
                connect_timeout=max(1, round(self.waits["connect"])),
                autocommit=True,
                options=f"-c default_transaction_read_only=on -c lock_timeout={ms['lock']} "
                f"-c statement_timeout={ms['statement']} "
                f"-c idle_in_transaction_session_timeout={ms['statement'] * 10}",
            )
            self.conn.read_only = True
            _settle(self.conn)
        except psycopg.OperationalError as exc:
            if "timeout expired" in str(exc):
                raise SourceError(
                    f"cannot connect to {self.label}: no answer within {self.waits['connect']:g} s", WAIT_HINT
                ) from None
            raise SourceError(f"cannot connect to {self.label}: {self._clean(exc)}") from None
        except psycopg.Error as exc:
            raise SourceError(f"cannot connect to {self.label}: {self._clean(exc)}") from None
        except ValueError as exc:  # malformed URL
            raise SourceError(f"cannot use {self.label}: {self._clean(exc)}") from None
        tables = self._query(
            "SELECT to_regclass('checkpoints') IS NOT NULL, "
            "to_regclass('checkpoint_blobs') IS NOT NULL, "
            "to_regclass('checkpoint_writes') IS NOT NULL, "
            "to_regclass('checkpoint_migrations') IS NOT NULL"
        )[0]
        if not tables[0] or not tables[1]:
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

    def _id(self, alias: str = "") -> str:
        """SQL for a checkpoints row's id (a column, or inside the JSONB for a shallow saver)."""
        prefix = f"{alias}." if alias else ""
        return f"({prefix}checkpoint->>'id')" if self.shallow else f"{prefix}checkpoint_id"

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
            try:
                self.conn.rollback()
            except self._psycopg.Error:
                pass
            errors = self._psycopg.errors
            if isinstance(exc, errors.LockNotAvailable):
                raise SourceError(
                    f"{self.label}: the checkpoint tables are locked by another session "
                    f"(a migration, VACUUM FULL or LOCK TABLE?); waited "
                    f"{self.waits['lock']:g} s",
                    WAIT_HINT,
                ) from None
            if isinstance(exc, errors.QueryCanceled):
                raise SourceError(
                    f"{self.label}: a query ran longer than {self.waits['statement']:g} s and was cancelled", WAIT_HINT
                ) from None
            raise SourceError(f"cannot read {self.label}: {self._clean(exc)}") from None

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
            where = "WHERE thread_id ILIKE %s" if pattern else ""
            rows = self._query(
                f"SELECT thread_id, max({self._id()}) FROM checkpoints {where} "
                "GROUP BY thread_id ORDER BY 2 DESC, 1 DESC",
                (pattern,) if pattern else (),
            )
            picked = page(rows, limit, after, key=lambda r: r[0])
            return [t for t, _ in picked], picked.total, picked.more
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
        return (ids[:limit] if limit else ids), None, more

    def _known(self, after: str | None) -> None:
        """An `after` that names no thread is an error (a page after it would be a guess)."""
        if after is not None and not self._query("SELECT 1 FROM checkpoints WHERE thread_id = %s LIMIT 1", (after,)):
            raise NotFoundError(f"no thread {after!r} to page after", "pass a thread id from the last page")

    STATUS_BATCH = 500
    """Threads whose status is computed per round of queries when filtering by status."""

    def _with_status(
        self, limit: int | None, after: str | None, sort: str, pattern: str | None, status: frozenset[str]
    ) -> ThreadPage:
        """Status needs each thread's newest checkpoint and its writes, so the ids are walked in
        order, a batch at a time, until the page is full. Errors and interrupts are first
        narrowed to the threads that ever wrote one (one scan of checkpoint_writes, which is
        then also the id order: no walk over every thread id)."""
        ids = self._candidates(after, sort, pattern, status)
        found: list[ThreadSummary] = []
        for i in range(0, len(ids), self.STATUS_BATCH):
            found += [s for s in self._summaries(ids[i : i + self.STATUS_BATCH]) if s.status in status]
            if limit and len(found) > limit:
                break
        out = ThreadPage(found[:limit] if limit else found)
        out.total, out.more = None, limit is not None and 0 < limit < len(found)
        return out

    def _candidates(self, after: str | None, sort: str, pattern: str | None, status: frozenset[str]) -> list[str]:
        """The ids of the threads that may have one of these statuses, in `sort` order, after `after`."""
        if status <= {"error", "interrupted"}:
            channels = [{"error": "__error__", "interrupted": "__interrupt__"}[s] for s in status]
            wrote = {
                r[0]
                for r in self._query(
                    "SELECT DISTINCT thread_id FROM checkpoint_writes WHERE channel = ANY(%s) AND "
                    "(%s::text IS NULL OR thread_id ILIKE %s)",
                    (channels, pattern, pattern),
                )
            }
            if "interrupted" in status:  # or waiting at a breakpoint: no write, tasks planned
                wrote |= self._may_plan_tasks(pattern)
            if sort == "id":
                self._known(after)
                ids = sorted(t for t in wrote if after is None or t > after)
            else:
                ids = [t for t in self._ids(None, None, sort, pattern)[0] if t in wrote or t == after]
        else:
            ids = self._ids(None, None if sort == "recent" else after, sort, pattern)[0]
        if sort == "recent":
            ids = page(ids, None, after, key=lambda t: t)  # the ids after `after` (which must exist)
        return ids

    def stream_threads(
        self, sort: str | None = None, match: str | None = None, status: frozenset[str] | None = None
    ) -> Iterator[list[ThreadSummary]]:
        """Every thread's summary (with one of `status`), in chunks as they are read: in id order
        unfiltered, a page of ids at a time (the primary key's index); else the ids first (a
        string each), then a batch of newest checkpoints at a time, not kept."""
        sort = sort or self.default_sort()
        pattern = like(match) if match else None
        if sort == "id" and not status:  # (a page of ids at a time: nothing held grows with the store)
            after = None
            while ids := self._ids(self.STATUS_BATCH, after, sort, pattern)[0]:
                yield self._summaries(ids)
                after = ids[-1]
            return
        ids = self._candidates(None, sort, pattern, status) if status else self._ids(None, None, sort, pattern)[0]
        for i in range(0, len(ids), self.STATUS_BATCH):
            yield [s for s in self._summaries(ids[i : i + self.STATUS_BATCH]) if not status or s.status in status]

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
        rows = self._query(
            f"WITH latest AS ({self._latest('WHERE thread_id ILIKE %(pattern)s' if match else '')}) "
            f"SELECT t FROM latest {'WHERE ' + ' AND '.join(cond) if cond else ''} "
            f"ORDER BY {'t' if (sort or self.default_sort()) == 'id' else 'newest DESC, t DESC'}",
            args,
        )
        ids = [t for (t,) in rows]
        for i in range(0, len(ids), self.STATUS_BATCH):
            yield from (x for x in self._summaries(ids[i : i + self.STATUS_BATCH]) if not status or x.status in status)

    def _latest(self, where: str = "") -> str:
        """SQL: each thread `t`, its newest root checkpoint id `root` (else its newest in any
        namespace) and its newest in any namespace `newest`; one pass over the primary key."""
        return (
            f"SELECT thread_id AS t, coalesce(max({self._id()}) FILTER (WHERE checkpoint_ns = ''), "
            f"max({self._id()})) AS root, max({self._id()}) AS newest FROM checkpoints {where} GROUP BY thread_id"
        )

    def _may_plan_tasks(self, pattern: str | None) -> set[str]:
        """Threads whose newest root checkpoint may plan tasks (`may_plan_tasks`)."""
        return {
            r[0]
            for r in self._query(
                f"WITH latest AS ({self._latest('WHERE thread_id ILIKE %s' if pattern else '')}) SELECT l.t FROM "
                f"latest l JOIN checkpoints c ON c.thread_id = l.t AND {self._id('c')} = l.root "
                f"WHERE {may_plan_tasks(self.shallow)}",
                (pattern,) if pattern else (),
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
        return _envelope(jsonb, blobs)

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
        from statectl.model import Part, StoreSize, ThreadSize

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
        """`channel_storage` of many threads, in six queries (`doctor` reads a batch at a time);
        a thread with no root checkpoint is left out."""
        from statectl.model import ChannelSize, ThreadChannels

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
        out = {}
        for t, found in steps.items():
            ordered = sorted(channels[t].values(), key=lambda c: (-(c.history + c.writes), c.channel))
            inline = sum(c.history for c in ordered) - in_blobs[t]  # (values kept in the checkpoints' JSONB)
            out[t] = ThreadChannels(
                t,
                len(found),
                ordered,
                found,
                "each channel version is stored once (PostgresSaver): history counts each "
                "version; the size per step counts the values a checkpoint names",
                max(0, int(rows.get(t) or 0) - inline),
            )
        return out

    def locate(self, checkpoint_id: str) -> list[tuple[str, str]]:
        return [
            tuple(r)
            for r in self._query(
                f"SELECT thread_id, checkpoint_ns FROM checkpoints WHERE {self._id()} = %s LIMIT 5", (checkpoint_id,)
            )
        ]

    def raw_checkpoints(self, thread_id: str) -> dict[tuple[str, str], tuple[str, bytes]]:
        """Every checkpoint of a thread as `raw_checkpoint` gives it, in two queries (`doctor`
        reads a whole thread: one round trip per checkpoint costs more than the rows)."""
        return self.raw_checkpoints_of([thread_id]).get(thread_id, {})

    def raw_checkpoints_of(self, thread_ids: list[str]) -> dict[str, dict[tuple[str, str], tuple[str, bytes]]]:
        """`raw_checkpoints` of many threads, in two queries (`doctor` reads a batch at a time)."""
        if self.shallow:
            return {}
        blobs: dict[tuple[str, str, str, str], tuple[str, Any]] = {}
        for t, ns, ch, ver, type_, blob in self._query(
            "SELECT thread_id, checkpoint_ns, channel, version, type, blob FROM checkpoint_blobs "
            "WHERE thread_id = ANY(%s)",
            (list(thread_ids),),
        ):
            blobs[(t, ns, ch, ver)] = (type_, blob)
        out: dict[str, dict[tuple[str, str], tuple[str, bytes]]] = {t: {} for t in thread_ids}
        for t, ns, cid, text in self._query(
            "SELECT thread_id, checkpoint_ns, checkpoint_id, checkpoint::text FROM checkpoints "
            "WHERE thread_id = ANY(%s)",
            (list(thread_ids),),
        ):
            try:
                jsonb = orjson.loads(text)
            except orjson.JSONDecodeError:
                continue  # (left to `raw_checkpoint`, which says what is wrong with it)
            versions = jsonb.get("channel_versions") if isinstance(jsonb, dict) else None
            if not isinstance(versions, dict):
                continue
            named = ((ch, ver, blobs.get((t, ns, str(ch), str(ver)))) for ch, ver in versions.items())
            out[t][(ns, cid)] = _envelope(jsonb, [(ch, ver, *found) for ch, ver, found in named if found is not None])
        return out

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
        channels, an id that is not a UUIDv6, or one within `newer`'s margin of the cutoff).
        Why kept: 0 the newest, 1 `--keep-last`, 2 newer than `--older-than` (ids at or after
        `newer[1]`; those in `newer` are too close to tell), 3 a branch head, 4 a fork point:
        `core.prune`'s rules, in its order, for a thread of one namespace."""
        if self.shallow or not thread_ids:
            return {}
        low, high = newer if newer is not None else (None, None)
        rows = self._query(
            "WITH c AS (SELECT thread_id AS t, checkpoint_ns AS ns, checkpoint_id AS id, parent_checkpoint_id AS pid, "
            "row_number() OVER (PARTITION BY thread_id, checkpoint_ns ORDER BY checkpoint_id DESC) AS rn, "
            "coalesce(jsonb_typeof(metadata->'counters_since_delta_snapshot') = 'object', false) AS delta, "
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
        """`doctor`, per thread: writes whose checkpoint is not in the table and blob versions no
        checkpoint names, (thread, rows, bytes); and versions a checkpoint names whose value is
        gone, (thread, namespace, checkpoint, channel): a channel with no blob at this version
        though it had one before (PostgresSaver stores a blob for every new version of a
        non-primitive value; a channel emptied since has a version and no value: LangGraph's own
        channels, `__start__`, `branch:to:x`, are emptied when read, and are not looked at)."""
        if self.shallow:
            return {}
        writes = self._query(
            "SELECT w.thread_id, count(*), coalesce(sum(length(w.blob)), 0)::bigint FROM checkpoint_writes w "
            "WHERE NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = w.thread_id AND "
            "c.checkpoint_ns = w.checkpoint_ns AND c.checkpoint_id = w.checkpoint_id) "
            "GROUP BY w.thread_id ORDER BY 2 DESC LIMIT %s",
            (limit,),
        )
        blobs = self._query(
            "SELECT b.thread_id, count(*), coalesce(sum(length(b.blob)), 0)::bigint FROM checkpoint_blobs b "
            "WHERE NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id AND "
            "c.checkpoint_ns = b.checkpoint_ns AND c.checkpoint->'channel_versions'->>b.channel = b.version) "
            "GROUP BY b.thread_id ORDER BY 2 DESC LIMIT %s",
            (limit,),
        )
        missing = self._query(
            "SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, v.key FROM checkpoints c CROSS JOIN LATERAL "
            "jsonb_each_text(CASE jsonb_typeof(c.checkpoint->'channel_versions') WHEN 'object' THEN "
            "c.checkpoint->'channel_versions' END) AS v WHERE v.key NOT LIKE '\\_\\_%%' AND v.key NOT LIKE '%%:%%' "
            "AND NOT (coalesce(c.checkpoint->'channel_values', "
            "'{}') ? v.key) AND NOT EXISTS (SELECT 1 FROM checkpoint_blobs b WHERE b.thread_id = c.thread_id "
            "AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = v.key AND b.version = v.value) AND EXISTS "
            "(SELECT 1 FROM checkpoint_blobs b WHERE b.thread_id = c.thread_id AND b.checkpoint_ns = "
            "c.checkpoint_ns AND b.channel = v.key AND b.version < v.value AND b.type <> 'empty') "
            "ORDER BY 1, 2, 3, 4 LIMIT %s",
            (limit,),
        )
        return {
            "writes": [tuple(r) for r in writes],
            "blobs": [tuple(r) for r in blobs],
            "missing": [tuple(r) for r in missing],
        }

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
        ms = {k: max(1, int(v * 1000)) for k, v in self.waits.items()}
        try:
            conn = self._psycopg.connect(
                self._url,
                connect_timeout=max(1, round(self.waits["connect"])),
                autocommit=False,
                options=f"-c lock_timeout={ms['lock']} -c statement_timeout={ms['statement']} "
                f"-c idle_in_transaction_session_timeout={ms['statement'] * 10}",
            )
            _settle(conn)
            return conn
        except (self._psycopg.Error, ValueError) as exc:
            raise SourceError(f"cannot connect to {self.label} to write: {self._clean(exc)}") from None

    def clean(self, exc: BaseException) -> str:
        """An error's text, one line, without the password."""
        return self._clean(exc)

    def close(self) -> None:
        try:
            self.conn.rollback()  # a read-only transaction: nothing to keep
            self.conn.close()
        except self._psycopg.Error:
            pass
