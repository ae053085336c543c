"""`statectl prune`: a plan of which checkpoints can go, never a surprise.

LangGraph's open-source savers never delete a checkpoint, and the `DELETE` users write by hand
breaks threads: a thread waiting at an interrupt loses what it resumes from, a delta channel
(deepagents' `messages`, `files`) loses the ancestors it is rebuilt from, a fork loses a branch.
The plan keeps, in every thread it touches:

- the newest checkpoint of each namespace (what `get_state` reads, with its pending writes: an
  interrupt, an error, a task's output);
- the `--keep-last N` newest checkpoints of each namespace;
- every checkpoint newer than `--older-than` (only older ones may go);
- every branch head (a checkpoint no other names as parent) and every fork point (one that two
  or more name as parent);
- for each kept checkpoint, the ancestors a delta channel is replayed from, back to the nearest
  one that stores the channel whole;
- a subgraph's namespace goes or stays with the parent checkpoint whose task ran it (and
  stays whole where that checkpoint is not found).

The plan is printed (`--json`), or as SQL for the user to review and run (`--sql`), or carried
out by `prune --apply` (`project.prune`: a thread per transaction, the plan made again inside it).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice
from typing import TYPE_CHECKING, Any

from statectl.errors import DecodeError
from statectl.model import CheckpointRecord

if TYPE_CHECKING:
    from statectl.core.reader import StoreReader
    from statectl.core.state import ThreadView


@dataclass
class ThreadPlan:
    thread_id: str
    checkpoints: int
    drop: list[tuple[str, str]] = field(default_factory=list)
    """(namespace, checkpoint id) of each checkpoint that would go."""
    reasons: dict[str, int] = field(default_factory=dict)
    """Why checkpoints are kept: reason -> how many (a checkpoint counts under its first reason)."""
    bytes: int = 0
    """Bytes the dropped checkpoints and their writes hold."""

    def to_json(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "checkpoints": self.checkpoints,
            "drop": len(self.drop),
            "keep": self.checkpoints - len(self.drop),
            "bytes": self.bytes,
            "kept_because": self.reasons,
            "dropped": [{"checkpoint_ns": ns, "checkpoint_id": cid} for ns, cid in self.drop],
        }


class Spool:
    """Where a store's plans keep what they drop while the plans wait (a table to print, a
    question to ask, `--apply`): a temporary file, not memory, so that planning a store of a
    hundred thousand threads holds a line per thread. Unnamed, in the temporary directory:
    nothing beside the user's files; gone when closed."""

    def __init__(self) -> None:
        import tempfile

        self.file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by `close`: it outlives this call)

    def keep(self, plan: ThreadPlan) -> ThreadPlan:
        """`plan` with its drop list in the spool."""
        import orjson

        if len(plan.drop) < 2:
            return plan
        data = orjson.dumps(plan.drop)
        self.file.seek(0, 2)
        plan.drop = Spooled(self, self.file.tell(), len(data), len(plan.drop))  # type: ignore[assignment]
        self.file.write(data)
        return plan

    def read(self, at: int, size: int) -> list[tuple[str, str]]:
        import orjson

        self.file.seek(at)
        return [(ns, cid) for ns, cid in orjson.loads(self.file.read(size))]

    def close(self) -> None:
        self.file.close()


class Spooled(Sequence[tuple[str, str]]):
    """A plan's drop list in a `Spool`: its length in memory, its items read when asked for."""

    __slots__ = ("at", "length", "size", "spool")

    def __init__(self, spool: Spool, at: int, size: int, length: int) -> None:
        self.spool, self.at, self.size, self.length = spool, at, size, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: Any) -> Any:
        return self.spool.read(self.at, self.size)[i]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.spool.read(self.at, self.size))

    def __eq__(self, other: object) -> bool:
        return list(self) == (list(other) if isinstance(other, Sequence) else other)

    __hash__ = None  # type: ignore[assignment]


def _time(record: CheckpointRecord) -> datetime | None:
    from statectl.sources.status import moment, uuid6_time

    return moment(uuid6_time(record.checkpoint_id))


class _Kept(dict[tuple[str, str], str]):
    """(namespace, checkpoint id) -> the first reason it stays."""

    def hold(self, r: CheckpointRecord, why: str) -> None:
        self.setdefault((r.checkpoint_ns, r.checkpoint_id), why)


