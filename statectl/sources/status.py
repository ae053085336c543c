"""Facts that need no blob decoding: a thread's status, a checkpoint id's timestamp."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from statectl.errors import StatectlError
from statectl.model import CONTROL, NULL_TASK_ID, Record, ThreadSummary, record

STATUSES = ("done", "interrupted", "error", "pending")
"""A thread's status, from its newest root checkpoint's rows (see `thread_status`)."""
_GREGORIAN_OFFSET = 0x01B21DD213814000  # 100 ns intervals from 1582-10-15 to 1970-01-01


def uuid6_time(checkpoint_id: str) -> str | None:
    """The creation time encoded in a LangGraph (UUIDv6) checkpoint id, as ISO-8601 UTC."""
    hexid = checkpoint_id.replace("-", "")
    if len(hexid) != 32 or hexid[12] != "6":
        return None
    try:
        ticks = int(hexid[:12] + hexid[13:16], 16)
    except ValueError:
        return None
    return datetime.fromtimestamp((ticks - _GREGORIAN_OFFSET) / 1e7, UTC).isoformat()


def available(channel: str, value: Any) -> bool:
    """`BaseChannel.is_available()` for the trigger channel kinds, from the stored value."""
    finished = True
    if isinstance(value, list) and len(value) == 2 and isinstance(value[1], bool):
        value, finished = value  # *AfterFinish channels store [value, finished]
    if channel.startswith("join:"):
        names = set(channel[5:].rsplit(":", 1)[0].split("+"))
        seen = value.get("$set") if isinstance(value, dict) else value
        return finished and isinstance(seen, list) and set(seen) == names
    return finished


def old_layout(versions: dict[str, Any]) -> bool:
    """Channels of the layout LangGraph used before 0.3: `start:NODE`, `branch:SRC:COND:DST`."""
    return any(
        ch.startswith("start:") or (ch.startswith("branch:") and not ch.startswith("branch:to:")) for ch in versions
    )


def idle(metadata: dict[str, Any], writes: list[tuple[str, str]]) -> bool:
    """No task wrote at a newest checkpoint that is not an input one: the thread is done, or it
    stopped before the tasks the checkpoint plans (`plans_tasks` tells which)."""
    return metadata.get("source") != "input" and all(task_id == NULL_TASK_ID for task_id, _ in writes)


def plans_tasks(checkpoint: Any) -> bool | None:
    """Does a checkpoint plan a task (LangGraph's `tasks`, and `next`, not empty)? A Send waiting
    in `__pregel_tasks`, or a trigger channel (`__start__`, `branch:…:NODE`, `join:…:NODE`)
    updated since its node last saw it — the test `ThreadView` plans tasks by, on the checkpoint
    alone. None where the checkpoint has no such channels to tell by (LangGraph before 0.3
    triggered nodes by their own channels, and the graph is needed to know which)."""
    if not isinstance(checkpoint, dict):
        return None
    cv, versions, seen_all = (checkpoint.get(k) for k in ("channel_values", "channel_versions", "versions_seen"))
    if not isinstance(cv, dict) or not isinstance(versions, dict) or not isinstance(seen_all, dict) or not versions:
        return None
    sends = cv.get("__pregel_tasks") or checkpoint.get("pending_sends")
    if isinstance(sends, list) and sends:
        return True
    if old_layout(versions) or any(n in versions for n in seen_all if n not in ("__input__", "__start__")):
        return None  # (the layout before 0.3, a channel per node: `ThreadView.legacy_triggers`)
    null = type(next(iter(versions.values())))()
    started = [s.get("__start__") for s in seen_all.values() if isinstance(s, dict) and "__start__" in s]
    told = False
    for ch, version in versions.items():
        if ch == "__start__":  # read by the start node alone (`__start__`, or an entrypoint)
            seen = max((s for s in started if s is not None), default=null)
        elif ch.startswith(("branch:", "join:")):
            seen = (seen_all.get(ch.rsplit(":", 1)[1]) or {}).get(ch, null)
        else:
            continue
        told = True
        try:
            if ch in cv and available(ch, cv[ch]) and version > seen:
                return True
        except TypeError:  # (versions of two kinds: not a LangGraph checkpoint)
            return None
    return False if told else None


class _Unread:
    """A value `light_value` does not read (pickled, encrypted, damaged)."""


UNREAD = _Unread


def light_checkpoint(type_: str | None, blob: bytes | None) -> dict | None:
    """A checkpoint parsed for `plans_tasks` alone, fast: msgpack or JSON read by the C parsers,
    ext payloads left as parsed lists (a set as `{"$set": [...]}`, which a join channel needs), no
    object built; None for anything else (pickled, encrypted, damaged)."""
    value = light_value(type_, blob)
    return value if isinstance(value, dict) else None


def light_value(type_: str | None, blob: bytes | None) -> Any:
    """A stored value parsed as `light_checkpoint` parses a checkpoint (else `_Unread`)."""
    import orjson
    import ormsgpack

    def ext(code: int, data: bytes) -> Any:
        if code != 0 or data[:10] != b"\x93\xa8builtins":  # (a message, a Send: not read, not needed)
            return _Unread
        payload = ormsgpack.unpackb(data, ext_hook=ext, option=ormsgpack.OPT_NON_STR_KEYS)
        if isinstance(payload, list) and payload[:2] in (["builtins", "set"], ["builtins", "frozenset"]):
            return {"$set": payload[2] if len(payload) > 2 else []}  # (a join channel's nodes)
        return payload

    try:
        if type_ == "null":  # (how savers that keep values apart store None: a branch channel's)
            return None
        if type_ == "msgpack":
            value = ormsgpack.unpackb(blob or b"", ext_hook=ext, option=ormsgpack.OPT_NON_STR_KEYS)
        elif type_ == "json":
            value = orjson.loads(blob or b"")
        else:
            return _Unread
    except (ValueError, TypeError, RecursionError):
        return _Unread
    return value


def thread_status(metadata: dict[str, Any], writes: list[tuple[str, str]], due: bool | None = None) -> str:
    """done / interrupted / error / pending for the newest root checkpoint.

    `writes` are its pending writes as (task_id, channel). A task with an `__error__` write
    failed; one with an `__interrupt__` and no output waits for an answer; other task output
    means the step did not complete; no writes after an `input` checkpoint means the run never
    started. `due`: the checkpoint plans tasks (`plans_tasks`): with no writes, the run stopped
    before them, at a breakpoint (`interrupt_before`/`interrupt_after`), and resumes with them
    as LangGraph's `next` says: interrupted. Otherwise the thread is idle: done.
    """
    channels_by_task: dict[str, set[str]] = {}
    for task_id, channel in writes:
        if task_id != NULL_TASK_ID:
            channels_by_task.setdefault(task_id, set()).add(channel)
    if any("__error__" in chans for chans in channels_by_task.values()):
        return "error"
    if any("__interrupt__" in chans and not (chans - CONTROL) for chans in channels_by_task.values()):
        return "interrupted"
    if not idle(metadata, writes):
        return "pending"
    return "interrupted" if due else "done"


def thread_summary(
    thread_id: str,
    checkpoints: int,
    namespaces: int,
    latest_checkpoint_id: str,
    metadata: dict[str, Any],
    writes: list[tuple[str, str]],
    due: bool | None = None,
) -> ThreadSummary:
    """A `ThreadSummary` from counts, the newest root checkpoint's metadata and its writes."""
    step = metadata.get("step")
    return ThreadSummary(
        thread_id,
        checkpoints,
        namespaces,
        latest_checkpoint_id,
        uuid6_time(latest_checkpoint_id),
        step if isinstance(step, int) else None,
        thread_status(metadata, writes, due),
        metadata=metadata,
    )


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_when(text: str, now: datetime | None = None) -> datetime:
    """A moment for `--since`/`--until`: a duration back from now (`90s`, `30m`, `2h`, `3d`, `1w`)
    or an ISO date or time (`2026-11-01`, `2026-11-01T09:30`; UTC unless it names its offset).
    ValueError for anything else."""
    from datetime import timedelta

    text = text.strip()
    unit = _UNITS.get(text[-1:].lower())
    if unit is not None and text[:-1].isdigit():
        return (now or datetime.now(UTC)) - timedelta(seconds=int(text[:-1]) * unit)
    when = datetime.fromisoformat(text)
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def moment(iso: str | None) -> datetime | None:
    if not iso:
        return None
    try:
        when = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _meta_text(value: Any) -> str:
    """A metadata value as `--meta KEY=VALUE` compares it (true/false/null as JSON writes them)."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    return str(value)


UUID6_TIME = r"^[0-9a-f]{8}-[0-9a-f]{4}-6[0-9a-f]{3}"
"""The part of a (lowercase) UUIDv6 checkpoint id that holds its time, in an order strings keep."""


def id_at(moment: datetime, ticks: int = 0) -> str:
    """The UUIDv6 id prefix of `moment` (+ `ticks` of 100 ns): a checkpoint id saved at or after
    it sorts at or after this string, one saved before sorts before."""
    since_1970 = moment - datetime(1970, 1, 1, tzinfo=UTC)  # (whole numbers: no float)
    n = ((since_1970.days * 86400 + since_1970.seconds) * 10**6 + since_1970.microseconds) * 10
    n += _GREGORIAN_OFFSET + ticks
    h = f"{max(n, 0):015x}"
    return f"{h[:8]}-{h[8:12]}-6{h[12:15]}"


@record
class ThreadFilter(Record):
    """The operational questions of `threads`: last update since/until, metadata values, the node
    that raised. (Status and id text are the sources' own filters.)"""

    since: datetime | None = None
    until: datetime | None = None
    meta: tuple[tuple[str, str], ...] = ()
    failed_node: str | None = None

    def __bool__(self) -> bool:
        return bool(self.since or self.until or self.meta or self.failed_node)

    def id_bounds(self) -> tuple[str | None, str | None]:
        """(low, high): a thread whose newest checkpoint id is a UUIDv6 below `low` or at or
        above `high` cannot match `since`/`until` (a margin of a microsecond either side, so
        that a source's SQL keeps every thread this filter's own test keeps)."""
        return (id_at(self.since, -10) if self.since else None, id_at(self.until, 10) if self.until else None)

    def matches(self, s: ThreadSummary, failed_nodes: Callable[[ThreadSummary], set[str]]) -> bool:
        when = moment(s.updated_at)
        if self.since is not None and (when is None or when < self.since):
            return False
        if self.until is not None and (when is None or when > self.until):
            return False
        md = s.metadata or {}
        if any(key not in md or _meta_text(md[key]) != value for key, value in self.meta):
            return False
        if self.failed_node is not None:
            return s.status == "error" and self.failed_node in failed_nodes(s)
        return True


def parse_statuses(text: str | None) -> frozenset[str] | None:
    """`--status done,interrupted` as a set of statuses (None: no filter); an unknown one is an error."""
    if text is None:
        return None
    wanted = frozenset(s.strip() for s in text.split(",") if s.strip())
    if not wanted or wanted - set(STATUSES):
        raise StatectlError(
            f"unknown status {text!r}", f"use {', '.join(STATUSES[:-1])} or {STATUSES[-1]}; several: error,interrupted"
        )
    return wanted


def thread_filter(
    since: str | None, until: str | None, older_than: str | None, meta: list[str] | None, failed_node: str | None
) -> ThreadFilter:
    """The filter of `threads --since/--until/--older-than/--meta/--failed-node` (and `schema
    --all-threads --meta`), each option's text checked with one clear error."""

    def when(option: str, text: str | None) -> Any:
        if text is None:
            return None
        try:
            return parse_when(text)
        except ValueError:
            raise StatectlError(
                f"{option} {text!r} is neither a duration nor a date",
                "use 30m, 2h, 3d, 1w, or 2026-11-01 / 2026-11-01T09:30",
            ) from None

    bound = [w for w in (when("--until", until), when("--older-than", older_than)) if w is not None]
    pairs = []
    for item in meta or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise StatectlError(f"--meta {item!r} is not KEY=VALUE", "e.g. --meta user_id=u-42")
        pairs.append((key, value))
    return ThreadFilter(
        since=when("--since", since), until=min(bound) if bound else None, meta=tuple(pairs), failed_node=failed_node
    )
