"""A hostile LangGraph "server" on 127.0.0.1 (written here: a few lines of http.server): a body
dripped byte by byte, a listing that pages forever, a huge body, a gzip bomb. Each ends within
its bound, with one line and exit 2; nothing is read past the limits. Every request loop is
bounded and the server stops by itself."""

from __future__ import annotations

import gzip
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

INFO = json.dumps({"version": "0.0.hostile"}).encode()


def _server(mode: str):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # (quiet)
            pass

        def _send(self, body: bytes, extra: dict | None = None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path.startswith("/info"):
                self._send(INFO)
                return
            self._send(b"{}")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            if mode == "drip":  # headers at once, then the body one byte a second (within any read timeout)
                body = b'[{"thread_id": "t"}]'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                for b in body[:30]:
                    self.wfile.write(bytes([b]))
                    self.wfile.flush()
                    time.sleep(0.5)
            elif mode == "forever":  # every page full, with new ids
                start = int(time.monotonic() * 1e6)
                rows = [{"thread_id": f"t{start}-{i}", "metadata": {}} for i in range(100)]
                self._send(json.dumps(rows).encode())
            elif mode == "huge":
                self._send(b"[" + b" " * (8 << 20) + b"]")
            elif mode == "bomb":
                self._send(gzip.compress(b"[" + b" " * (64 << 20) + b"]"), {"Content-Encoding": "gzip"})

    class Quiet(ThreadingHTTPServer):
        def handle_error(self, request, client_address) -> None:  # (statectl hung up: expected)
            pass

    server = Quiet(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server


@pytest.fixture
def hostile():
    servers = []

    def start(mode: str) -> str:
        server = _server(mode)
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("mode", "env", "needle"),
    [
        ("drip", {}, "did not finish answering POST /threads/search within 2 s"),
        ("forever", {"STATECTL_MAX_PAGES": "20"}, "answered more than 20 pages of POST /threads/search: stopped"),
        ("huge", {"STATECTL_MAX_RESPONSE_BYTES": str(1 << 20)}, "sent a response of 8,388,610 bytes"),
        ("bomb", {}, "sent a compressed response (statectl asked for none)"),
    ],
)
def test_a_hostile_server_ends_in_one_line(run, hostile, monkeypatch, mode, env, needle):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    url = hostile(mode)
    started = time.monotonic()
    r = run("threads", "--db", url, "--json", "--timeout", "2")
    took = time.monotonic() - started
    assert r.code == 2, r.err
    assert needle in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert took < 60  # (the drip alone would take 15 s a request, the pager forever)
