"""`statectl show` as a pipe or a file gets it, made without importing Rich (issue 55: Rich's
console, text and styles were half of `show | grep`'s start-up): the lines `render.state`'s view
prints there, the same to the byte (tests compare the two). Laid out as Rich lays it out at a
pipe's width: a box as wide as what it holds (its title included), a label column as wide as its
widest label, a tree's guides; measured before the control characters are written out, as Rich
measures. Anything it does not lay out as Rich would (a tab, a line separator other than a
newline, a line near the pipe's width, a tool call Rich would lay out again) says None: Rich then
lays it out."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from statectl.codec.arrays import Tail
from statectl.core.js import error_text
from statectl.core.reducers import is_message, message_data
from statectl.core.text import scalar_text, summary
from statectl.escape import escape
from statectl.render import Limits
from statectl.render.pipe import writer
from statectl.render.pipe_layout import (
    DROPPED,
    PlainBox,
    PlainGrid,
    PlainGroup,
    PlainText,
    PlainTree,
    Unplain,
    lines_of,
)

if TYPE_CHECKING:
    from statectl.model import Snapshot

STOPPED = (
    "before {nodes} ran: a static breakpoint (interrupt_before/after) or a stopped process; "
    "invoke(None, config) resumes"
)
MID_STEP = (
    "during the step: {done} finished (saved, applied when the step ends), {left} did not (the "
    "process stopped); invoke(None, config) runs {left} alone"
)
TODO_MARK = {"completed": "☑", "in_progress": "◐", "pending": "☐"}
STACK_BELOW = 40
"""A transcript narrower than this beside its role labels puts each label on its own line, the
message under it with the whole width (the TUI's state pane at 80 columns)."""


def stopped_before(snap: Snapshot) -> bool:
    """Nodes are due and none of them began: no task wrote, waits at an interrupt or failed.
    At a thread's newest checkpoint that is a static breakpoint (`interrupt_before`/`_after`)
    or a process that stopped between steps; the rows do not say which."""
    return bool(snap.next) and not any(t.result is not None or t.interrupts or t.error is not None for t in snap.tasks)


def stop_note(snap: Snapshot) -> str | None:
    """Why a thread's newest checkpoint has tasks due and nothing waits or failed: stopped before
    any of them ran, or in the middle of the step (some finished, the rest never did: what
    `get_state` then calls `next`). None where an interrupt or an error says it already."""
    if not snap.next or snap.interrupts or snap.errors:
        return None
    if stopped_before(snap):
        return STOPPED.format(nodes=", ".join(snap.next))
    done = [t.name for t in snap.tasks if t.result is not None]
    left = [t.name for t in snap.tasks if t.result is None and not t.interrupts and t.error is None]
    if done and left:
        return MID_STEP.format(done=", ".join(done), left=", ".join(left))
    return None


def value_text(value: object) -> str:
    """A value on one line: text as is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _scalar(value: Any) -> str | None:
    """`render.values.scalar`'s text (the same calls to `Limits`): `core.text.scalar_text`, a
    text shortened as Rich's path shortens it."""
    if isinstance(value, str):
        return Limits.shorten(value, Limits.text)
    return scalar_text(value)


def _leaf_line(label: str, value: Any) -> str:
    leaf = _scalar(value)
    if leaf is None:
        leaf = repr(value) if value in ([], {}) else summary(value)
    return f"{label}: {leaf}"


def branches(value: object) -> tuple[str, list[tuple[str, Any]]] | None:
    """A structured value's kind (`list[3]`, `dict[2]`, `set[2]`, `module.Class`) and its
    labelled children; None for a leaf or an empty list/dict."""
    if isinstance(value, list):
        return (f"list[{len(value)}]", [(f"[{i}]", v) for i, v in enumerate(value)]) if value else None
    if not isinstance(value, dict):
        return None
    if len(value) == 1:
        for tag in ("$set", "$frozenset"):
            if tag in value:
                return f"{tag[1:]}[{len(value[tag])}]", [("•", item) for item in value[tag]]
        if "$dict" in value:
            return "dict", [(summary(k), v) for k, v in value["$dict"]]
    if "$type" in value:
        inner = value.get("data", value.get("args", value.get("arg")))
        if isinstance(inner, dict):
            return value["$type"], [(str(k), v) for k, v in inner.items()]
        return value["$type"], [("args" if "args" in value else "arg", inner)]
    return (f"dict[{len(value)}]", [(str(k), v) for k, v in value.items()]) if value else None


def _add_tree(tree: PlainTree, label: str, value: Any, depth: int = 0) -> None:
    tagged = None if _scalar(value) is not None or depth > 12 else branches(value)
    if tagged is None:
        tree.add(PlainText(_leaf_line(label, value)))
        return
    kind, children = tagged
    _add_children(tree.add(PlainText(f"{label}  {kind}")), children, depth + 1)


def _add_children(tree: PlainTree, children: list[tuple[str, Any]], depth: int) -> None:
    window = Limits.window(len(children))
    for child_label, child in children[:window]:
        _add_tree(tree, child_label, child, depth)
    if window is not None:
        tree.add(PlainText(f"… {len(children) - window:,} more items ({Limits.hint} shows them)"))


def _value_tree(label: str, value: Any) -> PlainTree:
    leaf = _scalar(value)
    if leaf is None and value in ([], {}):
        leaf = repr(value)
    if leaf is not None:
        return PlainTree(PlainText(f"{label}: {leaf}"))
    root = PlainTree(PlainText(label))
    if isinstance(value, dict) and "$type" not in value and not (set(value) & {"$set", "$frozenset", "$dict"}):
        _add_children(root, [(str(k), v) for k, v in value.items()], 0)
    elif isinstance(value, list):
        _add_children(root, [(f"[{i}]", item) for i, item in enumerate(value)], 0)
    else:
        _add_tree(root, "value", value)
    return root


def _header(snap: Snapshot, newest: bool, then: str | None) -> PlainBox:
    rows = [
        ("thread", snap.thread_id + (f"  ns {snap.checkpoint_ns}" if snap.checkpoint_ns else "")),
        ("checkpoint", snap.checkpoint_id),
        ("step", f"{'?' if snap.step is None else snap.step}  {snap.source or ''}"),
        ("parent", snap.parent_checkpoint_id or "none"),
        ("created", snap.created_at or ""),
        (
            "next",
            ", ".join(snap.next)
            if snap.next
            else "? (the checkpoint could not be read)"
            if isinstance(snap.values, dict) and "$undecoded" in snap.values
            else "(done)",
        ),
    ]
    for i in snap.interrupts:
        rows.append(("interrupt", Limits.shorten(value_text(i.value), 300) + (f"  id {i.id}" if i.id else "")))
    for t in snap.errors:
        rows.append(("error", f"{t.name}: {Limits.shorten(str(error_text(t.error)), 300)}"))
    if then:
        rows.append(("then", then))
    stopped = stop_note(snap) if newest else None
    if stopped:
        rows.append(("stopped", stopped))
    rows.extend(("note", note) for note in snap.notes)
    if by := writer(snap.metadata, snap.created_at):
        rows.append(("writer", by))
    extra = {k: v for k, v in snap.metadata.items() if k not in ("source", "step", "parents", "writes")}
    if extra:
        rows.append(("metadata", Limits.shorten(json.dumps(extra, ensure_ascii=False, default=str), 200)))
    return PlainBox(PlainGrid([(PlainText(a), PlainText(b)) for a, b in rows], gap=2, right=True), "checkpoint")


def _content(data: dict[str, Any]) -> str:
    content = data.get("content")
    if isinstance(content, list):
        parts = [c.get("text", "") if isinstance(c, dict) else str(c) for c in content]
        return "\n".join(p for p in parts if p)
    return "" if content is None else str(content)


def _call(call: Any) -> PlainText:
    """`render.values.ToolCall` where it is one line (a call Rich would lay out again: Unplain)."""
    if isinstance(call, dict):
        try:
            args = json.dumps(call.get("args"), ensure_ascii=False, default=str)
        except (ValueError, RecursionError):
            args = summary(call.get("args"))
        cut = len(args) > 300 and not Limits.full  # (counted where its grid is laid out, as often as Rich)
        text = f"→ {call.get('name')}({Limits.shorten(args, 300, count=False)})"
    else:
        cut, text = False, f"→ {summary(call)}"
    line = PlainText(text)
    if len(line.lines) > 1 or line.widest > len(line.lines[0]):  # (wider than long: Rich lays it out again)
        raise Unplain
    line.widest = len(line.lines[0])  # (what Rich measures it by: its length)
    line.cut = int(cut)
    return line


def _message(m: Any) -> tuple[PlainText, Any]:
    if not is_message(m):
        return PlainText("?"), PlainText(summary(m))
    data = message_data(m)
    role = str(data.get("type", m["$type"].rsplit(".", 1)[-1]))
    label = {"human": "user", "ai": "assistant"}.get(role, role)
    if role == "tool":
        label = f"tool {data.get('name') or ''}".strip() + (" ✗" if data.get("status") == "error" else "")
    text = Limits.shorten(_content(data), Limits.message)
    raw = data.get("tool_calls")
    calls = [_call(c) for c in (raw if isinstance(raw, list) else [])]
    parts = [PlainText(text)] * bool(text.translate(DROPPED) or not calls) + calls  # (an empty text beside calls: none)
    return PlainText(label), parts[0] if len(parts) == 1 else PlainGroup(*parts)


def _count(messages: list[Any]) -> int:
    return messages.total if isinstance(messages, Tail) else len(messages)


def _transcript(messages: list[Any]) -> PlainGrid:
    count = _count(messages)
    window = Limits.window(count)
    skipped = 0 if window is None else count - window
    if isinstance(messages, Tail) and (window is None or window > len(messages)):
        messages = messages.whole()
    held = count - len(messages)
    rows: list[tuple[PlainText, Any]] = []
    if skipped:
        rows.append((PlainText("…"), PlainText(f"{skipped:,} earlier messages ({Limits.hint} shows them)")))
    rows.extend(_message(m) for m in messages[skipped - held :])
    return PlainGrid(rows, stack_below=STACK_BELOW)


def _todos(items: list[Any]) -> PlainGrid:
    rows = []
    window = Limits.window(len(items))
    for item in items[:window]:
        status = item.get("status") if isinstance(item, dict) else None
        content = item.get("content") if isinstance(item, dict) else summary(item)
        rows.append((PlainText(TODO_MARK.get(str(status), "•")), PlainText(str(content))))
    if window is not None:
        rows.append((PlainText("…"), PlainText(f"{len(items) - window:,} more ({Limits.hint} shows them)")))
    return PlainGrid(rows)


def _files(mapping: dict[str, Any]) -> PlainTree:
    root = PlainTree(PlainText("/"))
    nodes: dict[str, PlainTree] = {"": root}
    for path in sorted(mapping):
        parts = [p for p in path.split("/") if p]
        for depth in range(1, len(parts)):
            key = "/".join(parts[:depth])
            if key not in nodes:
                nodes[key] = nodes["/".join(parts[: depth - 1])].add(PlainText(parts[depth - 1] + "/"))
        data = mapping[path]
        content = data.get("content") if isinstance(data, dict) else data
        text = "\n".join(content) if isinstance(content, list) else str(content or "")
        lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        nodes["/".join(parts[:-1])].add(PlainText(f"{parts[-1] if parts else path}  {lines} lines, {len(text)} chars"))
    return root


def is_todos(value: object) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(t, dict) and "content" in t and "status" in t for t in value)
    )


