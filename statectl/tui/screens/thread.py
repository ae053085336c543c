"""The thread screen: the timeline of checkpoints beside the state, diff or raw JSON of the
selected one; subgraph namespaces are one keypress away; new checkpoints appear as they land."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Header, Input, Select, Static
from textual.worker import get_current_worker

from statectl.core.afterwards import afterwards
from statectl.core.js import error_text
from statectl.escape import escape
from statectl.render import fold
from statectl.render.safe import safe_text
from statectl.render.state import stop_note, value_text
from statectl.tui.messages import StepLoaded, ThreadLoaded
from statectl.tui.pages import lay_out
from statectl.tui.screens import AppScreen
from statectl.tui.screens.fork_rerun import TravelMixin
from statectl.tui.widgets.document import Document
from statectl.tui.widgets.timeline import Timeline

MODE_NAMES = {"state": "state", "diff": "diff of this step", "json": "raw JSON", "size": "bytes of this thread"}


class ThreadScreen(TravelMixin, AppScreen):
    """One thread in one namespace."""

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("enter", "enter_state", "Read state", show=False),
        Binding("d", "mode('diff')", "Diff"),
        Binding("v", "mode('json')", "JSON"),
        Binding("S", "mode('size')", "Bytes", show=False),
        Binding("slash", "search", "Search"),
        Binding("n", "next_match(1)", "Next", show=False),
        Binding("N", "next_match(-1)", "Previous", show=False),
        Binding("c", "copy", "Copy"),
        Binding("f", "fork", "Fork"),
        Binding("r", "rerun", "Re-run"),
        Binding("R", "rerun_offline", "Re-run offline", show=False),
        Binding("m", "app.memory", "Memory", show=False),
        Binding("ctrl+r", "reload", "Reload", show=False),
        Binding("s", "namespaces", "Subgraphs", show=False),
        Binding("e", "enter_subgraph", "Enter subgraph", show=False),
        Binding("F", "full", "Whole values", show=False),
        Binding("g", "graph", "Graph"),
        Binding("b", "banner", "Whole interrupt/error", show=False),
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
        self.scope = "state"
        """What `/` searches: the state pane ("state") or the thread's checkpoints ("timeline")."""
        self.hits: list[str] = []
        """Checkpoints the timeline search found (ids, newest first)."""
        self.needle = ""
        self.size_page: tuple[Any, list] = (None, [])
        """(view, sections) of `S`: the thread's bytes, the same page at every step."""
        self.banner_open = False
        """The interrupt/error banner shows everything (b), not its first 3 lines."""
        self.select_after_load: str | None = None
        """A checkpoint a fork or re-run wrote: the cursor goes there when the thread is read again."""
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
        yield Footer(compact=True, show_command_palette=False)

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
        from itertools import islice

        def read() -> Any:
            from statectl.core.timeline import iter_entries

            store = self.app.store
            store.refresh(self.thread_id)  # (the rows read again: a poll found new ones)
            view = store.view(self.thread_id, self.checkpoint_ns)
            rest = iter_entries(view)
            return view, list(islice(rest, self.FIRST)), rest, sorted(view.namespaces), view.signature()

        got = self.app.read(self, f"thread {self.thread_id}", read)
        if got is None:
            return
        view, found, rest, namespaces, signature = got
        whole = len(found) == len(view.records)
        self.post_message(ThreadLoaded(view, found, namespaces, signature, live=live, whole=whole))
        if whole:
            return
        # a long thread: its newest steps are on screen, the older ones follow, read a chunk at a
        # time (the store free between chunks: a step the user opens meanwhile is read at once)
        every = list(found)
        while len(every) < len(view.records):
            chunk = self.app.read(self, f"thread {self.thread_id}", lambda: list(islice(rest, self.FIRST)))
            if not chunk or get_current_worker().is_cancelled:
                return
            every += chunk
        self.post_message(ThreadLoaded(view, every, namespaces, signature, live=False, whole=True))

    FIRST = 200
    """Steps shown before the rest of a long thread is read (its newest: where the cursor starts)."""

    def poll(self) -> None:
        if self.app.screen is self and self.view is not None:
            self.check()

    @work(thread=True, exclusive=True, group="poll")
    def check(self) -> None:
        """Reload when the thread changed: a new checkpoint, or new writes on the newest one
        (an interrupt or an error lands after its checkpoint)."""

        def read() -> Any:
            store = self.app.store
            store.refresh(self.thread_id)
            return store.view(self.thread_id, self.checkpoint_ns).signature()

        signature = self.app.read(self, f"thread {self.thread_id}", read)
        if signature is not None and signature != self.signature:
            self.load_thread(live=True)

    def load_step(self, checkpoint_id: str, mode: str) -> None:
        self._load_step(checkpoint_id, mode, self.query_one(Document).text_width)

    @work(thread=True, exclusive=True, group="step")
    def _load_step(self, checkpoint_id: str, mode: str, width: int) -> None:
        """Read, decode and render one checkpoint off the UI thread (the pane only swaps strips)."""
        view = self.view

        def read() -> Any:
            from statectl.tui import pages

            snap = view.snapshot(checkpoint_id)
            if mode == "size":  # (the thread's, whichever step is selected: read once per view)
                if self.size_page[0] is not view:
                    from statectl.core.size import thread_channels

                    self.size_page = (view, pages.size_page(thread_channels(self.app.store.source, view.thread_id)))
                return self.size_page[1], snap
            if mode == "diff":
                from statectl.core.diff import branch_diff

                return pages.diff_page(branch_diff(view, view.record(checkpoint_id), self.branch_base)), snap
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
        more = old is message.view  # (the rest of a long thread, after its newest steps)
        self.view = message.view
        self.signature = message.signature
        if not more:
            self.pages.clear()
        new = len(message.view.records) - (len(old.records) if old is not None else 0)
        listed = {e.record.checkpoint_id for e in message.entries}
        if self.select_after_load is not None and (message.whole or self.select_after_load in listed):
            keep, following, self.select_after_load = self.select_after_load, False, None  # a fork or re-run's
        if self.came_from is not None:  # back from a subgraph: on the step that started it
            keep = next((e.record.checkpoint_id for e in message.entries if self.came_from in e.subgraphs), None)
            following = keep is None
            if keep is not None or message.whole:
                self.came_from = None
        timeline.entries = message.entries
        self._size_panes()
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

    def on_resize(self) -> None:
        self._size_panes()

    def _size_panes(self) -> None:
        """The timeline's pane: 45% of the screen, at least 40 columns; on a wide screen (160
        columns and more) growing up to 55% where its columns need it (whole node names and
        notes), the state keeping 80 columns."""
        total = self.app.size.width
        need = self.query_one(Timeline).natural_width() if self.query_one(Timeline).entries else 0
        width = max(40, int(total * 0.45))
        if total >= 160:
            width = max(width, min(need, int(total * 0.55), total - 80))
        left = self.query_one("#left")
        if left.styles.width is None or left.styles.width.value != width:
            left.styles.width = width

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
        if self.needle and self.scope == "timeline":
            self._say_hits()
            if checkpoint_id in self.hits and not doc.needle:  # the hit marked in the state too
                doc.search(self.needle)

    def _where(self, snap: Any, search: str = "") -> None:
        line = Text.assemble(
            (MODE_NAMES[self.mode], "bold reverse"),
            "  ",
            (f"step {snap.step}", "bold"),
            " ",
            (snap.source or "", "blue"),
        )
        if search:  # (before the id: a narrow pane cuts the line's end)
            line.append(f"  {search}", style="bold yellow")
        line.append(f"  {snap.checkpoint_id}", style="dim")
        if self.checkpoint_ns:
            line.append(f"  ns {self.checkpoint_ns}", style="magenta")
        self.query_one("#where", Static).update(safe_text(line))

    def _banner(self, snap: Any) -> None:
        """Interrupts and errors at this checkpoint, or waiting at the newest one: never missed."""
        banner = self.query_one("#banner", Static)
        lines = Text()
        cut = 4000 if self.banner_open else 300
        more = "" if self.banner_open else " (b: whole)"
        then = (
            afterwards(self.view, snap.checkpoint_id, bool(snap.interrupts), bool(snap.errors)) if self.view else None
        )  # (not the newest of its branch: say what happened next, not "waiting")
        for i in snap.interrupts:
            value = value_text(i.value)
            lead = "waiting at an interrupt" if then is None else f"interrupted here — {then}; it asked"
            lines.append(f"⏸  {lead}{more if len(value) > 40 else ''}: {fold(value, cut)}\n")
        left = self.query_one(Timeline).diverged.get(snap.checkpoint_id)
        if left:
            where, _, why = left.partition("\n")  # (two lines: legible in a 40-column pane)
            lines.append(f"✖  {where}: the re-run left the recording here\n")
            reason, _, rest = why.partition(": ")
            lines.append(f"   {reason}{more if rest else ''}{': ' + fold(rest, cut) if rest else ''}\n")
        for t in snap.errors:
            error = str(error_text(t.error))
            lead = f"{t.name} raised" if then is None else f"{t.name} failed here — {then}; it raised"
            lines.append(f"✖  {lead}{more if len(error) > 40 else ''} {fold(error, cut)}\n")
        latest = self.view.records[0].checkpoint_id if self.view else None
        if not lines and latest == snap.checkpoint_id and (stopped := stop_note(snap)):
            lines.append(f"⏸  stopped {stopped}\n")
        if not lines and latest and latest != snap.checkpoint_id:
            head = self.query_one(Timeline).entries[0] if self.query_one(Timeline).entries else None
            if head is not None and (head.interrupts or head.errors):
                what = "an error" if head.errors else "an interrupt"
                lines.append(f"the thread's newest checkpoint (step {head.record.step}) stopped at {what}\n")
        lines.rstrip()
        banner.display = bool(lines)
        banner.set_class(bool(snap.errors) or bool(left) or "error" in lines.plain, "error")
        banner.set_class(self.banner_open, "open")
        shown = safe_text(lines)
        if not self.banner_open:  # at most 3 lines: each item on one line, b opens them whole
            items = shown.split("\n")
            shown = Text("\n").join(items[:3])
            if len(items) > 3:
                shown.append(f"  (+{len(items) - 3} more: b)")
        banner.update(shown)  # (one line each: the stylesheet's text-wrap)

    # -- events -------------------------------------------------------------------------------------
    @on(Timeline.RowHighlighted)
    def step_moved(self) -> None:
        self.show_selected()

    @on(Timeline.RowSelected)
    def step_opened(self) -> None:
        self.query_one(Document).focus()

    @on(Select.Changed, "#ns")
    def namespace_changed(self, event: Select.Changed) -> None:
        if not isinstance(event.value, str) or event.value == self.checkpoint_ns or self.view is None:
            return  # (Select.BLANK: nothing chosen)
        self.enter_namespace(event.value)

    def enter_namespace(self, ns: str) -> None:
        """Show the thread's history in namespace `ns` (a subgraph run, or '' the root)."""
        left, prefix = self.checkpoint_ns, f"{ns}|" if ns else ""
        # going up: the run under `ns` that leads to where we were, to put the cursor on its step
        self.came_from = (
            prefix + left[len(prefix) :].split("|", 1)[0] if left != ns and left.startswith(prefix) and left else None
        )
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
        if self.scope == "state":
            self.query_one(Document).search(event.value)

    @on(Input.Submitted, "#search")
    def search_done(self, event: Input.Submitted) -> None:
        self.query_one("#search").display = False
        if self.scope == "timeline":
            self.query_one(Timeline).focus()
            self.search_thread(event.value)
        else:
            self.query_one(Document).focus()

    @work(thread=True, exclusive=True, group="search")
    def search_thread(self, needle: str) -> None:
        """The checkpoints whose nodes, keys changed, interrupts, errors or state hold `needle`
        (every checkpoint's state is read: in a worker, the app stays live)."""
        view, ents = self.view, list(self.query_one(Timeline).entries)

        def read() -> Any:
            from statectl.core.timeline import search

            return search(view, ents, needle)

        hits = self.app.read(self, f"the search for {needle!r}", read)
        if hits is not None:
            self.app.call_from_thread(self._found, needle, hits)

    def _found(self, needle: str, hits: list[str]) -> None:
        self.needle, self.hits = needle, hits
        timeline = self.query_one(Timeline)
        timeline.mark(set(hits))
        timeline.next_mark(1, here=True)
        self._say_hits()

    def _say_hits(self) -> None:
        if not self.needle or not self.shown or self.shown not in self.pages:
            return
        cid = self.query_one(Timeline).selected
        at = self.hits.index(cid) + 1 if cid in self.hits else "–"
        note = (
            f"/{self.needle}: checkpoint {at} of {len(self.hits)} (n/N)"
            if self.hits
            else f"/{self.needle}: in no checkpoint"
        )
        self._where(self.pages[self.shown][1], note)

    def on_document_searched(self, message: Document.Searched) -> None:
        if self.scope == "timeline" and self.needle:
            self._say_hits()  # (the hit's text marked in the state: the line counts checkpoints)
            return
        if self.shown and self.shown in self.pages:
            if not message.needle:
                note = ""
            elif message.total:
                note = f"/{message.needle}: {message.index + 1 if message.index >= 0 else '–'} of {message.total}"
            else:
                note = f"/{message.needle}: no match"
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
        """`/`: in the timeline, search the thread's checkpoints; in the state pane, the state."""
        search = self.query_one("#search", Input)
        self.scope = "timeline" if self.focused is self.query_one(Timeline) else "state"
        search.placeholder = (
            "search the thread's checkpoints: messages, values, nodes, keys, interrupts (Enter; then n/N)"
            if self.scope == "timeline"
            else "search the state (Enter: done, n/N: next/previous)"
        )
        search.value = self.needle if self.scope == "timeline" else self.query_one(Document).needle
        search.display = True
        search.focus()

    def action_next_match(self, step: int) -> None:
        if self.focused is self.query_one(Timeline) and self.hits:
            self.query_one(Timeline).next_mark(step)
        else:
            self.query_one(Document).next_match(step)

    def action_copy(self) -> None:
        cid = self.query_one(Timeline).selected
        if cid:
            self.app.copy_to_clipboard(cid)
            self.notify(f"copied {escape(cid)}", timeout=3, markup=False)  # an id is data, never markup

    def action_reload(self) -> None:
        self.load_thread()
        self.notify("reloading", timeout=2)

    def action_banner(self) -> None:
        """`b`: the interrupt/error banner whole (up to half the screen, scrolling), or back to
        its first 3 lines."""
        self.banner_open = not self.banner_open
        if self.shown and self.shown in self.pages:
            self._banner(self.pages[self.shown][1])

    def on_click(self, event: Any) -> None:
        if getattr(event, "widget", None) is self.query_one("#banner"):
            self.action_banner()

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
