"""statectl export files: raw checkpoint and write rows of one or more threads, in JSON.

The rows are kept exactly as stored (blobs base64-encoded), so every command reads an export
the way it reads the database it came from.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from statectl.codec.decode import b64, unb64
from statectl.codec.formats import PG_TYPE, checked_checkpoint
from statectl.codec.values import b64_size, cut_deep
from statectl.errors import NotFoundError, SourceError
from statectl.model import CheckpointRecord, ThreadPage, WriteRecord
from statectl.sources.base import Source, by_checkpoint, namespaces_of, page_summaries, read_regular, replay_order
from statectl.sources.status import idle, light_checkpoint, plans_tasks, thread_summary

FORMAT = "statectl-export"
VERSION = 1


def _light(type_: str | None, checkpoint: str | None) -> dict | None:
    """An exported checkpoint parsed for `plans_tasks` (a Postgres row: its JSONB with the
    blobs' values over the inline ones, as `assemble` reads it)."""
    try:
        blob = unb64(checkpoint)
        if type_ != PG_TYPE:
            return light_checkpoint(type_, blob)
        from statectl.sources.status import light_value

        doc = orjson.loads(blob or b"")
        ckpt = dict(doc["checkpoint"])
        values = dict(ckpt.get("channel_values") or {})
        for channel, _version, t, b in doc["blobs"]:
            if t != "empty":
                values[channel] = light_value(t, unb64(b))
        return {**ckpt, "channel_values": values}
    except (ValueError, TypeError, KeyError, orjson.JSONDecodeError):
        return None


def write_export(
    source: Source,
    thread_ids: Iterable[str],
    out: BinaryIO,
    redactor: Any = None,
    graph: Any = None,
    known: bool = False,
    memory: Any = None,
) -> None:
    """Write an export document of `thread_ids` (all namespaces) from any source to `out`, one
    row at a time: memory holds one thread's checkpoint list and one raw checkpoint, not the
    threads. Every thread is looked up before the first byte is written, so an unknown id writes
    nothing (`known`: the ids were just read from the store, no need). `memory`: the long-term
    memory store (a `MemorySource`, `export --store`), its items after the threads."""
    together = source.reads_row_together

    def listed(tid: str) -> list[CheckpointRecord]:
        """The thread's checkpoints; where the source reads a row's blob and metadata together
        (SQLite), by namespace, their metadata unread (read with each blob: one pass over the
        file, issue 54)."""
        if not together:
            return source.checkpoints(tid, None)
        return [r for ns in sorted(namespaces_of(source, tid)) for r in source.checkpoints(tid, ns)]

    if not known:
        for tid in thread_ids:
            if not (namespaces_of(source, tid) if together else source.checkpoints(tid, None)):
                raise NotFoundError(
                    f"no thread {tid!r} in {source.label}", "run `statectl threads` to list the threads"
                )
    found = ((tid, listed(tid)) for tid in thread_ids)

    def rid(text: str) -> str:  # (an identifier: redacted to the same placeholder everywhere)
        return text if redactor is None else redactor.ident(text)

    out.write(b'{"format":' + orjson.dumps(FORMAT) + b',"version":' + orjson.dumps(VERSION))
    out.write(b',"from":' + orjson.dumps(source.kind))  # (which saver's rows: LangGraph.js reads its two apart)
    if graph is not None:  # `export --graph`: the app's channel specification, for exact reads
        data = {"target": graph.target, **graph.data}
        out.write(b',"graph":' + orjson.dumps(data if redactor is None else redactor.value(data)))
    out.write(b',"threads":[')
    for n, (tid, records) in enumerate(found):
        ordered = [r for ns in sorted({r.checkpoint_ns for r in records}) for r in records if r.checkpoint_ns == ns]
        out.write((b"," if n else b"") + b'{"thread_id":' + orjson.dumps(rid(tid)) + b',"checkpoints":[')
        for i, rec in enumerate(ordered):
            if together and not getattr(rec, "loaded", True):  # (blob and metadata: one read of the row)
                type_, blob, metadata = source.raw_row(tid, rec.checkpoint_ns, rec.checkpoint_id)
            else:
                type_, blob = source.raw_checkpoint(tid, rec.checkpoint_ns, rec.checkpoint_id)
                metadata = rec.metadata
            if redactor is not None:  # `export --redact`: rows rewritten in their own format
                blob = redactor.row(type_, blob, f"checkpoint {rec.checkpoint_id} of thread {tid!r}")
                metadata = redactor.value(metadata)
            out.write(
                (b"," if i else b"")
                + orjson.dumps(
                    {
                        "checkpoint_ns": rid(rec.checkpoint_ns),
                        "checkpoint_id": rec.checkpoint_id,
                        "parent_checkpoint_id": rec.parent_checkpoint_id,
                        "metadata": metadata,
                        "type": type_,
                        "checkpoint": b64(blob),
                    }
                )
            )
        out.write(b'],"writes":[')
        first = True
        for rec in ordered:
            for w in source.writes(tid, rec.checkpoint_ns, rec.checkpoint_id):
                value = (
                    w.blob
                    if redactor is None
                    else redactor.row(
                        w.type,
                        w.blob,
                        f"write {w.channel!r} on checkpoint {rec.checkpoint_id} of thread {tid!r}",
                        w.channel,
                    )
                )
                out.write(
                    (b"" if first else b",")
                    + orjson.dumps(
                        {
                            "checkpoint_ns": rid(rec.checkpoint_ns),
                            "checkpoint_id": rec.checkpoint_id,
                            "task_id": w.task_id,
                            "task_path": rid(w.task_path),
                            "idx": w.idx,
                            "channel": rid(w.channel),
                            "type": w.type,
                            "value": b64(value),
                        }
                    )
                )
                first = False
        out.write(b"]")
        if empty := source.empty_channels(tid):  # what a langgraph dev folder's record proves
            out.write(b',"empty_channels":' + orjson.dumps(empty if redactor is None else redactor.value(empty)))
        out.write(b"}")
    _end(out, memory, redactor)


def _end(out: BinaryIO, memory: Any, redactor: Any) -> None:
    """The threads' end, then the long-term memory store's items (`export --store`)."""
    out.write(b"]")
    if memory is not None:
        from statectl.sources.memory.export import write_store

        write_store(memory, out, redactor)
    out.write(b"}")


def export_threads(source: Source, thread_ids: list[str]) -> dict[str, Any]:
    """The export document of `thread_ids`, as a value (what `write_export` writes)."""
    buf = io.BytesIO()
    write_export(source, thread_ids, buf)
    return orjson.loads(buf.getvalue())


class ExportSource(Source):
    """An export file written by `statectl export`."""

    kind = "export"
    notes: Sequence[str] = ()
    recorded_graph: Any = None
    """What the store is, for the commands that act on one kind only (`Source.kind`)."""

    def __init__(self, path: Path) -> None:
        self.label, self._path = str(path), path
        try:
            doc = orjson.loads(read_regular(path) or b"")
        except (orjson.JSONDecodeError, OSError) as exc:
            raise SourceError(f"{path} is not a valid statectl export file ({exc})") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise SourceError(
                f"{path} is JSON but not a statectl export file", "create one with `statectl export THREAD -o FILE`"
            )
        if doc.get("version") != VERSION:
            raise SourceError(f"{path} is export version {doc.get('version')!r}; this statectl reads version {VERSION}")
        self._ckpts: dict[str, list[dict]] = {}
        self._writes: dict[tuple[str, str, str], list[WriteRecord]] = defaultdict(list)
        self._empty: dict[str, dict[str, Any]] = {}
        self.recorded_graph = None
        """The channel specification `export --graph TARGET` recorded, as written (the core reads
        it: `statectl.core.graphspec.recorded`), or None."""
        self.notes = []
        self.recorded_graph = doc.get("graph")
        self.origin = doc.get("from") if isinstance(doc.get("from"), str) else None
        """The kind of store exported (`sqlite`, `postgres`, ...; None in exports before it was
        recorded): its rows are read as that store's are."""
        try:
            for t in doc["threads"]:
                tid = t["thread_id"]
                if isinstance(t.get("empty_channels"), dict):
                    self._empty[tid] = t["empty_channels"]
                self._ckpts[tid] = sorted(t["checkpoints"], key=lambda c: c["checkpoint_id"], reverse=True)
                for c in self._ckpts[tid]:  # (an export written by hand: no deeper than a store's)
                    c["metadata"] = cut_deep(c.get("metadata"))
                for w in t["writes"]:
                    self._writes[(tid, w["checkpoint_ns"], w["checkpoint_id"])].append(
                        WriteRecord(
                            w["task_id"],
                            w.get("task_path") or "",
                            w["idx"],
                            w["channel"],
                            w.get("type"),
                            unb64(w.get("value")),
                            checkpoint_id=w["checkpoint_id"],
                        )
                    )
        except (KeyError, TypeError, ValueError) as exc:
            raise SourceError(f"{path} is a damaged statectl export file (missing {exc})") from None

    def default_sort(self) -> str:
        return "recent"

    def storage(self, limit: int | None = 20) -> Any:
        """`statectl size`: the bytes of the exported rows (checkpoints as stored, base64 undone),
        by thread."""
        from statectl.sizes import Part, StoreSize, ThreadSize

        def stored(text: str | None) -> int:
            return b64_size(text)

        writes: dict[str, int] = defaultdict(int)
        for (tid, _ns, _cid), ws in self._writes.items():
            writes[tid] += sum(len(w.blob or b"") for w in ws)
        threads = []
        for tid, rows in self._ckpts.items():
            t = ThreadSize(
                tid,
                len(rows),
                len({r["checkpoint_ns"] for r in rows}),
                sum(stored(r.get("checkpoint")) for r in rows) + writes[tid],
            )
            root = [r for r in rows if r["checkpoint_ns"] == ""]
            if root:
                t.first, t.last = stored(root[-1].get("checkpoint")), stored(root[0].get("checkpoint"))
            threads.append(t)
        threads.sort(key=lambda x: (-x.bytes, x.thread_id))
        parts = [
            Part(
                "checkpoints",
                sum(stored(r.get("checkpoint")) for rows in self._ckpts.values() for r in rows),
                "as stored",
            ),
            Part("writes", sum(writes.values())),
        ]
        total = self._path.stat().st_size if self._path.exists() else sum(p.bytes for p in parts)
        return StoreSize(
            self.label,
            total,
            parts,
            threads[:limit] if limit else threads,
            len(threads),
            ["an export file: JSON with the rows base64-encoded"],
        )

    def empty_channels(self, thread_id: str) -> dict[str, Any]:
        """Reducer channels read as their empty value, as the exported source proved them."""
        return dict(self._empty.get(thread_id, {}))

    def threads(
        self,
        limit: int | None = None,
        after: str | None = None,
        sort: str | None = None,
        match: str | None = None,
        status: frozenset[str] | None = None,
    ) -> ThreadPage:
        out = []
        for tid, rows in self._ckpts.items():
            if match and match.casefold() not in tid.casefold():
                continue
            root = [r for r in rows if r["checkpoint_ns"] == ""] or rows
            latest = root[0]
            writes = [
                (w.task_id, w.channel)
                for w in self._writes.get((tid, latest["checkpoint_ns"], latest["checkpoint_id"]), [])
            ]
            due = None  # no writes: done, unless the checkpoint plans tasks (stopped at a breakpoint)
            if idle(latest["metadata"], writes):
                due = plans_tasks(_light(latest["type"], latest["checkpoint"]))
            out.append(
                thread_summary(
                    tid,
                    len(rows),
                    len({r["checkpoint_ns"] for r in rows}),
                    latest["checkpoint_id"],
                    latest["metadata"],
                    writes,
                    due,
                )
            )
        return page_summaries(out, lambda s: s.latest_checkpoint_id, limit, after, sort, status)

    def checkpoints(self, thread_id: str, checkpoint_ns: str | None = "") -> list[CheckpointRecord]:
        return [
            CheckpointRecord(
                thread_id, r["checkpoint_ns"], r["checkpoint_id"], r["parent_checkpoint_id"], r["metadata"]
            )
            for r in self._ckpts.get(thread_id, [])
            if checkpoint_ns is None or r["checkpoint_ns"] == checkpoint_ns
        ]

    def raw_checkpoint(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> tuple[str | None, bytes | None]:
        for r in self._ckpts.get(thread_id, []):
            if r["checkpoint_ns"] == checkpoint_ns and r["checkpoint_id"] == checkpoint_id:
                return r["type"], unb64(r["checkpoint"])
        raise NotFoundError(f"no checkpoint {checkpoint_id} in thread {thread_id!r}")

    def checkpoint(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, channels: frozenset[str] | None = None
    ) -> dict:  # one blob: decoded whole
        type_, blob = self.raw_checkpoint(thread_id, checkpoint_ns, checkpoint_id)
        return checked_checkpoint(thread_id, checkpoint_id, type_, blob)

    def writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> list[WriteRecord]:
        return replay_order(self._writes.get((thread_id, checkpoint_ns, checkpoint_id), []))

    def channel_writes(self, thread_id: str, checkpoint_ns: str, channel: str) -> dict[str, list[WriteRecord]]:
        return by_checkpoint(
            w
            for (tid, ns, _cid), ws in self._writes.items()
            if tid == thread_id and ns == checkpoint_ns
            for w in ws
            if w.channel == channel
        )

    def task_paths(self, thread_id: str, checkpoint_ns: str) -> list[str]:
        return [
            w.task_path
            for (tid, ns, _cid), ws in sorted(self._writes.items())
            if tid == thread_id and ns == checkpoint_ns
            for w in sorted(ws, key=lambda w: w.task_path)
        ]

    def locate(self, checkpoint_id: str) -> list[tuple[str, str]]:
        return [
            (tid, r["checkpoint_ns"])
            for tid, rows in self._ckpts.items()
            for r in rows
            if r["checkpoint_id"] == checkpoint_id
        ]

    def close(self) -> None:
        pass
