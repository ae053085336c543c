"""The threads screen: every thread with its status; type to filter, Enter opens one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.events import Key
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Header, Input, Static

from statectl.core.listing import Selection
from statectl.model import ThreadPage
from statectl.render.columns import fit, fold_id, shorten
from statectl.render.safe import safe_text
from statectl.render.tables import thread_cells, thread_columns
from statectl.sources.status import STATUSES
from statectl.tui.early import threads_page
from statectl.tui.messages import ThreadsFound, ThreadsLoaded
from statectl.tui.screens import AppScreen
from statectl.tui.widgets.rows import Folded, Rows

if TYPE_CHECKING:
    from statectl.core.preview import Preview


class ThreadsScreen(AppScreen):
    """Threads, newest first (Postgres: by id), with status, checkpoints and last update."""

    BINDINGS = [
        Binding("enter", "open", "Open", show=True),
        Binding("slash", "filter", "Filter"),
        Binding("r", "reload", "Reload"),
        Binding("m", "app.memory", "Memory"),
        Binding("escape", "clear", "Clear filter", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.threads: list = []
        self.more = False
        self.total: int | None = None
        self.fetching = False
        self.previews: dict[str, Preview] = {}
        """thread id -> its PREVIEW cell's `Preview`, read with each page."""
        self.found: ThreadsFound | None = None
        """The database's answer for the filter text, when not every page is loaded."""
        self._search_timer: Timer | None = None
        self._typing = False
        """Keys are going to the filter box, which has not got the focus yet (a fast typist's or
        a paste's keys arrive before it does): every printable key is text until then."""

    def compose(self) -> ComposeResult:
        yield Header()
        yield Input(placeholder="type to filter threads (thread id or status)", id="filter", select_on_focus=False)
        yield Rows({key: col.header for key, col in COLUMNS.items()}, id="threads", zebra_stripes=True)
        yield Static(id="threads-status")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one(Rows).focus()
        # no header-wide columns on screen while the first page is read (a large database)
        self.query_one(Rows).styles.opacity = 0
        self.query_one("#threads-status", Static).update(Text("reading threads …", style="dim"))
        if self.app.poll:
            self.set_interval(max(self.app.poll, 2.0), self.poll)

    def on_screen_resume(self) -> None:
        """Load when first shown (not while `statectl tui THREAD` opens above it)."""
        if not self.threads and not self.fetching:
            self.fetching = True
            self.load()

    # -- loading --------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="threads")
    def load(self, after: str | None = None) -> None:
        early = self.app.take_early() if after is None else None  # (read while the app started)
        answer = self.app.read(
            self,
            "threads",
            early.result if early is not None else lambda: threads_page(self.app.store, self.app.page, after),
        )
        if answer is not None:
            page, found = answer
            self.previews.update(found)
            self.post_message(ThreadsLoaded(page, append=after is not None))

    def poll(self) -> None:
        if self.app.screen is self and not self.fetching:
            self.load()

    def on_threads_loaded(self, message: ThreadsLoaded) -> None:
        page = message.threads
        if message.append:
            known = {t.thread_id for t in self.threads}
            self.threads += [t for t in page if t.thread_id not in known]
        else:
            self.threads = list(page)
            self.total = page.total
        self.more = page.more
        self.fetching = False
        self.refill()

    @property
    def needle(self) -> str:
        return self.query_one(Input).value.strip()

    @property
    def answer(self) -> ThreadPage | None:
        """The database's threads for the filter text as it is now (None: not asked or not back)."""
        return self.found.threads if self.found is not None and self.found.needle == self.needle else None

    def matching(self) -> list:
        """The loaded threads whose id contains the filter text or whose status starts with it
        ('err': error, not interrupted), with the threads the database found for it (pages not
        loaded yet), in the list's order."""
        needle = self.needle.casefold()
        if not needle:
            return self.threads
        shown = {
            t.thread_id: t for t in self.threads if needle in t.thread_id.casefold() or t.status.startswith(needle)
        }
        for t in self.answer or ():
            shown.setdefault(t.thread_id, t)
        rows = list(shown.values())
        if self.app.store.source.default_sort() == "id":
            return sorted(rows, key=lambda t: t.thread_id)
        return sorted(rows, key=lambda t: (t.latest_checkpoint_id, t.thread_id), reverse=True)

    def on_resize(self) -> None:
        if self.threads:
            self.refill()

    def _layout(self, cells: list[list[Text]]) -> tuple[dict[str, int | None], dict[str, int]]:
        """Each column's width on this screen (None: left out), by the width policy of every
        table (render/columns.py): the preview gives way first, then the time, then the counts;
        a thread id folds onto more lines, never cut."""
        table = self.query_one(Rows)
        avail = (table.size.width or self.app.size.width) - 2  # (the scroll bar)
        widths = [max([len(c.header)] + [len(r[i].plain) for r in cells]) for i, c in enumerate(COLUMNS.values())]
        empty = [not any(r[i].plain for r in cells) for i in range(len(COLUMNS))]
        shown, _ = fit(list(COLUMNS.values()), widths, empty, avail)
        return dict(zip(COLUMNS, shown, strict=True)), dict(zip(COLUMNS, widths, strict=True))

    def refill(self) -> None:
        """Show the threads that match the filter, keeping the cursor on its thread."""
        table = self.query_one(Rows)
        table.styles.opacity = 1
        keep = table.selected
        rows = self.matching()
        cells = [thread_cells(t, COLUMNS, self.previews.get(t.thread_id)) for t in rows]
        layout, natural = self._layout(cells)
        if [k for k, w in layout.items() if w is not None] != [str(c.key.value) for c in table.ordered_columns]:
            table.clear(columns=True)
            for key, width in layout.items():
                if width is not None:
                    table.add_column(COLUMNS[key].header, key=key)
        table.clear()
        for key, width in layout.items():
            column = table.columns.get(key)  # type: ignore[call-overload]
            if column is not None:  # a folded id or a shortened preview: this width, else its own
                column.auto_width = width is None or width >= natural[key]
                if not column.auto_width:
                    column.width = width
        shown = 0
        for t, row in zip(rows, cells, strict=True):
            kept: list[Text] = []
            height = 1
            for (key, width), cell in zip(layout.items(), row, strict=True):
                if width is None:
                    continue
                if key == "thread" and len(cell.plain) > width:
                    lines = fold_id(cell, width)
                    cell, height = Folded.lines(lines), len(lines)
                elif len(cell.plain) > width:
                    shorten(cell, width)
                kept.append(cell)
            table.add_row(*kept, key=t.thread_id, height=height)
            shown += 1
        table.select(keep)
        n = self.total if self.total is not None else None if self.more else len(self.threads)
        total = "more threads" if n is None else f"{n} thread{'' if n == 1 else 's'}"
        more = "  (more: scroll to the end)" if self.more else ""
        if self.more and self.needle:
            answer = self.answer
            if answer is None:
                more = "  (searching every thread…)"
            elif answer.more:
                more = f"  (every thread searched; first {len(answer)} matches)"
            else:
                more = "  (every thread searched)"
        self.query_one("#threads-status", Static).update(
            safe_text(Text(f"{shown} shown · {len(self.threads)} loaded · {total} in {self.app.store.label}{more}"))
        )

    @on(DataTable.RowHighlighted)
    def near_end(self, event: DataTable.RowHighlighted) -> None:
        if self.more and not self.fetching and 0 < event.cursor_row >= event.data_table.row_count - 5:
            self.fetching = True
            self.load(self.threads[-1].thread_id)

    # -- filtering --------------------------------------------------------------------------------
    @on(Input.Changed, "#filter")
    def filter_changed(self) -> None:
        self.refill()
        if self._search_timer is not None:
            self._search_timer.stop()
        if self.more and self.needle:  # pages not loaded yet: ask the database, once typing pauses
            self._search_timer = self.set_timer(0.25, lambda: self.search(self.needle))

    @work(thread=True, exclusive=True, group="search")
    def search(self, needle: str) -> None:
        """Ask the database for the threads the filter shows: ids containing the text, and
        threads whose status starts with it ('err' finds the failed ones on every page)."""
        store, size = self.app.store, self.app.page
        statuses = frozenset(s for s in STATUSES if s.startswith(needle.casefold()))

        def ask() -> ThreadPage:
            by_id = Selection(match=needle).threads(store, size)
            by_status = Selection(status=statuses).threads(store, size) if statuses else ThreadPage()
            out = ThreadPage({t.thread_id: t for t in [*by_id, *by_status]}.values())
            out.more = by_id.more or by_status.more
            return out

        found = self.app.read(self, "threads", ask)
        if found is not None:
            self.post_message(ThreadsFound(needle, found))

    def on_threads_found(self, message: ThreadsFound) -> None:
        if message.needle == self.needle:
            self.found = message
            self.refill()

    @on(Input.Submitted, "#filter")
    def filter_submitted(self) -> None:
        table = self.query_one(Rows)
        table.focus()
        if table.row_count:
            self.action_open()

    def on_key(self, event: Key) -> None:
        """Type to filter: a printable key that is not bound starts the filter."""
        table = self.query_one(Rows)
        if (
            self.focused is table
            and event.is_printable
            and event.character
            and (self._typing or (event.character not in "jkqrm?/" and not event.character.isspace()))
        ):
            box = self.query_one(Input)
            box.value += event.character
            box.cursor_position = len(box.value)
            if not self._typing:
                self._typing = True
                box.focus()
            event.stop()
        elif self.focused is self.query_one(Input) and event.key in ("down", "up"):
            table.focus()
            table.action_cursor_down() if event.key == "down" else table.action_cursor_up()
            event.stop()

    @on(events.DescendantFocus)
    def _focus_arrived(self, event: events.DescendantFocus) -> None:
        if self.focused is self.query_one(Input):
            self._typing = False

    def action_filter(self) -> None:
        self.query_one(Input).focus()

    def action_clear(self) -> None:
        box = self.query_one(Input)
        if box.value:
            box.value = ""
        self.query_one(DataTable).focus()

    def action_reload(self) -> None:
        self.load()
        self.notify("reloading threads", timeout=2)

    def action_open(self) -> None:
        table = self.query_one(Rows)
        if not table.row_count:
            return
        thread_id = table.selected
        if thread_id is None:
            return
        from statectl.tui.screens.thread import ThreadScreen

        self.app.push_screen(ThreadScreen(thread_id))

    @on(DataTable.RowSelected)
    def row_selected(self) -> None:
        self.action_open()


COLUMNS = thread_columns()
