"""`statectl store`: the namespace tree, a namespace's items, one item's value (as `show`
renders state: transcripts, file trees, value trees, long values folded), grep's matches."""

from __future__ import annotations

from typing import Any, NamedTuple

from rich.console import Group, RenderableType
from rich.text import Text

from statectl.core.memory import Node, file_text, files_of, is_file_value
from statectl.render import Limits
from statectl.render.columns import COUNT, ID, TEXT, TIME, Col, PlainTable
from statectl.render.grid import Box, LabelGrid
from statectl.render.pipe import one_line, when
from statectl.sources.memory.base import MemoryItem, NamespaceInfo, ns_text


def human_bytes(n: int | None) -> str:
    from statectl.render.size import human_bytes as shown  # (imported where a table needs it)

    return shown(n)


ROLES = {"human": "HumanMessage", "ai": "AIMessage", "tool": "ToolMessage", "system": "SystemMessage"}


def tagged_messages(value: Any) -> Any:
    """A list of LangChain messages kept as plain dicts (`{"type": "human", "content": ...}`, as
    `model_dump` or an app writes them) in the form `show`'s transcript reads; anything else as is."""
    if (
        isinstance(value, list)
        and value
        and all(isinstance(m, dict) and m.get("type") in ROLES and "content" in m for m in value)
    ):
        return [{"$type": f"langchain_core.messages.{ROLES[m['type']]}", "data": m} for m in value]
    return value


