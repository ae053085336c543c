"""Where LangGraph.js computes a snapshot differently from Python LangGraph, from the same rows.

A checkpoint LangGraph.js wrote is known by its `ts` (JavaScript's `Date.toISOString()`:
`2026-11-26T00:47:51.330Z`; Python writes `+00:00`). For such a checkpoint, LangGraph.js
(`pregel/algo.ts`, `pregel/index.ts::_prepareStateSnapshot`, `pregel/debug.ts::tasksWithWrites`):
- hashes a task id as uuid5(JSON.stringify([ns, step, node, kind, trigger or index]), checkpoint
  id), where a pull task names the first of its node's triggers that fired (`branch:to:NODE`
  before any `join:` channel), not all of them;
- keeps the Sends of a step in the checkpoint's `__pregel_tasks` channel as plain `{node, args}`;
- writes an interrupt as a plain `{id, value}` and an error as `{message, name}`;
- adds the thread id to the snapshot's metadata;
- gives a task that wrote no state key no result (undefined), not an empty mapping;
- with its SqliteSaver, reads a pending write of raw bytes as text (`CAST(value AS TEXT)`): each
  byte that is not UTF-8 becomes U+FFFD in what it reports (the checkpoint's own value is whole).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from statectl.model import is_state_key

if TYPE_CHECKING:
    from statectl.model import CheckpointRecord
    from statectl.sources.base import Source


class Branches(Protocol):
    """What `lost_branch_values` reads of a `core.state.ThreadView` (this module stands below it:
    `state` asks it how LangGraph.js differs)."""

    records: list[CheckpointRecord]

    def children(self) -> dict[str, list[str]]: ...

    def checkpoint(self, checkpoint_id: str) -> dict: ...

    @property
    def lean(self) -> Branches: ...


JS_INTERRUPT = frozenset({"id", "value", "when", "resumable", "ns", "interrupt_id"})
"""The keys of an interrupt LangGraph.js writes as plain JSON (`when`, `resumable`, `ns`,
`interrupt_id`: before 0.4, which reports no id for it)."""

_JS_TS_DIGITS = (0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22)
_JS_TS_MARKS = ((4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":"), (19, "."), (23, "Z"))


def js_time(ts: Any) -> bool:
    """Is this a checkpoint time as LangGraph.js writes it (JavaScript's `Date.toISOString()`)?
    What `^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z$` matches, tested without compiling
    it (every start that shows a time asks; a test holds the two equal)."""
    if not isinstance(ts, str):
        return False
    if ts.endswith("\n"):  # (`$` matches before a last newline too)
        ts = ts[:-1]
    return (
        len(ts) == 24
        and all(ts[i] == mark for i, mark in _JS_TS_MARKS)
        and all(ts[i].isdecimal() for i in _JS_TS_DIGITS)
    )


def written_by_js(ck: dict[str, Any]) -> bool:
    """Did LangGraph.js write this checkpoint (its `ts` as JavaScript writes a date)?"""
    return js_time(ck.get("ts"))


def js_interrupt(item: Any) -> bool:
    """Is this one interrupt as LangGraph.js writes it: plain JSON `{id, value}`?"""
    return isinstance(item, dict) and "$type" not in item and "value" in item and set(item) <= JS_INTERRUPT


def loses_branch_values(source: Source) -> bool:
    """Whether LangGraph.js's saver of the store the rows come from (an export's: the store it was
    made from) keeps one blob for two branches' values (`lost_branch_values`): a blob a channel
    version (`core.store_kinds`' `blob_per_version`)."""
    from statectl.core.store_kinds import store_kind

    declared = store_kind(source.origin or source.kind)
    return declared is not None and declared.blob_per_version


def reads_bytes_as_text(source: Source) -> bool:
    """Whether LangGraph.js's saver of the store the rows come from reads a pending write of raw
    bytes back as text (`sqlite_bytes`; `core.store_kinds`' `js_bytes_as_text`)."""
    from statectl.core.store_kinds import store_kind

    declared = store_kind(source.origin or source.kind)
    return declared is not None and declared.js_bytes_as_text


def task_id(checkpoint_id: str, *parts: Any) -> str:
    """LangGraph.js's task id: uuid5 of the JSON of the task's parts, in the checkpoint id's space."""
    import json  # (only for LangGraph.js's checkpoints: uuid costs every command's start-up)
    import uuid

    name = json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"))
    return str(uuid.uuid5(uuid.UUID(hex=checkpoint_id.replace("-", "")), name))


def sqlite_bytes(blob: bytes | None) -> bytes:
    """A bytes write as LangGraph.js's SqliteSaver hands it back: through text, as UTF-8."""
    return bytes(blob or b"").decode("utf-8", errors="replace").encode("utf-8")


def error_text(error: Any) -> Any:
    """A JavaScript error as its `toString()` gives it (`Error: message`), for the human views; any
    other value as it is."""
    if isinstance(error, dict) and isinstance(error.get("message"), str) and set(error) <= {"message", "name", "stack"}:
        name = error.get("name") if isinstance(error.get("name"), str) else "Error"
        return f"{name}: {error['message']}" if error["message"] else name
    return error


def lost_branch_values(view: Branches, checkpoint_id: str) -> list[str]:
    """Where LangGraph.js's PostgresSaver kept another branch's value for this checkpoint.

    Its channel versions are integers, and it stores a blob per (channel, version) with `ON CONFLICT
    DO NOTHING`: when two branches of a thread (a fork) each write a channel at the same version,
    only the first is stored, and the later branch reads the first one's value (LangGraph.js as
    much as statectl). Told by two checkpoints on different branches naming one (channel, version)
    that neither had from the fork point, where this checkpoint still holds that version. One line
    per channel this checkpoint lost (read from
    `view.lean`: the versions are all this needs)."""
    kids = view.children()
    if not any(len(v) > 1 for v in kids.values()):
        return []  # (no fork: nothing to collide)
    lean = view.lean
    parent = {r.checkpoint_id: r.parent_checkpoint_id for r in lean.records}

    def line(cid: str | None) -> list[str]:
        out: list[str] = []
        while cid is not None and cid in parent and cid not in out:
            out.append(cid)
            cid = parent[cid]
        return out

    def versions(cid: str) -> dict[str, Any]:
        got = lean.checkpoint(cid).get("channel_versions")
        return got if isinstance(got, dict) else {}

    mine = line(checkpoint_id)
    first_mine: dict[tuple[str, Any], str] = {}  # (channel, version) -> the earliest checkpoint holding it
    for cid in reversed(mine):
        for ch, v in versions(cid).items():
            first_mine.setdefault((ch, v), cid)
    here = versions(checkpoint_id)  # (a later version on this line is its own value: nothing lost)
    notes: list[str] = []
    on_line = set(mine) | set(first_mine.values())
    for other in lean.records:
        if other.checkpoint_id in on_line:
            continue
        theirs = line(other.checkpoint_id)
        if checkpoint_id in theirs:
            continue  # (a descendant: the same line)
        shared = next((c for c in theirs if c in on_line), None)
        base = versions(shared) if shared else {}
        for ch, v in versions(other.checkpoint_id).items():
            mine_at = first_mine.get((ch, v))
            if mine_at is None or base.get(ch) == v or here.get(ch) != v or not is_state_key(ch):
                continue
            if other.checkpoint_id < mine_at and not any(ch in n.split(":", 1)[0] for n in notes):
                notes.append(
                    f"{ch}: version {v} was written on two branches; LangGraph.js's PostgresSaver stored "
                    "the first one's value only (integer versions, ON CONFLICT DO NOTHING), so this "
                    "checkpoint shows that branch's value, as LangGraph.js reads it"
                )
    return notes
