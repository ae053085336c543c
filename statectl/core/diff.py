"""What changed between two checkpoints, and which task changed it.

The values compared are the snapshots' values (what LangGraph's history view reports), so a diff
is exactly the difference between two `get_state_history` entries. On top of that:

* `messages`-like keys (lists of LangChain messages) are compared as `add_messages` does: by id;
* inside other values, the changed places are JSON Pointers (RFC 6901) into the tagged JSON form,
  and `patch()` turns them into an RFC 6902 JSON Patch that rewrites A's values into B's;
* writers come from the writes stored on each parent checkpoint (FORMAT §5): the tasks that ran
  from it and produced its child, `update_state`, a fork, or `Command(update=...)` input.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from statectl.core.reducers import is_message
from statectl.core.state import ThreadView
from statectl.core.steps import ANY, step_nodes, step_writers
from statectl.errors import NotFoundError
from statectl.model import CheckpointRecord, Interrupt, Snapshot

ROOT_KEY = ""
"""The key of a whole value that is not a dict (the functional API's return value)."""
_ABSENT = object()


@dataclass(frozen=True, slots=True)
class PathChange:
    """One place inside a value: RFC 6902 op (`add` / `remove` / `replace`) at a JSON Pointer."""

    op: str
    path: str
    before: Any = None
    after: Any = None


@dataclass(frozen=True, slots=True)
class MessageChange:
    """A message added, removed or edited in place, matched by id as `add_messages` does."""

    op: str
    """added / removed / edited"""
    id: str | None
    index: int
    """Its position in B (added, edited) or in A (removed)."""
    before: Any = None
    after: Any = None


@dataclass(frozen=True, slots=True)
class KeyChange:
    """One top-level state key that differs between A and B."""

    key: str
    op: str
    """added / removed / changed"""
    before: Any
    after: Any
    by: tuple[str, ...]
    """What wrote it: node names (for a step) or every writer between A and B."""
    steps: tuple[tuple[int | None, str, tuple[str, ...]], ...] = ()
    """For distant checkpoints: (step, checkpoint id, writers) of each step that wrote the key."""
    paths: tuple[PathChange, ...] = ()
    messages: tuple[MessageChange, ...] | None = None

    @property
    def pointer(self) -> str:
        return _pointer(ROOT_KEY, self.key) if self.key != ROOT_KEY else ""


@dataclass(frozen=True, slots=True)
class Diff:
    """Everything that differs between two snapshots of one thread."""

    a: Snapshot | None
    """None when B has no parent: B is compared with an empty state."""
    b: Snapshot
    adjacent: bool
    """B is A's child: the writers are the tasks of one step."""
    changes: tuple[KeyChange, ...]
    internal: tuple[tuple[str, Any, Any], ...] = ()
    """(channel, A's version, B's version) of bookkeeping channels that changed."""
    ran: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    compared: bool = True
    """False when A's or B's values could not be read (pickled, encrypted): no change is known."""

    @property
    def has_changes(self) -> bool:
        return bool(self.changes) or self.next_changed or self.interrupts_changed

    @property
    def next_before(self) -> tuple[str, ...]:
        return self.a.next if self.a else ()

    @property
    def next_changed(self) -> bool:
        return self.next_before != self.b.next

    @property
    def interrupts_before(self) -> tuple[Interrupt, ...]:
        return self.a.interrupts if self.a else ()

    @property
    def interrupts_changed(self) -> bool:
        return [i.to_json() for i in self.interrupts_before] != [i.to_json() for i in self.b.interrupts]

    def only(self, key: str) -> Diff:
        """The same diff restricted to one state key."""
        return replace(self, changes=tuple(c for c in self.changes if c.key == key))

    def to_json(self) -> dict[str, Any]:
        changes: list[dict[str, Any]] = []
        for c in self.changes:
            entry = _entry(c.key, c.op, c.pointer, c.before, c.after, c.by)
            if c.steps:
                entry["steps"] = [{"step": s, "checkpoint_id": cid, "by": list(who)} for s, cid, who in c.steps]
            changes.append(entry)
            if c.messages is not None:
                changes.extend(
                    _entry(c.key, m.op, _pointer(c.pointer, m.index), m.before, m.after, c.by, message_id=m.id)
                    for m in c.messages
                )
            else:
                changes.extend(
                    _entry(c.key, _OPS[p.op], p.path, p.before, p.after, c.by) for p in c.paths if p.path != c.pointer
                )
        a = self.a
        across = {"from_thread_id": a.thread_id} if a is not None and a.thread_id != self.b.thread_id else {}
        return {
            "thread_id": self.b.thread_id,
            **across,
            "checkpoint_ns": self.b.checkpoint_ns,
            "from": a.checkpoint_id if a else None,
            "to": self.b.checkpoint_id,
            "from_step": a.step if a else None,
            "to_step": self.b.step,
            "adjacent": self.adjacent,
            "ran": list(self.ran),
            "changes": changes,
            "next": {"before": list(self.next_before), "after": list(self.b.next)},
            "interrupts": {
                "before": [i.to_json() for i in self.interrupts_before],
                "after": [i.to_json() for i in self.b.interrupts],
            },
            **(
                {"internal": [{"channel": ch, "before": va, "after": vb} for ch, va, vb in self.internal]}
                if self.internal
                else {}
            ),
            **({"notes": list(self.notes)} if self.notes else {}),
        }


_OPS = {"add": "added", "remove": "removed", "replace": "changed"}


def _json_value(value: Any) -> Any:
    return None if value is _ABSENT else value


def _entry(key: str, op: str, path: str, before: Any, after: Any, by: tuple[str, ...], **extra: Any) -> dict[str, Any]:
    """One element of `changes` in the JSON form of a diff."""
    return {
        "key": key,
        "op": op,
        "path": path,
        **extra,
        "before": _json_value(before),
        "after": _json_value(after),
        "by": list(by),
    }


def diff(view: ThreadView, a: CheckpointRecord | None, b: CheckpointRecord, internal: bool = False) -> Diff:
    """The diff from checkpoint `a` (None: an empty state) to checkpoint `b` of one view."""
    snap_b = view.snapshot(b.checkpoint_id)
    snap_a = view.snapshot(a.checkpoint_id) if a else None
    adjacent = a is None or b.parent_checkpoint_id == a.checkpoint_id
    notes: list[str] = []
    if a is None or adjacent:
        step = step_writers(view, b)
        writers = {k: (tuple(v), ()) for k, v in step.items()}
        ran = step_nodes(b, step)
    else:
        writers, ran = _writers_between(view, a, b, notes)
    before = snap_a.values if snap_a else ({} if isinstance(snap_b.values, dict) else None)
    unread = [s for s in (snap_a, snap_b) if s is not None and _unread(s.values)]
    if unread:  # a pickled or encrypted checkpoint: its values cannot be compared
        notes.extend(n for s in unread for n in s.notes)
        return Diff(snap_a, snap_b, adjacent, (), (), ran, tuple(dict.fromkeys(notes)), compared=False)
    changes = tuple(_key_changes(before, snap_b.values, writers))
    chans = _internal(view, a, b) if internal else ()
    return Diff(snap_a, snap_b, adjacent, changes, chans, ran, tuple(notes))


def diff_across(view_a: ThreadView, a: CheckpointRecord, view_b: ThreadView, b: CheckpointRecord) -> Diff:
    """The diff from a checkpoint of one thread to a checkpoint of another (or of the same thread
    in another store: the original run against its re-run in a copy). Messages align by id and
    keys by name, as within a thread; the writers are those of B's steps since the two share
    their history (the same checkpoint ids: a copy, a fork), where they do."""
    snap_a, snap_b = view_a.snapshot(a.checkpoint_id), view_b.snapshot(b.checkpoint_id)
    two_stores = view_a.source.label != view_b.source.label
    if view_a.thread_id != view_b.thread_id and two_stores:
        notes = [
            f"A and B are in two threads of two stores: A in {view_a.thread_id} of {view_a.source.label}, "
            f"B in {view_b.thread_id} of {view_b.source.label}"
        ]
    elif view_a.thread_id != view_b.thread_id:
        notes = [f"A and B are in two threads: A in {view_a.thread_id}, B in {view_b.thread_id}"]
    else:  # (the same thread in two stores: name the stores)
        notes = [f"A and B are in two stores: A in {view_a.source.label}, B in {view_b.source.label}"]
    on_a = {r.checkpoint_id for r in view_a.ancestry(a)}
    common = next((r for r in view_b.ancestry(b) if r.checkpoint_id in on_a), None)
    writers: dict[str, tuple] = {}
    ran: tuple[str, ...] = ()
    if common is not None:
        notes.append(f"they share their history up to checkpoint {common.checkpoint_id} (step {common.step})")
        if common.checkpoint_id != b.checkpoint_id:
            writers, ran = _writers_between(view_b, common, b, notes)
    unread = [s for s in (snap_a, snap_b) if _unread(s.values)]
    if unread:
        notes.extend(n for s in unread for n in s.notes)
        return Diff(snap_a, snap_b, False, (), (), ran, tuple(dict.fromkeys(notes)), compared=False)
    return Diff(
        snap_a,
        snap_b,
        False,
        tuple(_key_changes(snap_a.values, snap_b.values, writers)),
        (),
        ran,
        tuple(dict.fromkeys(notes)),
    )


def _unread(values: Any) -> bool:
    return isinstance(values, dict) and "$undecoded" in values


def _writers_between(
    view: ThreadView, a: CheckpointRecord, b: CheckpointRecord, notes: list[str]
) -> tuple[dict[str, tuple], tuple[str, ...]]:
    """Writers of every step on the way from A to B (through their common ancestor if any)."""
    line_a, line_b = list(view.ancestry(a)), list(view.ancestry(b))
    ids_a = {r.checkpoint_id for r in line_a}
    common = next((r for r in line_b if r.checkpoint_id in ids_a), None)
    if common is None:
        notes.append("A and B share no ancestor in this namespace: no writer can be named")
        return {}, ()
    if a.checkpoint_id == b.checkpoint_id:  # (one checkpoint against itself: nothing between)
        return {}, ()
    steps = line_b[: line_b.index(common)][::-1]
    if not steps:  # B is an ancestor of A: name the steps being undone
        steps = line_a[: line_a.index(common)][::-1]
        notes.append("B is an ancestor of A: writers are those of the steps from B to A")
    elif common.checkpoint_id != a.checkpoint_id:
        notes.append(
            f"A is not an ancestor of B: they branch at step {common.step} "
            f"({common.checkpoint_id}); writers are those of B's branch since then"
        )
    per_key: dict[str, tuple[list[str], list[tuple]]] = {}
    ran: dict[str, None] = {}
    for rec in steps:
        for ch, who in step_writers(view, rec).items():
            names, where = per_key.setdefault(ch, ([], []))
            names.extend(n for n in who if n not in names)
            where.append((rec.step, rec.checkpoint_id, tuple(who)))
            ran.update(dict.fromkeys(who))
    return {k: (tuple(n), tuple(w)) for k, (n, w) in per_key.items()}, tuple(ran)


def _key_changes(before: Any, after: Any, writers: dict[str, tuple]) -> list[KeyChange]:
    if not isinstance(before, dict) or not isinstance(after, dict):
        if before == after:
            return []
        by, steps = writers.get("__end__", writers.get("__return__", ((), ())))
        return [
            KeyChange(ROOT_KEY, "changed", before, after, tuple(by), tuple(steps), tuple(_paths(before, after, "")))
        ]
    out = []
    fallback = writers.get(ANY, ((), ()))
    for key in [*before, *(k for k in after if k not in before)]:
        va, vb = before.get(key, _ABSENT), after.get(key, _ABSENT)
        if va == vb:
            continue
        op = "added" if va is _ABSENT else "removed" if vb is _ABSENT else "changed"
        by, steps = writers.get(key, fallback)
        pointer = _pointer("", key)
        msgs = _grown_messages(va, vb)
        if msgs is None:
            msgs = _messages(va, vb) if _is_messages(va) or _is_messages(vb) else None
        paths = tuple(_paths(va, vb, pointer)) if op == "changed" else ()
        out.append(KeyChange(key, op, va, vb, tuple(by), tuple(steps), paths, msgs))
    return out


def _grown_messages(before: Any, after: Any) -> tuple[MessageChange, ...] | None:
    """The messages `add_messages` appended, where a list of messages only grew at its end (the
    common step: found without a pass over the messages it kept); None otherwise."""
    if not isinstance(before, list) or not isinstance(after, list) or len(after) <= len(before) or not before:
        return None
    if not (is_message(before[0]) and is_message(before[-1])) or after[: len(before)] != before:
        return None
    added = after[len(before) :]
    if not all(is_message(m) for m in added):
        return None
    known = _IDS.of(after)
    if known is not None:  # (log -p, newest first: this step's `after` was the last step's `before`)
        old_ids, new_ids = known[: len(before)], known[len(before) :]
    else:
        old_ids, new_ids = _IDS.of(before) or _message_ids(before), _message_ids(added)
    _IDS.keep(before, old_ids)
    _IDS.keep(after, old_ids + new_ids)
    if None in new_ids or len(set(new_ids)) < len(added) or set(new_ids).intersection(old_ids):
        return None  # (an id seen before: add_messages replaced a message; the full match by id says which)
    return tuple(
        MessageChange("added", mid, len(before) + i, after=m)
        for i, (mid, m) in enumerate(zip(new_ids, added, strict=True))
    )


class _Known:
    """The message ids of the last few lists read, by identity: a long thread's neighbouring
    steps share their lists (`decode.MEMO`), so a walk through its steps reads each id once, not
    once a step. (Decoded values are never changed in place; a list held here is not freed.)"""

    SIZE = 4

    def __init__(self) -> None:
        self.lists: list[tuple[list[Any], list[Any]]] = []

    def of(self, messages: list[Any]) -> list[Any] | None:
        # (or an equal list: a step that left the messages as they were reads them anew, the
        # same message objects in a list of its own; compared by identity first, in C)
        return next((ids for lst, ids in self.lists if lst is messages or lst == messages), None)

    def keep(self, messages: list[Any], ids: list[Any]) -> None:
        if self.of(messages) is None:
            self.lists = [(messages, ids), *self.lists[: self.SIZE - 1]]


_IDS = _Known()


def _is_messages(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(is_message(m) for m in value)


def _message_ids(messages: list[Any]) -> list[Any]:
    out = []
    for m in messages:
        data = m.get("data") if isinstance(m, dict) else None
        out.append(data.get("id") if isinstance(data, dict) else None)
    return out


def _messages(before: Any, after: Any) -> tuple[MessageChange, ...]:
    """Messages added, removed or edited, matched by id as `add_messages` matches them.
    (One pass over each list; a message the decoder shares between the two checkpoints is the
    same object, so a list that only grew costs no deep comparison.)"""
    old = before if isinstance(before, list) else []
    new = after if isinstance(after, list) else []
    old_ids, new_ids = _message_ids(old), _message_ids(new)
    old_by_id = {mid: i for i, mid in enumerate(old_ids)}
    in_new = set(new_ids)
    out: list[MessageChange] = []
    for i, (mid, m) in enumerate(zip(old_ids, old, strict=True)):
        if mid not in in_new or (mid is None and m not in new):
            out.append(MessageChange("removed", mid, i, before=m))
    for i, (mid, m) in enumerate(zip(new_ids, new, strict=True)):
        j = old_by_id.get(mid) if mid is not None else None
        if j is None:
            if mid is None and m in old:
                continue
            out.append(MessageChange("added", mid, i, after=m))
        elif old[j] is not m and old[j] != m:
            out.append(MessageChange("edited", mid, i, before=old[j], after=m))
    return tuple(out)


def _pointer(base: str, token: Any) -> str:
    return f"{base}/{str(token).replace('~', '~0').replace('/', '~1')}"


def _paths(before: Any, after: Any, path: str) -> list[PathChange]:
    """The smallest add/remove/replace operations that turn `before` into `after` (RFC 6902).

    Dicts are compared key by key; lists by trimming their common head and tail, then element
    by element, then adding or removing what is left (removals from the highest index down, so
    each operation's path is valid when it is applied in order).
    """
    if before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict) and (before.get("$type") == after.get("$type")):
        out: list[PathChange] = []
        for key in before:
            if key not in after:
                out.append(PathChange("remove", _pointer(path, key), before=before[key]))
            elif before[key] != after[key]:
                out.extend(_paths(before[key], after[key], _pointer(path, key)))
        out.extend(PathChange("add", _pointer(path, k), after=after[k]) for k in after if k not in before)
        return out
    if isinstance(before, list) and isinstance(after, list):
        if len(after) > len(before) and after[: len(before)] == before:  # (grew at its end: a C-speed test)
            return [PathChange("add", _pointer(path, i), after=after[i]) for i in range(len(before), len(after))]
        head = 0
        while head < min(len(before), len(after)) and before[head] == after[head]:
            head += 1
        tail = 0
        while (
            tail < min(len(before), len(after)) - head
            and before[len(before) - 1 - tail] == after[len(after) - 1 - tail]
        ):
            tail += 1
        old, new = before[head : len(before) - tail], after[head : len(after) - tail]
        out = []
        for i in range(min(len(old), len(new))):
            out.extend(_paths(old[i], new[i], _pointer(path, head + i)))
        for i in range(len(old) - 1, len(new) - 1, -1):
            out.append(PathChange("remove", _pointer(path, head + i), before=old[i]))
        for i in range(len(old), len(new)):
            out.append(PathChange("add", _pointer(path, head + i), after=new[i]))
        return out
    return [PathChange("replace", path, before=before, after=after)]


def patch(d: Diff) -> list[dict[str, Any]]:
    """An RFC 6902 JSON Patch that turns A's values (tagged JSON form) into B's."""
    ops: list[dict[str, Any]] = []
    for c in d.changes:
        if c.op == "changed":
            ops.extend(
                {"op": p.op, "path": p.path, **({"value": p.after} if p.op != "remove" else {})} for p in c.paths
            )
        elif c.op == "added":
            ops.append({"op": "add", "path": c.pointer, "value": c.after})
        else:
            ops.append({"op": "remove", "path": c.pointer})
    return ops


def _internal(view: ThreadView, a: CheckpointRecord | None, b: CheckpointRecord) -> tuple:
    """Bookkeeping channels (`branch:to:*`, `__start__`, ...) whose version changed."""
    va = (view.checkpoint(a.checkpoint_id).get("channel_versions") or {}) if a else {}
    vb = view.checkpoint(b.checkpoint_id).get("channel_versions") or {}
    return tuple(
        (ch, va.get(ch), vb.get(ch)) for ch in sorted({*va, *vb}) if not view.is_state(ch) and va.get(ch) != vb.get(ch)
    )


def branch_diff(view: ThreadView, rec: CheckpointRecord, base: str | None) -> Diff:
    """The TUI's `d`: what `rec`'s step changed; on a new branch (a fork or re-run made after
    `base`, the old branch's head), `rec` against the old branch's head instead."""
    if base is None or base not in view.by_id or base == rec.checkpoint_id:
        return step_diff(view, rec)
    on_rec = {r.checkpoint_id for r in view.ancestry(rec)}
    old = view.by_id[base]
    if base in on_rec or rec.checkpoint_id in {r.checkpoint_id for r in view.ancestry(old)}:
        return step_diff(view, rec)  # (on the old branch itself)
    d = diff(view, old, rec)
    return replace(d, notes=(f"A is the old branch's head ({base}): B is on the new branch", *d.notes))


def step_diff(view: ThreadView, rec: CheckpointRecord) -> Diff:
    """What the step that made `rec` changed: `rec` against its parent (none: an empty state)."""
    return diff(view, view.parent(rec), rec)


def resolve_pair(
    view: ThreadView, first: str | None, second: str | None
) -> tuple[CheckpointRecord | None, CheckpointRecord]:
    """`diff THREAD [A] [B]` selectors -> (A, B): one selector is B against its parent."""
    if second is None:
        b = view.resolve(first)
        parent = b.parent_checkpoint_id
        if parent and parent not in view.by_id:
            raise NotFoundError(
                f"the parent of {b.checkpoint_id} ({parent}) is not in the database",
                "name both checkpoints: statectl diff THREAD A B",
            )
        return (view.by_id[parent] if parent else None), b
    a, b = view.resolve(first), view.resolve(second)
    return a, b


def diff_snapshots(snap_a: Snapshot, snap_b: Snapshot, notes: tuple[str, ...] = ()) -> Diff:
    """The diff between two snapshots already read (`replay --check`: the original branch's end
    against the new branch's, the ids the re-run regenerated put back)."""
    if _unread(snap_a.values) or _unread(snap_b.values):
        return Diff(snap_a, snap_b, False, (), (), (), (*notes, *snap_a.notes, *snap_b.notes), compared=False)
    return Diff(snap_a, snap_b, False, tuple(_key_changes(snap_a.values, snap_b.values, {})), (), (), notes)
