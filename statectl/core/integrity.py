"""`doctor`'s integrity checks: ancestry, rows that do not decode or that LangGraph's loader
would reject, and what the store lists as orphaned or missing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from statectl.core.findings import ERROR, INFO, WARNING, Finding, at
from statectl.model import CheckpointRecord

if TYPE_CHECKING:
    from statectl.core.reader import StoreReader
    from statectl.sources.base import Source

REQUIRED = ("channel_values", "channel_versions", "versions_seen")


def row(
    r: CheckpointRecord,
    type_: str | None,
    blob: bytes,
    source: Source,
    out: list[Finding],
    writes: list | None,
    memo: dict[tuple[Any, Any], Any] | None = None,
) -> set[tuple[str, str, str]]:
    """The row and its writes decode, and the row is a checkpoint LangGraph's loader accepts (the
    keys `get_tuple`'s readers index, a serializer type it knows); the classes they name. A
    msgpack row is parsed once, its ext payloads too, without building values from them; so is
    a Postgres row's each blob, once for the thread (`memo`: its checkpoints share versions)."""
    from statectl.codec.classes import named, parse_msgpack
    from statectl.codec.formats import PG_TYPE, checked_checkpoint
    from statectl.errors import DecodeError

    damaged = "the row is damaged: restore it from a backup, or delete the thread"
    try:
        if type_ == "msgpack":
            ck, found = parse_msgpack(blob)
        elif type_ == PG_TYPE:
            from statectl.codec.classes import parse_pg_export

            try:
                ck, found = parse_pg_export(blob, {} if memo is None else memo)
            except DecodeError as exc:
                raise DecodeError.corrupt(r.thread_id, r.checkpoint_id, exc.message) from None
        else:
            ck, found = checked_checkpoint(r.thread_id, r.checkpoint_id, type_, blob), named(type_, blob)
        if writes is None:
            writes = source.writes(r.thread_id, r.checkpoint_ns, r.checkpoint_id)
    except DecodeError as exc:
        out.append(at(r, ERROR, "integrity", "undecodable", exc.message, damaged))
        return set()
    pickled = False
    for w in writes:
        if w.type == "msgpack" and w.blob:
            try:
                found |= parse_msgpack(w.blob)[1]
            except DecodeError as exc:
                message = f"a write to {w.channel!r} (task {w.task_id}) does not decode: {exc.message}"
                out.append(at(r, ERROR, "integrity", "undecodable", message, damaged))
        else:
            found |= named(w.type, w.blob)
        pickled |= w.type == "pickle"
    if pickled:
        message = "a write is a pickle: LangGraph loads it only with pickle_fallback=True in the serializer"
        out.append(at(r, WARNING, "load", "pickled", message, "keep pickle_fallback=True where it is read"))
    if not isinstance(ck, dict):
        out.append(at(r, ERROR, "integrity", "rejected", "LangGraph's loader would fail on it: not a checkpoint", None))
        return found
    undecoded = ck.get("$undecoded")
    if isinstance(undecoded, dict):
        if str(undecoded.get("type")) == "pickle":
            message = "stored as a pickle: LangGraph loads it only with pickle_fallback=True in the serializer"
            out.append(at(r, WARNING, "load", "pickled", message, "keep pickle_fallback=True where it is read"))
        return found
    missing = [k for k in REQUIRED if not isinstance(ck.get(k), dict)]
    if missing and type_ != "statectl+server":
        message = f"LangGraph's loader would fail on it: no {', '.join(missing)}"
        out.append(at(r, ERROR, "integrity", "rejected", message, "not a checkpoint LangGraph wrote: delete the row"))
    return found


