"""`statectl tui --web` in a real browser: headless Chromium (Debian's package) opens the printed
URL, the threads screen renders, Enter opens a thread and `j` moves its timeline; screenshots are
kept in test-artifacts/. Chromium is driven over the DevTools protocol; what the page received is
read from its websocket (the terminal's bytes), as xterm.js draws on a canvas."""

from __future__ import annotations

import asyncio
import base64
import codecs
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

aiohttp = pytest.importorskip("aiohttp")  # (textual-serve's, a dev dependency)
multidict = pytest.importorskip("multidict")  # (aiohttp's)

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-B]|\x1b[=>78]")
RECORD = """
window.__statectl = "";
(() => {
  const decoder = new TextDecoder();
  const Original = window.WebSocket;
  function Recording(url, protocols) {
    const ws = protocols === undefined ? new Original(url) : new Original(url, protocols);
    ws.addEventListener("message", (event) => {
      if (event.data instanceof ArrayBuffer) {
        window.__statectl += decoder.decode(new Uint8Array(event.data), {stream: true});
      }
    });
    return ws;
  }
  Recording.prototype = Original.prototype;
  Object.assign(Recording, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
  window.WebSocket = Recording;
})();
"""
DEADLINE = 120  # seconds for a screen to appear: generous for a busy machine, never a sleep


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("no chromium: apt-get install chromium (.ci/run installs it)")
    return found


def _line(proc: subprocess.Popen, pattern: str) -> str:
    deadline = time.monotonic() + DEADLINE
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        assert line, f"exited before printing {pattern!r}"
        if m := re.search(pattern, line):
            return m.group(1)
    raise AssertionError(f"no {pattern!r} within {DEADLINE} s")