def cutoff_of(keep_last: int, older_than: str | None, keep: str, older: str) -> datetime | None:
    """The moment `older_than` names (None: no such bound), or one line where the two keep no
    history: neither given, or every checkpoint as old (`0s`, a date to come). `keep`/`older`:
    how the caller names them (`--keep-last`, or an MCP tool's `keep_last`)."""
    from datetime import UTC

    from statectl.errors import StatectlError
    from statectl.sources.status import parse_when

    if not keep_last and older_than is None:
        raise StatectlError(
            f"say how much history to keep: {keep} N and/or {older} DURATION", f"e.g. {keep} 10 and {older} 30d"
        )
    if older_than is None:
        return None
    try:
        cutoff = parse_when(older_than)
    except ValueError:
        raise StatectlError(f"{older} {older_than!r} is neither a duration (2h, 30d) nor a date") from None
    if not keep_last and (datetime.now(UTC) - cutoff).total_seconds() < 60:
        raise StatectlError(
            f"{older} {older_than} keeps no history: every checkpoint is that old",
            f"keep some: {older} 30d, or {keep} N",
        )
    return cutoff


def plan_thread(
    store: StoreReader,
    thread_id: str,
    keep_last: int = 0,
    older_than: datetime | None = None,
    allowed: Collection[tuple[str, str]] | None = None,
    count: bool = True,
) -> ThreadPlan:
    """The checkpoints of one thread that can go, with the rules of this module's docstring.
    `allowed`: only these (namespace, checkpoint id) may go (`prune --apply`'s plan made again
    inside its transaction: what the printed plan named); every other checkpoint is held like
    a kept one, with the ancestors its delta channels need. `count`: the bytes they hold too."""
    records = store.source.checkpoints(thread_id, None)
    by_ns: dict[str, list[CheckpointRecord]] = {}
    for r in records:  # (newest first)
        by_ns.setdefault(r.checkpoint_ns, []).append(r)
    keep = _Kept()
    # (Postgres: every checkpoint's keys at once; else none, each checkpoint read)
    known = store.source.channel_keys(thread_id) if any(_may_delta(r) for r in records) else {}
    for ns, rows in by_ns.items():  # (each namespace's holds are its own: the order across them is free)

        def stored(a: CheckpointRecord, ns: str = ns) -> set[str]:
            if (ns, a.checkpoint_id) in known:
                return set(known[(ns, a.checkpoint_id)][0])
            return stored_channels(store, thread_id, ns, a.checkpoint_id)

        view = store.view(thread_id, ns)
        _hold_recent(keep, rows, keep_last, older_than)
        _hold_branches(keep, view)
        if allowed is not None:
            for r in rows:
                if (r.checkpoint_ns, r.checkpoint_id) not in allowed:
                    keep.hold(r, "not in the printed plan")
        _hold_delta_ancestors(keep, view, rows, stored, known)
        _hold_send_parents(keep, view, rows)
    _follow_parents(keep, by_ns, _subgraph_parents(store, thread_id, [ns for ns in by_ns if ns]), allowed)
    plan = ThreadPlan(thread_id, len(records))
    for r in records:
        why = keep.get((r.checkpoint_ns, r.checkpoint_id))
        if why is None:
            plan.drop.append((r.checkpoint_ns, r.checkpoint_id))
        else:
            plan.reasons[why] = plan.reasons.get(why, 0) + 1
    store.refresh(thread_id)  # (a plan of every thread must not keep every thread's views)
    if count:
        plan.bytes = store.source.drop_bytes(thread_id, plan.drop)  # (SQLite, Postgres: by SQL)
    return plan


BATCH = 200
"""Threads `plan_threads` lists together, where the source can (Postgres)."""
SQL_BATCH = 2_000
"""Threads a source plans in one query, where it can (`simple_plans_of`: Postgres)."""
WHY = ("newest", "--keep-last", "newer than --older-than", "branch head", "fork point")
"""The reasons `simple_plans_of` gives by number: `_hold_recent`'s and `_hold_branches`'."""
MARGIN = 100
"""Ticks (100 ns) either side of `--older-than` within which a checkpoint's id is too close to
tell in SQL (a time read from an id is rounded to the microsecond): its thread is planned here."""


