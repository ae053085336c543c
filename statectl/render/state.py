"""`statectl show`: a checkpoint's header, then its values (transcript, todos, files, trees)."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from rich.tree import Tree

from statectl.codec.arrays import Tail
from statectl.core.js import error_text
from statectl.core.reducers import is_message
from statectl.model import Snapshot
from statectl.render import Limits
from statectl.render.grid import Box, LabelGrid
from statectl.render.pipe import writer
from statectl.render.pipe_show import STACK_BELOW, is_files, is_todos, stop_note, value_text
from statectl.render.values import message_parts, summary, value_tree

TODO_MARK = {"completed": ("☑", "green"), "in_progress": ("◐", "yellow"), "pending": ("☐", "white")}


def header(snap: Snapshot, newest: bool = False, then: str | None = None) -> RenderableType:
    """The checkpoint's facts; `newest`: it is its thread's newest (where a stop is news);
    `then`: what happened after its interrupt or error (core.afterwards), where the
    thread went on from it."""
    # Every value from the data is a Text: a plain str in a Rich cell would be read as markup.
    rows = [
        ("thread", Text(snap.thread_id + (f"  ns {snap.checkpoint_ns}" if snap.checkpoint_ns else ""))),
        ("checkpoint", Text(snap.checkpoint_id)),
        ("step", Text.assemble("?" if snap.step is None else str(snap.step), "  ", (snap.source or "", "bold"))),
        ("parent", Text(snap.parent_checkpoint_id) if snap.parent_checkpoint_id else Text("none", style="dim")),
        ("created", Text(snap.created_at or "")),
        (
            "next",
            Text(", ".join(snap.next), style="bold")
            if snap.next
            else Text("? (the checkpoint could not be read)", style="bold red")
            if _unread(snap)
            else Text("(done)", style="dim"),
        ),
    ]
    labelled = [(Text(label), value) for label, value in rows]
    for i in snap.interrupts:  # the id is what Command(resume={id: answer}) needs when several wait
        value = Text.assemble(
            (Limits.shorten(value_text(i.value), 300), "yellow"), (f"  id {i.id}" if i.id else "", "dim")
        )
        labelled.append((Text("interrupt", style="bold yellow"), value))
    for t in snap.errors:
        labelled.append(
            (
                Text("error", style="bold red"),
                Text(f"{t.name}: {Limits.shorten(str(error_text(t.error)), 300)}", style="red"),
            )
        )
    if then:  # not "waiting": the thread went on from here
        labelled.append((Text("then", style="bold"), Text(then)))
    stopped = stop_note(snap) if newest else None
    if stopped:
        labelled.append((Text("stopped", style="bold yellow"), Text(stopped, style="yellow")))
    for note in snap.notes:
        labelled.append((Text("note", style="yellow"), Text(note)))
    if by := writer(snap.metadata, snap.created_at):
        labelled.append((Text("writer"), Text(by)))
    extra = {k: v for k, v in snap.metadata.items() if k not in ("source", "step", "parents", "writes")}
    if extra:
        labelled.append(
            (
                Text("metadata"),
                Text(Limits.shorten(json.dumps(extra, ensure_ascii=False, default=str), 200), style="dim"),
            )
        )
    grid = LabelGrid(labelled, gap=2, justify="right", label_style="dim")
    style = "red" if snap.errors else "yellow" if snap.interrupts or stopped else "blue"
    return Box(grid, title=Text("checkpoint"), title_align="left", border_style=style)


def _count(messages: list[Any]) -> int:
    """Messages in a transcript: a `codec.arrays.Tail` holds the newest of them, `total` in all."""
    return messages.total if isinstance(messages, Tail) else len(messages)


def transcript(messages: list[Any]) -> RenderableType:
    """Messages as a chat transcript, with tool calls and tool results (the newest
    `Limits.items` of a long one)."""
    count = _count(messages)
    shown = Limits.window(count)
    skipped = 0 if shown is None else count - shown
    if isinstance(messages, Tail) and (shown is None or shown > len(messages)):
        messages = messages.whole()  # (its newest are not all it shows)
    held = count - len(messages)  # (a Tail: the earlier messages it did not decode)
    rows: list[tuple[Text, RenderableType]] = []
    if skipped:
        rows.append(
            (Text("…", style="dim"), Text(f"{skipped:,} earlier messages ({Limits.hint} shows them)", style="dim"))
        )
    for m in messages[skipped - held :]:
        label, text, calls = message_parts(m)
        parts = [text] * bool(text.plain or not calls) + calls  # (an empty text beside calls: none)
        rows.append((label, parts[0] if len(parts) == 1 else Group(*parts)))
    return LabelGrid(rows, stack_below=STACK_BELOW)


def todos(items: list[Any]) -> RenderableType:
    rows = []
    shown = Limits.window(len(items))
    for item in items[:shown]:
        status = item.get("status") if isinstance(item, dict) else None
        mark, style = TODO_MARK.get(str(status), ("•", "white"))
        content = item.get("content") if isinstance(item, dict) else summary(item)
        rows.append((Text(mark, style=style), Text(str(content), style="dim" if status == "completed" else "")))
    if shown is not None:
        more = f"{len(items) - shown:,} more ({Limits.hint} shows them)"
        rows.append((Text("…", style="dim"), Text(more, style="dim")))
    return LabelGrid(rows)


def files(mapping: dict[str, Any]) -> RenderableType:
    """deepagents' virtual file system as a tree with line counts."""
    root = Tree(Text("/", style="bold"), guide_style="dim")
    nodes: dict[str, Tree] = {"": root}
    for path in sorted(mapping):
        parts = [p for p in path.split("/") if p]
        for depth in range(1, len(parts)):
            key = "/".join(parts[:depth])
            if key not in nodes:
                nodes[key] = nodes["/".join(parts[: depth - 1])].add(Text(parts[depth - 1] + "/", style="bold blue"))
        data = mapping[path]
        content = data.get("content") if isinstance(data, dict) else data
        text = "\n".join(content) if isinstance(content, list) else str(content or "")
        lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        nodes["/".join(parts[:-1])].add(
            Text.assemble((parts[-1] if parts else path, "bold"), (f"  {lines} lines, {len(text)} chars", "dim"))
        )
    return root


