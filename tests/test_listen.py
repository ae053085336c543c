"""The guard of both local servers (`statectl.listen.Guard`): its rule as plain asserts over the
shapes a Host and an Origin header take, then `statectl mcp --http` (a real server, the SDK's own
HTTP client) refusing another site's Host and Origin. `tui --web` is tested with a real websocket
client in tests/test_tui_web.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from statectl.errors import StatectlError
from statectl.listen import Guard, token_for

ROOT = Path(__file__).resolve().parent.parent
OWN = ["127.0.0.1:8000", "localhost:8000", "LocalHost:8000", "[::1]:8000"]
FOREIGN = [
    "evil.example:8000",  # DNS rebinding: the page's own name, now 127.0.0.1
    "evil.example",
    "localhost.evil.example:8000",
    "127.0.0.1.nip.io:8000",
    "localhost.:8000",
    "0.0.0.0:8000",
    "127.0.0.1:8001",
    "127.0.0.1",  # (port 80)
    "localhost:8000@evil.example",
    "localhost:8000/",
    "localhost:8000 ",
    "localhost:8000\x00",
    "localhost:99999999",
    "[::1]",
    "",
]


@pytest.mark.parametrize("token", [None, "tok"])
def test_a_loopback_server_answers_its_own_names_only(token):
    guard = Guard("127.0.0.1", 8000, token)
    for host in OWN:
        assert guard.refusal([host], [], token) is None, host
        assert guard.refusal([host], [f"http://{host.lower()}"], token) is None, host
    for host in FOREIGN:  # even with the token: it may be in the page's URL
        status, said = guard.refusal([host], [], token) or (0, "")
        assert status == 403, host
        assert "\n" not in said
    assert guard.refusal([], [], token) == (403, "a request must name this server in one Host header")
    assert guard.refusal(["127.0.0.1:8000", "127.0.0.1:8000"], [], token) is not None


@pytest.mark.parametrize("token", [None, "tok"])
def test_an_origin_must_be_the_hosts_own(token):
    guard = Guard("127.0.0.1", 8000, token)
    host = "127.0.0.1:8000"
    for origin in [
        "http://evil.example",
        "http://evil.example:8000",
        "http://127.0.0.1:3000",  # another local app: same site for a cookie, not the same origin
        "http://localhost:8000",  # (the Host said 127.0.0.1)
        "https://127.0.0.1:8000",
        "http://127.0.0.1",
        "http://127.0.0.1:8000/",
        "http://127.0.0.1:8000.evil.example",
        "http://user@127.0.0.1:8000",
        "null",
        "",
    ]:
        assert guard.refusal([host], [origin], token) == (
            403,
            "this server answers its own pages only (Origin names another site)",
        ), origin
    assert guard.refusal([host], ["HTTP://127.0.0.1:8000"], token) is None
    assert guard.refusal([host], ["http://127.0.0.1:8000", "http://evil.example"], token) is not None


def test_the_token_where_there_is_one():
    guard = Guard("127.0.0.1", 8000, "tok")
    assert guard.refusal(["127.0.0.1:8000"], [], None)[0] == 401
    assert guard.refusal(["127.0.0.1:8000"], [], "tok2")[0] == 401
    assert guard.refusal(["127.0.0.1:8000"], [], "tók")[0] == 401
    assert guard.refusal(["127.0.0.1:8000"], ["http://127.0.0.1:8000"], None)[0] == 401
    assert guard.refusal(["evil.example:8000"], [], None)[0] == 403  # (the Host said first)


@pytest.mark.parametrize("bound", ["0.0.0.0", "::", "192.0.2.7"])
def test_beyond_this_machine_the_token_lets_any_host_in(bound):
    """The name a teammate types is not known in advance (a DNS name, a NAT's address): the token
    is what lets it in; the Origin is still the page's own."""
    guard = Guard(bound, 8000, "tok", "myhost")
    for host in ["myhost.lan:8000", "192.0.2.7:8000", "statectl.example", "myhost_1:8000", *OWN]:
        assert guard.refusal([host], [f"http://{host.lower()}"], "tok") is None, host
        assert guard.refusal([host], ["http://evil.example"], "tok")[0] == 403, host
    assert guard.refusal(["myhost.lan:8000"], [], None)[0] == 403
    assert guard.refusal(["myhost:8000"], [], None)[0] == 401  # (the printed name, without the token)
    assert guard.refusal(["127.0.0.1:8000"], [], None)[0] == 401
    for host in ["localhost:8000 ", "a/b", "x@y", ""]:  # never a malformed one
        assert guard.refusal([host], [], "tok")[0] == 403, host


def test_an_ipv6_loopback_server_answers_its_brackets():
    guard = Guard("::1", 8000, None)
    assert guard.refusal(["[::1]:8000"], ["http://[::1]:8000"], None) is None
    assert guard.refusal(["[::2]:8000"], [], None)[0] == 403


def test_a_token_is_printable_ascii():
    assert token_for("127.0.0.1", None) is None
    assert token_for("127.0.0.1", None, always=True)
    assert token_for("0.0.0.0", None)
    assert token_for("127.0.0.1", "a-b_c.d~e!") == "a-b_c.d~e!"
    for bad in ["with space", "new\nline", "\x1b[31m", "tök", "x" * 513]:
        with pytest.raises(StatectlError, match="--token: printable ASCII"):
            token_for("127.0.0.1", bad)


# -- mcp --http: a real server -------------------------------------------------------------------
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
HOST_REFUSED = "this server answers requests for itself only (Host names another site)"
ACCEPT = {"Accept": "application/json, text/event-stream"}


def _mcp_http(*args: str) -> tuple[subprocess.Popen, int, str | None]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "statectl", "mcp", "--http", "--port", "0", *args],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    port = token = None
    deadline = time.monotonic() + 120
    assert proc.stderr is not None
    while port is None or ("0.0.0.0" in args and token is None):
        line = proc.stderr.readline()
        assert line, "the server did not start"
        assert time.monotonic() < deadline, "the server did not start in time"
        if m := re.search(r"serving http://\S+:(\d+)/mcp", line):
            port = int(m.group(1))
        if m := re.search(r"Bearer (\S+)", line):
            token = m.group(1)
    return proc, port, token


