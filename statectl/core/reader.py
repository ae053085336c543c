"""`StoreReader`: the part of `statectl.store.Store` the rooms below it use (core/, project/).

`Store` lives above them (it opens sources and loads the app's graph), so they name it by this
protocol: typed, and no import running back up the layers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from statectl.core.graphspec import GraphSpec
    from statectl.core.state import ThreadView
    from statectl.model import ThreadPage, ThreadSummary
    from statectl.sources.base import Source
    from statectl.sources.status import ThreadFilter


class StoreReader(Protocol):
    """A checkpoint store opened read-only: its source, the app's graph, and cached thread views."""

    source: Source
    graph: GraphSpec | None

    @property
    def label(self) -> str: ...

    def view(self, thread_id: str, checkpoint_ns: str = "", keys: frozenset[str] | None = None) -> ThreadView:
        """The `ThreadView` of one thread and namespace (cached)."""
        ...

    def on(self, source: Source, graph: GraphSpec | None = None) -> StoreReader:
        """A new store of this one's kind reading `source` (no view cached), with `graph`."""
        ...

    def thread_id(self, text: str, shown: Callable[[str], str] | None = None) -> str:
        """The thread `text` names: its exact id, or the one thread whose id starts with it."""
        ...

    def refresh(self, thread_id: str | None = None) -> None:
        """Forget the views read so far (of one thread, or all)."""
        ...

    def threads(
        self,
        limit: int | None = None,
        after: str | None = None,
        sort: str | None = None,
        match: str | None = None,
        status: frozenset[str] | None = None,
        where: ThreadFilter | None = None,
    ) -> ThreadPage:
        """Threads, all or a page (no blob decoded)."""
        ...

    def stream_threads(
        self,
        sort: str | None = None,
        match: str | None = None,
        status: frozenset[str] | None = None,
        where: ThreadFilter | None = None,
        after: str | None = None,
    ) -> Iterator[list[ThreadSummary]] | None:
        """Every thread `threads` would list, in chunks as read, where the source can; else None."""
        ...
