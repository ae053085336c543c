"""`.langgraph_api` folders written by `langgraph dev` (the in-memory runtime), read inertly.

The folder holds pickles of the server's `InMemorySaver` dicts (FORMAT-langgraph-api §2):
storage (`.langgraph_checkpoint.1.pckl`), pending writes (`.2`), channel blobs (`.3`), and the
API's own records of threads and runs (`.langgraph_ops.pckl`). They are read with the inert
unpickler (`statectl.codec.unpickle`): nothing the files name is imported or called. The `(type, bytes)`
pairs inside are the same serde pairs SqliteSaver stores and go through the same decoder; the
server's cloudpickle fallback pairs (`pickle`) are read inertly as well.

The files are never written. The server replaces them by rename, so each file read is whole;
when any file changes the folder is read again (the TUI's live view follows a running server).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from statectl.codec.decode import b64, decode_typed
from statectl.codec.formats import INMEM_TYPE
from statectl.codec.unpickle import loads, to_data
from statectl.codec.values import cut_deep
from statectl.errors import DecodeError, NotFoundError, SourceError
from statectl.model import CheckpointRecord, ThreadPage, ThreadSummary, WriteRecord
from statectl.sources.base import Source, by_checkpoint, page_summaries, read_regular, replay_order
from statectl.sources.status import UNREAD, idle, light_checkpoint, light_value, plans_tasks, thread_summary

STORAGE, WRITES, BLOBS = (f".langgraph_checkpoint.{n}.pckl" for n in (1, 2, 3))
OPS = ".langgraph_ops.pckl"
FILES = (STORAGE, WRITES, BLOBS, OPS)
PICKLE = "inert-pickle"
"""The type statectl gives the server's cloudpickle pairs: decoded by the inert unpickler."""
SERVER_RECORD = "server-record"
"""Checkpoint id of the one entry shown for a thread whose checkpoints were not saved."""


def find_folder(path: Path) -> Path | None:
    """The folder holding the files, given the `.langgraph_api` folder, the app folder that
    contains it, or one of its `.pckl` files; None if `path` is none of these."""
    if path.is_file():
        path = path.parent if path.name.endswith(".pckl") else path
    if not path.is_dir():
        return None
    if (path / ".langgraph_api").is_dir():
        path = path / ".langgraph_api"
    return path if any((path / name).is_file() for name in FILES) else None


def _not_a_pickle(head: bytes) -> str | None:
    """What is wrong with a file that begins with `head`, for a pickle (the server writes protocol
    2, PROTO first; protocols 0 and 1 begin with a printable opcode): a file of zeros (a sparse
    file, a disk image) is refused before the rest of it is read."""
    if head[:1] == b"\x80" or 0x20 < head[0] < 0x7F:
        return None
    return f"is not a langgraph dev file (not a pickle: it begins {head[:8].hex(' ')})"


