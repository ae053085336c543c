"""`statectl tui`: the Textual app (threads screen, thread screen, key help)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from textual.app import App
from textual.binding import Binding

from statectl import Store
from statectl.errors import StatectlError
from statectl.escape import escape
from statectl.tui.early import PAGE, EarlyRead
from statectl.tui.messages import GraphNote, LoadFailed

T = TypeVar("T")


class StatectlApp(App):
    """Step through the threads of one checkpoint store, the way tig walks a git history."""

    CSS_PATH = Path(__file__).with_name("statectl.tcss")
    TITLE = "statectl"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Keys"),
    ]

    def __init__(
        self,
        store: Store,
        thread_id: str | None = None,
        checkpoint_ns: str = "",
        poll: float = 1.0,
        page: int = PAGE,
        python: str | None = None,
        db_spec: str | None = None,
        early: EarlyRead | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.python = python
        """The project's interpreter for f and r (`--python`; else as `schema TARGET` finds it)."""
        self.db_spec = db_spec
        """What the store was opened from (a destination that is the source itself is refused)."""
        self.travel_to: str | None = None
        """The copy f and r wrote into (the scratch file), shown since; None: the store opened."""
        self.start_thread = thread_id
        self.start_ns = checkpoint_ns
        self.poll = poll
        """Seconds between checks for new checkpoints (0: never)."""
        self.page = page
        """Threads read at a time (keyset pages; the next loads when the cursor nears the end)."""
        self.db_lock = early.lock if early is not None else threading.Lock()
        """One reader at a time: a source's connection and a ThreadView are not thread-safe."""
        self.early = early
        """The threads screen's first page, read since before the app started (taken once)."""
        self.sub_title = escape(store.label)
        if store.graph is not None:  # (posted from the reading thread: post_message is thread-safe)
            store.on_graph_note = lambda text: self.post_message(GraphNote(text))

    def on_mount(self) -> None:
        from statectl.tui.screens.threads import ThreadsScreen

        self.push_screen(ThreadsScreen())
        if self.start_thread:
            from statectl.tui.screens.thread import ThreadScreen

            self.push_screen(ThreadScreen(self.start_thread, self.start_ns))

    def on_ready(self) -> None:
        # Everything alive now (Textual, Rich, the modules) lives as long as the app: keep it
        # out of the cyclic collector, whose full passes otherwise stall a keypress by ~100 ms.
        gc.freeze()

    def busy_reading(self) -> bool:
        """Is a read of the store still running in a worker thread (after the app has exited)?"""
        return self.db_lock.locked()

    def read(self, poster: Any, what: str, fn: Callable[[], T]) -> T | None:
        """Run `fn` against the store (in a worker thread); a failure is posted to `poster` as
        `LoadFailed` and None is returned."""
        try:
            with self.db_lock:
                return fn()
        except StatectlError as exc:
            poster.post_message(LoadFailed(what, str(exc)))
        except Exception as exc:  # a worker must never take the app down; the user is told
            poster.post_message(LoadFailed(what, f"{type(exc).__name__}: {exc}"))
        return None

    def take_early(self) -> EarlyRead | None:
        """The first page read early, once (then None: a reload reads anew)."""
        early, self.early = self.early, None
        return early

    def on_load_failed(self, message: LoadFailed) -> None:
        self.notify(
            escape(message.error),
            title=f"could not load {escape(message.what)}",
            severity="error",
            timeout=10,
            markup=False,
        )  # the message quotes the data

    def on_graph_note(self, message: GraphNote) -> None:
        self.notify(escape(message.text), title="--graph", severity="warning", timeout=10, markup=False)

    def _fatal_error(self) -> None:
        """A bug: one line on exit and exit code 70, never Textual's traceback, whose local
        variables can hold state and secrets (the CLI's --debug shows the same reads' tracebacks)."""
        import sys

        from statectl.tui.textual_compat import exit_with_line

        exc = sys.exc_info()[1]
        what = type(exc).__name__ if exc is not None else "an unexpected error"
        exit_with_line(self, f"statectl: internal error in the TUI: {what}", 70)

    def show_copy(self, spec: str, label: str) -> None:
        """Show the copy a fork or re-run wrote into, from now on (the store opened stays closed)."""
        if self.travel_to == spec:
            return
        from statectl.sources import open_source

        with self.db_lock:
            old = self.store
            self.store = Store(open_source(spec), old.graph)
            self.store.on_graph_note = old.on_graph_note
            self.travel_to = spec
            old.close()
        self.sub_title = escape(label)

    def action_memory(self) -> None:
        from statectl.tui.screens.memory import MemoryScreen

        if not isinstance(self.screen, MemoryScreen):
            self.push_screen(MemoryScreen())

    def action_help(self) -> None:
        from statectl.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())


def make_app(
    db: str | Store | None = None,
    thread_id: str | None = None,
    checkpoint_ns: str = "",
    poll: float = 1.0,
    page: int = PAGE,
    graph: str | None = None,
    python: str | None = None,
    db_spec: str | None = None,
    early: EarlyRead | None = None,
) -> StatectlApp:
    """The app for a database path/URL or an open Store (used by `statectl tui` and the tests);
    `graph`: the app's graph as TARGET (`--graph`); `python`: the interpreter f and r write in."""
    import statectl
    from statectl.render import Limits

    Limits.full, Limits.hint = False, "F"  # (the key that shows long values whole)
    from statectl.render.columns import LeftOut

    LeftOut.hint = "a wider window shows them"
    store = db if isinstance(db, Store) else statectl.open(db, graph=graph)
    if db_spec is None and isinstance(db, str):
        from statectl.sources import resolve_db

        db_spec = resolve_db(db)
    return StatectlApp(store, thread_id, checkpoint_ns, poll, page, python, db_spec, early)


__all__ = ["StatectlApp", "make_app"]
