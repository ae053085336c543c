"""Who wrote a step: the tasks, `update_state`, a fork or `Command(update=...)` input that made a
checkpoint from its parent, read from the writes stored on the parent (FORMAT §5)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from statectl.core.state import CONTROL, PULL, PUSH, TASKS, ThreadView, decode_write, pull_node, send_node
from statectl.model import NULL_TASK_ID, CheckpointRecord

ANY = "*"
"""Writers of a step whose channels are not known (a copy, or writes the database lacks)."""


def _send_nodes(view: ThreadView, checkpoint_id: str | None) -> list[str]:
    """Node names of the `Send`s written on a checkpoint (PUSH tasks of its child's step)."""
    if not checkpoint_id:
        return []
    nodes = []
    for w in view.writes(checkpoint_id):
        if w.channel == TASKS:
            nodes.append(send_node(decode_write(w)) or "?")
    return nodes


def step_writers(view: ThreadView, rec: CheckpointRecord) -> dict[str, list[str]]:
    """Channel -> names of what wrote it to produce `rec` from its parent.

    `update_state` / fork checkpoints are credited to `update_state` / `fork`; the `__start__`
    task carries a run's input; `Command(update=...)` input writes pending on `rec` itself
    (LangGraph's view of `rec` already includes them) are credited to `Command(update)`.
    """
    out: dict[str, list[str]] = {}

    def add(channel: str, name: str) -> None:
        names = out.setdefault(channel, [])
        if name not in names:
            names.append(name)

    parent = view.parent(rec)
    updating = rec.source in ("update", "fork")
    for channel, name in _task_writes(view, parent, updating) if parent else ():
        add(channel, name)
    if not out and rec.source != "input":
        for key, name in _metadata_writes(view, rec, parent):
            add(key, name)
    if updating and not out:  # a copy (`as_node="__copy__"`), or writes this database lacks
        out[ANY] = ["fork" if rec.source == "fork" else "update_state"]
    for w in view.writes(rec.checkpoint_id):
        if w.task_id == NULL_TASK_ID and view.is_state(w.channel):
            add(w.channel, "Command(update)")
    return out


def _task_writes(view: ThreadView, parent: CheckpointRecord, updating: bool) -> Iterator[tuple[str, str]]:
    """(channel, writer) of the task writes pending on `parent` that made its child: the tasks of
    the step that ran, or the update_state that forked from it (`updating`)."""
    memo: dict[str, Any] = {}  # the parent step's Sends and planned tasks, read once
    for w in view.writes(parent.checkpoint_id):
        if w.channel in CONTROL or w.task_id == NULL_TASK_ID:
            continue
        if not w.task_path:  # (langgraph before 0.3): named by the parent's planned tasks
            if "names" not in memo:
                memo["names"] = view.task_names(parent.checkpoint_id)
            node = memo["names"].get(w.task_id)
            if updating == (node is None):  # else a sibling branch's write
                yield w.channel, node or "update_state"
            continue
        by_update = w.task_path.startswith("~__interrupt__")
        if by_update != updating:
            continue  # writes of a sibling branch that ran from the same parent
        if by_update:
            yield w.channel, "update_state"
        elif (node := pull_node(w.task_path)) is not None:
            yield w.channel, node
        elif w.task_path.startswith(f"~{PUSH}, "):
            yield w.channel, _push_writer(view, parent, w.task_path, w.channel, memo)


def _push_writer(view: ThreadView, parent: CheckpointRecord, task_path: str, channel: str, memo: dict[str, Any]) -> str:
    """The name of what a PUSH task wrote as: the node a Send named, or the node that called a
    functional-API task (whose own name is not stored)."""
    parts = task_path[len(PUSH) + 3 :].split(", ")
    if parts[0].isdigit():  # a Send
        if "sends" not in memo:
            memo["sends"] = _send_nodes(view, parent.parent_checkpoint_id)
        sends, idx = memo["sends"], int(parts[0])
        return sends[idx] if idx < len(sends) else f"send[{idx}]"
    caller = parts[1] if len(parts) > 1 and parts[0] == f"~{PULL}" else "task"
    return f"{caller}→task" if channel == "__return__" else caller


def _metadata_writes(view: ThreadView, rec: CheckpointRecord, parent: CheckpointRecord | None) -> list[tuple[str, str]]:
    """(key, writer) from `metadata.writes`, which langgraph before 0.6 kept: what each node of the
    step that made `rec` returned ({node: update}); the input is on the `input` checkpoint before
    the first step ({"__start__": input}, or the input itself in langgraph 0.0.x). Used where the
    writes table has nothing (langgraph 0.0.x had none)."""
    legacy = rec.metadata.get("writes")
    if legacy is None and parent is not None and parent.source == "input":
        given = parent.metadata.get("writes")
        if isinstance(given, dict):
            legacy = {"__start__": given.get("__start__", given) if "__start__" in given else given}
    if isinstance(legacy, dict) and "$type" in legacy and isinstance(legacy.get("data"), dict):
        legacy = legacy["data"]  # a pickled AddableUpdatesDict (a dict), read inertly
    if not isinstance(legacy, dict):
        return []
    out: list[tuple[str, str]] = []
    for node, update in legacy.items():
        name = "update_state" if rec.source in ("update", "fork") else str(node)
        out.extend((key, name) for key in _update_keys(update) or [ANY] if key == ANY or view.is_state(key))
    return out


def _update_keys(update: Any) -> list[str]:
    """The state keys a node's returned update (as `metadata.writes` keeps it) sets: a dict's
    keys, or those of each dict in a list (one per Send / Command)."""
    if isinstance(update, dict):
        return [k for k in update if isinstance(k, str)]
    if isinstance(update, list):
        return list(dict.fromkeys(k for u in update if isinstance(u, dict) for k in u if isinstance(k, str)))
    return []


def step_nodes(rec: CheckpointRecord, writers: dict[str, list[str]]) -> tuple[str, ...]:
    """What ran to produce `rec`, in order, from its `step_writers`: node names, `update_state`,
    `fork`, `input`."""
    names: dict[str, None] = {}
    for who in writers.values():
        names.update(dict.fromkeys(who))
    if rec.source == "input" and not names:
        names["input"] = None
    return tuple(names)


# -- the diff ---------------------------------------------------------------------------------
