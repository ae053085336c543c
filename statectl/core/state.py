"""A checkpoint and its writes -> a `Snapshot`, computed the way LangGraph's history view does.

LangGraph builds a `StateSnapshot` from the compiled graph's channel specs. statectl has only
the database, so it reads what the specs would say from the data itself:

* state keys are every channel that is not internal (`branch:to:*`, `join:*`, `__*`);
* delta channels are named by `metadata.counters_since_delta_snapshot`, and rebuilt by
  replaying the parent chain's writes (FORMAT §6);
* reducer channels that start as an empty collection are found where the newest checkpoint
  holds a collection that the writes accumulated into;
* nodes and their triggers come from the `branch:to:NODE` / `join:A+B:NODE` channel names, and
  task ids are computed exactly as `prepare_next_tasks` does (xxh3-128, or sha1 for v1).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from xxhash import xxh3_128_hexdigest

from statectl.codec.arrays import whole
from statectl.codec.decode import DeltaSnapshot, Tagged, dashed_uuid, decode_typed
from statectl.codec.values import b64
from statectl.core import reducers
from statectl.core.history import ThreadHistory
from statectl.core.js import (
    js_interrupt,
    loses_branch_values,
    lost_branch_values,
    reads_bytes_as_text,
    written_by_js,
)
from statectl.core.js import sqlite_bytes as js_sqlite_bytes
from statectl.core.js import task_id as js_task_id
from statectl.core.tasks import PULL, PUSH, pull_node, send_node
from statectl.errors import DecodeError
from statectl.model import (
    CONTROL,
    NULL_TASK_ID,
    CheckpointRecord,
    Interrupt,
    Snapshot,
    Task,
    WriteRecord,
    is_state_key,
    wanted,
)
from statectl.sources.base import Source
from statectl.sources.status import available, old_layout

if TYPE_CHECKING:  # (a graph is given with --graph: the views of data alone do not load its spec)
    from statectl.core.graphspec import GraphSpec

START, END, TASKS, RETURN, ROOT = "__start__", "__end__", "__pregel_tasks", "__return__", "__root__"
_MISSING = object()


def decode_write(w: WriteRecord) -> Any:
    try:
        return decode_typed(w.type, w.blob)
    except DecodeError as exc:
        raise DecodeError(
            f"write {w.channel!r} of task {w.task_id} on checkpoint {w.checkpoint_id} is corrupt: {exc.message}"
        ) from None


def task_path_str(parts: tuple[Any, ...]) -> str:
    """`langgraph.pregel._algo.task_path_str` for flat paths."""
    return "~" + ", ".join(f"{int(p):010d}" if isinstance(p, (int, bool)) else str(p) for p in parts)


def _task_id(v: int, ckpt_id: str, *parts: str) -> str:
    ns = bytes.fromhex(ckpt_id.replace("-", ""))
    data = "".join(parts).encode()
    if v == 1:  # checkpoints before LangGraph 0.3 (hashlib is imported here: 2 ms of every start)
        from hashlib import sha1

        hexd = sha1(ns + data, usedforsecurity=False).hexdigest()
    else:
        hexd = xxh3_128_hexdigest(ns + data)
    return dashed_uuid(hexd)


def _unwrap(value: Any) -> Any:
    return value.value if isinstance(value, DeltaSnapshot) else value


def interrupts_of(value: Any) -> list[Interrupt]:
    out = []
    for item in value if isinstance(value, list) else [value]:
        data = item.get("data") if isinstance(item, dict) and "$type" in item else None
        if isinstance(data, dict) and "value" in data:
            out.append(Interrupt(data.get("id"), data.get("value")))
        elif js_interrupt(item):  # LangGraph.js writes {id, value}
            out.append(Interrupt(item.get("id"), item["value"]))
        else:
            out.append(Interrupt(None, item))
    return out


class ThreadView(ThreadHistory):
    """One thread's history in one namespace (`ThreadHistory`: its rows, read and cached) and
    what LangGraph's channel specs would say of it, read from the data or taken from the app's
    graph: which channels are state, their reducers and empty values, the nodes and their order.
    `snapshot` is LangGraph's state at a checkpoint, built by `values` and `tasks`."""

    def __init__(
        self,
        source: Source,
        thread_id: str,
        checkpoint_ns: str = "",
        keys: frozenset[str] | None = None,
        graph: GraphSpec | None = None,
    ) -> None:
        super().__init__(source, thread_id, checkpoint_ns, keys)
        self.graph = graph
        """The app's compiled graph (`--graph TARGET`): where it knows a channel or a node, it
        is taken instead of what the data lets statectl infer."""
        self.spec = graph.for_ns(checkpoint_ns) if graph is not None else None
        self.graph_note: str | None = None
        """With a graph: where it does not describe this thread, in one line (then the thread is
        shown from the data alone: an unrelated graph's empty values would be inventions)."""
        if graph is not None:
            self.graph_note = self._graph_fit()
            if self.graph_note is not None:
                self.spec = None

    # -- what the graph's channel specs would say -------------------------------------------

    @cached_property
    def legacy_nodes(self) -> frozenset[str]:
        """Node channels of the layout LangGraph used before 0.3 (a channel named after each
        node, holding its name, beside `start:NODE` and `branch:SRC:COND:DST`): not state."""
        versions = self.latest.get("channel_versions") or {}
        if not old_layout(versions):
            return frozenset()
        return frozenset(n for n in self.latest.get("versions_seen") or {} if n in versions)

    @cached_property
    def legacy_triggers(self) -> dict[str, frozenset[str]]:
        """Before LangGraph 0.3 an edge A -> B made B read A's node channel: which channels
        trigger a node is not in the data, but every node that ran recorded the versions it saw
        of its triggers (`versions_seen`), and those records only grow."""
        if not self.legacy_nodes:
            return {}
        return {
            node: frozenset(seen)
            for node, seen in (self.latest.get("versions_seen") or {}).items()
            if isinstance(seen, dict) and node not in ("__input__", "__interrupt__", START)
        }

    def is_state(self, channel: str) -> bool:
        """Is this channel a state key of this thread's graph (in a snapshot's `values`)? The
        graph, where given, says (its `stream_channels`: what `get_state` reads); from the data, only a channel named
        like a node that ran can be a pre-0.3 node channel: where the writes name the nodes (task
        paths), other channels are answered without decoding a checkpoint (`log` decodes none)."""
        if self.spec is not None and (shown := self.spec.shown(channel)) is not None:
            return shown
        if not is_state_key(channel):
            return False
        if any(self.task_paths) and channel not in self._path_nodes:  # (an export of an old file: all '')
            return True
        return channel not in self.legacy_nodes

    @cached_property
    def _path_nodes(self) -> frozenset[str]:
        return frozenset(filter(None, map(pull_node, self.task_paths)))

    @cached_property
    def delta_keys(self) -> tuple[str, ...]:
        """The delta channels (FORMAT §6), read at the thread's head: LangGraph names every delta
        channel of its graph in each checkpoint it writes, in the metadata's
        `counters_since_delta_snapshot`, except where it just snapshotted one (its counters back
        to zero): so the newest checkpoint's and its predecessor's. Not every checkpoint's
        metadata: SQLite keeps it after the blob, so that would read the whole thread. A
        checkpoint that names more (its graph had another delta channel then) adds them when it
        is read (`widen_delta`)."""
        keys: dict[str, None] = dict.fromkeys(k for r in self.records[:2] for k in delta_counted(r))
        if self.spec is not None:
            keys.update(dict.fromkeys(k for k, ch in self.spec.channels.items() if ch.kind == "DeltaChannel"))
        return tuple(k for k in keys if wanted(k, self.keys))

    def widen_delta(self, rec: CheckpointRecord) -> None:
        """Add the delta channels `rec` names that the head does not (see `delta_keys`); what
        was derived from them is computed again."""
        more = [k for k in delta_counted(rec) if k not in self.delta_keys and wanted(k, self.keys)]
        if more:
            self.__dict__["delta_keys"] = (*self.delta_keys, *more)
            self.__dict__.pop("_defaults", None)

    @cached_property
    def start_node(self) -> str:
        """The node triggered by `__start__`: `__start__` for StateGraph, the entrypoint otherwise.
        The one node the newest checkpoint says has seen `__start__`; where it names none or
        several, the node that ran from the newest input (its writes: a query a checkpoint,
        the thread's length on a long thread)."""
        seen_start = [
            node
            for node, seen in (self.latest.get("versions_seen") or {}).items()
            if node not in ("__input__", "__interrupt__") and isinstance(seen, dict) and START in seen
        ]
        if len(seen_start) == 1:
            return seen_start[0]
        for r in self.records:
            for w in self.writes(r.checkpoint_id):
                node = pull_node(w.task_path)
                if node is not None and r.source == "input":
                    return node
        return seen_start[0] if seen_start else START

    @property
    def functional(self) -> bool:
        return self.start_node != START

    @cached_property
    def node_order(self) -> dict[str, int]:
        """Nodes in the order they first ran, which is how `versions_seen` is filled (within a
        step, by task path): read from the writes' task paths, because Postgres keeps
        `versions_seen` in JSONB, which does not keep key order. Nodes that ran without writing
        follow, in `versions_seen` order. (LangGraph orders pull tasks by the graph's node
        definitions, which the database does not record: README, Known limits; with the graph,
        its order, and the data's nodes it lacks after them.)"""
        names: dict[str, None] = dict.fromkeys(self.spec.nodes) if self.spec is not None else {}
        for path in self.task_paths:
            node = pull_node(path)
            if node is not None:
                names.setdefault(node)
        for name in self.latest.get("versions_seen", {}):
            names.setdefault(name)
        return {name: i for i, name in enumerate(names)}

    @cached_property
    def lean(self) -> ThreadView:
        """This thread's view without state values: its versions, read once."""
        return ThreadView(self.source, self.thread_id, self.checkpoint_ns, frozenset())

    def proven_reducer(self, key: str) -> bool:
        """Does the data prove `key` a reducer channel (a delta channel, or writes that did not
        simply replace the value)? Its absence proves nothing."""
        return key in self.delta_keys or key in self._defaults

    def _graph_fit(self) -> str | None:
        """What in this thread the graph does not describe, in one line (None: all of it)."""
        assert self.graph is not None
        from statectl.core.graphspec import mismatch, node_path

        where = f"thread {self.thread_id!r}" + (f" namespace {self.checkpoint_ns!r}" if self.checkpoint_ns else "")
        if self.spec is None:
            return (
                f"{self.graph.target} has no subgraph at {node_path(self.checkpoint_ns)!r} "
                f"({where}): shown from the data alone"
            )
        latest = self.latest
        keys = {
            k
            for k in {*(latest.get("channel_versions") or {}), *(latest.get("channel_values") or {})}
            if is_state_key(k) and k not in self.legacy_nodes
        }
        nodes = {n for n in self._data_nodes if not n.startswith("__") or n == START}
        found = mismatch(self.spec, keys, nodes)
        return f"{self.graph.target} does not match {where}: {found}; shown from the data alone" if found else None

    @cached_property
    def _data_nodes(self) -> frozenset[str]:
        seen = self.latest.get("versions_seen") or {}
        return frozenset({*self._path_nodes, *(n for n in seen if isinstance(seen[n], dict))})

    def empty_default(self, key: str) -> Any:
        """`typ()` of a collection reducer channel, or _MISSING if the channel starts empty."""
        return self._defaults.get(key, _MISSING)

    @cached_property
    def _defaults(self) -> dict[str, Any]:
        self._known_empty: set[str] = set()  # (facts — the graph's or the server's — not inferences)
        out: dict[str, Any] = {}
        if self.spec is not None:
            for key, empty in self.spec.empties().items():
                if wanted(key, self.keys):
                    out[key] = empty
                    self._known_empty.add(key)
        for key in self.delta_keys:
            if key in out or (self.spec is not None and key in self.spec.channels):
                continue
            sample = [decode_write(w) for ws in self.channel_writes(key).values() for w in ws[:1]]
            fn = reducers.reducer_for(sample)
            if fn is None and sample:  # (single values, say a string at a time: the channel's `typ`,
                empty = reducers.empty_like(_unwrap(sample[0]))  # a list unless the writes say a set)
                out[key] = [] if empty is None else empty
                continue
            out[key] = (
                []
                if fn is reducers.add_messages or fn is reducers.concat
                else ({} if fn is reducers.merge_dict else ([] if key == "messages" else {}))
            )
        for key, value in self.latest["channel_values"].items():
            if not self.is_state(key) or key in out or (self.spec is not None and key in self.spec.channels):
                continue
            empty = reducers.empty_like(_unwrap(value))
            if empty is None and type(_unwrap(value)) in (int, float) and written_by_js(self.latest):
                empty = 0  # (LangGraph.js's summing reducers start at their default, 0 in practice: inferred)
            if empty is not None and self._accumulates(key, value):
                out[key] = empty
        # Keys the server recorded as an empty collection that no checkpoint wrote: LangGraph
        # read them as their channel's `typ()` (a .langgraph_api folder's ops record proves it)
        if self.checkpoint_ns == "":
            written = self.latest.get("channel_versions") or {}
            for key, empty in self.source.empty_channels(self.thread_id).items():
                if key not in written and wanted(key, self.keys) and key not in out:
                    out[key] = empty
                    self._known_empty.add(key)
        return out

    @cached_property
    def _branches(self) -> list[tuple[str, set[str]]]:
        """Each branch `_accumulates` reads: the newest checkpoint's, then up to `_LEAVES` other
        leaves', each with the ids on its line (from ids and parents alone: no metadata read)."""
        kids = self.children()
        newest = self.latest.get("id", self.records[0].checkpoint_id if self.records else "")
        leaves = [r.checkpoint_id for r in self.records if r.checkpoint_id not in kids and r.checkpoint_id != newest]
        branches = [
            (leaf, {r.checkpoint_id for r in self.ancestry(self.by_id.get(leaf))} or set(self.by_id))
            for leaf in [newest, *leaves[:_LEAVES]]
        ]
        return branches

    def _updated(self, checkpoint_id: str) -> bool:
        """Did an update follow this checkpoint (a child of source `update`)?"""
        return any(self.by_id[k].source == "update" for k in self.children().get(checkpoint_id, ()) if k in self.by_id)

    def _accumulates(self, key: str, latest_value: Any) -> bool:
        """Does `key` have a reducer? Messages do; else a branch's newest value is not the last
        write on that branch (each branch of a fork by itself: a write on another branch was
        never applied to it; the newest checkpoint's branch, then up to `_LEAVES` others)."""
        if isinstance(latest_value, list) and any(reducers.is_message(m) for m in latest_value):
            return True
        by_ckpt = self.channel_writes(key)
        branches = self._branches
        # several tasks wrote it in one step: LastValue would have refused (not where an update
        # followed: LangGraph.js before v4 writes the update's values there too)
        if any(
            len({w.task_id for w in ws}) > 1 and c in self.by_id and not self._updated(c) for c, ws in by_ckpt.items()
        ):
            return True
        for i, (leaf, line) in enumerate(branches):
            if i == 0:  # (the newest checkpoint's branch)
                value = latest_value
            else:
                try:
                    cv = self.checkpoint(leaf).get("channel_values") or {}
                except DecodeError:
                    continue
                if key not in cv:
                    continue
                value = cv[key]
            applied = [ws for cid, ws in sorted(by_ckpt.items()) if cid != leaf and cid in line]
            # (any write of its last step: where an update followed, some were the update's)
            if applied and not any(_same(decode_write(w), value) for w in applied[-1]):
                return True
        return False

    def reducer(self, key: str, sample: list[Any]) -> Any:
        """The reducer to apply `key`'s writes with: the graph's where it names one statectl
        has (a custom function is never called: then it is picked by the values, as without
        the graph), else picked by the values of a proven reducer channel, else None (the
        last write wins)."""
        named = self.spec.reducer(key) if self.spec is not None else None
        if named == "last":
            return None
        if named in reducers.BY_NAME:
            return reducers.BY_NAME[named]
        if named is not None or key in self.delta_keys or key in self._defaults:
            return reducers.reducer_for(sample) or reducers.concat
        return None

    # -- the snapshot -------------------------------------------------------------------------

    def task_names(self, checkpoint_id: str) -> dict[str, str]:
        """Task id -> node name of the tasks planned on a checkpoint: who wrote its writes
        where they carry no task path (databases of LangGraph before 0.6)."""
        rec = self.record(checkpoint_id)
        try:
            ck = self.checkpoint(checkpoint_id)
        except DecodeError:
            return {}
        if "$server" in ck:
            return {str(t.get("id")): str(t.get("name")) for t in ck["$server"].get("tasks") or []}
        return {t.id: t.name for t in tasks(self, rec, ck, self.writes(checkpoint_id))}

    def snapshot(self, checkpoint_id: str) -> Snapshot:
        rec = self.record(checkpoint_id)
        ck = self.checkpoint(checkpoint_id)
        if "$server" in ck:  # a LangGraph server computed this state: shown as it came
            from statectl.codec.formats.server import server_snapshot

            return server_snapshot(self.keys, rec, ck)
        writes = self.writes(checkpoint_id)
        notes: list[str] = [*(ck.get("$notes") or ()), *self.loop_notes]  # what could not be read
        if "$undecoded" in ck:  # the whole checkpoint: nothing of the state is known
            return Snapshot(
                thread_id=self.thread_id,
                checkpoint_ns=self.checkpoint_ns,
                checkpoint_id=checkpoint_id,
                parent_checkpoint_id=rec.parent_checkpoint_id,
                created_at=None,
                metadata=rec.metadata,
                values=Tagged({"$undecoded": ck["$undecoded"]}),
                next=(),
                tasks=(),
                interrupts=(),
                notes=tuple(notes),
            )
        inferred: list[str] = []
        state = values(self, rec, ck, writes, notes, inferred)
        if self.keys is not None and isinstance(state, dict):  # the keys of a functional/root value
            state = {k: v for k, v in state.items() if k in self.keys}
        inferred = [k for k in inferred if isinstance(state, dict) and k in state]
        due = tasks(self, rec, ck, writes)
        metadata = rec.metadata
        if written_by_js(ck) and isinstance(metadata, dict):  # (LangGraph.js's snapshot adds it)
            metadata = {**metadata, "thread_id": self.thread_id}
            if loses_branch_values(self.source):
                notes += lost_branch_values(self, checkpoint_id)
        return Snapshot(
            thread_id=self.thread_id,
            checkpoint_ns=self.checkpoint_ns,
            checkpoint_id=checkpoint_id,
            parent_checkpoint_id=rec.parent_checkpoint_id,
            created_at=ck.get("ts"),
            metadata=metadata,
            values=state,
            next=next_nodes(due),
            tasks=tuple(due),
            interrupts=tuple(i for t in due for i in t.interrupts),
            notes=tuple(notes),
            inferred=tuple(inferred),
        )


