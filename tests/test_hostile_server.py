"""A hostile LangGraph "server" on 127.0.0.1 (written here: a few lines of http.server): a body
dripped byte by byte, listings that page forever in every paging style the API allows, pages
that repeat, huge bodies, a gzip bomb, values nested thousands deep. Each ends within its bound,
with one line and exit 2 (or, for a value nested within what JSON reads, the value shown cut
with a marker); nothing is read past the limits. Every request loop is bounded and the server
stops by itself. (Hand-written answers: deliberately hostile input.)"""

from __future__ import annotations

import gzip
import json
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

INFO = json.dumps({"version": "0.0.hostile"}).encode()
BOMB = gzip.compress(b"[" + b" " * (64 << 20) + b"]")
"""64 MiB of JSON in 64 kB, made once (made per request, it took longer than the timeout)."""
TID = "00000000-0000-4000-8000-000000000001"


def snapshot(cid: int, values=None, metadata=None, tasks=(), interrupts=()) -> dict:
    """A StateSnapshot as `GET /threads/{id}/state` and `POST /threads/{id}/history` send it."""
    own = f"1f000000-0000-6000-8000-{cid:012d}"
    parent = f"1f000000-0000-6000-8000-{cid - 1:012d}" if cid > 1 else None
    return {
        "values": {"n": cid} if values is None else values,
        "next": [],
        "tasks": list(tasks),
        "metadata": {"source": "loop", "step": cid, **(metadata or {})},
        "created_at": "2026-01-01T00:00:00+00:00",
        "checkpoint": {"checkpoint_id": own, "thread_id": TID, "checkpoint_ns": ""},
        "parent_checkpoint": {"checkpoint_id": parent, "thread_id": TID, "checkpoint_ns": ""} if parent else None,
        "checkpoint_id": own,
        "parent_checkpoint_id": parent,
        "interrupts": list(interrupts),
    }


def thread_row(tid: str) -> dict:
    return {"thread_id": tid, "status": "idle", "metadata": {}, "updated_at": "2026-01-01T00:00:00+00:00"}


class Handler(BaseHTTPRequestHandler):
    answer = None  # (set per server: answer(handler, method, path, body) -> bytes | None)
    seen: list

    def log_message(self, *args) -> None:  # (quiet)
        pass

    def send(self, body: bytes, extra: dict | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null") if length else None
        self.seen.append((method, self.path, body))
        if self.path.startswith("/info"):
            self.send(INFO)
            return
        out = type(self).answer(self, method, self.path, body)
        if out is not None:
            self.send(out)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")


def _server(answer):
    class Mine(Handler):
        pass

    Mine.answer = staticmethod(answer)
    Mine.seen = []

    class Quiet(ThreadingHTTPServer):
        def handle_error(self, request, client_address) -> None:  # (statectl hung up: expected)
            pass

    server = Quiet(("127.0.0.1", 0), Mine)
    server.daemon_threads = True
    server.seen = Mine.seen
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server


@pytest.fixture
def hostile():
    """start(answer) -> (url, requests seen): a server whose every answer but /info is answer's."""
    servers = []

    def start(answer):
        server = _server(answer)
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}", server.seen

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _one_line(r, needle: str, code: int = 2) -> None:
    assert r.code == code, r.err
    assert needle in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert "internal error" not in r.err


# -- the answer itself: dripped, huge, compressed -------------------------------------------
def _drip(h, method, path, body):  # headers at once, then the body one byte every half second
    out = b'[{"thread_id": "t"}]'
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(out)))
    h.end_headers()
    for b in out:
        h.wfile.write(bytes([b]))
        h.wfile.flush()
        time.sleep(0.5)


def _endless(h, method, path, body):  # no length, a body that never ends (1 MB a write)
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.end_headers()
    h.wfile.write(b"[")
    chunk = b'{"thread_id": "x"},' * 50_000
    try:
        for _ in range(100_000):
            h.wfile.write(chunk)
    except OSError:
        pass


def _declared(h):  # a body announced as 1 GiB (then a few bytes and the connection closed)
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(1 << 30))
    h.end_headers()
    h.wfile.write(b"[")


