"""`statectl tui --web` in a real browser: headless Chromium (Debian's package) opens the printed
URL, the threads screen renders, Enter opens a thread and `j` moves its timeline; screenshots are
kept in test-artifacts/. Chromium is driven over the DevTools protocol; what the page received is
read from its websocket (the terminal's bytes), as xterm.js draws on a canvas."""

from __future__ import annotations

import asyncio
import base64
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
    first = json.loads(
        subprocess.run(
            [sys.executable, "-m", "statectl", "threads", "--json", "--db", str(db)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout
    )[0]["thread_id"]
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