def _same(write: Any, value: Any) -> bool:
    """Is `value` what `write` left? Equal, or bytes LangGraph.js before v4 kept in the checkpoint
    as the JSON of its Uint8Array (`{"0": 0, "1": 1, ...}`) while the write kept them as bytes."""
    if write == value:
        return True
    if isinstance(write, dict) and set(write) == {"$bytes"} and isinstance(value, dict):
        import base64  # (only for such a write)

        raw = base64.b64decode(str(write["$bytes"]))
        return value == {str(i): b for i, b in enumerate(raw)}
    return False


_LEAVES = 8
"""The branches besides the newest checkpoint's that `_accumulates` reads (a fork's few; bounded)."""


def delta_counted(r: CheckpointRecord) -> list[str]:
    """The delta channels a checkpoint's metadata counts steps for."""
    counters = r.metadata.get("counters_since_delta_snapshot")
    return [str(k) for k in counters] if isinstance(counters, dict) else []


def values(
    view: ThreadView, rec: CheckpointRecord, ck: dict, writes: list[WriteRecord], notes: list[str], inferred: list[str]
) -> Any:
    """`read_channels` of a checkpoint: its state channels (delta channels replayed, reducer
    channels before their first write at their empty value) with the `Command(update=...)`
    input pending on it applied; `notes` and `inferred` say what was rebuilt or inferred."""
    cv: dict[str, Any] = ck.get("channel_values") or {}
    versions: dict[str, Any] = ck.get("channel_versions") or {}
    if view.functional:
        return _unwrap(cv.get(END))
    if ROOT in versions:
        return _unwrap(cv.get(ROOT))
    values = {k: _unwrap(v) for k, v in cv.items() if view.is_state(k)}
    view.widen_delta(rec)
    for key in view.delta_keys:
        if key in values:
            continue
        if key in versions:
            values[key] = replay(view, rec, key, notes)
        elif (empty := view.empty_default(key)) is not _MISSING:
            values[key] = empty
            if key not in view._known_empty:
                inferred.append(key)
    for key, empty in view._defaults.items():
        if key not in values and key not in view.delta_keys:
            values[key] = empty
            if key not in view._known_empty:
                inferred.append(key)
    for w in writes:  # Command(update=...) input: applied to the values in every view
        if w.task_id == NULL_TASK_ID and view.is_state(w.channel) and wanted(w.channel, view.keys):
            value = decode_write(w)
            fn = view.reducer(w.channel, [value])
            values[w.channel] = reducers.apply(fn, whole(values.get(w.channel)), value)
    return values