@pytest.mark.parametrize(
    ("answer", "env", "needle"),
    [
        (_drip, {}, "did not finish answering POST /threads/search within 2 s"),
        (
            lambda h, *a: b"[" + b" " * (8 << 20) + b"]",
            {"STATECTL_MAX_RESPONSE_BYTES": str(1 << 20)},
            "sent a response of 8,388,610 bytes",
        ),
        (
            lambda h, *a: h.send(BOMB, {"Content-Encoding": "gzip"}),
            {},
            "sent a compressed response (statectl asked for none)",
        ),
        (lambda h, *a: _declared(h), {}, "sent a response of 1,073,741,824 bytes"),
        (_endless, {"STATECTL_MAX_RESPONSE_BYTES": str(4 << 20)}, "sent a response of more than 4,194,304 bytes"),
    ],
    ids=["drip", "huge", "bomb", "declared-1gb", "endless"],
)
def test_a_hostile_answer_ends_in_one_line(run, hostile, monkeypatch, answer, env, needle):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    url, _seen = hostile(answer)
    _one_line(run("threads", "--db", url, "--json", "--timeout", "2"), needle)


# -- values nested thousands deep (issue 50 item 12) ---------------------------------------------
def _nested(depth: int, kind: str) -> str:
    """JSON text of a value `depth` levels deep: lists, dicts, or both in turn."""
    opens, closes = [], []
    for i in range(depth):
        if kind == "list" or (kind == "mixed" and i % 2):
            opens.append("["), closes.append("]")
        else:
            opens.append('{"k":'), closes.append("}")
    return "".join(opens) + '"leaf"' + "".join(reversed(closes))


def _deep_answer(where: str, depth: int, kind: str):
    """A server of one thread with two checkpoints; the newest holds a value `depth` deep in
    its state values, metadata, a task's result or an interrupt."""
    mark = '"DEEP"'
    newest = snapshot(
        2,
        values={"n": 2, "deep": "DEEP"} if where == "values" else None,
        metadata={"deep": "DEEP"} if where == "metadata" else None,
        tasks=[
            {
                "id": "task-1",
                "name": "node",
                "path": ["__pregel_pull", "node"],
                "error": None,
                "interrupts": [{"id": "i-1", "value": "DEEP"}] if where == "interrupts" else [],
                "checkpoint": None,
                "state": None,
                "result": {"deep": "DEEP"} if where == "tasks" else None,
            }
        ],
        interrupts=[{"id": "i-1", "value": "DEEP"}] if where == "interrupts" else [],
    )
    newest_text = json.dumps(newest).replace(mark, _nested(depth, kind)).encode()
    older = json.dumps(snapshot(1)).encode()

    def answer(h, method, path, body):
        if path.startswith("/threads/search"):
            return json.dumps([thread_row(TID)]).encode()
        if path.endswith("/history"):
            return b"[" + newest_text + b"," + older + b"]"
        if "/state" in path:
            return older if "000000000001" in json.dumps(body) else newest_text  # (one by its id)
        return b"{}"

    return answer


DEEP_COMMANDS = (
    ["threads"],
    ["threads", "--json"],
    ["log", TID],
    ["log", TID, "--json"],
    ["log", TID, "-p"],
    ["show", TID],
    ["show", TID, "--json"],
    ["diff", TID],
    ["diff", TID, "--json"],
    ["export", TID, "-o", "-"],
)


@pytest.mark.parametrize("kind", ["list", "dict", "mixed"])
@pytest.mark.parametrize("where", ["values", "metadata", "tasks", "interrupts"])
@pytest.mark.parametrize("depth", [1_000, 10_000, 100_000])
def test_a_value_nested_thousands_deep_is_cut_or_one_line(run, hostile, where, depth, kind):
    """1,000 deep (within what JSON reads): every command shows it, cut at 200 levels with a
    marker (it ended in RecursionError, and `export` in TypeError past orjson's 254); deeper
    than JSON reads: one line, exit 2, naming why. Never an internal error."""
    url, _seen = hostile(_deep_answer(where, depth, kind))
    for args in DEEP_COMMANDS:
        r = run(*args, "--db", url, "--timeout", "10")
        if depth <= 1_000:
            assert r.code == 0, (args, r.err)
            assert "internal error" not in r.err
            if args[:1] == ["show"] and "--json" in args and where != "metadata":
                assert "nested deeper than 200 levels" in r.out, args
        else:
            _one_line(r, "with JSON nested more than 1,024 levels deep: not read")


# -- listings that never end, in every paging style the API allows (issue 50 item 11) --------------
def _ids(first: int, n: int) -> list[str]:
    return [f"00000000-0000-4000-8000-{i:012d}" for i in range(first, first + n)]


