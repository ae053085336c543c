"""Messages the loading workers post to the screens (data flows up; widgets never read the DB)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

from statectl.model import ThreadPage

if TYPE_CHECKING:
    from statectl.core.state import ThreadView
    from statectl.core.timeline import LogEntry
    from statectl.model import Snapshot
    from statectl.tui.pages import Section


class ThreadsLoaded(Message):
    """A page of `ThreadSummary`s (a `ThreadPage`); `append` when it continues the list."""

    def __init__(self, threads: ThreadPage, append: bool = False) -> None:
        super().__init__()
        self.threads, self.append = threads, append


class ThreadsFound(Message):
    """The database's threads whose id contains `needle` (the filter reaches unloaded pages)."""

    def __init__(self, needle: str, threads: ThreadPage) -> None:
        super().__init__()
        self.needle, self.threads = needle, threads


class ThreadLoaded(Message):
    """A thread's view, its log entries (newest first) and namespaces; `live` for a poll."""

    def __init__(
        self,
        view: ThreadView,
        entries: list[LogEntry],
        namespaces: list[str],
        signature: tuple,
        live: bool = False,
        whole: bool = True,
    ) -> None:
        super().__init__()
        self.view, self.entries, self.namespaces, self.live = view, entries, namespaces, live
        self.whole = whole
        """False: the newest steps of a long thread; the rest follow in another message."""
        self.signature = signature
        """What a poll compares to notice new checkpoints or writes."""


class StepLoaded(Message):
    """The sections of one checkpoint in one mode (state, diff, json)."""

    def __init__(self, checkpoint_id: str, mode: str, sections: list[Section], snapshot: Snapshot) -> None:
        super().__init__()
        self.checkpoint_id, self.mode, self.sections, self.snapshot = checkpoint_id, mode, sections, snapshot


class LoadFailed(Message):
    """A worker could not load something: shown as a notification, never a crash."""

    def __init__(self, what: str, error: str) -> None:
        super().__init__()
        self.what, self.error = what, error


class GraphNote(Message):
    """Where the graph given with `--graph` does not describe a thread (one line, said once)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
