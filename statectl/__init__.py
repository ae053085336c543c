"""statectl: inspect LangGraph checkpoints safely, without the application's code.

import statectl
store = statectl.open("checkpoints.sqlite")
for thread in store.threads():
    print(thread.thread_id, thread.status)
snap = store.snapshot("bakery-plan")            # latest checkpoint, as get_state_history says
print(snap.values["messages"][-1], snap.next)
for snap in store.history("bakery-plan"):       # newest first
    print(snap.metadata["step"], snap.next)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from statectl.errors import DecodeError, NotFoundError, SourceError, StatectlError
    from statectl.model import CheckpointRecord, Interrupt, Snapshot, Task, ThreadPage, ThreadSummary
    from statectl.store import Store

__all__ = [
    "CheckpointRecord",
    "DecodeError",
    "Interrupt",
    "NotFoundError",
    "Snapshot",
    "SourceError",
    "StatectlError",
    "Store",
    "Task",
    "ThreadPage",
    "ThreadSummary",
    "open",
]
__version__ = "0.2.0"
STREAM_CHUNK = 500
"""Threads `Store.stream_threads` hands over at a time where it filters them itself."""

_HOMES = {
    **dict.fromkeys(("DecodeError", "NotFoundError", "SourceError", "StatectlError"), "statectl.errors"),
    **dict.fromkeys(
        ("CheckpointRecord", "Interrupt", "Snapshot", "Task", "ThreadPage", "ThreadSummary"), "statectl.model"
    ),
    "Store": "statectl.store",
}


def open(  # noqa: A001
    db: str | None = None, api_key: str | None = None, graph: str | None = None, python: str | None = None
) -> Store:
    """`statectl.store.open`: a store opened read-only (see there), streaming `STREAM_CHUNK`
    threads at a time where it filters them itself."""
    from statectl import store

    opened = store.open(db, api_key, graph, python)
    opened.stream_chunk = STREAM_CHUNK
    return opened


def __getattr__(name: str) -> Any:
    """The names above, imported when first used: `import statectl` (which every command does, as
    the package of its modules) loads no module a command does not use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'statectl' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
