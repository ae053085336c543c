"""The read model's façade: `Store`, a checkpoint store opened read-only, and `open`.

Above `core/` (the views, the state it rebuilds) and `project/` (the app's graph), below the front
ends (cli, tui, mcp, render): the one object every view is handed. The rooms below take
`core.reader.StoreReader`, the part of it they use, so that none of them imports this one.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING

from statectl.errors import NotFoundError, StatectlError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from statectl.core.graphspec import GraphSpec
    from statectl.core.state import ThreadView
    from statectl.model import Snapshot, ThreadPage, ThreadSummary
    from statectl.sources.base import Source
    from statectl.sources.status import ThreadFilter

__all__ = ["Store", "open"]


class Store:
    """A checkpoint database opened read-only."""

    stream_chunk = 500
    """Threads `stream_threads` hands over at a time where it filters them itself (a store that
    `statectl.open` opens takes `statectl.STREAM_CHUNK`)."""

    def __init__(self, source: Source, graph: GraphSpec | None = None, notes: Sequence[str] = ()) -> None:
        self.source = source
        self._views: dict = {}
        self._notes = list(notes)
        self.graph = graph
        """The app's compiled graph (`graphspec.GraphSpec`, `--graph TARGET`), or None: views
        take channel kinds, initial values and node order from it instead of inferring them."""
        self.on_graph_note: Callable[[str], object] | None = None
        """Called once with each line saying where the graph does not describe a thread."""
        self._said: set[str] = set()

    @property
    def label(self) -> str:
        return self.source.label

    @property
    def notes(self) -> list[str]:
        """What the source's format cannot say (an older generation's missing tables), if anything."""
        return [*self.source.notes, *self._notes]

    def threads(
        self,
        limit: int | None = None,
        after: str | None = None,
        sort: str | None = None,
        match: str | None = None,
        status: frozenset[str] | None = None,
        where: ThreadFilter | None = None,
    ) -> ThreadPage:
        """Threads (no blob is decoded): all, or a page of `limit` starting after thread id
        `after`; `sort` is `recent` (SQLite's default) or `id` (Postgres' default: a page never
        scans the table); `match`: only thread ids containing this text, ignoring case;
        `status`: only threads whose status is one of these (done, interrupted, error, pending);
        `where`: a `status.ThreadFilter` (last update, metadata, the node that raised), applied
        to every thread the other filters keep, then paged."""
        if not where:
            return self.source.threads(limit, after, sort, match, status)
        from statectl.sources.base import page_lazily

        every = self.source.threads_where(where, sort, match, status)  # (SQLite, Postgres: narrowed in SQL)
        kept = (s for s in every if where.matches(s, self.failed_nodes))
        return page_lazily(kept, limit, after, key=lambda s: s.thread_id)

    def stream_threads(
        self,
        sort: str | None = None,
        match: str | None = None,
        status: frozenset[str] | None = None,
        where: ThreadFilter | None = None,
        after: str | None = None,
    ) -> Iterator[list[ThreadSummary]] | None:
        """Every thread `threads` would list with these filters (after thread `after`), in chunks
        as they are read (the same order), where the source can (SQLite, Postgres); else None
        (`threads` lists them)."""
        if not where:
            return self.source.stream_threads(sort, match, status, after)
        if not self.source.has_index:
            return None
        from statectl.sources.base import chunks_after

        kept = (s for s in self.source.threads_where(where, sort, match, status) if where.matches(s, self.failed_nodes))
        chunks = iter(lambda: list(islice(kept, self.stream_chunk)), [])
        return chunks if after is None else chunks_after(chunks, after, key=lambda s: s.thread_id)

    def each_thread(
        self, status: frozenset[str] | None = None, where: ThreadFilter | None = None
    ) -> Iterator[ThreadSummary]:
        """Every thread `threads(None, ...)` would list, one at a time: read a chunk at a time
        where the source can (`stream_threads`), so that a whole store's summaries are never
        held together."""
        chunks = self.stream_threads(status=status, where=where)
        if chunks is None:
            yield from self.threads(None, status=status, where=where)
            return
        for chunk in chunks:
            yield from chunk

    def failed_nodes(self, summary: ThreadSummary) -> set[str]:
        """The nodes whose task raised at a thread's newest root checkpoint (its state's tasks,
        as `show` gives them; a subgraph's failure is its parent node's)."""
        try:
            view = self.view(summary.thread_id, keys=frozenset())  # tasks need no state key's value
            snap = view.snapshot(view.records[0].checkpoint_id)
        except StatectlError:
            return set()
        return {t.name for t in snap.tasks if t.error is not None}

    def view(self, thread_id: str, checkpoint_ns: str = "", keys: frozenset[str] | None = None) -> ThreadView:
        """The `ThreadView` of one thread and namespace (cached); with `keys`, its snapshots
        hold only those state keys and no other channel's blob is fetched."""
        from statectl.errors import ThreadNotFound

        key = (thread_id, checkpoint_ns, keys)
        if key not in self._views:
            try:
                self._views[key] = self.new_view(thread_id, checkpoint_ns, keys)
            except ThreadNotFound:
                full = self.thread_id(thread_id)  # a unique prefix, or one line with suggestions
                self._views[key] = self.view(full, checkpoint_ns, keys)
            except NotFoundError:
                named = self._namespace(thread_id, checkpoint_ns) if checkpoint_ns else None
                if named is None:
                    raise
                self._views[key] = self.view(thread_id, named, keys)
        return self._views[key]

    def on(self, source: Source, graph: GraphSpec | None = None) -> Store:
        """A new store of this one's kind reading `source` (no view cached), with `graph`."""
        return type(self)(source, graph)

    def refresh(self, thread_id: str | None = None) -> None:
        """Forget the views read so far (of one thread, or all), so that the next `view` reads
        the rows again: what a live reader (the TUI's poll) calls when the store may have grown."""
        self._views = {k: v for k, v in self._views.items() if thread_id is not None and k[0] != thread_id}

    def new_view(self, thread_id: str, checkpoint_ns: str = "", keys: frozenset[str] | None = None) -> ThreadView:
        """A fresh `ThreadView` (rows read again), with the store's graph; where the graph does
        not describe the thread, `on_graph_note` hears it once."""
        from statectl.core.state import ThreadView

        view = ThreadView(self.source, thread_id, checkpoint_ns, keys, self.graph)
        if view.graph_note and view.graph_note not in self._said and self.on_graph_note is not None:
            self._said.add(view.graph_note)
            self.on_graph_note(view.graph_note)
        return view

    def _namespace(self, thread_id: str, text: str) -> str | None:
        """The one namespace `--ns text` names: a unique prefix of one (`research:` for
        `research:9495…`), or the subgraph node it ran (`research`, `deep` for
        `research:…|deep:…`). Several: NotFoundError listing them."""
        found = self.namespaces(thread_id)
        hits = [n for n in found if n and n.startswith(text)]
        if not hits:
            hits = [n for n in found if n and n.rsplit("|", 1)[-1].rsplit(":", 1)[0] == text]
        if len(hits) > 1:  # a parent's namespace is a prefix of its children's: the parent
            depth = min(n.count("|") for n in hits)
            hits = [n for n in hits if n.count("|") == depth]
        if len(hits) > 1:
            listed = ", ".join(repr(n) for n in hits[:5]) + (", ..." if len(hits) > 5 else "")
            raise NotFoundError(
                f"--ns {text!r} names {len(hits)} namespaces of thread {thread_id!r}: {listed}",
                "give more of the namespace",
            )
        return hits[0] if hits else None

    SUGGEST_FROM = 5000
    """Thread ids a "did you mean" compares with (the first by id: an error path stays quick)."""

    def thread_id(self, text: str, shown: Callable[[str], str] | None = None) -> str:
        """The thread `text` names: its exact id, or the one thread whose id starts with it. Else
        NotFoundError naming the candidates (an ambiguous prefix) or the closest ids. With
        `shown` (`statectl mcp`'s redaction), ids as it shows them: a prefix names a thread only
        where it is shown whole, candidates and suggestions are listed as shown (a search through
        hidden text is an oracle: a secret found a character at a time)."""
        from statectl.errors import NotFoundError, ThreadNotFound

        show = shown or (lambda tid: tid)

        from statectl.sources.base import namespaces_of

        try:  # (from the index where the source can: listing the rows reads every blob's pages on SQLite)
            if text and namespaces_of(self.source, text):
                return text
        except NotFoundError:  # (a server answers 404, or 422 for what is not a UUID: a prefix)
            pass
        found = [t.thread_id for t in self.source.threads(None, None, "id", text, None)] if text else []
        prefixed = [tid for tid in found if tid.startswith(text) and show(tid).startswith(text)]
        if len(prefixed) == 1:
            return prefixed[0]
        if prefixed:
            listed = ", ".join(map(show, prefixed[:5])) + (
                f", ... ({len(prefixed)} in all)" if len(prefixed) > 5 else ""
            )
            raise ThreadNotFound(f"thread {text!r} is ambiguous: {listed}", "give more of the id")
        import difflib

        ids = self.source.suggest_ids(self.SUGGEST_FROM)  # (a server: ids alone, its threads ask one state each)
        close = (
            difflib.get_close_matches(text, list(map(show, ids)), n=3, cutoff=0.6)
            or [show(tid) for tid in found if text.lower() in show(tid).lower()][:3]
        )
        raise ThreadNotFound(
            f"no thread {text!r} in {self.label}",
            f"did you mean {' or '.join(close)}?" if close else "run `statectl threads` to list the threads",
        )

    def namespaces(self, thread_id: str) -> list[str]:
        """The thread's `checkpoint_ns` values, root ('') first."""
        from statectl.sources.base import namespaces_of

        return sorted(namespaces_of(self.source, thread_id))

    def every_thread_id(self) -> list[str]:
        """Every thread's id: from the index alone where the source can (SQLite, Postgres: no
        thread's rows read), else as `threads` lists them."""
        if self.source.has_index:
            return self.source.thread_ids("", 1 << 62)
        return [t.thread_id for t in self.threads(None)]

    def iter_thread_ids(self, page: int = 2000) -> Iterator[str]:
        """Every thread's id, read a page at a time where the source can (SQLite, Postgres: from
        the index, in its order), so that a store of a million threads is never a list in memory;
        else `every_thread_id`."""
        if not self.source.has_index:
            yield from self.every_thread_id()
            return
        after = None
        while ids := self.source.thread_ids_after(after, page):
            yield from ids
            after = ids[-1]

    def selected_ids(self, names: Sequence[str] | None = None, status: frozenset[str] | None = None) -> Iterable[str]:
        """The threads a whole-store command (`prune`) works on: those `names` names (ids or
        unique prefixes), else every thread, a page of ids at a time (a million threads are
        never a list here); with `status`, only threads of one of these statuses (their
        summaries read a chunk at a time)."""
        if names:
            ids = [self.thread_id(t) for t in names]
            if status:
                keep = {t.thread_id for t in self.each_thread(status=status)}
                ids = [t for t in ids if t in keep]
            return ids
        if not status:
            return self.iter_thread_ids()
        return [t.thread_id for t in self.each_thread(status=status)]

    def count_threads(self) -> int:
        """How many threads the store holds (a progress bar's total)."""
        return self.source.count_threads()

    def key_snapshot(self, thread_id: str, checkpoint: str | None, checkpoint_ns: str, key: str | None) -> Snapshot:
        """`snapshot` of one state key (None: of all); a key the checkpoint does not hold is
        NotFoundError naming the keys it does."""
        from statectl.errors import NotFoundError

        if key is None:
            return self.snapshot(thread_id, checkpoint, checkpoint_ns)
        snap = self.snapshot(thread_id, checkpoint, checkpoint_ns, frozenset({key}))
        if not isinstance(snap.values, dict) or key not in snap.values:
            whole = self.snapshot(thread_id, checkpoint, checkpoint_ns).values
            names = ", ".join(whole) if isinstance(whole, dict) else "none"
            raise NotFoundError(f"no state key {key!r} at this checkpoint", f"keys: {names}")
        return snap

    @classmethod
    def of(cls, source: Source, graph: GraphSpec | None = None) -> Store:
        """A store of an open source, with the app's graph, else the one an export recorded."""
        notes: list[str] = []
        if graph is None and (raw := source.recorded_graph) is not None:  # an export's
            from statectl.core.graphspec import recorded

            graph = recorded(raw, notes)
        return cls(source, graph, notes)

    def snapshot(
        self, thread_id: str, checkpoint: str | None = None, checkpoint_ns: str = "", keys: frozenset[str] | None = None
    ) -> Snapshot:
        """The state at a checkpoint (id, prefix, `latest`, or step number); with `keys`, only
        those state keys are read (the header — next, tasks, interrupts — is whole)."""
        view = self.view(thread_id, checkpoint_ns, keys)
        return view.snapshot(view.resolve(checkpoint).checkpoint_id)

    def history(self, thread_id: str, checkpoint_ns: str = "") -> list[Snapshot]:
        """Every snapshot of the thread, newest first, like `get_state_history`."""
        view = self.view(thread_id, checkpoint_ns)
        return [view.snapshot(r.checkpoint_id) for r in view.records]

    def close(self) -> None:
        self.source.close()

    def abandon(self) -> None:
        """Leave without waiting for a read in progress on another thread (the process is about
        to end): only what must not outlive the process is removed (a private folder)."""
        self.source.abandon()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open(  # noqa: A001
    db: str | None = None,
    api_key: str | None = None,
    graph: str | None = None,
    python: str | None = None,
) -> Store:
    """Open a SQLite checkpoint file, a statectl export, a Postgres URL, a `langgraph dev` folder
    or a LangGraph server URL (`api_key` for a deployment), read-only.

    With no argument: $STATECTL_DB, $DATABASE_URI, then checkpoints.sqlite / langgraph.db in
    the current folder. `graph`: the app's graph as TARGET (`agent.py:graph`), loaded in the
    project's interpreter (`python`, else statectl's own when it has LangGraph, else the active
    or ./.venv virtualenv's), for snapshots exact where the data alone must infer.
    """
    from statectl.sources import open_source

    spec = None
    if graph is not None:
        from statectl.project.introspect import graph_spec

        spec = graph_spec(graph, python)
    return Store.of(open_source(db, api_key), spec)
