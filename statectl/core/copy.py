"""What `copy`, `fork` and `replay` send to the writer: a thread's rows as stored, and where they go.

The rows are read from any source statectl reads (its raw checkpoints, metadata and pending
writes) and carried as JSON lines to `statectl.project.writer`, which writes them with LangGraph's
own saver in the project's interpreter. Nothing here writes.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from statectl.codec.values import b64
from statectl.errors import NotFoundError, StatectlError
from statectl.model import CheckpointRecord, WriteRecord
from statectl.sources.base import Source

SQLITE_HEADER = b"SQLite format 3\x00"


@dataclass(frozen=True)
class Destination:
    """Where a copy goes: a SQLite file (new or a checkpoint database) or a Postgres database."""

    kind: str
    """sqlite or postgres."""
    spec: str
    """The path or URL as given (a URL's password is never printed: `label`)."""
    label: str
    new: bool = False
    """A SQLite file that does not exist yet (created whole at the end, or not at all)."""

    def writer_spec(self, path: str | None = None, timeout: float | None = None) -> dict[str, Any]:
        """The writer's `open` row (`path`: where a new file is written before it is put in place)."""
        if self.kind == "sqlite":
            return {"op": "open", "kind": "sqlite", "path": path or self.spec, "timeout": timeout}
        return {"op": "open", "kind": "postgres", "url": self.spec, "timeout": timeout}


def destination(spec: str, source: Source, source_spec: str | None) -> Destination:
    """`--to DEST` checked before anything is read or written: a Postgres URL, an existing
    SQLite checkpoint file, or a new file in an existing folder; never the source itself, a
    folder, an export or a server."""
    from statectl.secrets import is_conninfo, redact

    if spec.startswith(("postgres://", "postgresql://")) or is_conninfo(spec):
        if source.kind == "postgres" and source_spec == spec:
            raise StatectlError("--to names the database being read", "copy to another database or file")
        return Destination("postgres", spec, redact(spec))
    if spec.startswith(("http://", "https://")):
        raise StatectlError(
            "copy writes SQLite files and Postgres databases, not a LangGraph server",
            "copy to a file (--to threads.sqlite) or a postgresql:// URL",
        )
    path = Path(spec).expanduser()
    if path.is_dir() or path.name == ".langgraph_api":
        raise StatectlError(f"{spec} is a folder", "--to takes a SQLite file (new or existing) or a postgresql:// URL")
    if not path.exists():
        if not path.parent.is_dir():
            raise StatectlError(f"cannot create {spec}: no folder {path.parent}")
        if not os.access(path.parent, os.W_OK):
            raise StatectlError(f"cannot create {spec}: the folder {path.parent} is not writable")
        return Destination("sqlite", str(path), str(path), new=True)
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):
        raise StatectlError(f"{spec} is not a regular file", "--to takes a SQLite file or a postgresql:// URL")
    if source_spec is not None and Path(source_spec).exists() and path.samefile(source_spec):
        raise StatectlError(
            f"--to names the database being read ({spec})",
            "copy to another file; fork and replay write into the source only with --in-place",
        )
    with path.open("rb") as fh:
        head = fh.read(16)
    if head and head != SQLITE_HEADER:
        raise StatectlError(
            f"{spec} is not a SQLite database",
            "copy writes into a SQLite checkpoint file or a new file (an export is read-only)",
        )
    if not os.access(path, os.W_OK):
        raise StatectlError(f"{spec} is read-only")
    return Destination("sqlite", str(path), str(path))


def thread_rows(source: Source, thread_id: str, as_id: str, replace: bool = False) -> Iterator[dict[str, Any]]:
    """One thread's rows for the writer, every namespace, oldest checkpoint first in each: the
    stored checkpoint (type and bytes), its metadata, and its pending writes grouped by task in
    their stored order."""
    records = source.checkpoints(thread_id, None)
    if not records:
        raise NotFoundError(f"no thread {thread_id!r} in {source.label}", "run `statectl threads` to list the threads")
    yield {"op": "thread", "as": as_id, "replace": replace}
    for ns in sorted({r.checkpoint_ns for r in records}):
        for rec in reversed([r for r in records if r.checkpoint_ns == ns]):
            yield checkpoint_row(source, rec)
            yield from writes_rows(rec, source.writes(thread_id, ns, rec.checkpoint_id))


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


def checkpoint_row(source: Source, rec: CheckpointRecord) -> dict[str, Any]:
    type_, blob = source.raw_checkpoint(rec.thread_id, rec.checkpoint_ns, rec.checkpoint_id)
    return {
        "op": "checkpoint",
        "checkpoint_ns": rec.checkpoint_ns,
        "checkpoint_id": rec.checkpoint_id,
        "parent_checkpoint_id": rec.parent_checkpoint_id,
        "metadata": rec.metadata,
        "type": type_,
        "checkpoint": b64(blob),
    }


def writes_rows(rec: CheckpointRecord, writes: list[WriteRecord]) -> Iterator[dict[str, Any]]:
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
            "items": [[w.idx, w.channel, w.type, b64(w.blob)] for w in ordered],
        }
