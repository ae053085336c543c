"""A real `langgraph dev` server over HTTP: every command, held against LangGraph's own history.

The server (langgraph-cli[inmem], a development dependency) runs on a free port in a copy of the
sample app, with the sample `.langgraph_api` folder it wrote before (sample_threads/serve.py):
it loads those threads at start, and `expected/langgraph_api.jsonl` is LangGraph's own
`get_state_history` of them. The tests also run new threads on it (an interrupt and its answer).
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from parity import SAMPLES, expected, normal, snapshot_json
from test_langgraph_api import NAMES
from tui_helpers import doc_text, settle, timeline_ids

import statectl

sys.path.insert(0, str(SAMPLES))
import serve

SECRET = "lsv2_pt_statectl_secret_9f8e7d"


pytestmark = pytest.mark.xdist_group("server")  # (one worker, one server: conftest.server)


@pytest.fixture(scope="session")
def sdk(server):
    from langgraph_sdk import get_sync_client

    return get_sync_client(url=server.url, api_key=None)


def test_every_snapshot_over_http_is_langgraphs(server):
    """The server's history of every thread and namespace, as statectl shows it, equals what
    LangGraph computed from the files (including keys only the graph's code can know)."""
    records = expected("langgraph_api")
    with statectl.open(server.url) as store:
        for exp in records:  # all of it: the server knows the keys the data alone cannot (parity.py)
            assert normal(snapshot_json(store, exp)) == normal(exp), (exp["thread_id"], exp["checkpoint_id"])
    assert len(records) > 50


def test_threads_over_http(run, server):
    r = run("threads", "--db", server.url, "--json")
    assert r.code == 0, r.err
    rows = {t["thread_id"]: t for t in json.loads(r.out)}
    assert {r["thread_id"] for r in expected("langgraph_api")} <= set(rows)
    waiting = rows[NAMES["email-waiting"]]
    assert (waiting["status"], waiting["server_status"], waiting["graph_id"]) == ("interrupted", "interrupted", "agent")
    assert rows[NAMES["parse-fails"]]["status"] == rows[NAMES["parse-fails"]]["server_status"] == "error"
    assert rows[NAMES["email-approved"]]["status"] == "done"
    # paged: the pages together are every thread once, in the server's order
    pages, after = [], None
    while True:
        args = ["threads", "--db", server.url, "--json", "--limit", "3"] + (["--after", after] if after else [])
        page = [t["thread_id"] for t in json.loads(run(*args).out)]
        if not page:
            break
        pages.append(page)
        after = page[-1]
    assert [t for p in pages for t in p] == list(rows)
    assert len(pages) > 2
    interrupted = json.loads(run("threads", "--db", server.url, "--json", "--status", "interrupted").out)
    assert {t["thread_id"] for t in interrupted} >= {NAMES["email-waiting"], NAMES["subgraph-waiting"]}
    assert all(t["status"] == "interrupted" for t in interrupted)
    table = run("threads", "--db", server.url)
    assert table.code == 0
    assert "SERVER" in table.out
    assert "interrupted" in table.out


@pytest.mark.parametrize("thread", ["email-approved", "email-waiting", "subgraph-waiting", "parse-fails"])
def test_log_show_diff_read_as_over_the_folder(run, server, thread):
    """The human views over HTTP are the ones the folder the server wrote gives. (The state's
    keys may come in another order: the server sends LangGraph's. And where the server knows a
    key the folder cannot prove yet, `subgraph-waiting`'s `log` before its first write, the
    diff differs: see parity.UNPROVABLE.)"""
    tid = NAMES[thread]
    folder = str(SAMPLES)
    for cmd in (["log", tid], ["show", tid], ["diff", tid], ["show", tid, "0"]):
        over_http, over_folder = run(*cmd, "--db", server.url), run(*cmd, "--db", folder)
        assert over_http.code == over_folder.code == 0, over_http.err
        got, want = over_http.out.replace(server.url, "DB"), over_folder.out.replace(folder, "DB")
        if cmd[0] == "show":
            got, want = sorted(got.splitlines()), sorted(want.splitlines())
        if cmd[0] == "diff" and thread == "subgraph-waiting":
            assert "~ log" in got
            assert "+ log" in want
            continue
        if cmd[0] == "show" and thread == "subgraph-waiting" and "log: []" in got:
            got.remove("log: []")
        assert got == want, cmd


def test_subgraph_namespaces_over_http(run, server):
    tid = NAMES["subgraph-waiting"]
    log = run("log", tid, "--db", server.url)
    ns = next(line.split("'")[1] for line in log.out.splitlines() if line.startswith("other namespaces"))
    assert ns.startswith("review:")
    sub = run("show", tid, "--ns", ns, "--json", "--db", server.url)
    assert sub.code == 0, sub.err
    want = next(r for r in expected("langgraph_api") if r["thread_id"] == tid and r["checkpoint_ns"] == ns)
    assert normal(json.loads(sub.out)["values"]) == normal(want["values"])
    assert json.loads(sub.out)["next"] == want["next"] == ["check"]


def test_export_graph_schema_over_http(run, server, tmp_path):
    tid = NAMES["email-approved"]
    out = tmp_path / "server.json"
    r = run("export", tid, "--db", server.url, "-o", str(out))
    assert r.code == 0, r.err
    records = [r for r in expected("langgraph_api") if r["thread_id"] == tid]
    with statectl.open(str(out)) as store:  # the export reads back as the server sent it
        for exp in records:
            assert normal(snapshot_json(store, exp)) == normal(exp), exp["checkpoint_id"]
    graph = run("graph", "--thread", tid, "--db", server.url)
    assert graph.code == 0
    assert "graph TD;" in graph.out
    assert "model" in graph.out
    assert graph.out == run("graph", "--thread", tid, "--db", str(SAMPLES)).out
    schema = run("schema", tid, "--db", server.url)
    assert schema.code == 0
    assert "messages" in schema.out


def test_doctor_and_prune_over_http(run, server):
    """doctor checks what a server's API shows and says what it could not; prune --apply is
    refused with the server's own way to prune."""
    r = run("doctor", "--json", "--no-plan", "--db", server.url)
    assert r.code in (0, 1), r.err
    report = json.loads(r.out)
    assert report["threads"] >= 9
    assert report["checkpoints"] > 0
    assert not [f for f in report["findings"] if f["check"] == "integrity"]
    assert any("no checkpoint holds" in n for n in report["not_checked"])
    r = run("prune", "--keep-last", "1", "--apply", "--yes", "--db", server.url)
    assert r.code == 2
    assert "POST /threads/prune" in r.err
    assert len(r.err.splitlines()) == 1


def test_new_runs_show_at_once(run, server, sdk):
    """A thread run while statectl reads: the interrupt, then the answer."""
    tid = serve.thread_id("http-live-review")
    sdk.threads.create(thread_id=tid, metadata={"graph_id": "subgraph"}, if_exists="do_nothing")
    sdk.runs.wait(tid, "subgraph", input={"draft": "rye bread"}, raise_error=False)
    shown = json.loads(run("show", tid, "--json", "--db", server.url).out)
    assert shown["next"] == ["review"]
    assert shown["interrupts"][0]["value"]["draft"] == "plan for rye bread"
    sdk.runs.wait(tid, "subgraph", command={"resume": "keep"}, raise_error=False)
    shown = json.loads(run("show", tid, "--json", "--db", server.url).out)
    assert shown["next"] == []
    assert "reviewer said keep" in shown["values"]["log"]
    assert run("log", tid, "--db", server.url).out.count("review") >= 1


async def test_tui_over_http_follows_new_checkpoints(server, sdk):
    from statectl.tui import make_app

    tid = serve.thread_id("http-tui-review")
    sdk.threads.create(thread_id=tid, metadata={"graph_id": "subgraph"}, if_exists="do_nothing")
    sdk.runs.wait(tid, "subgraph", input={"draft": "seeded loaf"}, raise_error=False)
    app = make_app(server.url, tid, poll=0.05)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        before = timeline_ids(app)
        assert len(before) == 3
        assert "seeded loaf" in doc_text(app)
        sdk.runs.wait(tid, "subgraph", command={"resume": "keep"}, raise_error=False)
        for _ in range(200):
            await pilot.pause(0.05)
            await settle(pilot)
            if len(timeline_ids(app)) > len(before):
                break
        after = timeline_ids(app)
        assert len(after) > len(before)
        assert after[len(after) - len(before) :] == before
        assert "reviewer said keep" in doc_text(app)
        await pilot.press("q")


# -- errors: one line, the documented exit code, never the key ----------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Fake(BaseHTTPRequestHandler):
    status = 200
    body = b"<html>hello</html>"

    def _answer(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Type", "text/html" if self.body.startswith(b"<") else "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def fake_http():
    """A local HTTP server that is not a LangGraph server: `(status, body)` per test."""
    servers = []

    def make(status: int, body: bytes) -> str:
        handler = type("Handler", (_Fake,), {"status": status, "body": body})
        srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}"

    yield make
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _one_line(r, code: int, *words: str) -> None:
    assert r.code == code, (r.code, r.err)
    assert r.out == "", r.err
    assert r.err.count("\n") == 1, r.err
    assert "internal error" not in r.err, r.err
    assert all(w in r.err for w in words), r.err


def test_connection_refused(run):
    _one_line(run("threads", "--db", f"http://127.0.0.1:{_free_port()}"), 2, "connection refused")


def test_not_a_langgraph_server(run, fake_http):
    _one_line(run("threads", "--db", fake_http(200, b"<html>hello</html>")), 2, "not a LangGraph server")
    _one_line(run("threads", "--db", fake_http(404, b'{"detail": "Not Found"}')), 2, "not a LangGraph server")
    _one_line(run("threads", "--db", fake_http(200, b'{"hello": 1}')), 2, "not a LangGraph server")


@pytest.mark.parametrize("status", [401, 403])
def test_refused_key_is_never_printed(run, fake_http, monkeypatch, status):
    url = fake_http(status, b'{"detail": "Invalid token"}')
    for args in (["--api-key", SECRET], [f"--api-key={SECRET}"]):
        r = run("threads", "--db", url, *args)
        _one_line(r, 2, f"({status})", "API key was not accepted")
        assert SECRET not in r.out + r.err
    monkeypatch.setenv("LANGSMITH_API_KEY", SECRET)
    r = run("log", "some-thread", "--db", url.replace("http://", f"http://me:{SECRET}@") + f"/?key={SECRET}")
    assert SECRET not in r.out + r.err
    assert r.code == 2
    r = run("show", "x", "--db", url, "--api-key", SECRET, "--debug")  # the traceback too: still no key
    assert r.code == 2  # (--debug keeps the documented exit code)
    assert "Traceback (most recent call last)" in r.err
    assert "statectl.errors.SourceError" in r.err
    assert r.err.rstrip().splitlines()[-1].startswith("statectl: ")
    assert SECRET not in r.out + r.err
    monkeypatch.delenv("LANGSMITH_API_KEY")
    _one_line(run("threads", "--db", url), 2, "no API key given")


def test_timeout_ends_with_a_clear_message(run, monkeypatch):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(5)  # accepts connections, never answers
    monkeypatch.setenv("STATECTL_HTTP_TIMEOUT", "1")
    try:
        _one_line(
            run("threads", "--db", f"http://127.0.0.1:{silent.getsockname()[1]}"), 2, "did not answer", "within 1 s"
        )
    finally:
        silent.close()


def test_unknown_thread_is_not_found(run, server):
    _one_line(run("show", "00000000-0000-0000-0000-000000000000", "--db", server.url), 3, "no thread")
    _one_line(run("log", "not-a-uuid", "--db", server.url), 3, "no thread")


def test_without_langgraph_sdk_a_clear_message(run, monkeypatch):
    monkeypatch.setitem(sys.modules, "langgraph_sdk", None)  # as if it were not installed
    _one_line(run("threads", "--db", "http://127.0.0.1:2024"), 2, "langgraph-sdk", "statectl[server]")


def test_server_path_only_imports_the_sdk_when_asked():
    import subprocess

    code = (
        "import sys; from statectl.cli import main\n"
        "try: main(['threads', '--db', 'missing.sqlite'])\n"
        "except SystemExit: pass\n"
        "print(sorted(m for m in ('langgraph_sdk', 'httpx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parent)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


# -- the folder a running server writes --------------------------------------------------
def _table_rows(app) -> list[str]:
    from textual.widgets import DataTable

    table = app.screen.query_one("#threads", DataTable)
    return [table.coordinate_to_cell_key((r, 0)).row_key.value for r in range(table.row_count)]


async def _until(pilot, done, seconds: float = 120) -> bool:
    """Let the app run until `done()` (the server writes its folder every 10 s)."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await pilot.pause(0.1)
        if done():
            return True
    return False


async def test_tui_follows_the_folder_a_running_server_writes(tmp_path):
    """`statectl tui` on the app folder of a running `langgraph dev` (its own server: this test
    stops it). langgraph dev 0.16 writes its thread records every 10 s and its checkpoint files
    when it stops, each file replaced by rename: a new thread shows up in the list from its
    record, and its checkpoints appear in the open thread when the server writes them."""
    from langgraph_sdk import get_sync_client

    from statectl.tui import make_app

    app_dir = serve.copy_app(tmp_path / "app")
    shutil.copytree(SAMPLES / ".langgraph_api", app_dir / ".langgraph_api")
    tid = serve.thread_id("folder-live-review")
    with serve.start(app_dir) as srv:
        client = get_sync_client(url=srv.url, api_key=None)
        app = make_app(str(app_dir), poll=0.05)
        async with app.run_test(size=(160, 50)) as pilot:
            await settle(pilot)
            assert NAMES["email-approved"] in _table_rows(app)
            assert tid not in _table_rows(app)
            client.threads.create(thread_id=tid, metadata={"graph_id": "subgraph"}, if_exists="do_nothing")
            client.runs.wait(tid, "subgraph", input={"draft": "folder loaf"}, raise_error=False)
            assert await _until(pilot, lambda: tid in _table_rows(app)), "the new thread never appeared"
            await pilot.press("q")
        app = make_app(str(app_dir), tid, poll=0.05)
        async with app.run_test(size=(160, 50)) as pilot:
            await settle(pilot)
            before = timeline_ids(app)
            srv.stop()  # SIGINT: the server writes its checkpoint files
            assert await _until(pilot, lambda: len(timeline_ids(app)) == 3), timeline_ids(app)
            await settle(pilot)
            after = timeline_ids(app)
            # before the stop: the server's record alone, or (flushed already) these same checkpoints
            assert before in (["server-record"], after), (before, after)
            assert "folder loaf" in doc_text(app)
            assert "Keep this draft?" in doc_text(app)
            await pilot.press("q")


def test_folder_replaced_file_by_file_while_reading(server, tmp_path):
    """Reading while the folder's files are replaced by rename, one after another as the server
    does, between two real versions of it: every read succeeds and shows one of them."""
    import os
    import time

    from statectl.sources.langgraph_api import FILES

    old = SAMPLES / ".langgraph_api"
    new = tmp_path / "new"
    shutil.copytree(server.app_dir / ".langgraph_api", new)
    live = tmp_path / "live" / ".langgraph_api"
    shutil.copytree(old, live)
    stop = threading.Event()

    def writer() -> None:
        versions, i = (new, old), 0
        while not stop.is_set():
            src = versions[i % 2]
            for name in FILES:
                if (src / name).exists():
                    tmp = live / f"{name}.tmp"
                    shutil.copy(src / name, tmp)
                    os.replace(tmp, live / name)
            i += 1

    counts = {len({t["thread_id"] for t in expected("langgraph_api")})}
    with statectl.open(str(live)) as store:
        counts.add(len(store.threads()))
        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        try:
            deadline, reads = time.monotonic() + 5, 0
            while time.monotonic() < deadline or reads < 50:
                shown = store.threads()
                assert NAMES["email-approved"] in {t.thread_id for t in shown}
                snap = store.source.checkpoints(NAMES["email-approved"], "")
                assert snap
                assert snap[0].checkpoint_id
                store._views.clear()
                assert store.snapshot(NAMES["email-approved"]).values["messages"]
                reads += 1
        finally:
            stop.set()
            thread.join()
    assert reads >= 50


def test_copy_from_a_server_is_refused_in_one_line(run, server, tmp_path):
    """A server gives states as JSON, not the checkpoints it stores: copy says so, and what to
    copy from instead; the destination is not created."""
    dest = tmp_path / "copy.sqlite"
    r = run("copy", NAMES["email-waiting"], "--db", server.url, "--to", str(dest))
    assert r.code == 2
    assert r.err.startswith("statectl: a LangGraph server gives its states as JSON, not the checkpoints it stores")
    assert "copy from the server's own database" in r.err
    assert not dest.exists()
    assert list(tmp_path.iterdir()) == []


def test_a_thread_updated_and_not_run_has_one_status_everywhere(tmp_path, run):
    """`update_state(as_node="draft")` leaves `review` due and nothing run: read from SQLite it
    was "interrupted", from the langgraph dev folder "done". Written by a real `langgraph dev`
    (its folder flushed by stopping it) and by the same graph on a SqliteSaver, statectl says
    "interrupted" from the server, the folder and the file, as LangGraph's `next` says review."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph_sdk import get_sync_client

    sys.path.insert(0, str(SAMPLES))
    try:
        import custom_app
    finally:
        sys.path.remove(str(SAMPLES))

    def status(db: str, tid: str) -> str:
        r = run("threads", "--db", db, "--json")
        assert r.code == 0, r.err
        return next(t["status"] for t in json.loads(r.out) if t["thread_id"] == tid)

    app_dir = serve.copy_app(tmp_path / "app")
    tid = serve.thread_id("updated-not-run")
    with serve.start(app_dir) as srv:
        client = get_sync_client(url=srv.url, api_key=None)
        client.threads.create(thread_id=tid, metadata={"graph_id": "notes"}, if_exists="do_nothing")
        client.runs.wait(tid, "notes", input={"topic": "rye", "count": 0}, raise_error=False)
        client.threads.update_state(tid, {"count": 5}, as_node="draft")
        assert client.threads.get_state(tid)["next"] == ["review"]
        over_http = status(srv.url, tid)
        srv.stop()  # (it writes its checkpoint files when it stops)
    db = tmp_path / "notes.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    graph = custom_app.notes_builder.compile(checkpointer=SqliteSaver(conn))
    config = {"configurable": {"thread_id": "updated"}}
    graph.invoke({"topic": "rye", "count": 0}, config)
    graph.update_state(config, {"count": 5}, as_node="draft")
    assert graph.get_state(config).next == ("review",)
    conn.close()
    assert (over_http, status(str(app_dir / ".langgraph_api"), tid), status(str(db), "updated")) == (
        "interrupted",
        "interrupted",
        "interrupted",
    )


def test_thread_prefixes_and_did_you_mean_on_a_server(run, server):
    """On a server a thread is named as on SQLite: a unique prefix of its UUID, and a typo gets
    the closest ids (every id had to be pasted whole: 'thread ids on a server are UUIDs')."""
    tid = NAMES["parse-fails"]
    r = run("show", tid[:8], "--db", server.url, "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["thread_id"] == tid
    r = run("log", tid[:8], "--db", server.url, "--oneline")
    assert r.code == 0, r.err
    typo = tid[:-1] + ("0" if tid[-1] != "0" else "1")
    r = run("show", typo, "--db", server.url)
    assert r.code == 3, r.err
    assert f"did you mean {tid}" in r.err
    assert r.err.count("\n") == 1
