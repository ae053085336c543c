"""A LangGraph server's snapshot of a checkpoint (`POST /threads/{id}/history`, `GET
/threads/{id}/state`) in statectl's model: the values as the server computed them, the writes
its tasks made, and the snapshot itself.

What the JSON the server sends cannot say: types the checkpoint keeps (UUIDs, datetimes, sets,
bytes) arrive as strings and lists, and messages as `model_dump()` dicts; messages are recognised
by their fields and shown in the same `{"$type", "data"}` form as every other source.
"""

from __future__ import annotations

from typing import Any

import orjson

from statectl.codec.decode import TAGS, Tagged
from statectl.model import CheckpointRecord, Snapshot, WriteRecord

JSON_TYPE = "statectl+json"
"""Type of the writes made from a snapshot's tasks: statectl's tagged JSON form."""
RAN = "__statectl_ran__"
"""A task of a server snapshot that wrote no state key: not state, only who ran."""
_MESSAGES = {
    "human": "langchain_core.messages.human.HumanMessage",
    "ai": "langchain_core.messages.ai.AIMessage",
    "tool": "langchain_core.messages.tool.ToolMessage",
    "system": "langchain_core.messages.system.SystemMessage",
    "function": "langchain_core.messages.function.FunctionMessage",
    "chat": "langchain_core.messages.chat.ChatMessage",
    "remove": "langchain_core.messages.modifier.RemoveMessage",
    "AIMessageChunk": "langchain_core.messages.ai.AIMessageChunk",
    "HumanMessageChunk": "langchain_core.messages.human.HumanMessageChunk",
    "ToolMessageChunk": "langchain_core.messages.tool.ToolMessageChunk",
    "SystemMessageChunk": "langchain_core.messages.system.SystemMessageChunk",
}


def from_server(value: Any) -> Any:
    """The server's JSON -> statectl's tagged form: `model_dump()` messages as `{"$type", "data"}`;
    a user dict holding a tag key escaped as `$dict`, as the decoders do."""
    if isinstance(value, list):
        return [from_server(v) for v in value]
    if not isinstance(value, dict):
        return value
    kind = value.get("type")
    if (
        isinstance(kind, str)
        and kind in _MESSAGES
        and "content" in value
        and ("additional_kwargs" in value or "response_metadata" in value)
    ):
        return Tagged({"$type": _MESSAGES[kind], "data": {k: from_server(v) for k, v in value.items()}})
    if TAGS & value.keys():
        return Tagged({"$dict": [[k, from_server(v)] for k, v in value.items()]})
    return {k: from_server(v) for k, v in value.items()}


def _interrupt(item: Any) -> Tagged:
    item = item if isinstance(item, dict) else {"value": item}
    return Tagged(
        {"$type": "langgraph.types.Interrupt", "data": {"id": item.get("id"), "value": from_server(item.get("value"))}}
    )


def server_checkpoint(snap: dict) -> dict:
    """A server snapshot as the checkpoint dict statectl reads: its values, and the snapshot
    itself under `$server` (values, next, tasks and interrupts as the server computed them)."""
    cp = snap.get("checkpoint") or {}
    values = from_server(snap.get("values"))
    return {
        "v": 4,
        "id": cp.get("checkpoint_id") or snap.get("checkpoint_id"),
        "ts": snap.get("created_at"),
        "channel_values": values if isinstance(values, dict) else {},
        "channel_versions": {},
        "versions_seen": {},
        "$server": snap,
    }


def server_writes(snap: dict, checkpoint_id: str) -> list[WriteRecord]:
    """The writes pending on a checkpoint, as the server's snapshot tells them: each task's
    result, error and interrupts (no task path: `ThreadView.task_names` names the writer)."""
    out: list[WriteRecord] = []
    for task in snap.get("tasks") or []:
        tid = str(task.get("id"))
        items: list[tuple[str, Any]] = []
        result = task.get("result")
        if isinstance(result, dict):
            items += [(ch, from_server(v)) for ch, v in result.items()]
        if task.get("error") is not None:
            items.append(("__error__", task["error"]))
        if task.get("interrupts"):
            items.append(("__interrupt__", [_interrupt(i) for i in task["interrupts"]]))
        if not items:  # no output to state keys (a node that only routes): still what ran next
            items.append((RAN, None))
        out += [
            WriteRecord(tid, "", i, ch, JSON_TYPE, orjson.dumps(v), checkpoint_id=checkpoint_id)
            for i, (ch, v) in enumerate(items)
        ]
    return out


def server_snapshot(keys: frozenset[str] | None, rec: CheckpointRecord, ck: dict) -> Snapshot:
    """The `Snapshot` the server sent for a checkpoint, in statectl's model (`keys`: the state
    keys kept, as `ThreadView.keys`)."""
    from statectl.model import Interrupt, Task

    snap = ck["$server"]
    values = from_server(snap.get("values"))
    if keys is not None and isinstance(values, dict):
        values = {k: v for k, v in values.items() if k in keys}
    tasks = []
    for t in snap.get("tasks") or []:
        sub = t.get("checkpoint") if isinstance(t.get("checkpoint"), dict) else {}
        tasks.append(
            Task(
                str(t.get("id")),
                str(t.get("name")),
                tuple(t.get("path") or ()),
                t.get("error"),
                tuple(
                    Interrupt(i.get("id"), from_server(i.get("value")))
                    for i in t.get("interrupts") or []
                    if isinstance(i, dict)
                ),
                from_server(t.get("result")),
                t.get("result") is not None,
                sub.get("checkpoint_ns") or None,
            )
        )
    interrupts = tuple(
        Interrupt(i.get("id"), from_server(i.get("value"))) for i in snap.get("interrupts") or [] if isinstance(i, dict)
    )
    return Snapshot(
        thread_id=rec.thread_id,
        checkpoint_ns=rec.checkpoint_ns,
        checkpoint_id=rec.checkpoint_id,
        parent_checkpoint_id=rec.parent_checkpoint_id,
        created_at=snap.get("created_at"),
        metadata=rec.metadata,
        values=values if snap.get("values") is not None else {},
        next=tuple(snap.get("next") or ()),
        tasks=tuple(tasks),
        interrupts=interrupts,
    )
