"""One line that tells a thread apart from its neighbours (`threads`' PREVIEW column): the error it
stopped on, the question its interrupt asks, else the first thing the user said.

Read for the shown page only, from small rows: the newest checkpoint's writes (an error or an
interrupt) and the thread's first input (the `__start__` write of its oldest checkpoint, or where
older generations kept it, that checkpoint's `metadata.writes`). No checkpoint blob is decoded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from statectl.core.js import error_text, js_interrupt
from statectl.core.reducers import is_message, message_data
from statectl.errors import StatectlError
from statectl.model import ThreadSummary

if TYPE_CHECKING:
    from statectl.model import CheckpointRecord, WriteRecord
    from statectl.sources.base import Source

_ROLES_USER = ("human", "user")
START_TASK = "~__pregel_pull, __start__"
"""The task path of the task that writes a graph's input into its channels."""


class Preview(NamedTuple):
    """What tells a thread apart: `kind` is `error`, `interrupt`, `input` or '' (nothing to
    show); `node`: the node that raised, for an error."""

    kind: str
    text: str
    node: str = ""

    def to_json(self) -> dict[str, Any]:
        """`threads --json`'s fields: the preview as the table shows it, and what it is."""
        out: dict[str, Any] = {"preview": self.text or None}
        if self.kind == "interrupt":
            out["interrupt"] = self.text
        elif self.kind == "error":
            out.update(error=self.text, error_node=self.node or None)
        return out


NOTHING = Preview("", "")


def previews(source: Source, threads: list[ThreadSummary]) -> dict[str, Preview]:
    """thread id -> its `Preview`. Where the source reads many rows in one query (SQLite, Postgres: two
    queries for the page), it does; others are asked thread by thread."""
    batch = source.reads_many
    ids = [t.thread_id for t in threads]
    try:
        if batch:
            firsts = source.first_checkpoints(ids)
            wanted = [
                (t.thread_id, "", t.latest_checkpoint_id) for t in threads if t.status in ("error", "interrupted")
            ]
            wanted += [(t, "", r.checkpoint_id) for t, r in firsts.items()]
            writes = source.writes_of(list(dict.fromkeys(wanted)))
        else:

            def oldest(t: str) -> Any:
                try:
                    return next(iter(source.checkpoints(t, "")[::-1]), None)
                except (StatectlError, RecursionError):
                    return None

            firsts = {t: r for t in ids if (r := oldest(t)) is not None}
            writes = None
    except (StatectlError, RecursionError):  # a preview never sinks the listing
        return dict.fromkeys(ids, NOTHING)
    return {t.thread_id: preview(source, t, firsts.get(t.thread_id), writes) for t in threads}


def preview(
    source: Source,
    t: ThreadSummary,
    oldest: CheckpointRecord | None,
    writes: dict[tuple[str, str, str], list] | None = None,
) -> Preview:
    """The `Preview` of one thread, `oldest` its first root checkpoint; `writes`: the writes of
    its newest and oldest checkpoints already read (else read here)."""
    from statectl.codec.decode import decode_typed
    from statectl.model import is_state_key

    def decode_write(w: Any) -> Any:
        return decode_typed(w.type, w.blob)

    def writes_on(checkpoint_id: str) -> list:
        if writes is not None:
            return writes.get((t.thread_id, "", checkpoint_id), [])
        return source.writes(t.thread_id, "", checkpoint_id)

    try:
        if t.status in ("error", "interrupted"):
            for w in writes_on(t.latest_checkpoint_id):
                if w.channel == "__error__" and t.status == "error":
                    return Preview("error", str(error_text(decode_write(w))), failed_node(source, t, w))
                if w.channel == "__interrupt__" and t.status == "interrupted":
                    return Preview("interrupt", _text(_interrupt_value(decode_write(w))))
        if oldest is None:
            return NOTHING
        given: dict[str, Any] = {}  # the input, as the `__start__` task wrote it into the channels
        for w in writes_on(oldest.checkpoint_id):
            if w.channel == "__start__":  # (before LangGraph 0.3: the whole input in one channel)
                return Preview("input", first_user_text(decode_write(w)))
            if is_state_key(w.channel) and (not w.task_path or w.task_path == START_TASK):
                given.setdefault(w.channel, decode_write(w))
        if given:
            return Preview("input", first_user_text(given))
        return _older_input(source, t, oldest)
    except (StatectlError, RecursionError):  # a preview never sinks the listing
        return NOTHING


