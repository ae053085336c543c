"""One line of `statectl log` per checkpoint, from rows and writes (no checkpoint blob decoded)."""

from __future__ import annotations

from dataclasses import dataclass

from statectl.core.state import CONTROL, ThreadView, _interrupts, decode_write
from statectl.core.steps import ANY, step_nodes, step_writers
from statectl.model import CheckpointRecord


@dataclass(frozen=True, slots=True)
class LogEntry:
    """What produced a checkpoint (its parent's writes) and what waits on it (its own)."""

    record: CheckpointRecord
    ran: tuple[str, ...]
    """Nodes whose writes produced this checkpoint ('input' / 'update' writes included)."""
    changed: tuple[str, ...]
    """State keys those writes touched."""
    interrupts: tuple[str, ...]
    """Interrupt values raised by tasks that ran from this checkpoint and did not finish."""
    errors: tuple[str, ...]
    """Errors (`repr` strings) of tasks that ran from this checkpoint."""
    children: int
    on_latest_line: bool
    """Is this checkpoint an ancestor of (or is) the newest checkpoint?"""
    subgraphs: tuple[str, ...] = ()
    """Namespaces of the subgraph runs that tasks of this checkpoint started."""


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
    children = view.children()
    line = {r.checkpoint_id for r in view.ancestry(view.records[0])}
    subgraph = child_namespaces(view)
    out = []
    for rec in view.records:
        if only is not None and rec.checkpoint_id not in only:
            continue
        writers = step_writers(view, rec)
        ran = step_nodes(rec, writers)
        changed = tuple(sorted(ch for ch in writers if ch != ANY and view.is_state(ch)))
        own = view.writes(rec.checkpoint_id)
        finished = {w.task_id for w in own if w.channel not in CONTROL}
        interrupts = tuple(
            str(i.value)
            for w in own
            if w.channel == "__interrupt__" and w.task_id not in finished
            for i in _interrupts(decode_write(w))
        )
        errors = tuple(str(decode_write(w)) for w in own if w.channel == "__error__")
        subs = tuple(dict.fromkeys(subgraph[w.task_id] for w in own if w.task_id in subgraph))
        out.append(
            LogEntry(
                rec,
                ran,
                changed,
                interrupts,
                errors,
                len(children.get(rec.checkpoint_id, ())),
                rec.checkpoint_id in line,
                subs,
            )
        )
    return out


def state_text(view: ThreadView, rec: CheckpointRecord) -> str:
    """A checkpoint's state as searchable text (its values as JSON), folded for `log --grep`."""
    from statectl.codec.jsonout import json_bytes
    from statectl.errors import DecodeError

    try:
        values = view.snapshot(rec.checkpoint_id).values
    except DecodeError:
        return ""
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
) -> tuple[list[CheckpointRecord], list[LogEntry] | None]:
    """`log`'s filters, newest first: the steps where `node` ran, that changed `changed`, whose
    state holds `grep` (ignoring case), at most `max_count`. The records, and their log entries
    when `entries_wanted` or a filter needs them (else None: no step's writers are read)."""
    ents: list[LogEntry] | None = None
    records = view.records
    if node is not None or changed is not None or entries_wanted:
        ents = [
            e for e in entries(view) if (node is None or node in e.ran) and (changed is None or changed in e.changed)
        ]
        records = [e.record for e in ents]
    if grep is not None:
        needle = grep.casefold()
        found = {r.checkpoint_id for r in records if needle in state_text(view, r)}
        records = [r for r in records if r.checkpoint_id in found]
        ents = None if ents is None else [e for e in ents if e.record.checkpoint_id in found]
    if max_count is not None:
        records = records[:max_count]
        ents = None if ents is None else ents[:max_count]
    return records, ents