def is_files(value: object) -> bool:
    return (
        isinstance(value, dict)
        and bool(value)
        and all(
            isinstance(k, str) and k.startswith("/") and isinstance(v, dict) and "content" in v
            for k, v in value.items()
        )
    )


def _value_block(key: str, value: Any, inferred: bool) -> Any:
    if isinstance(value, list) and value and all(is_message(m) for m in value):
        block: Any = PlainBox(_transcript(value), f"{key} ({_count(value)})")
    elif is_todos(value):
        block = PlainBox(_todos(value), f"{key} ({len(value)})")
    elif is_files(value):
        block = PlainBox(_files(value), f"{key} ({len(value)} files)")
    else:
        block = _value_tree(key, value)
    if not inferred:
        return block
    note = "  (inferred: a reducer's empty value, no write yet)"
    if isinstance(block, PlainTree) and not block.children:
        block.label = PlainText("\n".join(block.label.lines) + note)
        return block
    return PlainGroup(block, PlainText(note))


def show_text(snap: Snapshot, key: str | None = None, newest: bool = False, then: str | None = None) -> str | None:
    """`render.state.snapshot_view` as a pipe gets it: its lines, each ending in a newline,
    escaped and trimmed; None where Rich must lay it out (what it shortened then not counted)."""
    cut = Limits.cut
    try:
        view = _view(snap, key, newest, then)
        lines = lines_of(view, 1 << 16)
    except Unplain:
        Limits.cut = cut
        return None
    return "".join(escape(line).rstrip(" ") + "\n" for line in lines)


def _view(snap: Snapshot, key: str | None, newest: bool, then: str | None) -> PlainGroup:
    values = snap.values
    head = _header(snap, newest, then)
    if not isinstance(values, dict):
        return PlainGroup(head, _value_tree("return value", values))
    if key is not None:
        return PlainGroup(head, _value_block(key, values[key], key in snap.inferred))
    blocks = [_value_block(k, v, k in snap.inferred) for k, v in values.items()]
    return PlainGroup(head, *(blocks or [PlainText("(no state values at this checkpoint)")]))
