"""What `copy`, `fork` and `replay` send to the writer: a thread's rows as stored, and where they go.

The rows are read from any source statectl reads (its raw checkpoints, metadata and pending
writes) and carried as JSON lines to `statectl.project.writer`, which writes them with LangGraph's
own saver in the project's interpreter. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from statectl.codec.values import b64
from statectl.core.destination import Destination, destination
from statectl.errors import NotFoundError
from statectl.model import CheckpointRecord, WriteRecord
from statectl.sources.base import Source

__all__ = ["Destination", "checkpoint_row", "destination", "stored", "thread_rows", "writes_rows"]

Encode = Callable[[bytes | None], Any]
"""How a row carries stored bytes: `b64` (text, as the writer reads them) or `stored`."""


def stored(blob: bytes | bytearray | memoryview | None) -> bytes | None:
    """Stored bytes carried as they are (`thread_rows`' `encode`)."""
    return None if blob is None else bytes(blob)


def thread_rows(
    source: Source, thread_id: str, as_id: str, replace: bool = False, encode: Encode = b64
) -> Iterator[dict[str, Any]]:
    """One thread's rows for the writer, every namespace, oldest checkpoint first in each: the
    stored checkpoint (type and bytes), its metadata, and its pending writes grouped by task in
    their stored order. `encode`: how the stored bytes are carried (base64 text; `stored`: as
    they are, for a row transform that reads them, encoded on their way to the writer)."""
    records = source.checkpoints(thread_id, None)
    if not records:
        raise NotFoundError(f"no thread {thread_id!r} in {source.label}", "run `statectl threads` to list the threads")
    yield {"op": "thread", "as": as_id, "replace": replace}
    for ns in sorted({r.checkpoint_ns for r in records}):
        for rec in reversed([r for r in records if r.checkpoint_ns == ns]):
            yield checkpoint_row(source, rec, encode)
            yield from writes_rows(rec, source.writes(thread_id, ns, rec.checkpoint_id), encode)


def chain_rows(source: Source, rec: CheckpointRecord) -> Iterator[dict[str, Any]]:
    """The rows LangGraph may read to load `rec`: its checkpoint and its ancestors' (a delta
    channel is rebuilt from them), each with its pending writes."""
    by_id = {r.checkpoint_id: r for r in source.checkpoints(rec.thread_id, rec.checkpoint_ns)}
    at: CheckpointRecord | None = rec
    seen: set[str] = set()
    while at is not None and at.checkpoint_id not in seen:
        seen.add(at.checkpoint_id)
        yield checkpoint_row(source, at)
        yield from writes_rows(at, source.writes(at.thread_id, at.checkpoint_ns, at.checkpoint_id))
        at = by_id.get(at.parent_checkpoint_id) if at.parent_checkpoint_id else None


def checkpoint_row(source: Source, rec: CheckpointRecord, encode: Encode = b64) -> dict[str, Any]:
    type_, blob = source.raw_checkpoint(rec.thread_id, rec.checkpoint_ns, rec.checkpoint_id)
    return {
        "op": "checkpoint",
        "checkpoint_ns": rec.checkpoint_ns,
        "checkpoint_id": rec.checkpoint_id,
        "parent_checkpoint_id": rec.parent_checkpoint_id,
        "metadata": rec.metadata,
        "type": type_,
        "checkpoint": encode(blob),
    }


def writes_rows(rec: CheckpointRecord, writes: list[WriteRecord], encode: Encode = b64) -> Iterator[dict[str, Any]]:
    """A checkpoint's writes, one row per task, in the order `put_writes` numbers them as stored.

    LangGraph numbers a task's writes by their place in one `put_writes` call, except those to
    its special channels (`__interrupt__`, `__resume__`, `__error__`, ...), which take a fixed
    negative index: a regular write at index 1 had a special one before it. Each gap is filled
    with a special write, so the copy's indexes are the source's."""
    tasks: dict[tuple[str, str], list[WriteRecord]] = {}
    for w in writes:
        tasks.setdefault((w.task_id, w.task_path), []).append(w)
    for (task_id, task_path), items in tasks.items():
        regular = {w.idx: w for w in items if w.idx >= 0}
        special = [w for w in items if w.idx < 0]
        ordered: list[WriteRecord] = []
        for place in range(max(regular) + 1 if regular else 0):
            if place in regular:
                ordered.append(regular[place])
            elif special:
                ordered.append(special.pop(0))
        ordered += special
        yield {
            "op": "writes",
            "checkpoint_ns": rec.checkpoint_ns,
            "checkpoint_id": rec.checkpoint_id,
            "task_id": task_id,
            "task_path": task_path,
            "items": [[w.idx, w.channel, w.type, encode(w.blob)] for w in ordered],
        }