def special_view(value: Any) -> tuple[str, RenderableType] | None:
    """A transcript, todo list or file tree for a value that is one, with its count label;
    None for anything else (shown as a value tree)."""
    if isinstance(value, list) and value and all(is_message(m) for m in value):
        return f"{_count(value)}", transcript(value)
    if is_todos(value):
        return f"{len(value)}", todos(value)
    if is_files(value):
        return f"{len(value)} files", files(value)
    return None


def value_block(key: str, value: Any) -> RenderableType:
    """One state key, in the view that suits it best."""
    special = special_view(value)
    if special is None:
        return value_tree(key, value)
    count, body = special
    return Box(body, title=Text(f"{key} ({count})"), title_align="left", border_style="dim")


def inferred_note() -> Text:
    """What stands beside a value statectl inferred, not read (a reducer's empty value before its
    first write): never shown as a fact."""
    return Text("  (inferred: a reducer's empty value, no write yet)", style="dim italic")


def _inferred(block: RenderableType) -> RenderableType:
    note = inferred_note()
    if isinstance(block, Tree) and isinstance(block.label, Text) and not block.children:
        block.label = Text.assemble(block.label, note)
        return block
    return Group(block, note)


def snapshot_view(
    snap: Snapshot, key: str | None = None, newest: bool = False, then: str | None = None
) -> RenderableType:
    """The full `show` view of a snapshot, or one key of it (`newest`, `then`: see `header`)."""
    values = snap.values
    head = header(snap, newest, then)
    if not isinstance(values, dict):
        return Group(head, value_tree("return value", values))
    if key is not None:
        block = value_block(key, values[key])
        return Group(head, _inferred(block) if key in snap.inferred else block)
    blocks = [_inferred(value_block(k, v)) if k in snap.inferred else value_block(k, v) for k, v in values.items()]
    if not blocks:
        blocks = [Text("(no state values at this checkpoint)", style="dim")]
    return Group(head, *blocks)


def _unread(snap: Any) -> bool:
    """Is the whole checkpoint unread (a pickle, encrypted without its key)? Then next is unknown."""
    return isinstance(snap.values, dict) and "$undecoded" in snap.values