def _pair(value: Any) -> tuple[str | None, bytes | None]:
    """A serde `(type, bytes)` pair as stored; the server's pickle fallback gets its own type."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        type_, blob = value
        if isinstance(blob, (bytes, bytearray)):
            return (PICKLE if type_ == "pickle" else type_), bytes(blob)
        return type_, None
    raise DecodeError(f"not a (type, bytes) pair: {type(value).__name__}")


def _uuid_text(value: Any) -> str:
    data = to_data(value)
    if isinstance(data, dict) and "$uuid" in data:
        return data["$uuid"]
    return data if isinstance(data, str) else str(data)


def _iso(value: Any) -> str | None:
    data = to_data(value)
    return data.get("$datetime") if isinstance(data, dict) else None


class LanggraphApiSource(Source):
    """The checkpoints and thread records in a `.langgraph_api` folder."""

    kind = "folder"
    """What the store is, for the commands that act on one kind only (`Source.kind`)."""
    notes: tuple[str, ...] = ()
    recorded_graph: Any = None

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.label = str(folder)
        self._stamp: tuple | None = None
        self._fresh()

    # -- reading ------------------------------------------------------------------------------
    def _stat(self) -> tuple:
        out: list[tuple[str, int | None, int | None, int | None]] = []
        for name in FILES:
            try:
                st = os.stat(self.folder / name)
                out.append((name, st.st_ino, st.st_mtime_ns, st.st_size))
            except OSError:
                out.append((name, None, None, None))
        return tuple(out)

    def _fresh(self) -> None:
        """Read the folder if any file changed since the last read. The server replaces files
        by rename: a read that saw a file change under it is read again (a few times)."""
        stamp = self._stat()
        if stamp == self._stamp:
            return
        for _ in range(5):
            raw = {name: self._read(name) for name in FILES}
            again = self._stat()
            if again == stamp:
                break
            stamp = again
        self._parse(raw)
        self._stamp = stamp

    def _read(self, name: str) -> Any:
        path = self.folder / name
        data = read_regular(path, _not_a_pickle)  # (a FIFO or /dev/zero in the folder: one line, never a hang)
        if data is None:
            return {}
        if not data:  # (the server writes an empty store as 6 bytes, and writes by rename: never 0)
            raise SourceError(f"{path} is empty (0 bytes): not a langgraph dev file", "a truncated copy?")
        try:
            return loads(data)
        except DecodeError as exc:
            raise SourceError(f"{path} is not a langgraph dev file: {exc.message}") from None

    def _parse(self, raw: dict[str, Any]) -> None:
        self._rows: dict[str, list[tuple[str, str, str | None, Any, Any]]] = {}
        for tid, by_ns in _items(raw[STORAGE]):
            for ns, rows in _items(by_ns):
                for cid, row in _items(rows):
                    if isinstance(row, tuple) and len(row) >= 3 and isinstance(cid, str):
                        parent = row[2] if isinstance(row[2], str) else None
                        self._rows.setdefault(str(tid), []).append((str(ns), cid, parent, row[0], row[1]))
        for rows in self._rows.values():
            rows.sort(key=lambda r: r[1], reverse=True)
        self._writes: dict[tuple[str, str, str], list[WriteRecord]] = {}
        for key, group in _items(raw[WRITES]):
            if isinstance(key, tuple) and len(key) == 3:
                tid, ns, cid = map(str, key)
                self._writes.setdefault((tid, ns, cid), []).extend(_write_rows(group, cid))
        self._writes = {k: replay_order(ws) for k, ws in self._writes.items()}
        self._blobs: dict[tuple, Any] = dict(_items(raw[BLOBS]))
        self._meta: dict[tuple[str, str, str], dict] = {}
        ops = raw[OPS] if isinstance(raw[OPS], dict) else {}
        self._ops: dict[str, dict] = {}
        for t in ops.get("threads") or []:
            if isinstance(t, dict) and "thread_id" in t:
                self._ops[_uuid_text(t["thread_id"])] = t
        self._versions: dict[str, dict[str, str]] = {}
        for run in ops.get("runs") or []:  # the newest run of a thread names the writer versions
            try:
                tid = _uuid_text(run["thread_id"])
                meta = run["kwargs"]["config"]["metadata"]
                found = {
                    k: meta[k] for k in ("langgraph_version", "langgraph_api_version") if isinstance(meta.get(k), str)
                }
                when = _iso(run.get("created_at")) or ""
            except (KeyError, TypeError):
                continue
            if found and when >= self._versions.get(tid, {}).get("$when", ""):
                self._versions[tid] = {**found, "$when": when}

    # -- the Source protocol --------------------------------------------------------------------
    def default_sort(self) -> str:
        return "recent"

    def _metadata(self, tid: str, ns: str, cid: str, pair: Any) -> dict:
        key = (tid, ns, cid)
        if key not in self._meta:
            try:
                type_, blob = _pair(pair)
                meta = decode_typed(type_, blob)
            except DecodeError as exc:
                meta = {"$undecoded": exc.message}
            meta = cut_deep(meta)
            self._meta[key] = meta if isinstance(meta, dict) else {"$undecoded": meta}
        return self._meta[key]

    def _records(self, tid: str) -> list[CheckpointRecord]:
        rows = self._rows.get(tid)
        if rows:
            return [
                CheckpointRecord(tid, ns, cid, parent, self._metadata(tid, ns, cid, meta))
                for ns, cid, parent, _ck, meta in rows
            ]
        if tid in self._ops:  # the server knows the thread, the checkpoint files do not
            versions = {k: v for k, v in self._versions.get(tid, {}).items() if not k.startswith("$")}
            return [CheckpointRecord(tid, "", SERVER_RECORD, None, {"source": SERVER_RECORD, **versions})]
        return []

    def _summary(self, tid: str) -> ThreadSummary:
        records = self._records(tid)
        root = [r for r in records if r.checkpoint_ns == ""] or records
        latest = root[0]
        writes = [
            (w.task_id, w.channel) for w in self._writes.get((tid, latest.checkpoint_ns, latest.checkpoint_id), [])
        ]
        real = latest.checkpoint_id != SERVER_RECORD
        summary = thread_summary(
            tid,
            len(records) if real else 0,
            len({r.checkpoint_ns for r in records}),
            latest.checkpoint_id,
            latest.metadata,
            writes,
            self._due(tid, latest) if real and idle(latest.metadata, writes) else None,
        )
        op = self._ops.get(tid) or {}
        found = op.get("metadata")
        meta: dict[str, Any] = found if isinstance(found, dict) else {}
        graph = meta.get("graph_id") or latest.metadata.get("graph_id")
        changes: dict[str, Any] = {
            "server_status": op.get("status") if isinstance(op.get("status"), str) else None,
            "graph_id": graph if isinstance(graph, str) else None,
        }
        if latest.checkpoint_id == SERVER_RECORD:
            changes.update(updated_at=_iso(op.get("updated_at")), status=_server_status(op))
        return replace(summary, **changes)

    def _due(self, tid: str, latest: CheckpointRecord) -> bool | None:
        """`plans_tasks` of a thread's newest checkpoint, as the SQLite source tells it (a thread
        stopped at a breakpoint, or updated with `update_state` and not run since, plans tasks:
        interrupted, not done): the checkpoint parsed light, its trigger channels' values read
        from the blobs the folder keeps apart."""
        try:
            ns, _cid, _parent, ck, _meta = self._row(tid, latest.checkpoint_ns, latest.checkpoint_id)
            light = light_checkpoint(*_pair(ck))
        except (DecodeError, NotFoundError):
            return None
        if light is None:
            return None
        if not isinstance(light.get("channel_values"), dict):
            values: dict[str, Any] = {}
            for ch, ver in (light.get("channel_versions") or {}).items():
                if ch in ("__start__", "__pregel_tasks") or ch.startswith(("branch:", "join:")):
                    pair = self._blobs.get((tid, ns, ch, ver))
                    try:
                        value = light_value(*_pair(pair)) if pair is not None else None
                    except DecodeError:
                        continue
                    if pair is not None and value is not UNREAD:
                        values[ch] = value
            light = {**light, "channel_values": values}
        return plans_tasks(light)

    def threads(
        self,
        limit: int | None = None,
        after: str | None = None,
        sort: str | None = None,
        match: str | None = None,
        status: frozenset[str] | None = None,
    ) -> ThreadPage:
        self._fresh()
        ids = set(self._rows) | set(self._ops)
        out = [self._summary(t) for t in ids if not match or match.casefold() in t.casefold()]
        return page_summaries(out, lambda s: s.updated_at or "", limit, after, sort, status)

    def checkpoints(self, thread_id: str, checkpoint_ns: str | None = "") -> list[CheckpointRecord]:
        self._fresh()
        return [r for r in self._records(thread_id) if checkpoint_ns is None or r.checkpoint_ns == checkpoint_ns]

    def _row(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> tuple:
        for row in self._rows.get(thread_id, ()):
            if row[0] == checkpoint_ns and row[1] == checkpoint_id:
                return row
        raise NotFoundError(f"no checkpoint {checkpoint_id} in thread {thread_id!r}")

    def storage(self, limit: int | None = 20) -> Any:
        """`statectl size`: the folder's files, and the largest threads by the bytes of their
        checkpoints, channel blobs and pending writes (as the serializer stored them)."""
        from statectl.sizes import Part, StoreSize, ThreadSize

        self._fresh()

        def stored(value: Any) -> int:
            try:
                return len(_pair(value)[1] or b"")
            except DecodeError:
                return 0

        parts = [Part(name, (self.folder / name).stat().st_size) for name in FILES if (self.folder / name).exists()]
        blobs: dict[str, int] = {}
        for key, value in self._blobs.items():
            if isinstance(key, tuple) and key:
                blobs[str(key[0])] = blobs.get(str(key[0]), 0) + stored(value)
        writes: dict[str, int] = {}
        for (tid, _ns, _cid), ws in self._writes.items():
            writes[tid] = writes.get(tid, 0) + sum(len(w.blob or b"") for w in ws)
        threads = []
        for tid, rows in self._rows.items():
            t = ThreadSize(
                tid,
                len(rows),
                len({r[0] for r in rows}),
                sum(stored(r[3]) for r in rows) + blobs.get(tid, 0) + writes.get(tid, 0),
            )
            root = [r for r in rows if r[0] == ""]
            if root:
                t.first, t.last = stored(root[-1][3]), stored(root[0][3])
            threads.append(t)
        threads.sort(key=lambda x: (-x.bytes, x.thread_id))
        return StoreSize(
            self.label,
            sum(p.bytes for p in parts),
            parts,
            threads[:limit] if limit else threads,
            len(threads),
            [
                "a langgraph dev folder: pickled files the server rewrites whole; "
                "a checkpoint's size here leaves out its channel blobs"
            ],
        )

    def channel_storage(self, thread_id: str) -> Any:
        """A thread's bytes by channel: each channel version's blob stored once (as Postgres)."""
        from statectl.sizes import ChannelSize, ThreadChannels

        self._fresh()
        rows = [r for r in self._rows.get(thread_id, ()) if r[0] == ""]
        if not rows:
            raise NotFoundError(f"no checkpoint in thread {thread_id!r}")
        channels: dict[str, ChannelSize] = {}
        for key, value in self._blobs.items():
            if isinstance(key, tuple) and len(key) == 4 and key[0] == thread_id and key[1] == "":
                c = channels.setdefault(str(key[2]), ChannelSize(str(key[2]), 0, 0))
                try:
                    c.history += len(_pair(value)[1] or b"")
                except DecodeError:
                    continue
                c.stored += 1
        for (tid, ns, _cid), ws in self._writes.items():
            if tid == thread_id and ns == "":
                for w in ws:
                    channels.setdefault(w.channel, ChannelSize(w.channel, 0, 0)).writes += len(w.blob or b"")
        latest = decode_typed(*_pair(rows[0][3]))
        for ch, ver in ((latest.get("channel_versions") or {}) if isinstance(latest, dict) else {}).items():
            value = self._blobs.get((thread_id, "", ch, ver))
            if value is not None and ch in channels:
                channels[ch].latest = len(_pair(value)[1] or b"")
        steps = []
        for r in reversed(rows):
            md = self._metadata(thread_id, "", r[1], r[4])
            steps.append((md.get("step") if isinstance(md.get("step"), int) else None, len(_pair(r[3])[1] or b"")))
        ordered = sorted(channels.values(), key=lambda c: (-(c.history + c.writes), c.channel))
        return ThreadChannels(
            thread_id,
            len(rows),
            ordered,
            steps,
            "each channel version is stored once (langgraph dev): history counts each "
            "version; the size per step is the checkpoint without its blobs",
            sum(b for _, b in steps),
        )

    def raw_checkpoint(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> tuple[str | None, bytes | None]:
        self._fresh()
        if checkpoint_id == SERVER_RECORD:
            return INMEM_TYPE, orjson.dumps({"server_record": self._server_checkpoint(thread_id)})
        ns, _cid, _parent, ck, _meta = self._row(thread_id, checkpoint_ns, checkpoint_id)
        type_, blob = _pair(ck)
        blobs, missing = [], []
        decoded = decode_typed(type_, blob)
        if isinstance(decoded, dict) and "channel_values" not in decoded:
            for ch, ver in (decoded.get("channel_versions") or {}).items():
                if (thread_id, ns, ch, ver) in self._blobs:
                    bt, bb = _pair(self._blobs[(thread_id, ns, ch, ver)])
                    blobs.append([ch, bt, b64(bb)])
                else:
                    missing.append(ch)
        return INMEM_TYPE, orjson.dumps({"checkpoint": [type_, b64(blob)], "blobs": blobs, "missing": missing})

    def checkpoint(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, channels: frozenset[str] | None = None
    ) -> dict:
        type_, blob = self.raw_checkpoint(thread_id, checkpoint_ns, checkpoint_id)
        from statectl.codec.formats import checked_checkpoint

        return checked_checkpoint(thread_id, checkpoint_id, type_, blob)

    def _server_checkpoint(self, thread_id: str) -> dict:
        op = self._ops.get(thread_id)
        if op is None:
            raise NotFoundError(f"no thread {thread_id!r} in {self.label}")
        values = to_data(op.get("values"))
        notes = [
            "the checkpoint files hold no checkpoint of this thread (langgraph dev did not "
            "save its history): these are the values of the server's last record of the "
            f"thread, status {op.get('status')!r}"
        ]
        interrupts = to_data(op.get("interrupts"))
        if interrupts:
            notes.append(f"the server recorded interrupts: {orjson.dumps(interrupts).decode()[:300]}")
        error = to_data(op.get("error"))
        if error:
            notes.append(f"the server recorded an error: {orjson.dumps(error).decode()[:300]}")
        return {
            "v": 4,
            "id": SERVER_RECORD,
            "ts": _iso(op.get("updated_at")),
            "channel_values": values if isinstance(values, dict) else {"$values": values},
            "channel_versions": {},
            "versions_seen": {},
            "$notes": notes,
        }

    def empty_channels(self, thread_id: str) -> dict[str, Any]:
        """State keys the server's record of the thread holds at their type's empty value
        (`[]`, `{}`, `0`, `""`): where no checkpoint wrote them, these are reducer channels that
        LangGraph reads as `typ()` before their first write."""
        self._fresh()
        values = (self._ops.get(thread_id) or {}).get("values")
        if not isinstance(values, dict):
            return {}
        return {
            k: type(v)()
            for k, v in values.items()
            if isinstance(k, str) and type(v) in (list, dict, int, float, str) and v == type(v)()
        }

    def writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> list[WriteRecord]:
        self._fresh()
        return list(self._writes.get((thread_id, checkpoint_ns, checkpoint_id), []))

    def channel_writes(self, thread_id: str, checkpoint_ns: str, channel: str) -> dict[str, list[WriteRecord]]:
        self._fresh()
        return by_checkpoint(
            w
            for (tid, ns, _cid), ws in self._writes.items()
            if tid == thread_id and ns == checkpoint_ns
            for w in ws
            if w.channel == channel
        )

    def task_paths(self, thread_id: str, checkpoint_ns: str) -> list[str]:
        self._fresh()
        return [
            w.task_path
            for (tid, ns, _cid), ws in sorted(self._writes.items())
            if tid == thread_id and ns == checkpoint_ns
            for w in sorted(ws, key=lambda w: w.task_path)
        ]

    def locate(self, checkpoint_id: str) -> list[tuple[str, str]]:
        return [(tid, r[0]) for tid, rows in self._rows.items() for r in rows if r[1] == checkpoint_id]

    def close(self) -> None:
        pass


def _server_status(op: dict) -> str:
    """statectl's status for a thread known only from the server's record."""
    status = op.get("status")
    if status == "interrupted" or op.get("interrupts"):
        return "interrupted"
    if status == "error" or op.get("error"):
        return "error"
    return "pending" if status == "busy" else "done"


def _write_rows(group: Any, checkpoint_id: str) -> Iterator[WriteRecord]:
    """The writes of one checkpoint as the folder keeps them: {(task_id, idx): (task_id, channel,
    (type, blob), task_path)}; a pair that cannot be read is kept as an unreadable write."""
    for (task_id, idx), w in _items(group, pairs=True):
        if isinstance(w, tuple) and len(w) >= 3:
            try:
                type_, blob = _pair(w[2])
            except DecodeError:
                type_, blob = "unreadable", None
            path = w[3] if len(w) > 3 and isinstance(w[3], str) else ""
            yield WriteRecord(
                str(task_id),
                path,
                idx if isinstance(idx, int) else 0,
                str(w[1]),
                type_,
                blob,
                checkpoint_id=checkpoint_id,
            )


def _items(value: Any, pairs: bool = False) -> list[tuple[Any, Any]]:
    """A dict's items (any other value: none); with `pairs`, only `(task_id, idx)` keys."""
    if not isinstance(value, dict):
        return []
    if pairs:
        return [(k, v) for k, v in value.items() if isinstance(k, tuple) and len(k) == 2]
    return list(value.items())