async def test_mcp_http_answers_its_own_host_and_origin_only(dbs):
    """Bound to 127.0.0.1 (no token): another site's Host (DNS rebinding) or Origin, another local
    port's page included (the SDK's own check let any port of localhost in), is 403 in one line;
    the SDK's client with the server's own Origin reads the threads."""
    httpx2 = pytest.importorskip("httpx2")
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    proc, port, _ = _mcp_http("--db", str(dbs["agent"]))
    own = f"127.0.0.1:{port}"
    url = f"http://{own}/mcp"
    try:
        async with httpx2.AsyncClient(timeout=120) as raw:
            for host in ("evil.example", f"evil.example:{port}", f"0.0.0.0:{port}", f"localhost:{port + 1}"):
                got = await raw.post(url, json=INIT, headers={**ACCEPT, "Host": host})
                assert got.status_code == 403, host
                assert got.text == f"statectl mcp: {HOST_REFUSED}\n"
            for origin in ("http://evil.example", f"http://127.0.0.1:{port + 1}", f"http://localhost:{port}", "null"):
                got = await raw.post(url, json=INIT, headers={**ACCEPT, "Origin": origin})
                assert got.status_code == 403, origin
                assert got.text.startswith("statectl mcp: this server answers its own pages only"), origin
                preflight = await raw.options(url, headers={"Origin": origin, "Access-Control-Request-Method": "POST"})
                assert preflight.status_code == 403, origin
            for host in (own, f"localhost:{port}", f"[::1]:{port}"):
                got = await raw.post(url, json=INIT, headers={**ACCEPT, "Host": host, "Origin": f"http://{host}"})
                assert got.status_code == 200, host
        async with (
            httpx2.AsyncClient(headers={"Origin": f"http://{own}"}, timeout=120) as http,
            Client(streamable_http_client(url, http_client=http)) as c,
        ):
            result = await c.call_tool("list_threads", {})
            assert not result.is_error
            assert "thread_id" in result.content[0].text
    finally:
        proc.terminate()
        proc.wait(30)


async def test_mcp_http_beyond_localhost_lets_any_host_in_with_the_token_only(dbs):
    httpx2 = pytest.importorskip("httpx2")

    proc, port, token = _mcp_http("--db", str(dbs["agent"]), "--host", "0.0.0.0")
    url = f"http://127.0.0.1:{port}/mcp"
    lan = f"statectl-host.example:{port}"
    bearer = {**ACCEPT, "Authorization": f"Bearer {token}"}
    try:
        async with httpx2.AsyncClient(timeout=120) as raw:
            assert (await raw.post(url, json=INIT, headers={**bearer, "Host": lan})).status_code == 200
            got = await raw.post(url, json=INIT, headers={**bearer, "Host": lan, "Origin": "http://evil.example"})
            assert got.status_code == 403
            assert (await raw.post(url, json=INIT, headers={**ACCEPT, "Host": lan})).status_code == 403
            got = await raw.post(url, json=INIT, headers=ACCEPT)
            assert got.status_code == 401
            assert got.text.startswith("statectl mcp: the token is missing or wrong")
            wrong = {**ACCEPT, "Authorization": f"Basic {token}"}
            assert (await raw.post(url, json=INIT, headers=wrong)).status_code == 401
    finally:
        proc.terminate()
        proc.wait(30)