def next_nodes(due: list[Task]) -> tuple[str, ...]:
    """A snapshot's `next`: the names of the tasks due, in their order (as `get_state_history`
    gives it: every task of the step, finished or not)."""
    return tuple(t.name for t in due)


def replay(view: ThreadView, rec: CheckpointRecord, key: str, notes: list[str]) -> Any:
    """Rebuild a delta channel: seed from the nearest ancestor holding it, then its writes."""
    chain: list[list[WriteRecord]] = []
    seed: Any = _MISSING
    for cursor in view.ancestry(view.parent(rec)):
        chain.append(view.channel_writes(key).get(cursor.checkpoint_id, []))
        cv = view.checkpoint(cursor.checkpoint_id).get("channel_values") or {}
        if key in cv:
            seed = whole(_unwrap(cv[key]))
            break
    if seed is _MISSING and rec.parent_checkpoint_id and rec.parent_checkpoint_id not in view.by_id:
        notes.append(f"{key}: the parent chain is incomplete; rebuilt from the writes that remain")
    decoded = [decode_write(w) for ws in reversed(chain) for w in ws]
    fn = view.reducer(key, decoded) or reducers.concat
    value = seed if seed is not _MISSING else view.empty_default(key)
    value = None if value is _MISSING else value
    for item in decoded:
        value = reducers.apply(fn, value, item)
    return value