def _older_input(source: Source, t: ThreadSummary, oldest: Any) -> Preview:
    """The input where the oldest checkpoint's writes do not hold it: its `metadata.writes`
    (older generations); else, where the thread's first checkpoints were pruned (the input went
    with them), the first user message of its newest state (decoded for this one thread)."""
    from statectl.core.state import ThreadView

    written = oldest.metadata.get("writes")
    if isinstance(written, dict) and "__start__" in written:
        return Preview("input", first_user_text(written["__start__"]))
    if oldest.parent_checkpoint_id is None:
        return NOTHING
    view = ThreadView(source, t.thread_id, "", frozenset({"messages"}))
    values = view.snapshot(t.latest_checkpoint_id).values
    if not isinstance(values, dict) or not values.get("messages"):
        return NOTHING
    text = first_user_text({"messages": values["messages"]})
    return Preview("input", text) if text and not text.startswith("messages: ") else NOTHING


def failed_node(source: Source, t: ThreadSummary, w: WriteRecord) -> str:
    """The node whose task wrote error `w` on the thread's newest checkpoint: a pull task's
    path names it; a Send's (`~__pregel_push, 3, ...`) is in that checkpoint's Sends, read
    for this one thread ('' where neither tells)."""
    from statectl.core.tasks import pull_node, send_node

    path = w.task_path or ""
    if node := pull_node(path):
        return node
    if not path:  # (no task path: LangGraph.js, or a SqliteSaver before 2.0.2) the task the id plans
        return _planned_by(source, t, w.task_id)
    parts = path.split(", ")
    if len(parts) < 2 or parts[0] != "~__pregel_push" or not parts[1].isdigit():
        return ""
    try:
        ck = source.checkpoint(t.thread_id, "", t.latest_checkpoint_id, frozenset())  # (no state key's value)
    except (StatectlError, RecursionError):
        return ""
    values = ck.get("channel_values") if isinstance(ck, dict) else None
    sends = (values or {}).get("__pregel_tasks") if isinstance(values, dict) else None
    sends = sends if isinstance(sends, list) else ck.get("pending_sends") if isinstance(ck, dict) else None
    i = int(parts[1])
    return (send_node(sends[i]) or "") if isinstance(sends, list) and i < len(sends) else ""


def _planned_by(source: Source, t: ThreadSummary, task_id: str) -> str:
    """The node of the task with this id on the thread's newest root checkpoint, as `show` plans it."""
    from statectl.core.state import ThreadView

    try:
        view = ThreadView(source, t.thread_id, "", frozenset())  # (tasks need no state key's value)
        snap = view.snapshot(t.latest_checkpoint_id)
    except (StatectlError, RecursionError):
        return ""
    return next((task.name for task in snap.tasks if task.id == task_id), "")


def _interrupt_value(value: Any) -> Any:
    items = value if isinstance(value, list) else [value]
    for item in items:
        data = item.get("data") if isinstance(item, dict) and "$type" in item else None
        if isinstance(data, dict) and "value" in data:
            return data["value"]
        if js_interrupt(item):
            return item["value"]  # (LangGraph.js: {id, value})
        return item
    return None


def first_user_text(value: Any) -> str:
    """The first user message of a graph's input (a messages list in any form LangGraph accepts:
    message objects, (role, text) pairs, {role, content} dicts, plain text); any other input as
    `key: value` pairs."""
    if isinstance(value, dict) and "$type" not in value:
        messages = value.get("messages")
        if isinstance(messages, (list, str, dict)):
            for m in messages if isinstance(messages, list) else [messages]:
                text = _user_message(m)
                if text:
                    return text
        from statectl.core.text import summary

        return ", ".join(f"{k}: {summary(v, 60)}" for k, v in list(value.items())[:4])
    return _text(value)


def _user_message(m: Any) -> str:
    if isinstance(m, str):
        return m
    if is_message(m):
        data = message_data(m)
        if data.get("type") in _ROLES_USER or m["$type"].endswith("HumanMessage"):
            return _content(data.get("content"))
        return ""
    if isinstance(m, list) and len(m) == 2 and m[0] in _ROLES_USER:
        return _content(m[1])
    if isinstance(m, dict) and m.get("role") in _ROLES_USER:
        return _content(m.get("content"))
    return ""


def _content(content: Any) -> str:
    if isinstance(content, list):  # content blocks
        return " ".join(str(c.get("text", "")) if isinstance(c, dict) else str(c) for c in content).strip()
    return "" if content is None else str(content)


def _text(value: Any, depth: int = 0) -> str:
    """The first text inside a value (depth first), or a short rendering of it."""
    if isinstance(value, str):
        return value
    if is_message(value):
        return _content(message_data(value).get("content"))
    if isinstance(value, dict) and "$type" in value:  # a typed object: its fields, not its tag
        value = {k: v for k, v in value.items() if k in ("data", "arg", "args")}
    if depth < 6 and isinstance(value, dict):
        for v in value.values():
            if text := _text(v, depth + 1):
                return text
    if depth < 6 and isinstance(value, list):
        for v in value:
            if text := _text(v, depth + 1):
                return text
    if depth == 0 and value is not None:
        from statectl.core.text import summary

        return summary(value)
    return ""
