"""One line of `statectl log` per checkpoint, from rows and writes (no checkpoint blob decoded)."""

from __future__ import annotations

from dataclasses import dataclass

from statectl.model import NULL_TASK_ID, CheckpointRecord
from statectl.state import CONTROL, PULL, PUSH, ThreadView, _interrupts, decode_write, is_state_key


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


def _send_nodes(view: ThreadView, checkpoint_id: str | None) -> list[str]:
    if not checkpoint_id:
        return []
    nodes = []
    for w in view.writes(checkpoint_id):
        if w.channel == "__pregel_tasks":
            value = decode_write(w)
            args = value.get("args") if isinstance(value, dict) else None
            nodes.append(args[0] if isinstance(args, list) and args else "?")
    return nodes


def _ran(view: ThreadView, parent: CheckpointRecord) -> tuple[tuple[str, ...], tuple[str, ...]]:
    names: dict[str, None] = {}
    changed: dict[str, None] = {}
    sends: list[str] | None = None
    for w in view.writes(parent.checkpoint_id):
        if is_state_key(w.channel):
            changed[w.channel] = None
        if w.channel in CONTROL:
            continue
        if w.task_id == NULL_TASK_ID:
            names["(input)"] = None
        elif w.task_path.startswith(f"~{PULL}, "):
            names[w.task_path[len(PULL) + 3:].split(",")[0]] = None
        elif w.task_path.startswith(f"~{PUSH}, "):
            parts = w.task_path[len(PUSH) + 3:].split(", ")
            if parts[0].isdigit():
                sends = _send_nodes(view, parent.parent_checkpoint_id) if sends is None else sends
                idx = int(parts[0])
                names[sends[idx] if idx < len(sends) else f"send[{idx}]"] = None
            else:
                names[parts[2] if len(parts) > 2 else "task"] = None
        elif w.task_path.startswith("~__interrupt__"):
            names["update_state"] = None
    return tuple(names), tuple(sorted(changed))


def entries(view: ThreadView) -> list[LogEntry]:
    """Log entries of the view's checkpoints, newest first."""
    children = view.children()
    line: set[str] = set()
    cursor = view.records[0]
    while cursor is not None:
        line.add(cursor.checkpoint_id)
        cursor = view.by_id.get(cursor.parent_checkpoint_id or "")
    out = []
    for rec in view.records:
        parent = view.by_id.get(rec.parent_checkpoint_id or "")
        if rec.source in ("update", "fork"):  # made by update_state / a fork, not by the parent's tasks
            ran, changed = (rec.source,), ()
        else:
            ran, changed = _ran(view, parent) if parent else ((), ())
        if rec.source == "input" and not ran:
            ran = ("input",)
        own = view.writes(rec.checkpoint_id)
        finished = {w.task_id for w in own if w.channel not in CONTROL}
        interrupts = tuple(str(i.value) for w in own if w.channel == "__interrupt__"
                           and w.task_id not in finished for i in _interrupts(decode_write(w)))
        errors = tuple(str(decode_write(w)) for w in own if w.channel == "__error__")
        out.append(LogEntry(rec, ran, changed, interrupts, errors,
                            len(children.get(rec.checkpoint_id, ())), rec.checkpoint_id in line))
    return out