class Page:
    """One page of Chromium, over the DevTools protocol."""

    def __init__(self, ws) -> None:
        self.ws = ws
        self.ids = itertools.count(1)

    async def send(self, method: str, **params):
        n = next(self.ids)
        await self.ws.send_json({"id": n, "method": method, "params": params})
        while True:
            msg = await asyncio.wait_for(self.ws.receive_json(), DEADLINE)
            if msg.get("id") == n:
                assert "error" not in msg, msg
                return msg.get("result", {})

    async def text(self) -> str:
        got = await self.send("Runtime.evaluate", expression="window.__statectl || ''", returnByValue=True)
        return ANSI.sub("", got["result"]["value"])

    async def wait_for(self, needle: str, after: int = 0) -> str:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            text = await self.text()
            if needle in text[after:]:
                return text
            await asyncio.sleep(0.2)
        raise AssertionError(f"{needle!r} never rendered; the page got: {(await self.text())[-2000:]!r}")

    async def key(self, key: str, code: str, vk: int, text: str | None = None) -> None:
        down = {"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk}
        if text is not None:
            down["text"] = text
        await self.send("Input.dispatchKeyEvent", **down)
        await self.send("Input.dispatchKeyEvent", type="keyUp", key=key, code=code, windowsVirtualKeyCode=vk)

    async def screenshot(self, name: str) -> Path:
        shot = await self.send("Page.captureScreenshot", format="png")
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / name
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


def _first_thread(db: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "statectl", "threads", "--json", "--db", str(db)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    return json.loads(out)[0]["thread_id"]


def _ids(db: Path, thread: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "statectl", "log", thread, "--json", "--db", str(db)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    return [json.loads(line)["checkpoint_id"] for line in out.splitlines()]


async def test_the_tui_in_a_browser(dbs, tmp_path):
    db = dbs["agent"]
    first = _first_thread(db)
    newest, parent, grandparent = _ids(db, first)[:3]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    serve = subprocess.Popen(
        [sys.executable, "-m", "statectl", "tui", "--web", "--port", "0", "--db", str(db), "--poll", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    browser = None
    try:
        url = _line(serve, r"open (http://\S+)")
        browser = subprocess.Popen(
            [
                _chromium(),
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-port=0",
                f"--user-data-dir={tmp_path / 'chromium'}",
                "--window-size=1400,900",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        devtools = _line(browser, r"DevTools listening on (ws://\S+)")
        port = devtools.split(":")[2].split("/")[0]
        async with aiohttp.ClientSession() as http:
            targets = await (await http.get(f"http://127.0.0.1:{port}/json")).json()
            target = next(t for t in targets if t["type"] == "page")
            async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                page = Page(ws)
                await page.send("Page.enable")
                await page.send("Page.addScriptToEvaluateOnNewDocument", source=RECORD)
                await page.send("Page.navigate", url=url)
                await page.wait_for(first)  # the threads screen, with the threads of the database
                await page.wait_for("interrupted")
                await page.screenshot("tui-web-threads.png")
                # every font from this server (none from the web), ⏸ and ⭘ from the symbols font it
                # serves (Roboto Mono has neither: Chromium drew empty boxes)
                got = await page.send(
                    "Runtime.evaluate",
                    expression="[performance.getEntriesByType('resource').map(e => e.name),"
                    " Array.from(document.fonts).map(f => [f.unicodeRange.toUpperCase(), f.status])]",
                    returnByValue=True,
                )
                fetched, faces = got["result"]["value"]
                origin = url.split("?")[0]
                assert fetched, fetched
                assert all(name.startswith(origin) for name in fetched), fetched
                assert any(name.endswith("/statectl-web/statectl-symbols.ttf") for name in fetched), fetched
                assert any("U+23F8" in ranges and "U+2B58" in ranges and st == "loaded" for ranges, st in faces), faces
                await page.send(
                    "Input.dispatchMouseEvent", type="mousePressed", x=700, y=450, button="left", clickCount=1
                )
                await page.send(
                    "Input.dispatchMouseEvent", type="mouseReleased", x=700, y=450, button="left", clickCount=1
                )
                before = len(await page.text())
                await page.key("Enter", "Enter", 13, "\r")  # open the thread at the cursor
                text = await page.wait_for(newest, before)
                assert grandparent not in text[before:]  # (its header names the parent only)
                at = len(text)
                await page.key("j", "KeyJ", 74, "j")  # one step down the timeline: the parent checkpoint
                await page.wait_for(grandparent, at)
                shot = await page.screenshot("tui-web-timeline.png")
                assert shot.stat().st_size > 10_000  # (a drawn page, not a blank one)
                assert parent in await page.text()
    finally:
        for proc in (browser, serve):
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()


def _serve(db: Path, cwd: Path, *args: str) -> tuple[subprocess.Popen, str, int, str]:
    """A real `statectl tui --web --port 0` process: it, its printed URL, its port and token."""
    serve = subprocess.Popen(
        [sys.executable, "-m", "statectl", "tui", "--web", "--port", "0", "--db", str(db), "--poll", "0", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    url = _line(serve, r"open (http://\S+)")
    port, token = re.search(r":(\d+)/\?token=(\S+)", url).groups()
    return serve, url, int(port), token


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


async def _first_screen(ws, needle: str) -> str:
    """What the TUI behind a websocket draws, until `needle` shows (the threads screen)."""
    text, decoder = "", codecs.getincrementaldecoder("utf-8")("replace")
    deadline = time.monotonic() + DEADLINE
    while needle not in ANSI.sub("", text):
        msg = await asyncio.wait_for(ws.receive(), max(0.1, deadline - time.monotonic()))
        assert msg.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), msg
        if msg.type == aiohttp.WSMsgType.BINARY:
            text += decoder.decode(msg.data)
    return ANSI.sub("", text)


FOREIGN_HOSTS = [
    "evil.example:{port}",  # a page whose DNS name now points at 127.0.0.1
    "evil.example",
    "127.0.0.1.evil.example:{port}",
    "localhost.evil.example:{port}",
    "localhost.:{port}",
    "0.0.0.0:{port}",  # (browsers reach a loopback server there too)
    "127.0.0.1:{other}",  # another port: another origin
    "127.0.0.1",
    "localhost:{port}@evil.example",
    "127.0.0.1:{port}/",
    "",
]
FOREIGN_ORIGINS = [
    "http://evil.example",
    "http://evil.example:{port}",
    "http://127.0.0.1:{other}",  # another local app: same site for cookies, another origin
    "http://localhost:{port}",  # (the Host said 127.0.0.1)
    "https://127.0.0.1:{port}",
    "http://127.0.0.1",
    "http://127.0.0.1:{port}.evil.example",
    "null",
    "",
]


async def test_only_its_own_host_and_origin_with_its_token_reach_the_tui(dbs, tmp_path):
    """Issue 50 item 2, with a real websocket client against a real server bound to 127.0.0.1: a
    foreign Host (plain GET and upgrade, even with the token: DNS rebinding) and a foreign Origin
    are 403; no token or a wrong one is 401; the token (query or cookie) with its own Host and
    Origin opens the TUI, whose threads screen arrives."""
    db = dbs["agent"]
    first = _first_thread(db)
    serve, url, port, token = _serve(db, tmp_path)
    own = f"127.0.0.1:{port}"
    base = f"http://{own}/"
    ws_url = f"ws://{own}/ws?width=120&height=40"
    fill = {"port": port, "other": port + 1 if port < 65535 else port - 1}
    try:
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            assert url == f"{base}?token={token}"  # a token by default, bound to 127.0.0.1 too
            for path in ("", "static/js/textual.js", "ws"):
                got = await http.get(base + path)
                assert got.status == 401, path
                assert (await got.text()).startswith("statectl tui --web: the token is missing or wrong")
            assert (await http.get(f"{base}?token=wrong")).status == 401
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:  # not a browser: still the token
                await http.ws_connect(ws_url)
            assert refused.value.status == 401
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await http.ws_connect(ws_url, origin=f"http://{own}")
            assert refused.value.status == 401
            for host in FOREIGN_HOSTS:
                host = host.format(**fill)
                got = await http.get(f"{base}?token={token}", headers={"Host": host})
                assert got.status == 403, host
                said = await got.text()
                assert said.startswith("statectl tui --web: "), said
                assert said.count("\n") == 1, said
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await http.ws_connect(f"{ws_url}&token={token}", headers={"Host": host})
                assert refused.value.status == 403, host
                origin = "http://" + host
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:  # (its own page's Origin)
                    await http.ws_connect(f"{ws_url}&token={token}", headers={"Host": host}, origin=origin)
                assert refused.value.status == 403, host
            page = await http.get(f"{base}?token={token}")  # the printed URL: the cookie is set
            assert page.status == 200
            assert f"statectl_token_{port}=" in page.headers["Set-Cookie"]
            assert "HttpOnly" in page.headers["Set-Cookie"]
            assert "SameSite=Strict" in page.headers["Set-Cookie"]
            assert (await http.get(base + "static/js/textual.js")).status == 200  # (by its cookie)
            for origin in FOREIGN_ORIGINS:  # with the cookie: a page of another site or port
                origin = origin.format(**fill)
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await http.ws_connect(ws_url, headers={"Origin": origin})
                assert refused.value.status == 403, origin
                assert (await http.get(base, headers={"Origin": origin})).status == 403, origin
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:  # two Origins: one is foreign
                await http.ws_connect(
                    ws_url, headers=multidict.CIMultiDict([("Origin", f"http://{own}"), ("Origin", "http://e.x")])
                )
            assert refused.value.status == 403
            for host in (own, f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}"):  # this machine's names
                got = await http.get(base, headers={"Host": host, "Origin": f"http://{host.lower()}"})
                assert got.status == 200, host
            async with http.ws_connect(ws_url, origin=f"http://{own}") as ws:  # the page's own upgrade
                assert "interrupted" in await _first_screen(ws, first)
        async with (
            aiohttp.ClientSession() as bare,  # a client with the token in the URL, no cookie
            bare.ws_connect(f"{ws_url}&token={token}") as ws,
        ):
            await _first_screen(ws, first)
    finally:
        _stop(serve)


async def test_two_hosts_in_one_request_are_refused(dbs, tmp_path):
    """A request with two Host headers (one of them this server's) is refused, never answered by
    the first or the last one (raw bytes: no client library sends it)."""
    serve, _, port, token = _serve(dbs["agent"], tmp_path)
    try:
        for hosts in ([f"127.0.0.1:{port}", "evil.example"], ["evil.example", f"127.0.0.1:{port}"]):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            head = "".join(f"Host: {h}\r\n" for h in hosts)
            writer.write(f"GET /?token={token} HTTP/1.1\r\n{head}Connection: close\r\n\r\n".encode())
            await writer.drain()
            status = (await asyncio.wait_for(reader.readline(), DEADLINE)).decode()
            writer.close()
            assert status.split()[1] in ("400", "403"), (hosts, status)
    finally:
        _stop(serve)


async def test_a_request_line_naming_another_site_is_refused(dbs, tmp_path):
    """An absolute-form request line (`GET http://evil.example/ HTTP/1.1`, what proxies send) with
    this server's Host: refused, never answered with a page whose scripts and websocket name the
    site in the request line (raw bytes: browsers do not send it)."""
    serve, _, port, token = _serve(dbs["agent"], tmp_path)
    try:
        for target in (f"http://evil.example:1234/?token={token}", f"http://127.0.0.1:{port}/?token={token}"):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
            await writer.drain()
            reply = (await asyncio.wait_for(reader.read(1 << 16), DEADLINE)).decode("utf-8", "replace")
            writer.close()
            assert reply.split()[1] == "403", (target, reply[:200])
            assert "evil.example" not in reply
    finally:
        _stop(serve)


async def test_beyond_localhost_the_url_carries_a_token(dbs, tmp_path):
    serve = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "statectl",
            "tui",
            "--web",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
            "--db",
            str(dbs["agent"]),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        url = _line(serve, r"open (http://\S+)")
        port, token = re.search(r":(\d+)/\?token=(\S+)", url).groups()
        assert "warning: bound to 0.0.0.0" in serve.stderr.readline()
        local = f"http://127.0.0.1:{port}/"
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:  # (an IP's cookies)
            assert (await http.get(local)).status == 401
            assert (await http.get(local + "?token=wrong")).status == 401
            assert (await http.get(local + "static/js/textual.js")).status == 401
            page = await http.get(f"{local}?token={token}")
            assert page.status == 200
            assert "textual-terminal" in await page.text()
            assert "HttpOnly" in page.headers["Set-Cookie"]
            assert (await http.get(local + "static/js/textual.js")).status == 200  # (the cookie it set)
            # the name a teammate types is not known in advance (a DNS name, a NAT): with the
            # token any Host is let in, and the Origin must still be the page's own
            lan = f"statectl-host.example:{port}"
            assert (await http.get(local, headers={"Host": lan, "Origin": f"http://{lan}"})).status == 200
            assert (await http.get(local, headers={"Host": lan, "Origin": "http://evil.example"})).status == 403
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await http.ws_connect(f"ws://127.0.0.1:{port}/ws", origin="http://evil.example")
            assert refused.value.status == 403
        async with aiohttp.ClientSession() as bare:  # without the token: only this machine's names
            assert (await bare.get(local, headers={"Host": lan})).status == 403
            assert (await bare.get(local)).status == 401
    finally:
        serve.terminate()
        serve.wait(30)


def test_web_options_go_with_web(run, dbs):
    r = run("tui", "--db", str(dbs["agent"]), "--port", "9000")
    assert r.code == 2
    assert "go with --web" in r.err
    r = run("tui", "nope", "--web", "--db", str(dbs["agent"]))
    assert r.code != 0
    assert "no thread 'nope'" in r.err