def escaped(value: Any, depth: int = 0) -> Any:
    """A value with the control characters of its texts (and keys) written out: Rich's Text drops
    some of them silently (a bell, a backspace) before the console could show them escaped."""
    from statectl.escape import CONTROLS, escape

    if isinstance(value, str):
        return escape(value) if CONTROLS.search(value) else value
    if depth > 200:
        return value
    if isinstance(value, dict):
        return {escaped(k, depth + 1): escaped(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [escaped(v, depth + 1) for v in value]
    return value


def _expires(item: MemoryItem | NamespaceInfo, now: str) -> Text:
    at = getattr(item, "expires_at", None)
    if not at:
        return Text("")
    return Text(when(at) + (" (expired)" if at < now else ""), style="red" if at < now else "")


EMPTY = "()"
"""The empty namespace, as shown (and as typed)."""


def shown(text: str) -> str:
    """A key or namespace on one line, every control character written out (a newline as `\\n`,
    a bell as `\\x07`): Rich drops some silently and a newline would forge a row."""
    from statectl.escape import escape

    return escape(text).replace("\n", "\\n").replace("\t", "\\t")


def tree_view(root: Node, label: str) -> PlainTable:
    """Every namespace, indented under its parent label; counts of its own items, and (dim) the
    totals of a label that holds none itself. Namespaces are whole: never shortened."""
    total, spaces = root.items, root.namespaces
    title = f"{total:,} item{'s' * (total != 1)} in {spaces:,} namespace{'s' * (spaces != 1)} in {label}"
    table = PlainTable(
        title,
        [
            Col("namespace", ID),
            Col("items", COUNT, right=True),
            Col("bytes", COUNT, right=True),
            Col("expiring", COUNT, right=True),
            Col("newest (UTC)", TIME),
        ],
    )
    for node, depth in _walk(root, more=True):
        if isinstance(node, _More):  # (namespaces past the tree's bounds, counted)
            many = f"{node.spaces:,} more namespace{'s' * (node.spaces != 1)}"
            table.add_row(
                Text("  " * depth + f"… {many} (statectl store ls {node.prefix})", style="dim"),
                Text(f"({node.items:,})", style="dim"),
                "",
                "",
                "",
            )
            continue
        own = node.own
        name = "  " * depth + (shown(ns_text(node.namespace)) or EMPTY)
        if own is None:  # (a label only: its namespaces' totals)
            table.add_row(
                Text(name + "/", style="bold blue"),
                Text(f"({node.items:,})", style="dim"),
                Text(human_bytes(node.bytes), style="dim"),
                Text(str(node.expiring or ""), style="dim"),
                Text(when(node.newest), style="dim"),
            )
        else:
            table.add_row(
                Text(name, style="bold"),
                f"{own.items:,}",
                human_bytes(own.bytes),
                str(own.expiring or ""),
                when(own.newest),
            )
    return table


class _More(NamedTuple):
    """A row saying how many namespaces under a label the tree does not hold."""

    spaces: int
    items: int
    prefix: str


def _walk(node: Node, depth: int = 0, more: bool = False) -> Any:
    """The namespaces in order, each with its depth; the empty namespace `()` first where it holds
    items (LangGraph's InMemoryStore keeps what a PutOp put there: `search(())` returns them).
    `more`: after a label's children, a `_More` where the tree does not hold all under it."""
    if depth == 0 and node.own is not None:
        yield node, 0
    for label in sorted(node.children):
        child = node.children[label]
        yield child, depth
        yield from _walk(child, depth + 1, more)
    if more and node.hidden:
        yield _More(node.hidden, node.hidden_items, shown(ns_text(node.namespace)) or EMPTY), depth


def items_table(
    items: list[MemoryItem],
    namespace: str,
    label: str,
    more: bool,
    now: str,
    children: list[NamespaceInfo],
    children_more: int = 0,
) -> RenderableType:
    """A namespace's items: key, updated, size, expiry, the value's beginning."""
    title = f"{len(items):,} item{'s' * (len(items) != 1)} in namespace {shown(namespace)} in {label}"
    if more:
        title += f" (next page: --after {shown(items[-1].key)}; all: --limit 0)"
    table = PlainTable(
        title,
        [
            Col("key", ID),
            Col("updated (UTC)", TIME),
            Col("size", COUNT, right=True),
            Col("expires (UTC)", TIME),
            Col("value", TEXT),
        ],
    )
    for i in items:
        table.add_row(
            Text(shown(i.key), style="bold"),
            when(i.updated_at),
            human_bytes(i.size),
            _expires(i, now),
            Text(one_line(i.preview or "", 100), style="dim"),
        )
    if not children:
        return table
    return Group(table, Text(""), namespaces_under(children, namespace, children_more))


def namespaces_under(children: list[NamespaceInfo], namespace: str, more: int = 0) -> PlainTable:
    """The namespaces under a prefix (the first ones; `more`: how many past them, counted)."""
    total = len(children) + more
    table = PlainTable(
        f"{total:,} namespace{'s' * (total != 1)} under {shown(namespace) or 'the root'}",
        [Col("namespace", ID), Col("items", COUNT, right=True), Col("bytes", COUNT, right=True)],
    )
    for c in children:
        table.add_row(Text(shown(ns_text(c.namespace)), style="bold"), f"{c.items:,}", human_bytes(c.bytes))
    if more:
        table.add_row(Text(f"… {more:,} more (statectl store --json lists every one)", style="dim"), "", "")
    return table


def files_view(items: list[MemoryItem], namespace: str) -> RenderableType:
    """A namespace a deepagents `StoreBackend` wrote: its files as deepagents shows them."""
    from statectl.render.state import files

    mapping = files_of(items) or {}
    return Box(
        files(mapping),
        title=Text(f"{namespace}: {len(mapping)} files (deepagents StoreBackend)"),
        title_align="left",
        border_style="dim",
    )


def item_view(item: MemoryItem, now: str) -> RenderableType:
    """One item: where it is, its times and index fields, then its value as `show` renders a
    state (each top-level key in the view that suits it)."""
    from statectl.render.state import value_block

    rows: list[tuple[Text, Any]] = [
        (Text("namespace", style="dim"), Text(shown(ns_text(item.namespace)) or EMPTY, style="bold")),
        (Text("key", style="dim"), Text(shown(item.key), style="bold")),
        (Text("created", style="dim"), Text(when(item.created_at) + " UTC" * bool(item.created_at))),
        (Text("updated", style="dim"), Text(when(item.updated_at) + " UTC" * bool(item.updated_at))),
    ]
    if item.expires_at:
        ttl = f" (ttl {item.ttl_minutes:g} min)" if item.ttl_minutes is not None else ""
        rows.append((Text("expires", style="dim"), Text.assemble(_expires(item, now), ttl)))
    rows.append((Text("size", style="dim"), Text(human_bytes(item.size))))
    if item.vectors:
        fields = ", ".join(f"{f} ({d} dims)" for f, d in item.vectors)
        rows.append((Text("indexed", style="dim"), Text(f"{len(item.vectors)} field(s): {fields}")))
    parts: list[RenderableType] = [LabelGrid(rows), Text("")]
    if item.error is not None:
        parts.append(Text(f"value does not decode: {item.error}", style="bold red"))
    elif is_file_value(item.value):
        text = escaped(Limits.shorten(file_text(item.value), Limits.text * 10))
        parts.append(
            Box(Text(text), title=Text(f"{shown(item.key)} (deepagents file)"), title_align="left", border_style="dim")
        )
    elif isinstance(item.value, dict):
        parts += [value_block(str(k), tagged_messages(v)) for k, v in escaped(item.value).items()]
    else:
        parts.append(value_block("value", tagged_messages(escaped(item.value))))
    return Group(*parts)


def grep_table(items: list[MemoryItem], label: str, what: str, more: bool) -> PlainTable:
    title = f"{len(items):,} item{'s' * (len(items) != 1)} matching {what} in {label}"
    if more:
        title += " (more: --limit N or --limit 0)"
    table = PlainTable(
        title,
        [Col("namespace", ID), Col("key", ID), Col("updated (UTC)", TIME), Col("value", TEXT)],
    )
    from statectl.sources.memory.base import json_text

    for i in items:
        table.add_row(
            Text(shown(ns_text(i.namespace)) or EMPTY, style="bold"),
            Text(shown(i.key)),
            when(i.updated_at),
            Text(one_line(json_text(i.value), 100), style="dim"),
        )
    return table


def size_view(data: dict[str, Any]) -> RenderableType:
    """`size`: the long-term memory store apart from the checkpoints."""
    title = Text.assemble(
        ("long-term memory store", "bold"),
        f"  {data['items']:,} item{'s' * (data['items'] != 1)} in {data['namespaces']:,} "
        f"namespace{'s' * (data['namespaces'] != 1)}, {human_bytes(data['value_bytes'])} of values",
        f", {data['expiring']:,} with a TTL" * bool(data["expiring"]),
    )
    parts: list[RenderableType] = [Text(""), title]
    if "vectors" in data:
        v = data["vectors"]
        dims = "/".join(str(d) for d in v["dims"]) or "-"
        parts.append(Text(f"vector index: {v['count']:,} vectors, {human_bytes(v['bytes'])}, {dims} dimensions"))
    for name, size in data.get("files", {}).items():
        parts.append(Text(f"{name}: {human_bytes(size)}"))
    if data["largest"]:
        table = PlainTable(
            "largest namespaces",
            [Col("namespace", ID), Col("items", COUNT, right=True), Col("bytes", COUNT, right=True)],
        )
        for n in data["largest"]:
            table.add_row(
                Text(shown(".".join(n["namespace"])), style="bold"), f"{n['items']:,}", human_bytes(n["bytes"])
            )
        parts.append(table)
    return Group(*parts)


def store_routes_view(routes: list[Any]) -> Text:
    """`show` on a deepagents thread: its paths kept in the store, by route and namespace."""
    from statectl.escape import escape

    out = Text()
    for r in routes:
        ns = shown(ns_text(r.namespace))
        out.append(f"files in the store: {escape(r.route)} → namespace {ns}", style="bold")
        out.append(f" (statectl store ls {ns})\n", style="dim")
        for path in r.paths:
            out.append(f"  {escape(path)}\n")
    out.rstrip()
    return out
