"""`g` on the thread screen: the graph drawn in the terminal, with the thread's path, the nodes
that ran at the selected step and what comes next; from the app's graph (`--graph`) or inferred
from the thread's history."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import ScrollableContainer
from textual.message import Message
from textual.widgets import Footer, Header, Static

from statectl.escape import escape
from statectl.render.safe import safe_text
from statectl.tui.screens import AppScreen

if TYPE_CHECKING:
    from statectl.core.state import ThreadView
    from statectl.core.timeline import LogEntry


class GraphDrawn(Message):
    def __init__(self, title: str, text: Text, subgraphs: bool) -> None:
        super().__init__()
        self.title, self.text, self.subgraphs = title, text, subgraphs


class GraphScreen(AppScreen):
    """The graph of one thread's namespace; Esc or g goes back to the thread."""

    BINDINGS = [
        Binding("escape,g", "app.pop_screen", "Back"),
        Binding("x", "subgraphs", "Subgraphs inline/folded"),
        Binding("j,down", "scroll('down')", show=False),
        Binding("k,up", "scroll('up')", show=False),
        Binding("h,left", "scroll('left')", show=False),
        Binding("l,right", "scroll('right')", show=False),
    ]

    def __init__(self, view: ThreadView, entry: LogEntry) -> None:
        """`entry`: the timeline's selected step (`timeline.LogEntry`): its nodes and `next`."""
        super().__init__()
        self.view, self.entry = view, entry
        self.xray = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="graph-where")
        with ScrollableContainer(id="graph-scroll"):
            yield Static(id="graph")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.title = f"graph — thread {escape(self.view.thread_id)}"
        self.query_one("#graph-where", Static).update(Text("drawing the graph …", style="dim"))
        self.query_one("#graph-scroll").focus()
        self.draw()

    @work(thread=True, exclusive=True, group="graph")
    def draw(self) -> None:
        xray = self.xray

        def read() -> GraphDrawn:
            from statectl.core import mermaid as core
            from statectl.render.graph_layout import LEGEND
            from statectl.render.graph_text import drawing_text, term

            spec = self.view.graph
            drawable = spec.drawable.get("xray" if xray else "plain") if spec is not None else None
            if spec is not None and drawable is not None and not self.view.checkpoint_ns:
                path = core.thread_path(self.view, deep=xray)
                title = core.term_title(spec.target, self.view)
                subgraphs = any(":" in str(n["id"]) for n in spec.drawable.get("xray", {}).get("nodes", ()))
            else:
                path = core.thread_path(self.view, line_only=False)
                drawable = core.inferred_drawable(self.view, path)
                title = core.term_title(None, self.view)
                subgraphs = False
            rec = self.entry.record
            step = f"step {rec.step}" if rec.step is not None else "the selected checkpoint"
            snap = self.view.snapshot(rec.checkpoint_id)
            drawing = term(drawable, path, core.ran_nodes(self.entry), snap)
            text = drawing_text(drawing, legend=LEGEND + f"   (━: {step})")
            return GraphDrawn(title, text, subgraphs)

        got = self.app.read(self, "the graph", read)
        if got is not None:
            self.post_message(got)

    def on_graph_drawn(self, message: GraphDrawn) -> None:
        where = Text(message.title, style="bold")
        if message.subgraphs:
            where.append("   x: subgraphs " + ("folded" if self.xray else "inline"), style="dim")
        self.query_one("#graph-where", Static).update(safe_text(where))
        self.query_one("#graph", Static).update(safe_text(message.text))

    def action_subgraphs(self) -> None:
        if self.view.graph is None or not self.view.graph.drawable:
            self.notify("subgraphs inline need the app's graph (statectl tui --graph TARGET)", timeout=3)
            return
        self.xray = not self.xray
        self.draw()

    def action_scroll(self, where: str) -> None:
        box = self.query_one("#graph-scroll", ScrollableContainer)
        {"down": box.scroll_down, "up": box.scroll_up, "left": box.scroll_left, "right": box.scroll_right}[where](
            animate=False
        )
