"""The threads screen's first page, read while Textual is imported and starts (no Textual here).

On a store of 100,000 threads the first page (newest first: the whole index grouped) takes about
as long as Textual's import and start-up; read one after the other they added up. `statectl tui`
starts this read as soon as the store is open, and the screen takes its answer when it first
loads (`StatectlApp.read` then says a failure as it says any)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from statectl.core.preview import Preview
    from statectl.core.reader import StoreReader
    from statectl.model import ThreadPage

    Page = tuple[ThreadPage, dict[str, Preview]]
    """A page of threads and their previews (thread id -> `Preview`)."""

PAGE = 500
"""Threads read at a time by the threads screen (keyset pages: the next when the cursor nears
the end)."""


class EarlyRead:
    """`fn()` run in a thread now, under `lock` (the app's one-reader lock, handed to the app).
    The lock is taken before the thread starts and let go when `fn` is done: a reader that takes
    it next (`StatectlApp.read`, then `result`) waits for the answer, never for a thread that
    has not yet taken it."""

    def __init__(self, fn: Callable[[], Page]) -> None:
        self.lock = threading.Lock()
        self._value: Page | None = None
        self._error: BaseException | None = None
        self.lock.acquire()
        self._thread = threading.Thread(target=self._run, args=(fn,), name="statectl-first-page", daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], Page]) -> None:
        try:
            self._value = fn()
        except BaseException as exc:  # (raised again where the app reads the answer)
            self._error = exc
        finally:
            self.lock.release()

    def result(self) -> Page:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return cast("Page", self._value)


def threads_page(store: StoreReader, page: int, after: str | None = None) -> Page:
    """A page of threads and their PREVIEW cells (what the threads screen reads each time)."""
    from statectl.core.listing import Selection

    return Selection().page(store, page, after)


def first_page(store: StoreReader, page: int) -> EarlyRead:
    """The first page of threads and their previews, read now."""
    return EarlyRead(lambda: threads_page(store, page))