def _search_pages(style: str):
    """`POST /threads/search` paged by `offset`/`limit`, never ending: new ids every page, the
    offset ignored (the same page again), three pages in a cycle, pages overlapping by half,
    pages ten times larger than asked, or pages of 100 kB rows."""

    def rows(body: dict) -> list[dict]:
        offset, limit = body.get("offset") or 0, body.get("limit") or 10
        if style == "new":
            ids = _ids(offset, limit)
        elif style == "same":
            ids = _ids(0, limit)
        elif style == "cycle":
            ids = _ids((offset // limit) % 3 * limit, limit)
        elif style == "overlap":
            ids = _ids(offset // 2, limit)
        elif style == "larger":
            ids = _ids(offset * 10, limit * 10)
        else:  # huge
            return [{**thread_row(t), "metadata": {"pad": "x" * 100_000}} for t in _ids(offset, limit)]
        return [thread_row(t) for t in ids]

    def answer(h, method, path, body):
        if path.startswith("/threads/search"):
            return json.dumps(rows(body or {})).encode()
        if "/state" in path:
            return json.dumps(snapshot(1)).encode()
        if path.endswith("/history"):
            return json.dumps([snapshot(1)]).encode()
        return b"{}"

    return answer


def _history_pages(style: str):
    """`POST /threads/{id}/history` paged by the `before` cursor, never ending: older checkpoints
    every page, the cursor ignored, two pages in turn, pages ten times larger than asked, or one
    checkpoint per namespace whose task names a new subgraph namespace each time."""
    top = 10**9

    def rows(body: dict) -> list[dict]:
        limit = body.get("limit") or 10
        before = (body.get("before") or {}).get("checkpoint_id")
        below = int(before.rsplit("-", 1)[1]) if before else top
        ns = (body.get("checkpoint") or {}).get("checkpoint_ns") or ""
        if style == "namespaces":
            depth = ns.count("|") + 1
            task = {
                "id": f"task-{depth}",
                "name": "sub",
                "path": ["__pregel_pull", "sub"],
                "error": None,
                "interrupts": [],
                "checkpoint": {"thread_id": TID, "checkpoint_ns": f"{ns}|sub:{depth}".lstrip("|")},
                "state": None,
                "result": None,
            }
            return [snapshot(top - depth, tasks=[task])]
        if style == "older":
            start = below - limit
        elif style == "same":
            start = top - limit
        elif style == "cycle":
            start = top - limit if below != top - limit else top - 2 * limit
        else:  # larger
            limit *= 10
            start = below - limit
        return [snapshot(c) for c in range(start + limit - 1, start - 1, -1)]

    def answer(h, method, path, body):
        if path.startswith("/threads/search"):
            return json.dumps([thread_row(TID)]).encode()
        if path.endswith("/history"):
            return json.dumps(rows(body or {})).encode()
        if "/state" in path:
            return json.dumps(snapshot(top)).encode()
        return b"{}"

    return answer


PAGES = {"STATECTL_MAX_PAGES": "20"}
ITEMS = {"STATECTL_MAX_ITEMS": "1000"}


@pytest.mark.parametrize(
    ("style", "env", "needle", "most"),
    [
        ("new", PAGES, "answered more than 20 pages of POST /threads/search: stopped", 21),
        ("overlap", PAGES, "answered more than 20 pages of POST /threads/search: stopped", 21),
        ("same", {}, "answered POST /threads/search with the rows of an earlier page again (page 2)", 2),
        ("cycle", {}, "answered POST /threads/search with the rows of an earlier page again (page 4)", 4),
        ("larger", ITEMS, "answered more than 1,000 rows of POST /threads/search: stopped", 2),
        ("huge", {"STATECTL_MAX_TOTAL_BYTES": str(30 << 20)}, "sent more than 31,457,280 bytes in all", 4),
    ],
)
@pytest.mark.parametrize("args", [["threads"], ["threads", "--json"], ["threads", "--status", "error"]])
def test_a_thread_search_that_never_ends_ends_in_one_line(run, hostile, monkeypatch, style, env, needle, most, args):
    """Whatever the shape of the offset paging, `threads` (and `--status`, which reads every
    page) ends at a bound that does not depend on the server: one line, exit 2, and the server
    asked at most so many pages (the page bound held only for new ids every page: a server
    repeating its page ran 45 s and 200 MB)."""
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    url, seen = hostile(_search_pages(style))
    r = run(*args, "--db", url, "--timeout", "10")
    if args == ["threads"] and r.code == 0:  # (the first pages held the 100 the table shows: no more read)
        assert "(100 shown;" in r.out
        return
    _one_line(r, needle)
    assert len([s for s in seen if s[1].startswith("/threads/search")]) <= most


@pytest.mark.parametrize(
    ("style", "env", "needle", "most"),
    [
        ("older", PAGES, "answered more than 20 pages of POST /threads/{id}/history: stopped", 20),
        ("same", {}, "answered POST /threads/{id}/history with the rows of an earlier page again (page 2)", 2),
        ("cycle", {}, "answered POST /threads/{id}/history with the rows of an earlier page again (page 3)", 3),
        ("larger", ITEMS, "answered more than 1,000 rows of POST /threads/{id}/history: stopped", 2),
        # (the bound is per call: `log` reads the root namespace first, then every namespace)
        ("namespaces", PAGES, "answered more than 20 pages of POST /threads/{id}/history: stopped", 21),
    ],
)
@pytest.mark.parametrize("args", [["log", TID], ["log", TID, "--json"], ["show", TID], ["export", TID, "-o", "-"]])
def test_a_history_that_never_ends_ends_in_one_line(run, hostile, monkeypatch, style, env, needle, most, args):
    """Whatever the shape of the `before` cursor paging (and subgraph namespaces named without
    end), `log`, `show` and `export` end at a bound that does not depend on the server."""
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    url, seen = hostile(_history_pages(style))
    r = run(*args, "--db", url, "--timeout", "10")
    if style == "namespaces" and r.code == 0:  # (`show`, `log --json`: the root namespace alone)
        assert [s[2].get("checkpoint") for s in seen if s[1].endswith("/history")] == [None], r.err
        return
    _one_line(r, needle)
    assert len([s for s in seen if s[1].endswith("/history")]) <= most


def test_a_server_slower_than_the_whole_deadline_ends_in_one_line(run, hostile, monkeypatch):
    """Each page well within the request timeout, but pages without end: the call's deadline
    ends it (`STATECTL_HTTP_DEADLINE`; by default ten request timeouts)."""
    monkeypatch.setenv("STATECTL_HTTP_DEADLINE", "3")
    pages = _search_pages("new")

    def slow(h, method, path, body):
        time.sleep(0.3)
        return pages(h, method, path, body)

    url, seen = hostile(slow)
    r = run("threads", "--status", "error", "--db", url, "--timeout", "10")
    _one_line(r, "was still answering POST /threads/search after 3 s in all: stopped")
    assert len(seen) < 20  # (3 s of 0.3 s pages; the page bound, 1,000, was not what ended it)


def test_rows_that_are_not_threads_are_left_out_or_one_line(run, hostile):
    """A search answering rows that are not objects, or no list at all: never an internal error."""
    answers = iter([b'[1, "x", null, {"no": "id"}]', b'{"not": "a list"}'])
    url, _seen = hostile(lambda h, method, path, body: next(answers, b"[]"))
    r = run("threads", "--json", "--db", url)
    assert r.code == 0, r.err
    assert json.loads(r.out) == []
    _one_line(run("threads", "--db", url), "POST /threads/search did not answer a list")


@pytest.mark.parametrize("resets", ["second", "every"])
def test_a_kept_alive_connection_the_server_resets_is_asked_again_once(run, resets):
    """A server that resets a kept-alive connection as the next request goes out on it (as
    `langgraph dev` does after an error answer, or at its keep-alive timeout, before the client
    has seen the close): statectl asks once more, on a new connection — every request it sends a
    server only reads — and answers as from a server that never does. A server that resets
    every request still ends in one line."""

    class KeptAlive(Handler):
        protocol_version = "HTTP/1.1"  # (connections kept alive)
        seen: list = []

        def _handle(self, method: str) -> None:
            self.served = getattr(self, "served", 0) + 1
            if resets == "every" or self.served > 1:  # (an RST, not a clean close)
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                return
            super()._handle(method)

    KeptAlive.answer = staticmethod(
        lambda h, method, path, body: json.dumps(snapshot(1) if "/state" in path else [thread_row(TID)]).encode()
    )

    class Quiet(ThreadingHTTPServer):
        def handle_error(self, request, client_address) -> None:
            pass

    server = Quiet(("127.0.0.1", 0), KeptAlive)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        r = run("threads", "--json", "--db", f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
    if resets == "every":
        _one_line(r, "127.0.0.1")
        return
    assert r.code == 0, r.err
    assert [t["thread_id"] for t in json.loads(r.out)] == [TID]
    assert [p for _m, p, _b in KeptAlive.seen][:2] == ["/info", "/threads/search"]