def plan_threads(
    store: StoreReader, ids: Iterable[str], keep_last: int = 0, older_than: datetime | None = None
) -> Iterator[ThreadPlan]:
    """`plan_thread` of each thread, in order, as each is made. On a source that can (Postgres),
    the threads that need only their ids and parents (one namespace, no delta channel: most)
    are planned by the store in one query per `SQL_BATCH` (`simple_plans_of`, the same rules),
    the rest a `BATCH` at a time, their checkpoints listed and their bytes counted in one query
    each (a round trip a batch, not four a thread). Where the source can open a second
    connection (`beside`), those queries run on it in a thread of their own, ahead of the
    Python planning the batch before (`_Beside`): the store and Python work at once."""
    from statectl.sources.ahead import batched
    from statectl.sources.status import id_at

    if not batched(store.source):
        for t in ids:
            yield plan_thread(store, t, keep_last, older_than)
        return
    simple = store.graph is None and store.source.batches_threads  # (Postgres: plans in SQL)
    newer = None if older_than is None else (id_at(older_than, -MARGIN), id_at(older_than, MARGIN))
    every = iter(ids)  # (a list, or ids read a page at a time: `Store.iter_thread_ids`)
    with _Beside(store.source) as beside:

        def plans_of(chunk: list[str]) -> Callable[[], dict]:
            if not simple or not chunk:
                return dict
            return beside.run(lambda source: source.simple_plans_of(chunk, keep_last, newer))

        chunk = list(islice(every, SQL_BATCH))
        asked = plans_of(chunk)
        while chunk:
            planned = asked()
            rest = [t for t in chunk if planned.get(t) is None]
            batches = [rest[j : j + BATCH] for j in range(0, len(rest), BATCH)]
            following = list(islice(every, SQL_BATCH))
            asked = plans_of(following)  # (the next chunk's, while this one's batches are planned)
            made: dict[str, ThreadPlan] = {}
            counted: list[tuple[list[ThreadPlan], Callable[[], dict]]] = []
            for batch in batches:
                plans = _batch(store, batch, keep_last, older_than)
                drops = [(p.thread_id, list(p.drop)) for p in plans]
                counted.append((plans, beside.run(lambda source, drops=drops: source.drop_bytes_of(drops))))
            for plans, sizes in counted:
                found_sizes = sizes()
                for p in plans:
                    p.bytes = found_sizes.get(p.thread_id, 0)
                    made[p.thread_id] = p
            for t in chunk:
                found = planned.get(t)
                if found is None:
                    yield made[t]
                    continue
                count, why, drop, size = found
                yield ThreadPlan(t, count, [("", cid) for cid in drop], {WHY[w]: n for w, n in why}, size)
            chunk = following


class _Beside:
    """Where `source` can open a second connection (`beside()`: Postgres), the reads `run` is
    given run on it in a thread of their own, in the order given, while this thread goes on
    (the store plans the next chunk while Python plans this one); elsewhere, or where no second
    connection opens (the server's limit), each runs on `source` at once. `run` gives what
    waits for the answer. On leaving, a query still running is cancelled and the connection
    closed (Ctrl+C, an error, or a consumer that stopped early)."""

    def __init__(self, source: Any) -> None:
        self._source = source
        self._other: Any = None
        self._pool: Any = None
        self._asked: list[Any] = []

    def __enter__(self) -> _Beside:
        from statectl.errors import StatectlError

        try:
            self._other = self._source.beside()
        except StatectlError:
            return self  # (one connection: each read on it, in turn)
        if self._other is not None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(1, thread_name_prefix="statectl-plan")
        return self

    def run(self, read: Callable[..., Any], *args: Any) -> Callable[[], Any]:
        """`read(source, *args)`, on the second connection where there is one."""
        if self._pool is None:
            found = read(self._source, *args)
            return lambda: found
        self._asked = [f for f in self._asked if not f.done()]
        future = self._pool.submit(read, self._other, *args)
        self._asked.append(future)
        return future.result

    def __exit__(self, *exc: object) -> None:
        if self._pool is None or self._other is None:
            return
        from concurrent.futures import wait

        self._pool.shutdown(wait=False, cancel_futures=True)
        while not all(f.done() for f in self._asked):
            self._other.cancel()  # (a query running, or about to: its answer is not asked for)
            wait(self._asked, timeout=0.2)
        self._other.close()


def _batch(store: StoreReader, ids: list[str], keep_last: int, older_than: datetime | None) -> list[ThreadPlan]:
    """`plan_thread` of a batch of threads read ahead together (`sources.ahead`): their listing
    and the delta keys of those with delta channels, a query each; their bytes not yet counted."""
    from statectl.sources.ahead import Ahead

    source = Ahead(store.source, ids)
    if store.source.batches_threads:  # (Postgres: every thread's keys in one query)
        source.seed(
            "channel_keys",
            store.source.channel_keys_of([t for t in ids if any(map(_may_delta, source.checkpoints(t, None)))]),
        )
    ahead = store.on(source, store.graph)
    return [plan_thread(ahead, t, keep_last, older_than, count=False) for t in ids]


