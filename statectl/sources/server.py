"""A LangGraph server over HTTP (`langgraph dev`, LangGraph Platform / LangSmith deployments).

The server computes every state itself (`POST /threads/{id}/history`, `GET /threads/{id}/state`):
statectl shows it as it comes. Each checkpoint is kept as the server's snapshot (`$server` in the
checkpoint dict, read by `ThreadView.snapshot`), and the writes the rest of statectl reads (who
ran, what changed, interrupts, errors) are the snapshot's own tasks: their results, errors and
interrupts. langgraph-sdk, the server's own client, is imported only here (`statectl[server]`).

What the JSON the server sends cannot say: types the checkpoint keeps (UUIDs, datetimes, sets,
bytes) arrive as strings and lists, and messages as `model_dump()` dicts; messages are recognised
by their fields and shown in the same `{"$type", "data"}` form as every other source.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from statectl.codec.formats import SERVER_TYPE
from statectl.codec.formats.server import server_checkpoint, server_writes
from statectl.codec.values import cut_deep
from statectl.errors import NotFoundError, SourceError, ThreadNotFound, install_hint
from statectl.model import CheckpointRecord, ThreadPage, ThreadSummary, WriteRecord
from statectl.sources.base import Source, page, whole_number
from statectl.sources.http import (
    DEADLINE_TIMEOUTS,
    MAX_BODY_BYTES,
    MAX_ITEMS,
    MAX_PAGES,
    MAX_TOTAL_BYTES,
    Budget,
    ResponseTooLarge,
    Spent,
    as_list,
    bounded_transport,
    checkpoint_key,
    seconds_in,
    thread_key,
    thread_row,
)

KEY_VARS = ("LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")
PAGE = 100


def is_server_url(spec: str) -> bool:
    return spec.startswith(("http://", "https://"))


def safe_url(url: str) -> str:
    """The URL without user, password, query or fragment: what messages may show."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def api_key(given: str | None = None) -> str | None:
    """--api-key, else the variables langgraph-sdk reads, in its order."""
    if given:
        return given
    for var in KEY_VARS:
        if value := os.environ.get(var):
            return value
    return None


LOOPBACK = ("localhost", "127.0.0.1", "::1", "ip6-localhost")


def _refuse_plain_http(parts: Any, key: str | None) -> None:
    """An API key is never sent over plain http:// to another machine (anyone on the path reads
    it), unless `--insecure` says so; to this machine (langgraph dev) it is fine."""
    from statectl.settings import current

    host = (parts.hostname or "").lower()
    if key and parts.scheme == "http" and not (host in LOOPBACK or host.startswith("127.")) and not current().insecure:
        raise SourceError(
            f"an API key would go to {host} over plain http://, unencrypted",
            "use https://, or --insecure to send it anyway",
        )


