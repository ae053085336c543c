"""Which threads a listing shows, and their previews: the one selection `statectl threads`, the
TUI's threads screen and MCP's `list_threads` share (text filters parsed once, the same store
calls, the same previews)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from statectl.errors import StatectlError
from statectl.model import Record, record

if TYPE_CHECKING:
    from statectl.core.preview import Preview
    from statectl.core.reader import StoreReader
    from statectl.model import ThreadPage, ThreadSummary
    from statectl.sources.status import ThreadFilter

SORTS = ("recent", "id")


@record
class Selection(Record):
    """The threads to list: ids containing `match` (ignoring case), with one of the `status`es,
    kept by `where` (last update, metadata, the node that raised), in `sort` order (None: the
    source's own)."""

    match: str | None = None
    status: frozenset[str] | None = None
    where: ThreadFilter | None = None
    sort: str | None = None

    @classmethod
    def parse(
        cls,
        match: str | None = None,
        status: str | None = None,
        since: str | None = None,
        until: str | None = None,
        older_than: str | None = None,
        meta: list[str] | None = None,
        failed_node: str | None = None,
        sort: str | None = None,
    ) -> Selection:
        """The selection the options' texts say (`--status error,interrupted`, `--since 2h`, ...);
        a text that says nothing known is a StatectlError."""
        if sort not in (None, *SORTS):
            raise StatectlError(f"unknown sort {sort!r}", "use recent or id")
        from statectl.sources.status import parse_statuses, thread_filter

        wanted = parse_statuses(status)
        return cls(match or None, wanted, thread_filter(since, until, older_than, meta, failed_node), sort)

    def threads(self, store: StoreReader, limit: int | None = None, after: str | None = None) -> ThreadPage:
        """The selected threads, all or a page of `limit` after thread id `after` (no preview)."""
        return store.threads(limit, after, self.sort, self.match, self.status, self.where)

    def page(
        self, store: StoreReader, limit: int | None = None, after: str | None = None
    ) -> tuple[ThreadPage, dict[str, Preview]]:
        """`threads`, with the listed threads' previews (thread id -> `Preview`)."""
        rows = self.threads(store, limit, after)
        return rows, previewed(store, rows)

    def stream(self, store: StoreReader, after: str | None = None) -> Iterator[list[ThreadSummary]] | None:
        """Every selected thread after `after`, in chunks as they are read (the order of
        `threads`), where the source can; else None (list them with `threads`)."""
        return store.stream_threads(self.sort, self.match, self.status, self.where, after)


def previewed(store: StoreReader, rows: list[ThreadSummary]) -> dict[str, Preview]:
    """The previews of the listed threads only (the error, the pending interrupt, else the first
    user message)."""
    from statectl.core.preview import previews

    return previews(store.source, rows)