def _hold_recent(keep: _Kept, rows: list[CheckpointRecord], keep_last: int, older_than: datetime | None) -> None:
    """The newest checkpoint of a namespace, the --keep-last newest, and those not older than
    --older-than (or whose time cannot be read)."""
    keep.hold(rows[0], "newest")
    for r in rows[:keep_last]:
        keep.hold(r, "--keep-last")
    if older_than is not None:
        for r in rows:
            when = _time(r)
            if when is None or when >= older_than:
                keep.hold(r, "newer than --older-than")


def _hold_branches(keep: _Kept, view: ThreadView) -> None:
    """Branch heads (no child) and fork points (several children) of a namespace's history."""
    children = view.children()
    for r in view.records:
        if r.checkpoint_id not in children:
            keep.hold(r, "branch head")
        elif len(children[r.checkpoint_id]) > 1:
            keep.hold(r, "fork point")


def _hold_send_parents(keep: _Kept, view: ThreadView, rows: list[CheckpointRecord]) -> None:
    """Before the v4 checkpoint (LangGraph < 0.3-era savers, LangGraph.js before 0.4), a step's
    Sends are no part of its row: the savers read its `pending_sends` from the parent
    checkpoint's writes to `__pregel_tasks`. A kept checkpoint of that layout keeps that parent
    (and so on up, where the parent has Sends of its own)."""
    sends = view.channel_writes("__pregel_tasks")  # (checkpoint id -> writes: one query a namespace)
    if not sends:
        return
    by_id = {r.checkpoint_id: r for r in rows}
    for r in rows:  # (newest first: a parent held here is looked at after its child)
        parent = by_id.get(r.parent_checkpoint_id or "")
        if parent is None or parent.checkpoint_id not in sends or (r.checkpoint_ns, r.checkpoint_id) not in keep:
            continue
        if (parent.checkpoint_ns, parent.checkpoint_id) in keep:
            continue
        try:
            v = view.checkpoint(r.checkpoint_id).get("v")
        except DecodeError:  # (a row that does not decode: its parent kept too)
            v = None
        if not isinstance(v, int) or v < 4:
            keep.hold(parent, "its child's Sends")


def _hold_delta_ancestors(
    keep: _Kept,
    view: ThreadView,
    rows: list[CheckpointRecord],
    stored: Callable[[CheckpointRecord], set[str]],
    known: dict | None = None,
) -> None:
    """Delta channels: the ancestors a kept checkpoint's value is replayed from, up to the one
    that stores it whole."""
    for r in rows:  # (every checkpoint's delta channels, not just the head's: a plan is never short)
        view.widen_delta(r)
    walked: dict[str, set[str]] = {}  # key -> checkpoints a walk for it went past: held up to its snapshot
    for r in list(rows) if view.delta_keys else ():
        if (r.checkpoint_ns, r.checkpoint_id) not in keep:
            continue
        listed = (known or {}).get((r.checkpoint_ns, r.checkpoint_id))
        versioned = set(listed[1]) if listed is not None else versioned_channels(view, r)
        for key in view.delta_keys:
            # a channel with no version was never written on this branch: LangGraph replays
            # nothing for it; one stored whole here needs no ancestor
            if (versioned is not None and key not in versioned) or key in stored(r):
                continue
            past = walked.setdefault(key, set())
            for a in view.ancestry(view.parent(r)):
                keep.hold(a, "delta-channel ancestor")
                if a.checkpoint_id in past or key in stored(a):
                    break  # (the rest of this walk was walked before)
                past.add(a.checkpoint_id)


def _follow_parents(
    keep: _Kept,
    by_ns: dict[str, list[CheckpointRecord]],
    parents: dict[str, tuple[str, str]],
    allowed: Collection[tuple[str, str]] | None = None,
) -> None:
    """Subgraph namespaces go or stay with the parent checkpoint whose task ran them (a
    checkpoint outside `allowed` stays whatever its parent does)."""
    for ns, rows in by_ns.items():
        if not ns:
            continue
        parent = parents.get(ns)
        parent_kept = parent is None or (parent[0], parent[1]) in keep
        for r in rows:
            if parent_kept:
                keep.hold(r, "subgraph of a kept checkpoint" if parent is not None else "subgraph (parent not found)")
            elif allowed is None or (ns, r.checkpoint_id) in allowed:
                keep.pop((ns, r.checkpoint_id), None)


