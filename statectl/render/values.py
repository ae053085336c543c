"""Decoded (tagged) values as Rich trees and one-line summaries."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from rich.tree import Tree

from statectl.core.reducers import is_message, message_data
from statectl.core.text import bytes_text, summary, type_call
from statectl.render import Limits
from statectl.render.pipe_show import branches

__all__ = ["ROLE_STYLE", "branches", "scalar", "summary"]

ROLE_STYLE = {
    "human": "bold green",
    "ai": "bold cyan",
    "tool": "bold magenta",
    "system": "bold white",
    "remove": "bold red",
}


def scalar(value: Any) -> Text | None:
    """A leaf value as styled text, or None if it has structure to show as a tree."""
    if value is None:
        return Text("None", style="dim italic")
    if isinstance(value, bool):
        return Text(str(value).lower(), style="magenta")
    if isinstance(value, (int, float)):
        return Text(repr(value), style="cyan")
    if isinstance(value, str):
        return Text(Limits.shorten(value, Limits.text), style="green")
    if isinstance(value, dict) and len(value) == 1:
        ((tag, inner),) = value.items()
        if tag in ("$datetime", "$date", "$uuid", "$decimal", "$float"):
            return Text.assemble((str(inner), "yellow"), (f"  {tag[1:]}", "dim"))
        if tag == "$bytes":
            return Text(bytes_text(inner), style="yellow")
        if tag == "$undecoded":
            from statectl.codec.decode import undecoded_text

            return Text(f"<{undecoded_text(inner)}>", style="bold red")
    if call := type_call(value):
        name, shown = call
        return Text.assemble((name, "bold"), (shown, "yellow"))
    return None


def leaf_line(label: str, value: Any) -> Text:
    """`label: value` for a value shown on one line (a scalar, an empty collection, or one
    nested too deep)."""
    key = Text(label, style="bold")
    leaf = scalar(value)
    if leaf is None:
        leaf = Text(repr(value), style="dim") if value in ([], {}) else Text(summary(value))
    return Text.assemble(key, ": ", leaf)


def add_tree(tree: Tree, label: str, value: Any, depth: int = 0) -> None:
    """Add `label: value` under `tree`, recursing into structure."""
    tagged = None if scalar(value) is not None or depth > 12 else branches(value)
    if tagged is None:
        tree.add(leaf_line(label, value))
        return
    kind, children = tagged
    branch = tree.add(Text.assemble(Text(label, style="bold"), ("  " + kind, "dim")))
    _add_children(branch, children, depth + 1)


def _add_children(tree: Tree, children: list[tuple[str, Any]], depth: int) -> None:
    shown = Limits.window(len(children))
    for child_label, child in children[:shown]:
        add_tree(tree, child_label, child, depth)
    if shown is not None:
        tree.add(Text(f"… {len(children) - shown:,} more items ({Limits.hint} shows them)", style="dim"))


def value_tree(label: str, value: Any) -> Tree:
    """A whole value as a tree rooted at `label`."""
    root = Tree(Text(label, style="bold"), guide_style="dim")
    leaf = scalar(value)
    if leaf is None and value in ([], {}):
        leaf = Text(repr(value), style="dim")
    if leaf is not None:
        root.label = Text.assemble(Text(label, style="bold"), ": ", leaf)
        return root
    if isinstance(value, dict) and "$type" not in value and not (set(value) & {"$set", "$frozenset", "$dict"}):
        _add_children(root, [(str(k), v) for k, v in value.items()], 0)
    elif isinstance(value, list):
        _add_children(root, [(f"[{i}]", item) for i, item in enumerate(value)], 0)
    else:
        add_tree(root, "value", value)
    return root


def _content(data: dict[str, Any]) -> str:
    content = data.get("content")
    if isinstance(content, list):
        parts = [c.get("text", "") if isinstance(c, dict) else str(c) for c in content]
        return "\n".join(p for p in parts if p)
    return "" if content is None else str(content)


def message_row(m: Any, limit: int | None = None) -> tuple[Text, Text]:
    """One message as (role label, content with its tool calls, each on one line)."""
    label, text, calls = message_parts(m, limit)
    for call in calls:
        text.append("\n")
        text.append_text(call.line())
    return label, text


def message_parts(m: Any, limit: int | None = None) -> tuple[Text, Text, list[ToolCall]]:
    """One message as (role label, content, its tool calls)."""
    if not is_message(m):
        return Text("?", style="dim"), Text(summary(m)), []
    data = message_data(m)
    role = str(data.get("type", m["$type"].rsplit(".", 1)[-1]))
    label = {"human": "user", "ai": "assistant"}.get(role, role)
    if role == "tool":
        label = f"tool {data.get('name') or ''}".strip() + (" ✗" if data.get("status") == "error" else "")
    text = Text(Limits.shorten(_content(data), limit or Limits.message))
    calls = data.get("tool_calls")
    style = "bold red" if data.get("status") == "error" else ROLE_STYLE.get(role, "bold")
    return Text(label, style=style), text, [ToolCall(c) for c in (calls if isinstance(calls, list) else [])]


class ToolCall:
    """`→ name(args)`: on one line where it fits, else its arguments as indented JSON."""

    STYLE = "yellow"

    def __init__(self, call: Any) -> None:
        self.call = call

    def _args(self, indent: int | None) -> str:
        try:
            return json.dumps(self.call.get("args"), ensure_ascii=False, default=str, indent=indent)
        except (ValueError, RecursionError):
            return summary(self.call.get("args"))

    def line(self) -> Text:
        if not isinstance(self.call, dict):  # (not what LangChain writes: shown as it is)
            return Text(f"→ {summary(self.call)}", style=self.STYLE)
        return Text(f"→ {self.call.get('name')}({Limits.shorten(self._args(None), 300)})", style=self.STYLE)

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.cells import cell_len

        one = self.line()
        args = self.call.get("args") if isinstance(self.call, dict) else None
        if cell_len(one.plain) <= options.max_width or not isinstance(args, (dict, list)) or not args:
            yield one
            return
        head = f"→ {self.call.get('name')}("
        try:
            body = fit_json(args, options.max_width - 2)
        except (ValueError, RecursionError):
            body = self._args(None)
        yield Text(head + Limits.shorten(body, 1200) + ")", style=self.STYLE)

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        return Measurement(min(20, options.max_width), min(len(self.line().plain), options.max_width))


def fit_json(value: Any, width: int) -> str:
    """JSON that breaks only where it does not fit in `width`: each list or object on one
    line if it fits, else one item per line, indented by two (like a code formatter)."""
    one = json.dumps(value, ensure_ascii=False, default=str)
    if len(one) <= width or not isinstance(value, (dict, list)) or not value:
        return one
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            key = json.dumps(str(k), ensure_ascii=False) + ": "
            items.append(key + fit_json(v, width - 2 - len(key)))
        open_, close = "{", "}"
    else:
        items = [fit_json(v, width - 2) for v in value]
        open_, close = "[", "]"
    body = ",\n".join("\n".join("  " + line for line in item.split("\n")) for item in items)
    return f"{open_}\n{body}\n{close}"
