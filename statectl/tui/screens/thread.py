"""The thread screen: the timeline of checkpoints beside the state, diff or raw JSON of the
selected one; subgraph namespaces are one keypress away; new checkpoints appear as they land."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Select, Static

from statectl.escape import escape
from statectl.render.safe import safe_text
from statectl.render.state import STOPPED, one_line, stopped_before
from statectl.render import fold
from statectl.tui.messages import StepLoaded, ThreadLoaded
from statectl.tui.widgets.document import Document, lay_out
from statectl.tui.widgets.timeline import Timeline

MODE_NAMES = {"state": "state", "diff": "diff of this step", "json": "raw JSON"}


class ThreadScreen(Screen):
    """One thread in one namespace."""

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("enter", "enter_state", "Read state", show=False),
        Binding("d", "mode('diff')", "Diff"),
        Binding("v", "mode('json')", "Raw JSON"),
        Binding("slash", "search", "Search"),
        Binding("n", "next_match(1)", "Next", show=False),
        Binding("N", "next_match(-1)", "Previous", show=False),
        Binding("c", "copy", "Copy id"),
        Binding("r", "reload", "Reload"),
        Binding("s", "namespaces", "Subgraphs", show=False),
        Binding("e", "enter_subgraph", "Enter subgraph", show=False),
        Binding("F", "full", "Whole values", show=False),
        Binding("g", "graph", "Graph"),
    ]
    PAGES = 32
    """Rendered pages kept (the most recently shown): moving back to a step is instant, and a
    walk through a long thread holds a few pages, not the thread."""

    def __init__(self, thread_id: str, checkpoint_ns: str = "") -> None:
        super().__init__()
        self.thread_id = thread_id
        self.checkpoint_ns = checkpoint_ns
        self.view: Any = None
        self.mode = "state"
        self.pages: dict[tuple[str, str], tuple[list, Any]] = {}
        """(checkpoint id, mode) -> (sections, snapshot): moving back to a step is instant."""
        self.shown: tuple[str, str] | None = None
        self.signature: tuple | None = None
        self.came_from: str | None = None
        """The subgraph namespace just left for its parent: its launching step gets the cursor."""

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield Select([], id="ns", prompt="namespace", allow_blank=True)
                yield Timeline(id="timeline")
            with Vertical(id="right"):
                yield Static(id="banner")
                yield Static(id="where")
                yield Document(id="doc")
        yield Input(placeholder="search the state (Enter: done, n/N: next/previous)", id="search")
        yield Footer()

    def on_mount(self) -> None:
        self.title = f"thread {escape(self.thread_id)}"
        self.query_one("#ns").display = False
        self.query_one("#search").display = False
        self.query_one("#banner").display = False
        self.query_one(Timeline).focus()
        self.load_thread()
        if self.app.poll:
            self.set_interval(self.app.poll, self.poll)

    # -- loading (workers) ----------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="thread")
    def load_thread(self, live: bool = False) -> None:
        def read():
            from statectl.timeline import entries

            view = self.app.store.new_view(self.thread_id, self.checkpoint_ns)
            return view, entries(view), sorted(view.namespaces), _signature(view)

        got = self.app.read(self, f"thread {self.thread_id}", read)
        if got is not None:
            self.post_message(ThreadLoaded(*got, live=live))

    def poll(self) -> None:
        if self.app.screen is self and self.view is not None:
            self.check()

    @work(thread=True, exclusive=True, group="poll")
    def check(self) -> None:
        """Reload when the thread changed: a new checkpoint, or new writes on the newest one
        (an interrupt or an error lands after its checkpoint)."""
        def read():
            return _signature(self.app.store.new_view(self.thread_id, self.checkpoint_ns))

        signature = self.app.read(self, f"thread {self.thread_id}", read)
        if signature is not None and signature != self.signature:
            self.load_thread(live=True)

    def load_step(self, checkpoint_id: str, mode: str) -> None:
        self._load_step(checkpoint_id, mode, self.query_one(Document).text_width)

    @work(thread=True, exclusive=True, group="step")
    def _load_step(self, checkpoint_id: str, mode: str, width: int) -> None:
        """Read, decode and render one checkpoint off the UI thread (the pane only swaps strips)."""
        view = self.view

        def read():
            from statectl.tui import pages

            snap = view.snapshot(checkpoint_id)
            if mode == "diff":
                from statectl.diff import diff

                rec = view.by_id[checkpoint_id]
                return pages.diff_page(diff(view, view.parent(rec), rec)), snap
            if mode == "json":
                return pages.json_page(snap), snap
            return pages.state_page(snap), snap

        got = self.app.read(self, f"checkpoint {checkpoint_id}", read)
        if got is not None:
            lay_out(got[0], self.app.console, width)
            self.post_message(StepLoaded(checkpoint_id, mode, *got))

    # -- arriving data ----------------------------------------------------------------------------
    def on_thread_loaded(self, message: ThreadLoaded) -> None:
        timeline = self.query_one(Timeline)
        old = self.view
        keep = timeline.selected
        following = keep is None or (old is not None and keep == old.records[0].checkpoint_id)
        self.view = message.view
        self.signature = message.signature
        self.pages.clear()
        new = len(message.view.records) - (len(old.records) if old is not None else 0)
        if self.came_from is not None:  # back from a subgraph: on the step that started it
            keep = next((e.record.checkpoint_id for e in message.entries if self.came_from in e.subgraphs), None)
            following, self.came_from = keep is None, None
        timeline.fill(message.entries, keep=None if following else keep)
        if following:
            timeline.move_cursor(row=0, animate=False)
        ns = self.query_one("#ns", Select)
        if len(message.namespaces) > 1:
            with ns.prevent(Select.Changed):  # only a user's choice loads a namespace
                ns.set_options([(n or "(root graph)", n) for n in message.namespaces])
                ns.value = self.checkpoint_ns
            ns.display = True
        if message.live and new > 0:
            self.notify(f"{new} new checkpoint{'s' * (new > 1)}", timeout=3)
        self.show_selected()

    def on_step_loaded(self, message: StepLoaded) -> None:
        self.pages[(message.checkpoint_id, message.mode)] = (message.sections, message.snapshot)
        while len(self.pages) > self.PAGES:
            del self.pages[next(iter(self.pages))]
        if (message.checkpoint_id, message.mode) == self._wanted():
            self._display(message.checkpoint_id, message.mode)

    def _wanted(self) -> tuple[str, str] | None:
        cid = self.query_one(Timeline).selected
        return (cid, self.mode) if cid else None

    def show_selected(self) -> None:
        wanted = self._wanted()
        if wanted is None or self.view is None:
            return
        if wanted in self.pages:
            self.pages[wanted] = self.pages.pop(wanted)  # most recently shown last
            self._display(*wanted)
        else:
            self.query_one("#where", Static).update(Text(f"loading {wanted[0]} …", style="dim"))
            self.load_step(*wanted)

    def _display(self, checkpoint_id: str, mode: str) -> None:
        sections, snap = self.pages[(checkpoint_id, mode)]
        doc = self.query_one(Document)
        same = self.shown == (checkpoint_id, mode)
        doc.show(sections, keep_scroll=same)
        self.shown = (checkpoint_id, mode)
        self._banner(snap)
        self._where(snap)

    def _where(self, snap: Any, search: str = "") -> None:
        line = Text.assemble((MODE_NAMES[self.mode], "bold reverse"), "  ",
                             (f"step {snap.step}", "bold"), " ", (snap.source or "", "blue"),
                             "  ", (snap.checkpoint_id, "dim"))
        if self.checkpoint_ns:
            line.append(f"  ns {self.checkpoint_ns}", style="magenta")
        if search:
            line.append(f"  {search}", style="bold yellow")
        self.query_one("#where", Static).update(safe_text(line))

    def _banner(self, snap: Any) -> None:
        """Interrupts and errors at this checkpoint, or waiting at the newest one: never missed."""
        banner = self.query_one("#banner", Static)
        lines = Text()
        for i in snap.interrupts:
            lines.append(f"⏸  waiting at an interrupt: {fold(one_line(i.value), 300)}\n")
        for t in snap.errors:
            lines.append(f"✖  {t.name} raised {fold(str(t.error), 300)}\n")
        latest = self.view.records[0].checkpoint_id if self.view else None
        if not lines and latest == snap.checkpoint_id and stopped_before(snap):
            lines.append(f"⏸  stopped {STOPPED.format(nodes=', '.join(snap.next))}\n")
        if not lines and latest and latest != snap.checkpoint_id:
            head = self.query_one(Timeline).entries[0] if self.query_one(Timeline).entries else None
            if head is not None and (head.interrupts or head.errors):
                what = "an error" if head.errors else "an interrupt"
                lines.append(f"the thread's newest checkpoint (step {head.record.step}) stopped at {what}\n")
        lines.rstrip()
        banner.display = bool(lines)
        banner.set_class(bool(snap.errors) or "error" in lines.plain, "error")
        banner.update(safe_text(lines))

    # -- events -------------------------------------------------------------------------------------
    @on(Timeline.RowHighlighted)
    def step_moved(self) -> None:
        self.show_selected()

    @on(Timeline.RowSelected)
    def step_opened(self) -> None:
        self.query_one(Document).focus()

    @on(Select.Changed, "#ns")
    def namespace_changed(self, event: Select.Changed) -> None:
        if event.value is Select.BLANK or event.value == self.checkpoint_ns or self.view is None:
            return
        self.enter_namespace(event.value)

    def enter_namespace(self, ns: str) -> None:
        """Show the thread's history in namespace `ns` (a subgraph run, or '' the root)."""
        left, prefix = self.checkpoint_ns, f"{ns}|" if ns else ""
        # going up: the run under `ns` that leads to where we were, to put the cursor on its step
        self.came_from = prefix + left[len(prefix):].split("|", 1)[0] \
            if left != ns and left.startswith(prefix) and left else None
        self.checkpoint_ns = ns
        self.pages.clear()
        self.shown = None
        select = self.query_one("#ns", Select)
        if select.display:
            with select.prevent(Select.Changed):
                select.value = ns
        self.query_one(Timeline).clear()
        self.query_one(Timeline).focus()
        self.load_thread()

    @on(Input.Changed, "#search")
    def search_typed(self, event: Input.Changed) -> None:
        self.query_one(Document).search(event.value)

    @on(Input.Submitted, "#search")
    def search_done(self) -> None:
        self.query_one("#search").display = False
        self.query_one(Document).focus()

    def on_document_searched(self, message: Document.Searched) -> None:
        if self.shown and self.shown in self.pages:
            if not message.query:
                note = ""
            elif message.total:
                note = f"/{message.query}: {message.index + 1 if message.index >= 0 else '–'} of {message.total}"
            else:
                note = f"/{message.query}: no match"
            self._where(self.pages[self.shown][1], note)

    # -- actions --------------------------------------------------------------------------------------
    def action_back(self) -> None:
        search = self.query_one("#search", Input)
        if search.display:
            search.display = False
            self.query_one(Document).focus()
        elif self.focused is not self.query_one(Timeline):
            self.query_one(Timeline).focus()
        elif self.mode != "state":
            self.action_mode(self.mode)
        elif self.checkpoint_ns:  # out of a subgraph run: to the namespace that started it
            self.enter_namespace(self.checkpoint_ns.rsplit("|", 1)[0] if "|" in self.checkpoint_ns else "")
        elif len(self.app.screen_stack) > 2:
            self.app.pop_screen()

    def action_enter_state(self) -> None:
        self.query_one(Document).focus()

    def action_mode(self, mode: str) -> None:
        """Toggle a view: `d` diff, `v` raw JSON (pressed again: back to the state)."""
        self.mode = "state" if self.mode == mode else mode
        self.show_selected()

    def action_full(self) -> None:
        """`F`: long values whole (every message of a long transcript, whole texts), or
        shortened again (the default: a page stays quick to lay out)."""
        from statectl.render import Limits

        Limits.set_full(not Limits.full)
        self.pages.clear()
        self.shown = None
        self.notify("long values shown whole" if Limits.full else "long values shortened", timeout=3)
        self.show_selected()

    def action_search(self) -> None:
        search = self.query_one("#search", Input)
        search.display = True
        search.focus()

    def action_next_match(self, step: int) -> None:
        self.query_one(Document).next_match(step)

    def action_copy(self) -> None:
        cid = self.query_one(Timeline).selected
        if cid:
            self.app.copy_to_clipboard(cid)
            self.notify(f"copied {escape(cid)}", timeout=3, markup=False)  # an id is data, never markup

    def action_reload(self) -> None:
        self.load_thread()
        self.notify("reloading", timeout=2)

    def action_graph(self) -> None:
        """`g`: the graph with the thread's path, the selected step's nodes and its `next`."""
        timeline = self.query_one(Timeline)
        entry = next((e for e in timeline.entries if e.record.checkpoint_id == timeline.selected), None)
        if self.view is None or entry is None:
            return
        from statectl.tui.screens.graph import GraphScreen

        self.app.push_screen(GraphScreen(self.view, entry))

    def action_enter_subgraph(self) -> None:
        """Into the subgraph run the selected step started (several: choose from the list)."""
        timeline = self.query_one(Timeline)
        entry = next((e for e in timeline.entries if e.record.checkpoint_id == timeline.selected), None)
        if entry is None or not entry.subgraphs:
            self.notify("no subgraph ran from this step (⤷ marks the steps that started one)", timeout=3)
        elif len(entry.subgraphs) == 1:
            self.enter_namespace(entry.subgraphs[0])
        else:
            self.action_namespaces()

    def action_namespaces(self) -> None:
        ns = self.query_one("#ns", Select)
        if ns.display:
            ns.focus()
            ns.expanded = True
        else:
            self.notify("this thread has no subgraph namespaces", timeout=3)


def _signature(view: Any) -> tuple:
    """Checkpoints, the newest id, and the writes on it (a fresh view reads them fresh)."""
    newest = view.records[0].checkpoint_id
    return len(view.records), newest, len(view.writes(newest))