class ServerSource(Source):
    """A LangGraph server, read over its HTTP API (GET and the read-only search/history POSTs)."""

    kind = "server"
    """What the store is, for the commands that act on one kind only (`Source.kind`)."""
    as_stored = False
    """Snapshots as the server answers them (JSON), not as its store holds them."""
    notes: tuple[str, ...] = ()
    recorded_graph: Any = None

    def __init__(self, url: str, key: str | None = None, timeout: float | None = None) -> None:
        self.label = safe_url(url)
        if timeout is None:
            from statectl.sources.base import timeout as configured

            timeout = configured(configured(30), "STATECTL_HTTP_TIMEOUT")  # (--timeout wins over both)
        try:
            import httpx
            from langgraph_sdk import get_sync_client
        except ImportError:
            raise SourceError("reading a LangGraph server needs langgraph-sdk", install_hint("server")) from None
        self._httpx = httpx
        self.timeout = timeout
        parts = urlsplit(url)
        _refuse_plain_http(parts, api_key(key))
        base = urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path.rstrip("/"), parts.query, ""))
        self._client = get_sync_client(
            url=base,
            api_key=api_key(key),
            # (httpx takes a Timeout; the SDK's annotation names only tuples)
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),  # type: ignore[arg-type]
        )
        self.max_bytes = whole_number("STATECTL_MAX_RESPONSE_BYTES", MAX_BODY_BYTES)
        self.max_pages = whole_number("STATECTL_MAX_PAGES", MAX_PAGES)
        self.max_items = whole_number("STATECTL_MAX_ITEMS", MAX_ITEMS)
        self.max_total = whole_number("STATECTL_MAX_TOTAL_BYTES", MAX_TOTAL_BYTES)
        self.deadline = seconds_in("STATECTL_HTTP_DEADLINE", DEADLINE_TIMEOUTS * timeout)
        self._budget = self._begin()
        # the SDK's client, with a transport that bounds each body (the SDK builds one with five
        # retries and no bound; `_transport` is httpx's documented-by-use attribute for it)
        self._client.http.client._transport = bounded_transport(
            httpx, self.max_bytes, lambda size: self._budget.read(size)
        )
        self._snaps: dict[tuple[str, str, str], dict] = {}
        info = self._call(lambda: self._client.http.get("/info"), what="GET /info")
        if not isinstance(info, dict) or not ("version" in info or "langgraph_py_version" in info):
            raise SourceError(
                f"{self.label} is not a LangGraph server (GET /info answered without a version)",
                "give the server's base URL, e.g. http://127.0.0.1:2024",
            )
        self.server_version = info.get("version")

    # -- HTTP, with every failure one line --------------------------------------------------
    def _call(self, fn: Any, what: str, thread_id: str | None = None) -> Any:
        """`fn` (one request) with every failure one line, and the whole request bounded by the
        timeout: a server that drips its headers or body byte by byte (each read inside httpx's
        per-read timeout) is given up at the deadline. The request then runs on in a daemon
        thread that holds nothing of statectl's, and ends with the process."""
        import threading

        left = self._budget.left()
        if left <= 0:
            self._overspent(what)
        box: dict[str, Any] = {}

        def run() -> None:
            try:  # (the values the server computed, no deeper than a store's: what walks them stops)
                box["value"] = cut_deep(fn())
            except BaseException as exc:  # (re-raised below, in the caller's thread)
                box["error"] = exc

        worker = threading.Thread(target=run, name="statectl-http", daemon=True)
        worker.start()
        worker.join(min(self.timeout + 1, left))
        if worker.is_alive() and self._budget.left() <= 0:
            self._overspent(what)
        if worker.is_alive():
            raise SourceError(
                f"{self.label} did not finish answering {what} within {self.timeout:g} s",
                "a slow or hostile server: --timeout SECONDS (or STATECTL_HTTP_TIMEOUT) waits longer",
            )
        if "error" in box:
            return self._failed(box["error"], what, thread_id)
        return box.get("value")

    def _begin(self) -> Budget:
        """A fresh budget, at the start of each call of the source (one command makes few)."""
        self._budget = Budget(self.max_pages, self.max_items, self.max_total, self.deadline)
        return self._budget

    def _overspent(self, what: str) -> None:
        raise SourceError(
            f"{self.label} was still answering {what} after {self._budget.seconds:g} s in all: stopped",
            "a slow or hostile server: STATECTL_HTTP_DEADLINE=SECONDS waits longer",
        )

    def _failed(self, error: BaseException, what: str, thread_id: str | None) -> Any:
        httpx = self._httpx
        try:
            raise error
        except Spent as exc:
            raise SourceError(
                f"{self.label} sent {exc} to {what} and the requests before it: stopped",
                "STATECTL_MAX_TOTAL_BYTES=N reads more",
            ) from None
        except ResponseTooLarge as exc:
            raise SourceError(
                f"{self.label} sent {exc} to {what}: not read",
                "STATECTL_MAX_RESPONSE_BYTES=N reads larger responses",
            ) from None
        except httpx.HTTPStatusError as exc:
            code = exc.response.status_code
            if code in (401, 403):
                raise SourceError(
                    f"{self.label} refused the request ({code}): "
                    f"{'no API key given' if not self._has_key() else 'the API key was not accepted'}",
                    "pass --api-key or set LANGSMITH_API_KEY / LANGGRAPH_API_KEY",
                ) from None
            if code == 404 and thread_id is not None:
                raise ThreadNotFound(
                    f"no thread {thread_id!r} on {self.label}", "run `statectl threads` to list the threads"
                ) from None
            if code == 404:
                raise SourceError(
                    f"{self.label} is not a LangGraph server ({what} answered 404)",
                    "give the server's base URL, e.g. http://127.0.0.1:2024",
                ) from None
            if code == 422 and thread_id is not None:  # (not a UUID: a prefix, or a typo; Store.thread_id)
                raise ThreadNotFound(
                    f"no thread {thread_id!r} on {self.label} (not a thread id the server accepts)",
                    "thread ids on a server are UUIDs: give one whole, or a unique prefix of one",
                ) from None
            raise SourceError(f"{self.label} answered {code} to {what}") from None
        except httpx.TimeoutException:
            raise SourceError(
                f"{self.label} did not answer {what} within {self.timeout:g} s",
                "is the server overloaded? --timeout SECONDS (or STATECTL_HTTP_TIMEOUT) waits longer",
            ) from None
        except httpx.ConnectError as exc:
            reason = "connection refused" if "refused" in str(exc).lower() else "cannot connect"
            raise SourceError(
                f"cannot reach {self.label}: {reason}",
                "is the server running? `langgraph dev` listens on http://127.0.0.1:2024",
            ) from None
        except httpx.HTTPError as exc:
            raise SourceError(f"cannot read {self.label}: {type(exc).__name__}") from None
        except RecursionError:  # (JSON nested deeper than Python's parser goes)
            raise SourceError(f"{self.label} answered {what} with JSON nested too deeply to read") from None
        except ValueError as exc:  # a body that is not JSON
            if "depth limit" in str(exc):  # (orjson reads 1,024 levels)
                raise SourceError(
                    f"{self.label} answered {what} with JSON nested more than 1,024 levels deep: not read"
                ) from None
            raise SourceError(f"{self.label} is not a LangGraph server ({what} did not answer JSON)") from None

    def _page(
        self, fn: Any, what: str, seen: set[str], key: Any, thread_id: str | None = None
    ) -> tuple[list[dict], int]:
        """One page of a listing, within the call's budget: its rows that are objects with a
        `key`, those `seen` before left out (a live server's offsets shift as threads are
        updated), and how many rows the page held (the next offset, the end of the listing). A page of
        nothing new (the same page again, pages that cycle) ends the listing in one line, as
        do more pages or rows than the bounds (a server that pages forever, in any style)."""
        budget = self._budget
        if budget.pages_read >= budget.pages:
            raise SourceError(
                f"{self.label} answered more than {budget.pages:,} pages of {what}: stopped",
                "STATECTL_MAX_PAGES=N follows more",
            )
        budget.pages_read += 1
        rows = self._call(fn, what, thread_id)
        if not isinstance(rows, list):
            raise SourceError(f"{self.label} is not a LangGraph server ({what} did not answer a list)")
        budget.items_read += len(rows)
        if budget.items_read > budget.items:
            raise SourceError(
                f"{self.label} answered more than {budget.items:,} rows of {what}: stopped",
                "STATECTL_MAX_ITEMS=N reads more",
            )
        fresh: list[dict] = []
        keyed = False
        for row in rows:
            k = key(row) if isinstance(row, dict) else None
            keyed = keyed or k is not None
            if k is not None and k not in seen:
                seen.add(k)
                fresh.append(row)
        if keyed and not fresh:
            raise SourceError(
                f"{self.label} answered {what} with the rows of an earlier page again "
                f"(page {budget.pages_read}): its paging does not advance; stopped"
            )
        return fresh, len(rows)

    def _has_key(self) -> bool:
        return any(k.lower() == "x-api-key" for k in self._client.http.client.headers)

    # -- threads ----------------------------------------------------------------------------
    def default_sort(self) -> str:
        return "recent"

    def _search(self, status: str | None, offset: int, limit: int, sort: str) -> list[dict]:
        return self._call(
            lambda: self._client.threads.search(
                status=status,  # type: ignore[arg-type]  # (one of the server's)
                limit=limit,
                offset=offset,
                sort_by="updated_at" if sort == "recent" else "thread_id",
                sort_order="desc" if sort == "recent" else "asc",
            ),
            what="POST /threads/search",
        )

    def _summary(self, thread: dict) -> ThreadSummary:
        tid = str(thread.get("thread_id"))
        state = self._call(lambda: self._client.threads.get_state(tid), "GET /threads/{id}/state", tid)
        if not isinstance(state, dict):
            raise SourceError(f"{self.label} is not a LangGraph server (GET /threads/{{id}}/state answered no object)")
        found = state.get("metadata")
        meta: dict[str, Any] = found if isinstance(found, dict) else {}
        tasks = [t for t in as_list(state.get("tasks")) if isinstance(t, dict)]
        if any(t.get("error") for t in tasks):
            status = "error"
        elif any(t.get("interrupts") for t in tasks):
            status = "interrupted"
        elif state.get("next"):  # as `status.thread_status` tells it from the rows: a step begun
            # (a task finished) or a run not started (an input checkpoint) is pending; tasks due
            # with none run (a breakpoint, an update_state not run since) is interrupted
            begun = meta.get("source") == "input" or any(t.get("result") is not None for t in tasks)
            status = "pending" if begun else "interrupted"
        else:
            status = "done"
        graph = thread["metadata"].get("graph_id") or meta.get("graph_id")
        cid = checkpoint_key(state) or ""
        step = meta.get("step")
        return ThreadSummary(
            tid,
            None,
            None,
            cid,
            thread.get("updated_at") or state.get("created_at"),
            step if isinstance(step, int) else None,
            status,
            server_status=thread.get("status"),
            graph_id=graph if isinstance(graph, str) else None,
            metadata={**meta, **thread["metadata"]},
        )

    def threads(
        self,
        limit: int | None = None,
        after: str | None = None,
        sort: str | None = None,
        match: str | None = None,
        status: frozenset[str] | None = None,
    ) -> ThreadPage:
        """The server's thread search, newest update first (or by id), paged by the server;
        each thread's status from its current state (one request per thread shown)."""
        sort = sort or "recent"
        self._begin()
        found: list[dict] = []
        offset, seen_after, seen = 0, after is None, set[str]()
        want = None if not limit else limit + 1
        while True:
            got, held = self._page(
                lambda o=offset: self._search(None, o, PAGE, sort), "POST /threads/search", seen, thread_key
            )
            rows = [thread_row(r) for r in got]
            offset += held
            for row in rows:
                tid = str(row.get("thread_id"))
                if not seen_after:
                    seen_after = tid == after
                    continue
                if match and match.casefold() not in tid.casefold():
                    continue
                found.append(row)
            complete = held < PAGE
            if complete or (want is not None and seen_after and len(found) >= want and not status):
                break
        if not seen_after:
            raise NotFoundError(f"no thread {after!r} to page after", "pass a thread id from the last page")
        out: list[ThreadSummary] = []
        for i, row in enumerate(found):
            summary = self._summary(row)
            if not status or summary.status in status:
                out.append(summary)
            if want is not None and len(out) >= want:
                complete = complete and i == len(found) - 1
                break
        result = page(out, limit, None, key=lambda s: s.thread_id)
        # a count needs every thread: known when the search was read to its end (from the start)
        result.total = len(out) if complete and after is None else None
        return result

    def suggest_ids(self, limit: int) -> list[str]:
        """Up to `limit` thread ids, by id, from the search alone (a "did you mean" compares
        with them; `threads` would ask each thread's state)."""
        self._begin()
        out: list[str] = []
        offset, seen = 0, set[str]()
        while True:
            rows, held = self._page(
                lambda o=offset: self._search(None, o, PAGE, "id"), "POST /threads/search", seen, thread_key
            )
            offset += held
            out += [str(r.get("thread_id")) for r in rows]
            if held < PAGE or len(out) >= limit:
                break
        return out[:limit]

    # -- one thread -------------------------------------------------------------------------
    def _history(self, thread_id: str, checkpoint_ns: str) -> list[dict]:
        out: list[dict] = []
        before: Any = None
        seen = self._history_seen.setdefault(checkpoint_ns, set())
        while True:
            kw: dict[str, Any] = {"limit": PAGE}
            if checkpoint_ns:
                kw["checkpoint"] = {"checkpoint_ns": checkpoint_ns}
            if before is not None:
                kw["before"] = before
            rows, held = self._page(
                lambda kw=kw: self._client.threads.get_history(thread_id, **kw),
                "POST /threads/{id}/history",
                seen,
                checkpoint_key,
                thread_id,
            )
            out.extend(rows)
            last = checkpoint_key(rows[-1]) if rows else None
            if held < PAGE or last is None:
                return out
            before = {"checkpoint_id": last, **({"checkpoint_ns": checkpoint_ns} if checkpoint_ns else {})}

    def _keep(self, thread_id: str, checkpoint_ns: str, snap: dict) -> CheckpointRecord:
        if not isinstance(snap, dict):
            raise SourceError(f"{self.label} is not a LangGraph server (a state that is no object)")
        up = snap.get("parent_checkpoint")
        parent: dict[str, Any] = up if isinstance(up, dict) else {}
        cid = checkpoint_key(snap) or ""
        self._snaps[(thread_id, checkpoint_ns, cid)] = snap
        found = snap.get("metadata")
        meta: dict[str, Any] = found if isinstance(found, dict) else {}
        return CheckpointRecord(
            thread_id, checkpoint_ns, cid, parent.get("checkpoint_id") or snap.get("parent_checkpoint_id"), meta
        )

    def checkpoints(self, thread_id: str, checkpoint_ns: str | None = "") -> list[CheckpointRecord]:
        """The thread's history from the server, newest first; with None, the root namespace and
        every subgraph namespace its tasks name, recursively."""
        self._begin()
        self._history_seen: dict[str, set[str]] = {}
        todo = [checkpoint_ns if checkpoint_ns is not None else ""]
        done: set[str] = set()
        out: list[CheckpointRecord] = []
        while todo:
            ns = todo.pop(0)
            if ns in done:
                continue
            done.add(ns)
            for snap in self._history(thread_id, ns):
                out.append(self._keep(thread_id, ns, snap))
                if checkpoint_ns is None:
                    todo += [
                        t["checkpoint"]["checkpoint_ns"]
                        for t in as_list(snap.get("tasks"))
                        if isinstance(t, dict)
                        and isinstance(t.get("checkpoint"), dict)
                        and isinstance(t["checkpoint"].get("checkpoint_ns"), str)
                        and t["checkpoint"]["checkpoint_ns"]
                    ]
        out.sort(key=lambda r: r.checkpoint_id, reverse=True)
        return out

    def _snap(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict:
        key = (thread_id, checkpoint_ns, checkpoint_id)
        if key not in self._snaps:
            self._begin()
            self._keep(
                thread_id,
                checkpoint_ns,
                self._call(
                    lambda: self._client.threads.get_state(
                        thread_id,
                        checkpoint={"checkpoint_id": checkpoint_id, "checkpoint_ns": checkpoint_ns},  # type: ignore[arg-type]
                    ),
                    "GET /threads/{id}/state",
                    thread_id,
                ),
            )
        return self._snaps[key]

    def raw_checkpoint(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> tuple[str | None, bytes | None]:
        return SERVER_TYPE, orjson.dumps(self._snap(thread_id, checkpoint_ns, checkpoint_id))

    def checkpoint(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, channels: frozenset[str] | None = None
    ) -> dict:
        return server_checkpoint(self._snap(thread_id, checkpoint_ns, checkpoint_id))

    def writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> list[WriteRecord]:
        return server_writes(self._snap(thread_id, checkpoint_ns, checkpoint_id), checkpoint_id)

    def channel_writes(self, thread_id: str, checkpoint_ns: str, channel: str) -> dict[str, list[WriteRecord]]:
        return {}  # the server sends whole values: nothing to replay

    def task_paths(self, thread_id: str, checkpoint_ns: str) -> list[str]:
        return []

    def locate(self, checkpoint_id: str) -> list[tuple[str, str]]:
        return sorted({(t, ns) for t, ns, c in self._snaps if c == checkpoint_id})

    def close(self) -> None:
        try:
            self._client.http.client.close()
        except Exception:
            pass
