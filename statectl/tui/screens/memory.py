"""`m`: the long-term memory store beside the checkpoints (LangGraph's `BaseStore`): its
namespaces as a tree, a namespace's items, and the selected item's value as `store get`
renders it. Esc goes back a pane, then to the screen it came from."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, NamedTuple

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Static

from statectl.escape import escape
from statectl.render.safe import safe_text
from statectl.tui.screens import AppScreen
from statectl.tui.widgets.rows import Rows

if TYPE_CHECKING:
    from rich.console import RenderableType

    from statectl.core.memory import Node
    from statectl.sources.memory.base import MemoryItem

PAGE = 200
"""Items listed at a time for a namespace (the listing reads previews, never whole values)."""


class StoreOpened(Message):
    def __init__(self, label: str, root: Node | None, error: str | None = None) -> None:
        super().__init__()
        self.label, self.root, self.error = label, root, error


class ItemsRead(Message):
    def __init__(self, namespace: tuple[str, ...], items: list[Any], more: bool) -> None:
        super().__init__()
        self.listed, self.items, self.more = namespace, items, more


class ValueRead(Message):
    def __init__(self, item: MemoryItem, view: RenderableType) -> None:
        super().__init__()
        self.item, self.view = item, view


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


class MemoryScreen(AppScreen):
    """Namespaces (left, top), the selected namespace's items (left, bottom), the selected
    item's value (right). The store is opened from what the app opened (read-only)."""

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("tab", "next_pane", "Next pane", show=False),
        Binding("r", "reload", "Reload"),
        Binding("j,down", "scroll_value('down')", show=False),
        Binding("k,up", "scroll_value('up')", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.memory: Any = None
        self.namespaces: list[Any] = []
        self.items: list[Any] = []
        self.shown: tuple[str, ...] | None = None
        """The namespace whose items are listed."""

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="mem-body"):
            with Vertical(id="mem-left"):
                yield Rows({"ns": "NAMESPACE", "items": "ITEMS"}, id="mem-ns")
                yield Rows({"key": "KEY", "size": "SIZE", "updated": "UPDATED"}, id="mem-items")
            with VerticalScroll(id="mem-right"):
                yield Static(id="mem-value")
        yield Static(id="mem-status")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.title = "memory store"
        self._status(Text("reading the store …", style="dim"))
        self.query_one("#mem-ns", Rows).focus()
        self.open_store()

    def on_unmount(self) -> None:
        with self.app.db_lock:
            memory, self.memory = self.memory, None
        if memory is not None:
            memory.close()

    def _status(self, text: Text) -> None:
        self.query_one("#mem-status", Static).update(safe_text(text))

    # -- reading (worker threads; one reader at a time, as the app's other reads) ----------------
    @work(thread=True, exclusive=True, group="memory")
    def open_store(self) -> None:
        def read() -> StoreOpened:
            from statectl.sources.memory import open_memory
            from statectl.sources.memory.base import NoStore

            spec = self.app.db_spec or self.app.store.label
            if self.memory is not None:
                self.memory.close()
                self.memory = None
            try:
                memory = open_memory(spec)
            except NoStore as exc:
                return StoreOpened(spec, None, str(exc))
            self.memory = memory
            from statectl.core.memory import tree

            # (read a namespace at a time into the bounded tree: flat however many there are)
            return StoreOpened(memory.label, tree(memory.each_namespace()))

        got = self.app.read(self, "the memory store", read)
        if got is not None:
            self.post_message(got)

    @work(thread=True, exclusive=True, group="memory-items")
    def read_items(self, namespace: tuple[str, ...]) -> None:
        def read() -> ItemsRead | None:
            if self.memory is None:
                return None
            items = self.memory.items(namespace, PAGE + 1)
            return ItemsRead(namespace, items[:PAGE], len(items) > PAGE)

        got = self.app.read(self, "the namespace's items", read)
        if got is not None:
            self.post_message(got)

    @work(thread=True, exclusive=True, group="memory-value")
    def read_value(self, namespace: tuple[str, ...], key: str) -> None:
        def read() -> ValueRead | None:
            from statectl.render.memory import item_view

            if self.memory is None:
                return None
            item = self.memory.item(namespace, key)
            return None if item is None else ValueRead(item, item_view(item, _now()))

        got = self.app.read(self, "the item", read)
        if got is not None:
            self.post_message(got)

    # -- showing ---------------------------------------------------------------------------------
    def on_store_opened(self, message: StoreOpened) -> None:
        table = self.query_one("#mem-ns", Rows)
        table.clear()
        self.namespaces = []
        if message.error is not None or message.root is None:
            message.error = message.error or "no store"
            self._status(Text(escape(message.error), style="bold"))
            self.query_one("#mem-value", Static).update(safe_text(Text(f"{message.error}\n\nEsc: back", style="dim")))
            return
        from statectl.render.memory import shown
        from statectl.sources.memory.base import ns_text

        root = message.root
        for node, depth in _walk(root):
            if isinstance(node, _More):  # (past the tree's bound: no key, nothing to select)
                under = node.under
                prefix = shown(ns_text(under.namespace)) or "()"
                more = f"… {under.hidden:,} more namespaces (statectl store ls {prefix})"
                table.add_row(Text("  " * depth + more, style="dim"), Text(f"({under.hidden_items})", style="dim"))
                continue
            label = Text("  " * depth + (shown(ns_text(node.namespace)) or "()") + ("/" if node.children else ""))
            own = node.own.items if node.own is not None else 0
            count = Text(str(own) if node.own is not None else f"({node.items})", style="" if own else "dim")
            table.add_row(label, count, key=str(len(self.namespaces)))
            self.namespaces.append(node)
        self._status(Text(f"{root.items:,} items in {root.namespaces:,} namespaces in {message.label}"))
        if not root.namespaces:
            self.query_one("#mem-value", Static).update(Text("the store holds no items", style="dim"))

    @on(DataTable.RowHighlighted, "#mem-ns")
    def _namespace_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is None:
            return
        node = self.namespaces[int(event.row_key.value)]
        if node.own is None:
            self.shown = None
            self.query_one("#mem-items", Rows).clear()
            self.query_one("#mem-value", Static).update(
                Text(f"{node.items} items in the namespaces under it", style="dim")
            )
            return
        if node.namespace != self.shown:
            self.shown = node.namespace
            self.read_items(node.namespace)

    def on_items_read(self, message: ItemsRead) -> None:
        if message.listed != self.shown:
            return
        from statectl.render.memory import human_bytes, shown, when

        table = self.query_one("#mem-items", Rows)
        table.clear()
        self.items = message.items
        for n, item in enumerate(message.items):
            table.add_row(Text(shown(item.key)), Text(human_bytes(item.size)), Text(when(item.updated_at)), key=str(n))
        if message.more:
            table.add_row(Text(f"… first {PAGE} keys (statectl store ls --after)", style="dim"), "", "")
        if message.items:
            self.read_value(message.listed, message.items[0].key)

    @on(DataTable.RowHighlighted, "#mem-items")
    def _item_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is None or self.shown is None:
            return
        try:
            item = self.items[int(event.row_key.value)]
        except (ValueError, IndexError):
            return
        self.read_value(self.shown, item.key)

    def on_value_read(self, message: ValueRead) -> None:
        if message.item.namespace != self.shown:
            return
        self.query_one("#mem-value", Static).update(message.view)
        self.query_one("#mem-right", VerticalScroll).scroll_home(animate=False)

    # -- keys ------------------------------------------------------------------------------------
    @on(DataTable.RowSelected, "#mem-ns")
    def _namespace_selected(self, event: DataTable.RowSelected) -> None:
        if self.shown is not None:
            self.query_one("#mem-items", Rows).focus()

    @on(DataTable.RowSelected, "#mem-items")
    def _item_selected(self, event: DataTable.RowSelected) -> None:
        self.query_one("#mem-right", VerticalScroll).focus()

    def action_back(self) -> None:
        right = self.query_one("#mem-right", VerticalScroll)
        items = self.query_one("#mem-items", Rows)
        if self.focused is right:
            items.focus()
        elif self.focused is items:
            self.query_one("#mem-ns", Rows).focus()
        else:
            self.app.pop_screen()

    def action_next_pane(self) -> None:
        order = [self.query_one("#mem-ns"), self.query_one("#mem-items"), self.query_one("#mem-right")]
        at = order.index(self.focused) if self.focused in order else -1
        order[(at + 1) % len(order)].focus()

    def action_scroll_value(self, where: str) -> None:
        box = self.query_one("#mem-right", VerticalScroll)
        if self.focused is box:
            box.scroll_down(animate=False) if where == "down" else box.scroll_up(animate=False)

    def action_reload(self) -> None:
        self.shown = None
        self.query_one("#mem-items", Rows).clear()
        self.open_store()


class _More(NamedTuple):
    """The row counting the namespaces under a label that the bounded tree does not hold."""

    under: Node


def _walk(node: Any, depth: int = 0) -> Any:
    """The tree's nodes in order, each with its depth (the root itself left out unless it holds
    items: the empty namespace `()`)."""
    if depth == 0 and node.own is not None:
        yield node, 0
    for label in sorted(node.children):
        child = node.children[label]
        yield child, depth
        yield from _walk(child, depth + 1)
    if node.hidden:  # (namespaces under it the bounded tree does not hold: one row counts them)
        yield _More(node), depth