def ancestry(store: StoreReader, t: str, ns: str, rows: list[CheckpointRecord], out: list[Finding]) -> None:
    """Loops in the parent chain; parents that are not there: a warning naming both ends where
    older checkpoints remain back to the thread's first (a gap: rows deleted in the middle), info
    otherwise (how pruned history begins), an error where a delta channel must be replayed from
    them."""
    parent = {r.checkpoint_id: r.parent_checkpoint_id for r in rows}
    done: set[str] = set()
    for r in rows:
        seen: list[str] = []
        here: str | None = r.checkpoint_id
        while here is not None and here in parent and here not in done:
            if here in seen:
                loop = seen[seen.index(here) :]
                out.append(
                    Finding(
                        ERROR,
                        "integrity",
                        "loop",
                        f"its ancestry loops through {len(loop)} checkpoint(s): "
                        f"{' → '.join(loop[:4])}{' …' if len(loop) > 4 else ''}",
                        "a parent id was rewritten by hand: set it back, or delete the thread",
                        t,
                        ns,
                        here,
                    )
                )
                break
            seen.append(here)
            here = parent[here]
        done.update(seen)
    dangling = [r for r in rows if r.parent_checkpoint_id is not None and r.parent_checkpoint_id not in parent]
    first = any(r.parent_checkpoint_id is None for r in rows)
    begins = []
    for r in dangling:
        broken = _unreplayable(store, r)
        if broken:
            out.append(
                at(
                    r,
                    ERROR,
                    "integrity",
                    "delta-ancestor-missing",
                    f"its parent {r.parent_checkpoint_id} is not in the store, and the delta channel(s) "
                    f"{', '.join(broken)} are replayed from it: their value here and at later checkpoints up to the "
                    "next snapshot cannot be rebuilt",
                    "restore the missing checkpoints from a backup (prune keeps them: statectl prune never drops one)",
                )
            )
            continue
        # (ids are time-ordered: a checkpoint older than the missing parent is history beyond the
        # gap; a prune drops the oldest first, and statectl's keeps fork points and branch heads
        # whose own history then begins at a missing parent: beyond a gap is the thread's first
        # checkpoint, or it is how a pruned history begins)
        older = max((c for c in parent if c < str(r.parent_checkpoint_id)), default=None) if first else None
        if older is None:
            begins.append(r)
            continue
        out.append(
            at(
                r,
                WARNING,
                "integrity",
                "gap",
                f"its parent {r.parent_checkpoint_id} is not in the store, but older checkpoints are: rows between "
                f"{older} and here were deleted, and the history before here is cut off from it",
                "restore the missing checkpoints from a backup; if they were deleted on purpose, delete the older "
                "ones too (statectl prune)",
            )
        )
    if begins:
        r = begins[0]
        out.append(
            Finding(
                INFO,
                "integrity",
                "history-begins",
                f"{len(begins)} checkpoint(s) name a parent that is not in the store, and none older remain: history "
                "begins there (after a prune)",
                None,
                t,
                ns,
                r.checkpoint_id,
                count=len(begins),
            )
        )


def _unreplayable(store: StoreReader, r: CheckpointRecord) -> list[str]:
    """The delta channels `r` rebuilds from ancestors: versioned, not stored whole in `r`, with
    supersteps since their snapshot (`counters_since_delta_snapshot`)."""
    counters = r.metadata.get("counters_since_delta_snapshot")
    if not isinstance(counters, dict):
        return []
    from statectl.core.prune import stored_channels, versioned_channels

    view = store.view(r.thread_id, r.checkpoint_ns)
    versioned = versioned_channels(view, r)
    out = []
    for key, pair in counters.items():
        since = pair[1] if isinstance(pair, list) and len(pair) == 2 else None
        if not since or (versioned is not None and key not in versioned):
            continue
        if key not in stored_channels(store, r.thread_id, r.checkpoint_ns, r.checkpoint_id):
            out.append(str(key))
    return out


def orphans(found: dict[str, list[tuple]]) -> list[Finding]:
    """`Source.orphans()`'s rows as findings: writes by the checkpoint id they point to (and their
    tasks), blob versions by thread, namespace and channel, each version with its bytes."""
    out = []
    for t, ns, cid, n, size, tasks in found.get("writes", []):
        shown = ", ".join(str(task) for task in tasks[:3]) + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")
        out.append(
            Finding(
                WARNING,
                "integrity",
                "orphan-writes",
                f"{n} write(s), {size:,} B, of task(s) {shown} point to this checkpoint, which is not in the store: "
                "nothing reads them",
                "left by a crash or a hand-written DELETE: delete the writes of this checkpoint id",
                t,
                ns,
                cid,
                count=n,
            )
        )
    for t, ns, channel, n, size, versions in found.get("blobs", []):
        listed = ", ".join(f"{v} ({b:,} B)" for v, b in versions)
        more = f" and {n - len(versions)} more" if n > len(versions) else ""
        out.append(
            Finding(
                WARNING,
                "integrity",
                "orphan-blobs",
                f"{n} blob version(s) of {channel!r}, {size:,} B, no checkpoint names: {listed}{more} (a run "
                "writing right now has some for a moment)",
                "delete them (by thread, namespace, channel and version) when no run is writing",
                t,
                ns,
                count=n,
            )
        )
    for t, ns, cid, channel, snapshot in found.get("missing", []):
        out.append(
            Finding(
                ERROR,
                "integrity",
                "missing-blob",
                f"its snapshot of the delta channel {channel!r} is not stored: LangGraph reads the channel as `True` "
                "here, and at later checkpoints up to the next snapshot"
                if snapshot
                else f"its version of {channel!r} names a value that is not stored, though a task wrote the channel "
                "in the step that made it: LangGraph reads the channel empty here",
                "restore the missing blob row from a backup",
                t,
                ns,
                cid,
            )
        )
    return out