def tasks(view: ThreadView, rec: CheckpointRecord, ck: dict, writes: list[WriteRecord]) -> list[Task]:
    """`prepare_next_tasks` of a checkpoint: the Sends it holds, then the nodes whose trigger
    channels advanced past what they saw, with LangGraph's task ids, each with what it wrote
    (its result, error and interrupts) as the pending writes record it."""
    cv: dict[str, Any] = ck.get("channel_values") or {}
    versions: dict[str, Any] = ck.get("channel_versions") or {}
    seen_all: dict[str, dict] = ck.get("versions_seen") or {}
    if not versions:
        return []
    # LangGraph hashes task ids with sha1 for v=1 checkpoints and xxh3 after, but LangGraph
    # 0.2 wrote v=2 with sha1 ids: its layout says so, and a write with the other id wins
    v = 1 if view.legacy_nodes else ck.get("v", 4)
    wrote = {w.task_id for w in writes}
    js = written_by_js(ck)

    def task_id(*parts: Any) -> str:
        if js:
            return js_task_id(cid, *parts)
        tid = _task_id(v, cid, *parts)
        if tid not in wrote and (other := _task_id(2 if v == 1 else 1, cid, *parts)) in wrote:
            return other
        return tid

    cid = rec.checkpoint_id
    step = str((rec.step if rec.step is not None else -1) + 1)
    null = type(next(iter(versions.values())))()
    ns = view.checkpoint_ns

    def task_ns(name: str) -> str:
        return f"{ns}|{name}" if ns else name

    planned = _planned_sends(view, rec, cv, ck, task_ns, task_id, step)
    triggers: dict[str, set[str]] = {}
    for ch in {*versions, *cv}:
        if ch.startswith(("branch:", "join:")):  # branch:to:DST, join:A+B:DST, branch:SRC:COND:DST
            triggers.setdefault(ch.rsplit(":", 1)[1], set()).add(ch)
        elif ch.startswith("start:"):  # before LangGraph 0.3
            triggers.setdefault(ch[len("start:") :], set()).add(ch)
        elif ch == START:
            triggers.setdefault(view.start_node, set()).add(ch)
    for node, chans in view.legacy_triggers.items():  # edges from node channels (before 0.3)
        triggers.setdefault(node, set()).update(ch for ch in chans if ch in versions)
    order = view.node_order if len(triggers) > 1 else {}  # one query, when there is an order to find
    for node in sorted(triggers, key=lambda n: (order.get(n, len(order)), n)):
        seen = seen_all.get(node) or {}
        fired = [
            ch
            for ch in sorted(triggers[node])
            if ch in cv and available(ch, cv[ch]) and versions.get(ch, null) > seen.get(ch, null)
        ]
        if fired and js:  # LangGraph.js hashes the first trigger that fired (branch:to before join:)
            planned.append((task_id(task_ns(node), step, node, PULL, fired[:1]), node, (PULL, node)))
        elif fired:  # the id hashes the channels that fired (LangGraph's `triggers`)
            planned.append((task_id(task_ns(node), step, node, PULL, *fired), node, (PULL, node)))
    old_js = js and isinstance(ck.get("v"), int) and ck["v"] < 4
    tasks = [task(view, tid, name, path, writes, js, old_js) for tid, name, path in planned]
    # Without task paths (PostgresSaver before migration 9) a pull task whose id we computed
    # differently cannot be matched by path: when exactly one planned task has no writes and
    # exactly one task id that wrote is planned by nobody, they are the same task.
    claimed = {t.id for t in tasks}
    unclaimed = {w.task_id for w in writes if w.task_id not in claimed and w.task_id != NULL_TASK_ID}
    idle = [i for i, t in enumerate(tasks) if t.path[0] == PULL and not any(w.task_id == t.id for w in writes)]
    # (not when an `update_state` followed: its writes are pending here too, under its own id)
    updated = any(view.by_id[c].source == "update" for c in view._children.get(cid, ()))
    if len(unclaimed) == 1 and len(idle) == 1 and not updated and not any(w.task_path for w in writes):
        i = idle[0]
        tasks[i] = task(view, unclaimed.pop(), tasks[i].name, tasks[i].path, writes, js, old_js)
    return tasks


