"""HTTP to a LangGraph server with every bound in one place: the body of one response, the
pages, rows, bytes and time of one call of the source (`Budget`), and what a listing keeps of
the rows it pages through (`ServerSource` in `server.py` uses them)."""

from __future__ import annotations

import os
from typing import Any

import orjson

from statectl.errors import SourceError

MAX_BODY_BYTES = 256 << 20
"""The largest HTTP response body read (`STATECTL_MAX_RESPONSE_BYTES`); more is one clear line."""
MAX_PAGES = 1_000
"""The most pages one call follows (`STATECTL_MAX_PAGES`), whatever the paging: offset pages of
the thread search, `before` pages of a history, its subgraphs' histories included."""
MAX_ITEMS = 20_000
"""The most rows (threads, checkpoints) one call takes (`STATECTL_MAX_ITEMS`): pages larger than
asked for count whole."""
MAX_TOTAL_BYTES = 128 << 20
"""The most response bytes one call reads in all (`STATECTL_MAX_TOTAL_BYTES`): a history holds
what it read (about twice as much in memory)."""
DEADLINE_TIMEOUTS = 10
"""One call's requests end within this many timeouts in all (`STATECTL_HTTP_DEADLINE` seconds)."""


class ResponseTooLarge(Exception):
    """A response body past the limit, or compressed (a gzip bomb is not inflated)."""


class Spent(Exception):
    """One call's budget of response bytes is spent (raised while a body is read)."""


class Budget:
    """What one call of the source (a listing, a history, a state) may take from the server, in
    every paging style the API allows: pages, rows, bytes and time. Past any, one line."""

    def __init__(self, pages: int, items: int, total: int, seconds: float) -> None:
        import time

        self.pages, self.items, self.total, self.seconds = pages, items, total, seconds
        self.pages_read = self.items_read = self.bytes_read = 0
        self.deadline = time.monotonic() + seconds

    def read(self, size: int) -> None:
        """`size` more response bytes (called by the transport as a body streams in)."""
        self.bytes_read += size
        if self.bytes_read > self.total:
            raise Spent(f"more than {self.total:,} bytes in all")

    def left(self) -> float:
        import time

        return self.deadline - time.monotonic()


def bounded_transport(httpx: Any, limit: int, meter: Any) -> Any:
    """An httpx transport that asks for uncompressed bodies and reads at most `limit` bytes of
    one, each chunk counted by `meter(size)` (the call's budget); a single retry of a connect (a
    refused connection fails at once, not after five), and of a request whose connection the
    server closed or reset before answering."""

    class Bounded(httpx.BaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.HTTPTransport(retries=1)

        def handle_request(self, request: Any) -> Any:
            request.headers["Accept-Encoding"] = "identity"
            try:
                response = self.inner.handle_request(request)
            except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError):
                # a kept-alive connection the server closed as this request went out on it
                # (`langgraph dev` closes one after an error answer, or when it has been idle):
                # asked once more, on a new connection — every request statectl sends a server reads
                response = self.inner.handle_request(request)
            if response.headers.get("content-encoding", "identity").lower() not in ("identity", ""):
                response.close()
                raise ResponseTooLarge("a compressed response (statectl asked for none)")
            declared = response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > limit:
                response.close()
                raise ResponseTooLarge(f"a response of {int(declared):,} bytes")
            stream = response.stream

            class Capped(httpx.SyncByteStream):
                def __iter__(self) -> Any:
                    seen = 0
                    for chunk in stream:
                        seen += len(chunk)
                        if seen > limit:
                            raise ResponseTooLarge(f"a response of more than {limit:,} bytes")
                        meter(len(chunk))
                        yield chunk

                def close(self) -> None:
                    stream.close()

            response.stream = Capped()
            return response

        def close(self) -> None:
            self.inner.close()

    return Bounded()


def seconds_in(var: str, default: float) -> float:
    raw = os.environ.get(var)
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise SourceError(f"{var} is not a number of seconds: {raw!r}") from None
    if value <= 0:
        raise SourceError(f"{var} must be more than 0 seconds")
    return value


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def thread_key(row: dict) -> str | None:
    """A thread search row's id (None: a row without one, left out)."""
    tid = row.get("thread_id")
    return str(tid) if isinstance(tid, (str, int)) and str(tid) else None


def checkpoint_key(snap: dict) -> str | None:
    """A history row's checkpoint id (None: a row without one, left out)."""
    cp = snap.get("checkpoint")
    cid = cp.get("checkpoint_id") if isinstance(cp, dict) else snap.get("checkpoint_id")
    return cid if isinstance(cid, str) and cid else None


THREAD_KEYS = ("thread_id", "status", "metadata", "updated_at", "created_at")
"""What `threads` keeps of a search row while it pages (the row's values can be the state)."""
META_VALUE_BYTES = 4096
"""A search row's metadata values longer than this (as JSON) are not kept while paging: what
`--meta KEY=VALUE` matches is short, and a listing holds up to MAX_ITEMS rows."""


def thread_row(row: dict) -> dict:
    out = {k: row[k] for k in THREAD_KEYS if k in row}
    meta = out.get("metadata")
    out["metadata"] = {k: v for k, v in meta.items() if short_value(v)} if isinstance(meta, dict) else {}
    return out


def short_value(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float)):
        return True
    if isinstance(value, str):
        return len(value) <= META_VALUE_BYTES
    try:
        return len(orjson.dumps(value)) <= META_VALUE_BYTES
    except (TypeError, orjson.JSONEncodeError):
        return False
