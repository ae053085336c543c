"""The node a task runs, named from what a checkpoint stores alone: a pull task's path, a `Send`.

Apart from `core.state` (which re-exports them) so that a command naming a failed node
(`threads`' previews) does not load the whole read model."""

from __future__ import annotations

from typing import Any

PULL, PUSH = "__pregel_pull", "__pregel_push"


def send_node(send: Any) -> str | None:
    """The node a decoded `Send` goes to: `Send(node, arg)` as msgpack keeps it (`args`), or as
    LangChain's `lc: 2` JSON kept it (langgraph-checkpoint 1.0.x: `kwargs`, read as `data`)."""
    if not isinstance(send, dict):
        return None
    args, data = send.get("args"), send.get("data")
    if isinstance(args, list) and args and isinstance(args[0], str):
        return args[0]
    if isinstance(data, dict) and isinstance(data.get("node"), str):
        return data["node"]
    if "$type" not in send and isinstance(send.get("node"), str) and "args" in send:  # LangGraph.js: {node, args}
        return send["node"]
    return None


def pull_node(task_path: str) -> str | None:
    """The node a pull task's path names (`~__pregel_pull, node`); None for any other task."""
    return task_path[_PULLED:] if task_path.startswith(_PULL_PREFIX) else None


_PULL_PREFIX = f"~{PULL}, "
_PULLED = len(_PULL_PREFIX)