def _may_delta(r: CheckpointRecord) -> bool:
    """Does the checkpoint's metadata say it has delta channels (LangGraph counts their steps)?"""
    return isinstance(r.metadata.get("counters_since_delta_snapshot"), dict)


def versioned_channels(view: ThreadView, r: CheckpointRecord) -> set[str] | None:
    """The channels a checkpoint has a version for (None: not readable without decoding)."""
    from statectl.codec.formats import PG_TYPE
    from statectl.sources.status import light_checkpoint

    type_, blob = view.source.raw_checkpoint(r.thread_id, r.checkpoint_ns, r.checkpoint_id)
    if type_ == PG_TYPE and blob:
        import orjson

        ck = orjson.loads(blob).get("checkpoint")
    else:
        ck = light_checkpoint(type_, blob)
    versions = ck.get("channel_versions") if isinstance(ck, dict) else None
    return {str(k) for k in versions} if isinstance(versions, dict) else None


def stored_channels(store: StoreReader, thread_id: str, ns: str, checkpoint_id: str) -> set[str]:
    """The channels a checkpoint stores a value for (msgpack: read by lengths, nothing decoded)."""
    from statectl.core.size import channel_lengths

    type_, blob = store.source.raw_checkpoint(thread_id, ns, checkpoint_id)
    if type_ == "msgpack" and blob:
        return set(channel_lengths(blob))
    return set(store.view(thread_id, ns).checkpoint(checkpoint_id).get("channel_values") or {})


def _subgraph_parents(store: StoreReader, thread_id: str, namespaces: list[str]) -> dict[str, tuple[str, str]]:
    """namespace -> (parent namespace, checkpoint id) of the checkpoint whose task ran it: the
    namespace's last segment is `node:task_id`, and that task's writes are pending on it."""
    out: dict[str, tuple[str, str]] = {}
    tasks = store.source.write_tasks(thread_id) if namespaces else None  # (Postgres: every checkpoint's at once)
    for ns in namespaces:
        parent_ns, _, last = ns.rpartition("|")
        task_id = last.rpartition(":")[2]
        if not task_id:
            continue
        for r in store.source.checkpoints(thread_id, parent_ns):
            if (
                task_id in tasks.get((parent_ns, r.checkpoint_id), ())
                if tasks is not None
                else any(w.task_id == task_id for w in store.source.writes(thread_id, parent_ns, r.checkpoint_id))
            ):
                out[ns] = (parent_ns, r.checkpoint_id)
                break
    return out


def by_ns(drop: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """A plan's (namespace, checkpoint id) pairs, by namespace."""
    out: dict[str, list[str]] = {}
    for ns, cid in drop:
        out.setdefault(ns, []).append(cid)
    return out


def sql(plans: list[ThreadPlan], kind: str) -> str:
    """SQL that carries the plans out, in one transaction: SQLite (SqliteSaver's `checkpoints`
    and `writes`) or Postgres (PostgresSaver's tables, and the blob versions that only the deleted
    checkpoints named: never a blob no checkpoint names yet, which may be a run's, written just
    before its checkpoint row)."""
    return "".join(line + "\n" for line in sql_lines(plans, kind))


def plans_json(label: str, plans: list[ThreadPlan]) -> dict[str, Any]:
    """`prune --json`'s plan (nothing applied): each thread's, and what they drop in all."""
    return {
        "db": label,
        "threads": [p.to_json() for p in plans],
        "drop": sum(len(p.drop) for p in plans),
        "bytes": sum(p.bytes for p in plans),
        "applied": False,
    }


def sql_lines(plans: list[ThreadPlan], kind: str) -> Iterator[str]:
    """`sql`, a statement at a time (a store's plan can be hundreds of MB of SQL), in the dialect
    of the store kind (`core.store_kinds`)."""
    from statectl.core.store_kinds import STORE_KINDS

    dialect = STORE_KINDS[kind]
    literal = dialect.literal
    yield from dialect.sql_begin(bool(plans))
    for p in plans:
        for ns, ids in by_ns(p.drop).items():
            for i in range(0, len(ids), 500):
                listed = ", ".join(literal(c) for c in ids[i : i + 500])
                where = (
                    f"thread_id = {literal(p.thread_id)} AND checkpoint_ns = {literal(ns)} "
                    f"AND checkpoint_id IN ({listed})"
                )
                yield f"DELETE FROM {dialect.writes_table} WHERE {where};"
                yield dialect.delete_checkpoints(where)
    yield from dialect.sql_end(bool(plans))
