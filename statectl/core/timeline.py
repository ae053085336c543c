"""One line of `statectl log` per checkpoint, from rows and writes (no checkpoint blob decoded)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from statectl.core.js import error_text
from statectl.core.state import CONTROL, ThreadView, decode_write, interrupts_of
from statectl.core.steps import ANY, step_nodes, step_writers
from statectl.model import CheckpointRecord, Record, WriteRecord, record


@record
class LogEntry(Record):
    """What produced a checkpoint (its parent's writes) and what waits on it (its own)."""

    record: CheckpointRecord
    ran: tuple[str, ...]
    """Nodes whose writes produced this checkpoint ('input' / 'update' writes included)."""
    changed: tuple[str, ...]
    """State keys those writes changed."""
    interrupts: tuple[str, ...]
    """Interrupt values raised by tasks that ran from this checkpoint and did not finish."""
    errors: tuple[str, ...]
    """Errors (`repr` strings) of tasks that ran from this checkpoint."""
    children: int
    on_latest_line: bool
    """Is this checkpoint an ancestor of (or is) the newest checkpoint?"""
    subgraphs: tuple[str, ...] = ()
    """Namespaces of the subgraph runs that tasks of this checkpoint started."""
    failed: tuple[str, ...] = ()
    """The nodes whose errors `errors` are, in the same order."""
    unchanged: tuple[str, ...] = ()
    """State keys those writes wrote with the value they had (a middleware writing a message
    back as it was): written, not changed."""

    def __init__(
        self,
        record: CheckpointRecord,
        ran: tuple[str, ...],
        changed: tuple[str, ...],
        interrupts: tuple[str, ...],
        errors: tuple[str, ...],
        children: int,
        on_latest_line: bool,
        subgraphs: tuple[str, ...] = (),
        failed: tuple[str, ...] = (),
        unchanged: tuple[str, ...] = (),
    ) -> None:  # (written out: one per checkpoint `log` lists)
        _set = object.__setattr__
        _set(self, "record", record)
        _set(self, "ran", ran)
        _set(self, "changed", changed)
        _set(self, "interrupts", interrupts)
        _set(self, "errors", errors)
        _set(self, "children", children)
        _set(self, "on_latest_line", on_latest_line)
        _set(self, "subgraphs", subgraphs)
        _set(self, "failed", failed)
        _set(self, "unchanged", unchanged)


def run_node(ns: str) -> str:
    """The node whose task a subgraph run's namespace names (`a:t1|research:t2` -> research)."""
    return ns.rsplit("|", 1)[-1].rsplit(":", 1)[0]


def child_namespaces(view: ThreadView) -> dict[str, str]:
    """Task id -> namespace, for the subgraph runs one level below the view's namespace
    (`node:task_id`, under `parent|` in a nested one)."""
    prefix = f"{view.checkpoint_ns}|" if view.checkpoint_ns else ""
    out = {}
    for ns in view.namespaces:
        rest = ns[len(prefix) :] if ns.startswith(prefix) and ns != view.checkpoint_ns else None
        if rest and "|" not in rest and ":" in rest:
            out[rest.rsplit(":", 1)[1]] = ns
    return out


def entries(view: ThreadView, only: set[str] | None = None) -> list[LogEntry]:
    """Log entries of the view's checkpoints, newest first (`only`: of these checkpoint ids alone:
    a re-run prints each new step without reading every step's writers again)."""
    return list(iter_entries(view, only))


CHUNK = 200
"""Checkpoints whose writes `iter_entries` reads together (one query where the source can)."""


def iter_entries(view: ThreadView, only: set[str] | None = None) -> Iterator[LogEntry]:
    """`entries`, each as it is ready: the writes read a chunk of steps at a time, so that
    `log -p` of a long thread prints its newest steps before it has read the oldest."""
    children = view.children()
    line = {r.checkpoint_id for r in view.ancestry(view.records[0])}
    subgraph = child_namespaces(view)
    rewrites = Rewrites(view)
    records = [r for r in view.records if only is None or r.checkpoint_id in only]
    for start in range(0, len(records), CHUNK):
        chunk = records[start : start + CHUNK]
        # (each step's writers are its parent's writes; its own say what it raised: read them together)
        view.prefetch_writes(c for r in chunk for c in (r.checkpoint_id, r.parent_checkpoint_id) if c)
        for rec in chunk:
            yield _entry(view, rec, children, line, subgraph, rewrites)


def _entry(
    view: ThreadView,
    rec: CheckpointRecord,
    children: dict[str, list[str]],
    line: set[str],
    subgraph: dict[str, str],
    rewrites: Rewrites,
) -> LogEntry:
    writers = rewrites.writers(rec)
    ran = step_nodes(rec, writers)
    written = sorted(ch for ch in writers if ch != ANY and view.is_state(ch))
    parent = view.parent(rec)
    copied = ANY in writers  # a fork or a copy wrote every key: the ones whose value differs
    if copied:
        written = sorted(set(written) | _state_keys(view, rec, parent))
    compared = [k for k in written if copied or (parent and rewrites.may_keep(k, parent.checkpoint_id))]
    same = _unchanged(view, rec, parent, compared, None if copied else rewrites)
    if not copied and parent is not None:  # (other bytes, an equal value: a dict in another key order)
        same += tuple(k for k in written if k not in compared and rewrites.same_as_before(k, rec, parent, True))
        same = tuple(k for k in written if k in same)
    changed = tuple(ch for ch in written if ch not in same)
    own = view.writes(rec.checkpoint_id)
    channels = {w.channel for w in own}  # (most steps raised nothing: their writes walked once)
    interrupts: tuple[str, ...] = ()
    if "__interrupt__" in channels:
        finished = {w.task_id for w in own if w.channel not in CONTROL}
        interrupts = tuple(
            str(i.value)
            for w in own
            if w.channel == "__interrupt__" and w.task_id not in finished
            for i in interrupts_of(decode_write(w))
        )
    errors: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    if "__error__" in channels:
        failing = [w for w in own if w.channel == "__error__"]
        errors = tuple(str(error_text(decode_write(w))) for w in failing)
        failed = _failed_nodes(view, rec, failing)
    subs = tuple(dict.fromkeys(subgraph[w.task_id] for w in own if w.task_id in subgraph)) if subgraph else ()
    return LogEntry(
        rec,
        ran,
        changed,
        interrupts,
        errors,
        len(children.get(rec.checkpoint_id, ())),
        rec.checkpoint_id in line,
        subs,
        failed,
        () if copied else same,
    )


class Rewrites:
    """Which writes may have left their key as it was, read from the writes alone: a message
    whose id an earlier write to the key already carried (a middleware writing a message back),
    or a value written before in the same bytes (`detected_language: "en"` every turn). Only
    those steps are compared value by value (`_unchanged`); a write of new ids or new bytes
    changed its key, and `log` reads no checkpoint for it (on a long thread, its whole cost).
    A last-value key is compared by its writes (`same_as_before`: the write against the one
    before it, an equal value in other bytes found too), not by its checkpoints (issue 54)."""

    def __init__(self, view: ThreadView) -> None:
        self.view = view
        self.cache: dict[str, set[str] | None] = {}
        self.last: dict[str, bool] = {}
        self.plain: dict[str, bool] = {}
        self.messages: dict[str, bool] = {}
        """By key (`_candidates`): is every write to it a list of messages (add_messages)?"""
        self.held: dict[str, tuple[tuple[str | None, bytes | None], Any]] = {}
        """By key: the write value decoded last (`_decoded`)."""
        self.made: dict[str, dict[str, list[str]]] = {}
        """`step_writers` of the checkpoints `_plain` asked about, until their entry takes them."""

    def writers(self, rec: CheckpointRecord) -> dict[str, list[str]]:
        """`step_writers(view, rec)`, made once for `_plain` and the entry both."""
        found = self.made.pop(rec.checkpoint_id, None)
        return step_writers(self.view, rec) if found is None else found

    def same_as_before(
        self, key: str, rec: CheckpointRecord, parent: CheckpointRecord, other: bool = False
    ) -> bool | None:
        """Did the one write to `key` pending on `parent` leave its value as it was: is it equal
        to the write before it on this line (the value `parent` holds, of a last-value key)?
        Read from those two writes alone, as a write costs (the same bytes: equal, decoded once;
        each write's bytes decoded once for the walk, `_decoded`); None where the writes cannot
        say (a reducer, several writes, a step between them that copied or forked the state, a
        checkpoint without a write to it before): its checkpoints are compared. `other`: a
        write in bytes not written before, taken as a change unless its value equals the one
        before (then the key is asked whether it holds its last write: one checkpoint read)."""
        from statectl.core.reducers import is_message
        from statectl.errors import DecodeError

        if self.messages.get(key):
            return None  # (every write to the key a list of messages: as below, without decoding one)
        writes = self.view.channel_writes(key)
        mine = writes.get(parent.checkpoint_id) or []
        if len(mine) != 1 or self._forks(parent):
            return None
        before = self._previous(key, parent)
        if before is None:
            return None
        try:
            value = self._decoded(key, mine[0])
            same_bytes = mine[0].blob is not None and (mine[0].type, mine[0].blob) == (before.type, before.blob)
            equal = same_bytes or bool(value == self._decoded(key, before))
        except DecodeError:
            return None
        if isinstance(value, list) and any(is_message(m) for m in value):
            return None  # (messages: add_messages, as a rule; their checkpoints say)
        if not equal and other:
            return False
        return equal if self._last_value(key) else None

    def _decoded(self, key: str, w: WriteRecord) -> Any:
        """A write's value; the one decoded last for `key` is kept (newest first, a step's write
        before is the next step's own: each write decoded once)."""
        held = self.held.get(key)
        if held is not None and w.blob is not None and held[0] == (w.type, w.blob):
            return held[1]
        value = decode_write(w)
        self.held[key] = ((w.type, w.blob), value)
        return value

    def _previous(self, key: str, parent: CheckpointRecord) -> Any:
        """The one write to `key` that made the value `parent` holds (None: not found alone)."""
        writes = self.view.channel_writes(key)
        cur = parent
        for _ in range(len(self.view.records)):
            if not self._plain(cur):
                return None  # (a fork, a copy, an update: the value may come from elsewhere)
            up = self.view.parent(cur)
            if up is None:
                return None
            found = writes.get(up.checkpoint_id)
            if found:
                return found[0] if len(found) == 1 and not self._forks(up) else None
            cur = up
        return None

    def _forks(self, rec: CheckpointRecord) -> bool:
        """Do several checkpoints go on from `rec` (a step run again: its writes are the last run's)?"""
        return len(self.view.children().get(rec.checkpoint_id, ())) > 1

    def _plain(self, rec: CheckpointRecord) -> bool:
        """Was `rec` made by a run's step or input (not a fork, a copy, an update)? Asked once each."""
        found = self.plain.get(rec.checkpoint_id)
        if found is None:
            if rec.source in ("loop", "input"):
                writers = self.made[rec.checkpoint_id] = step_writers(self.view, rec)
                found = ANY not in writers
            else:
                found = False
            self.plain[rec.checkpoint_id] = found
        return found

    def _last_value(self, key: str) -> bool:
        """Does `key` hold its last write (no reducer at work)? Told by the newest write to it,
        where it was alone: the checkpoint it made holds that very value (one checkpoint read for
        the key, not one for each step)."""
        if key not in self.last:
            self.last[key] = self._holds_last_write(key)
        return self.last[key]

    def _holds_last_write(self, key: str) -> bool:
        from statectl.errors import DecodeError

        writes = self.view.channel_writes(key)
        if any(len({w.task_id for w in ws}) > 1 for ws in writes.values()):
            return False  # several tasks wrote it in one step: LastValue would have refused
        children = self.view.children()
        made = [(cid, kid) for cid in sorted(writes, reverse=True) for kid in children.get(cid, ())[:1]]
        if not made:
            return False
        cid, kid = made[0]
        if len(writes[cid]) != 1 or len(children[cid]) != 1 or ANY in step_writers(self.view, self.view.record(kid)):
            return False
        try:
            values = _values_for(self.view, kid, key)
            return values is not None and key in values and values[key] == decode_write(writes[cid][0])
        except DecodeError:
            return False

    def may_keep(self, key: str, checkpoint_id: str) -> bool:
        """May the writes to `key` pending on `checkpoint_id` have left its value unchanged?
        (A source that cannot list a key's writes, a server sending whole values: every step.)"""
        if key not in self.cache:
            self.cache[key] = self._candidates(key)
        found = self.cache[key]
        return found is None or checkpoint_id in found

    def _candidates(self, key: str) -> set[str] | None:
        from statectl.codec.arrays import message_ids
        from statectl.core.reducers import is_message, message_data
        from statectl.errors import DecodeError

        ids: set[str] = set()
        blobs: set[bytes] = set()
        read: set[tuple[str | None, bytes]] = set()
        out: set[str] = set()
        messages = True
        by_checkpoint = self.view.channel_writes(key)
        if not by_checkpoint:
            return None
        for cid in sorted(by_checkpoint):  # (uuid6 ids sort by time)
            for w in by_checkpoint[cid]:
                if w.blob is not None and w.blob in blobs:
                    out.add(cid)
                if (w.type, w.blob) in read:
                    continue  # (bytes read before: their ids are known, not decoded again)
                if w.blob is not None:
                    blobs.add(w.blob)
                    read.add((w.type, w.blob))
                listed: list[Any] | None = message_ids(w.type, w.blob)  # (a list of messages: none built)
                if listed is None:
                    try:
                        value = decode_write(w)
                    except DecodeError:
                        out.add(cid)  # (unread: compared, not guessed)
                        messages = False
                        continue
                    messages = messages and isinstance(value, list) and any(is_message(m) for m in value)
                    items = value if isinstance(value, list) else [value]
                    listed = [message_data(m).get("id") for m in items if is_message(m)]
                found = {str(i) for i in listed if i}
                if found & ids:
                    out.add(cid)
                ids |= found
        self.messages[key] = messages
        return out


def _values(view: ThreadView, rec: CheckpointRecord | None) -> dict | None:
    """A checkpoint's channel values as read (None: none, or unreadable)."""
    from statectl.errors import DecodeError

    try:
        values = view.checkpoint(rec.checkpoint_id).get("channel_values") if rec is not None else None
    except DecodeError:
        return None
    return values if isinstance(values, dict) and "$undecoded" not in values else None


def _values_for(view: ThreadView, checkpoint_id: str, key: str) -> dict | None:
    """A checkpoint's channel values, read to look at `key` alone (None: none, or unreadable):
    from the source, not kept (a source that stores channels apart reads that one), with its
    lists of messages walked in their bytes, none built (`codec.arrays.tail`: a `Tail`, whole
    where it is compared)."""
    from statectl.codec.arrays import tail
    from statectl.errors import DecodeError
    from statectl.model import wanted

    if not wanted(key, view.keys):
        return None  # (a key the view leaves out: as the view's checkpoint, without it)
    try:
        with tail(0):
            ck = view.source.checkpoint(view.thread_id, view.checkpoint_ns, checkpoint_id, frozenset({key}))
    except DecodeError:
        return None
    values = ck.get("channel_values")
    return values if isinstance(values, dict) and "$undecoded" not in values else None


def _state_keys(view: ThreadView, rec: CheckpointRecord, parent: CheckpointRecord | None) -> set[str]:
    """The state keys a checkpoint or its parent holds (an unreadable one: none)."""
    return {k for r in (rec, parent) for k in _values(view, r) or () if view.is_state(k)}


def _unchanged(
    view: ThreadView,
    rec: CheckpointRecord,
    parent: CheckpointRecord | None,
    keys: list[str],
    rewrites: Rewrites | None = None,
) -> tuple[str, ...]:
    """The `keys` whose value at `rec` equals their value at its parent: told by the key's
    writes where they can (`Rewrites.same_as_before`), else read from both checkpoints (a key
    either lacks, or a checkpoint that does not decode: changed)."""
    if not keys or parent is None:
        return ()
    if rewrites is not None:
        told = {k: rewrites.same_as_before(k, rec, parent) for k in keys}
        if all(v is not None for v in told.values()):
            return tuple(k for k in keys if told[k])
    after, before = _values(view, rec), _values(view, parent)
    if after is None or before is None:
        return ()
    missing = object()
    return tuple(k for k in keys if after.get(k, missing) is not missing and after.get(k) == before.get(k, missing))


def _failed_nodes(view: ThreadView, rec: CheckpointRecord, failing: list) -> tuple[str, ...]:
    """The node each error write's task ran: from its task path, else the checkpoint's tasks."""
    from statectl.core.state import pull_node

    names: dict[str, str] | None = None
    out = []
    for w in failing:
        node = pull_node(w.task_path) if w.task_path else None
        if node is None:
            names = view.task_names(rec.checkpoint_id) if names is None else names
            node = names.get(w.task_id, "?")
        out.append(node)
    return tuple(out)


def state_text(view: ThreadView, rec: CheckpointRecord, shown: Callable[[Any], Any] | None = None) -> str:
    """A checkpoint's state as searchable text (its values as JSON), folded for `log --grep`;
    with `shown`, the values as it makes them (redacted: what `statectl mcp` shows, never the
    secret behind `[REDACTED]`)."""
    from statectl.codec.jsonout import json_bytes
    from statectl.errors import DecodeError

    try:
        values = view.snapshot(rec.checkpoint_id).values
    except DecodeError:
        return ""
    if shown is not None:
        values = shown(values)
    return json_bytes(values).decode("utf-8", "replace").casefold()


def search(view: ThreadView, ents: list[LogEntry], needle: str) -> list[str]:
    """The checkpoints (ids, in `ents`' order) where `needle` occurs, ignoring case: in the
    nodes that ran, the keys changed, interrupt values and errors, or the state (messages and
    every value): what the TUI's timeline search jumps between."""
    needle = needle.casefold()
    if not needle:
        return []
    hits = []
    for e in ents:
        cheap = " ".join([*e.ran, *e.changed, *map(str, e.interrupts), *map(str, e.errors)]).casefold()
        if needle in cheap or needle in state_text(view, e.record):
            hits.append(e.record.checkpoint_id)
    return hits


def select(
    view: ThreadView,
    node: str | None = None,
    changed: str | None = None,
    grep: str | None = None,
    max_count: int | None = None,
    entries_wanted: bool = True,
    shown: Callable[[Any], Any] | None = None,
) -> tuple[list[CheckpointRecord], list[LogEntry] | None]:
    """`log`'s filters, newest first: the steps where `node` ran, that changed `changed`, whose
    state holds `grep` (ignoring case; in the values as `shown` makes them, where given), at most
    `max_count`. The records, and their log entries when `entries_wanted` or a filter needs them
    (else None: no step's writers are read)."""
    ents: list[LogEntry] | None = None
    records = view.records
    if node is not None or changed is not None or entries_wanted:
        ents = [
            e for e in entries(view) if (node is None or node in e.ran) and (changed is None or changed in e.changed)
        ]
        records = [e.record for e in ents]
    if grep is not None:
        needle = grep.casefold()
        found = {r.checkpoint_id for r in records if needle in state_text(view, r, shown)}
        records = [r for r in records if r.checkpoint_id in found]
        ents = None if ents is None else [e for e in ents if e.record.checkpoint_id in found]
    if max_count is not None:
        records = records[:max_count]
        ents = None if ents is None else ents[:max_count]
    return records, ents