def _planned_sends(
    view: ThreadView, rec: CheckpointRecord, cv: dict, ck: dict, task_ns: Any, task_id: Any, step: str
) -> list[Any]:
    """The tasks of the Sends a checkpoint holds (`__pregel_tasks`, or `pending_sends` before v4).
    LangGraph.js before v4 keeps no `pending_sends` in the row: its savers read them from the
    parent checkpoint's writes to `__pregel_tasks`, and its push task's path has no third part."""
    planned: list[tuple[str, str, tuple[Any, ...]]] = []
    sends = cv.get(TASKS) or ck.get("pending_sends") or []
    old_js = not sends and written_by_js(ck) and isinstance(ck.get("v"), int) and ck["v"] < 4
    if old_js and rec.parent_checkpoint_id:
        sends = [decode_write(w) for w in view.writes(rec.parent_checkpoint_id) if w.channel == TASKS]
    for idx, send in enumerate(sends if isinstance(sends, list) else []):
        node = send_node(send)
        if node is None:
            continue
        planned.append(
            (
                task_id(task_ns(node), step, node, PUSH, str(idx)),
                node,
                (PUSH, idx) if view.legacy_nodes or old_js else (PUSH, idx, False),
            )
        )
    return planned


def task(
    view: ThreadView,
    task_id: str,
    name: str,
    path: tuple[Any, ...],
    writes: list[WriteRecord],
    js: bool = False,
    old_js: bool = False,
) -> Task:
    """One planned task and its own pending writes (found by id, else by task path); `js`: as
    LangGraph.js reports it (no result where no state key was written); `old_js`: as LangGraph.js
    before the v4 checkpoint reports it (no result for a task that raised or was interrupted, even
    where it wrote after its resume)."""
    own = [w for w in writes if w.task_id == task_id]
    if not own:  # trigger channels never written in this thread change the id: match by path
        want = task_path_str(path)
        match = next(
            (
                w.task_id
                for w in writes
                if w.task_path.startswith(want) and w.task_path[len(want) :] in ("", ", 0000000000")
            ),
            None,
        )
        if match:
            task_id, own = match, [w for w in writes if w.task_id == match]
    interrupts: list[Interrupt] = []
    error: Any = None
    output: list[tuple[str, WriteRecord]] = []
    for w in own:
        if w.channel == "__interrupt__":
            interrupts.extend(interrupts_of(decode_write(w)))
        elif w.channel == "__error__":
            if error is None:
                error = decode_write(w)
        elif w.channel not in CONTROL:
            output.append((w.channel, w))
    result: Any = None
    if output:
        rtn = [w for ch, w in output if ch == RETURN]
        if rtn:
            result = decode_write(rtn[0])
        elif view.functional:
            ends = [decode_write(w) for ch, w in output if ch == END]
            result = _fold_pairs([(END, e) for e in ends])[END] if ends else None
        else:
            read = decode_write
            if js and reads_bytes_as_text(view.source):  # (LangGraph.js's SqliteSaver reads bytes as text)
                read = _js_sqlite_write
            pairs = [(ch, read(w)) for ch, w in output if view.is_state(ch)]
            result = None if js and not pairs else _fold_pairs(pairs)
    if old_js and (error is not None or interrupts):
        result = None
    sub = f"{view.checkpoint_ns}|{name}:{task_id}" if view.checkpoint_ns else f"{name}:{task_id}"
    return Task(
        id=task_id,
        name=name,
        path=path,
        error=error,
        interrupts=tuple(interrupts),
        result=result,
        finished=bool(output),
        subgraph_ns=sub if sub in view.namespaces else None,
    )


def _js_sqlite_write(w: WriteRecord) -> Any:
    if w.type in ("bytes", "bytearray"):
        return Tagged({"$bytes": b64(js_sqlite_bytes(w.blob))})
    return decode_write(w)


def _fold_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`map_task_result_writes`: repeated writes to one channel become {"$writes": [...]}."""
    out: dict[str, Any] = {}
    for ch, value in pairs:
        if ch in out:
            prev = out[ch]
            multi = prev["$writes"] if isinstance(prev, dict) and "$writes" in prev and len(prev) == 1 else [prev]
            out[ch] = {"$writes": [*multi, value]}
        else:
            out[ch] = value
    return out
