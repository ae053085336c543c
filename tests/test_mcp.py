"""`statectl mcp` through the official MCP client SDK, over stdio and streamable HTTP: every tool
answers what the command's --json answers, results stay within --max-chars with a cursor and a
pointer that read the rest whole, a hostile database runs nothing and prints no raw control
character or secret, and bad arguments are tool errors, never a crash of the server."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

pytest.importorskip("mcp")  # (a dev install has it: pyproject's dev extra)

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from statectl.mcp import paging

ROOT = Path(__file__).resolve().parent.parent
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]")
SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2


def _params(*args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "statectl", "mcp", *args], cwd=str(ROOT), env={"PYTHONPATH": str(ROOT)}
    )


@asynccontextmanager
async def stdio(*args: str) -> AsyncIterator[Client]:
    async with Client(_params(*args), read_timeout_seconds=120) as client:
        yield client


async def call(client: Client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text
    assert not RAW.search(text), text  # never a raw control character, whatever the data holds
    assert not result.is_error, text
    return json.loads(text)


async def error(client: Client, tool: str, **arguments) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    (content,) = result.content
    assert "\n" not in content.text
    assert "Traceback" not in content.text
    return content.text


def cli_json(run, *args: str):
    r = run(*args)
    assert r.code == 0, r.err
    return json.loads(r.out)


async def test_every_tool_answers_as_the_command_does(run, dbs):
    db = str(dbs["agent"])
    async with stdio("--db", db, "--no-redact") as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert names == {
            "list_sources",
            "list_threads",
            "thread_log",
            "show_state",
            "diff",
            "graph",
            "size",
            "prune_plan",
            "schema",
            "stored_types",
            "store_namespaces",
            "store_items",
            "store_get",
            "store_grep",
        }
        assert (await call(c, "list_sources"))["sources"] == [{"db": db, "index": 0, "default": True}]
        threads = await call(c, "list_threads", limit=1000)
        assert threads["threads"] == cli_json(run, "threads", "--json", "--db", db)
        assert threads["next_cursor"] is None
        assert threads["left_out"] is None
        for t in threads["threads"]:
            tid = t["thread_id"]
            log = await call(c, "thread_log", thread_id=tid)
            assert [e["checkpoint_id"] for e in log["log"]] == [
                json.loads(line)["checkpoint_id"] for line in run("log", tid, "--json", "--db", db).out.splitlines()
            ]
            assert log["checkpoints"] == t["checkpoints"]
            state = await call(c, "show_state", thread_id=tid)
            assert state["state"] == cli_json(run, "show", tid, "--json", "--db", db)
            assert state["left_out"] is None
            assert (await call(c, "diff", thread_id=tid))["diff"] == cli_json(run, "diff", tid, "--json", "--db", db)
            # one checkpoint, named as a or as b: against its parent, as the CLI's one argument
            one = cli_json(run, "diff", tid, "0", "--json", "--db", db)
            assert (await call(c, "diff", thread_id=tid, a="0"))["diff"] == one
            assert (await call(c, "diff", thread_id=tid, b="0"))["diff"] == one
            graph = await call(c, "graph", thread_id=tid)
            assert graph["inferred"] is True
            assert graph["text"] == run("graph", "--thread", tid, "--db", db).out
            assert (await call(c, "schema", thread_id=tid))["schema"]["keys"] == cli_json(
                run, "schema", tid, "--json", "--db", db
            )["keys"]
        assert (await call(c, "size"))["size"] == cli_json(run, "size", "--json", "--db", db)
        tid = threads["threads"][0]["thread_id"]
        assert (await call(c, "size", thread_id=tid))["size"] == cli_json(run, "size", tid, "--json", "--db", db)
        plan = await call(c, "prune_plan", keep_last=2, threads_per_page=500)
        expected = cli_json(run, "prune", "--keep-last", "2", "--json", "--db", db)
        assert sorted(plan["threads"], key=lambda p: p["thread_id"]) == sorted(
            expected["threads"], key=lambda p: p["thread_id"]
        )
        assert plan["drop"] == expected["drop"]
        assert plan["applied"] is False
        step = await call(c, "show_state", thread_id=tid, checkpoint="1", key="messages")
        assert step["state"] == cli_json(run, "show", tid, "1", "--key", "messages", "--json", "--db", db)


async def test_results_are_bounded_and_the_rest_is_reachable(run, dbs):
    """deepagents states are large: at 2,000 characters a state is shortened and says where, a
    pointer reads a shortened part whole (paged), and paging the log gives every checkpoint."""
    db = str(dbs["deep"])
    limit = 2000
    async with stdio("--db", db, "--max-chars", str(limit), "--no-redact") as c:

        async def bounded(tool: str, **arguments) -> dict:
            result = await c.call_tool(tool, arguments)
            assert not result.is_error, result.content[0].text
            assert len(result.content[0].text) <= limit, (tool, arguments, len(result.content[0].text))
            return json.loads(result.content[0].text)

        tids = []
        page = await bounded("list_threads", limit=1)
        while True:
            tids += [t["thread_id"] for t in page["threads"]]
            if page["next_cursor"] is None:
                break
            page = await bounded("list_threads", limit=1, cursor=page["next_cursor"])
        assert tids == [t["thread_id"] for t in cli_json(run, "threads", "--json", "--db", db)]
        tid = max(cli_json(run, "threads", "--json", "--db", db), key=lambda t: t["checkpoints"])["thread_id"]
        whole = cli_json(run, "show", tid, "--json", "--db", db)
        state = await bounded("show_state", thread_id=tid)
        assert state["left_out"]
        assert "pointer" in state["left_out"]
        assert state["state"]["checkpoint_id"] == whole["checkpoint_id"]
        assert state["state"]["next"] == whole["next"]
        # every message, read whole through the pointer (paged where it is long)
        messages = []
        got = await bounded("show_state", thread_id=tid, pointer="/values/messages")
        while True:
            messages += got["values"] if "values" in got else got["value"]
            if got["next_cursor"] is None:
                break
            got = await bounded("show_state", thread_id=tid, pointer="/values/messages", cursor=got["next_cursor"])
        assert len(messages) == len(whole["values"]["messages"])
        log, cursor = [], None
        while True:
            got = await bounded("thread_log", thread_id=tid, cursor=cursor)
            log += [e["checkpoint_id"] for e in got["log"]]
            cursor = got["next_cursor"]
            if cursor is None:
                break
            assert "more checkpoints" in got["left_out"]
        assert log == [json.loads(x)["checkpoint_id"] for x in run("log", tid, "--json", "--db", db).out.splitlines()]


def test_shrink_keeps_the_newest_items_and_names_every_cut():
    value = {"messages": [{"content": "x" * 5000, "id": i} for i in range(300)], "n": 1}
    small, cuts = paging.shrink(value, 3000)
    assert paging.size(small) <= 3000
    assert small["n"] == 1
    assert small["messages"][-1]["id"] == 299  # the newest kept
    assert "/messages" in cuts
    left = 300 - len(small["messages"]) + 1
    assert small["messages"][0] == f"[300 items, the earliest {left} left out: pointer '/messages']"
    assert paging.resolve_pointer(value, "/messages/299/id") == 299
    with pytest.raises(Exception, match="no 'nope'"):
        paging.resolve_pointer(value, "/nope")


async def test_a_hostile_database_runs_nothing_and_prints_no_escape_or_secret(hostile_db, tmp_path):
    db, marker = hostile_db
    async with stdio("--db", str(db)) as c:
        for tool, arguments in [
            ("list_threads", {}),
            ("thread_log", {"thread_id": "evil"}),
            ("show_state", {"thread_id": "evil", "checkpoint": "0"}),
            ("show_state", {"thread_id": "evil"}),
            ("diff", {"thread_id": "evil"}),
            ("graph", {"thread_id": "evil"}),
            ("size", {}),
            ("schema", {"thread_id": "evil"}),
            ("prune_plan", {"keep_last": 1}),
        ]:
            await call(c, tool, **arguments)
            assert not marker.exists(), tool
        shown = await call(c, "show_state", thread_id="evil", checkpoint="0")
        assert shown["state"]["values"]["system"]["$type"] == "os.system"  # shown as the data it is


@pytest.fixture(scope="module")
def text_db(tmp_path_factory) -> Path:
    """A real LangGraph run whose messages hold terminal escapes and an API key."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    hostile = "see \x1b]52;c;Y3VybA==\x07 then \x1b[2J and \x9b31m and \u202eevil"

    def reply(state: MessagesState) -> dict:
        page = "".join(f"line {i}: a fetched web page, long as tool output is\n" for i in range(1500))
        return {
            "messages": [
                AIMessage(page, id="ai-0"),
                AIMessage(f"{hostile} key={SECRET} mail=ops@example.com", id="ai-1"),
            ]
        }

    g = StateGraph(MessagesState)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    g.add_edge("reply", END)
    db = tmp_path_factory.mktemp("mcp") / "text.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    g.compile(checkpointer=SqliteSaver(conn)).invoke(
        {"messages": [HumanMessage(f"use {SECRET}", id="h-1")]}, {"configurable": {"thread_id": "t\x1b[2J"}}
    )
    conn.close()
    return db


async def test_escapes_are_never_raw_and_secrets_are_redacted_by_default(text_db):
    async with stdio("--db", str(text_db)) as c:
        for tool, arguments in [
            ("list_threads", {}),
            ("show_state", {"thread_id": "t\x1b[2J"}),
            ("diff", {"thread_id": "t\x1b[2J"}),
            ("thread_log", {"thread_id": "t\x1b[2J", "grep": "evil"}),
        ]:
            result = await c.call_tool(tool, arguments)
            text = result.content[0].text
            assert not result.is_error
            assert not RAW.search(text)
            assert SECRET not in text, tool
            assert "ops@example.com" not in text, tool
        state = await call(c, "show_state", thread_id="t\x1b[2J")
        ai = state["state"]["values"]["messages"][-1]["data"]["content"]
        assert ai.startswith("see \x1b]52;c;")
        assert "[REDACTED]" in ai
    async with stdio("--db", str(text_db), "--no-redact") as c:
        state = await call(c, "show_state", thread_id="t\x1b[2J")
        assert SECRET in state["state"]["values"]["messages"][-1]["data"]["content"]


async def test_a_long_text_is_shortened_and_read_whole_through_its_pointer(run, text_db):
    thread = "t\x1b[2J"
    whole = cli_json(run, "show", thread, "--json", "--db", str(text_db), "--full")
    text = whole["values"]["messages"][-2]["data"]["content"]
    assert len(text) > 50_000
    async with stdio("--db", str(text_db), "--max-chars", "5000") as c:
        state = await call(c, "show_state", thread_id=thread)
        shown = state["state"]["values"]["messages"][-2]["data"]["content"]
        assert shown.startswith("line 0: ")
        assert "pointer '/values/messages/1/data/content'" in shown
        assert "'/values/messages/1/data/content'" in state["left_out"]
        read, cursor, pages = "", None, 0
        while True:
            part = await call(
                c, "show_state", thread_id=thread, pointer="/values/messages/1/data/content", cursor=cursor
            )
            assert len(paging.dumps(part)) <= 5000
            read += part["text"]
            pages += 1
            cursor = part["next_cursor"]
            if cursor is None:
                break
        assert read == text
        assert pages > 10


async def test_bad_arguments_are_one_line_tool_errors_and_the_server_goes_on(dbs, tmp_path):
    db = str(dbs["agent"])
    other = tmp_path / "other.sqlite"
    shutil.copy(dbs["flow"], other)
    async with stdio("--db", db) as c:
        assert "no thread 'nope'" in await error(c, "show_state", thread_id="nope")
        assert "not one this server gave" in await error(c, "thread_log", thread_id="bakery-plan", cursor="zz")
        assert "not one this server was started with" in await error(c, "list_threads", db=str(other))
        assert "keep_last" in await error(c, "prune_plan")
        # as the command: an older_than every checkpoint passes keeps no history, and is refused
        assert "older_than 0s keeps no history" in await error(c, "prune_plan", older_than="0s")
        assert "must start with '/'" in await error(c, "show_state", thread_id="bakery-plan", pointer="values")
        assert "no 'nope'" in await error(c, "show_state", thread_id="bakery-plan", pointer="/values/nope")
        assert "no state key" in await error(c, "show_state", thread_id="bakery-plan", key="nope")
        assert "unknown status 'sleeping'" in await error(c, "list_threads", status="sleeping")
        assert await error(c, "show_state")  # a missing argument: the SDK's validation, one line
        # an argument no tool takes is refused, not dropped (the SDK ignores it)
        assert await error(c, "diff", thread_id="bakery-plan", db_b=str(other)) == (
            "bad arguments to diff: no argument 'db_b' (it takes: thread_id, a, b, db, ns, key, pointer, cursor)"
        )
        assert (await call(c, "list_threads"))["threads"]  # still serving
    async with stdio("--db", db, "--allow-any-db") as c:
        assert {t["thread_id"] for t in (await call(c, "list_threads", db=str(other)))["threads"]}


async def test_a_locked_database_ends_the_call_within_the_timeout(dbs, tmp_path):
    """A writer holding the lock past --timeout: the call ends with one line, the server goes on."""
    db = tmp_path / "locked.sqlite"
    shutil.copy(dbs["agent"], db)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("PRAGMA journal_mode=DELETE")
    async with stdio("--db", str(db), "--timeout", "1") as c:
        assert (await call(c, "list_threads"))["threads"]
        holder.execute("BEGIN EXCLUSIVE")
        try:
            message = await error(c, "list_threads")
            assert "locked" in message, message
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert (await call(c, "list_threads"))["threads"]


def _serve_http(*args: str) -> tuple[subprocess.Popen, str, str | None]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "statectl", "mcp", "--http", "--port", "0", *args],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    url = token = None
    deadline = time.monotonic() + 120
    assert proc.stderr is not None
    while url is None or ("0.0.0.0" in args and token is None):
        line = proc.stderr.readline()
        assert line, "the server did not start"
        assert time.monotonic() < deadline, "the server did not start in time"
        if m := re.search(r"serving (http://\S+)", line):
            url = m.group(1)
        if m := re.search(r"Bearer (\S+)", line):
            token = m.group(1)
    return proc, url, token


async def test_streamable_http_on_localhost(run, dbs):
    db = str(dbs["interrupts"])
    proc, url, token = _serve_http("--db", db, "--no-redact")
    try:
        assert url.startswith("http://127.0.0.1:")
        assert token is None
        async with Client(url, read_timeout_seconds=120) as c:
            threads = await call(c, "list_threads", limit=1000)
            assert threads["threads"] == cli_json(run, "threads", "--json", "--db", db)
            tid = threads["threads"][0]["thread_id"]
            assert (await call(c, "show_state", thread_id=tid))["state"] == cli_json(
                run, "show", tid, "--json", "--db", db
            )
            assert "no thread" in await error(c, "thread_log", thread_id="nope")
            for tool, arguments in [  # every tool answers over HTTP too
                ("list_sources", {}),
                ("thread_log", {"thread_id": tid}),
                ("diff", {"thread_id": tid}),
                ("graph", {"thread_id": tid}),
                ("size", {}),
                ("prune_plan", {"keep_last": 1}),
                ("schema", {"thread_id": tid}),
            ]:
                assert await call(c, tool, **arguments), tool
            assert (await call(c, "diff", thread_id=tid))["diff"] == cli_json(run, "diff", tid, "--json", "--db", db)
    finally:
        proc.terminate()
        proc.wait(30)


async def test_streamable_http_beyond_localhost_needs_the_token(dbs):
    import httpx2

    proc, url, token = _serve_http("--db", str(dbs["agent"]), "--host", "0.0.0.0")
    try:
        assert token
        port = url.rsplit(":", 1)[1].split("/")[0]
        local = f"http://127.0.0.1:{port}/mcp"
        async with httpx2.AsyncClient() as raw:
            refused = await raw.post(local, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert refused.status_code == 401
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
            from mcp.client.streamable_http import streamable_http_client

            async with Client(streamable_http_client(local, http_client=http)) as c:
                assert (await call(c, "list_threads"))["threads"]
    finally:
        proc.terminate()
        proc.wait(30)


def test_the_command_only_parses_into_one_serving(run, monkeypatch):
    """`statectl mcp` parses its options into one `Serving` and calls `start` with it: each option
    lands in its field, and the defaults are `Serving`'s own (declared once)."""
    from statectl.mcp import start as starting

    asked: list = []
    monkeypatch.setattr(starting, "start", asked.append)
    assert run("mcp").code == 0
    assert asked.pop() == starting.Serving(dbs=[None])
    r = run(
        "mcp", "--db", "a.sqlite", "--db", "postgresql:///b", "--http", "--host", "0.0.0.0", "--port", "9",
        "--token", "tok", "--allow-any-db", "--graph", "app.py:graph", "--python", "/bin/py", "--no-redact",
        "--max-chars", "3000", "--tool-timeout", "5",
    )  # fmt: skip
    assert r.code == 0, r.err
    assert asked == [
        starting.Serving(
            dbs=["a.sqlite", "postgresql:///b"],
            allow_any_db=True,
            http=True,
            host="0.0.0.0",
            port=9,
            token="tok",
            graph="app.py:graph",
            python="/bin/py",
            redact=False,
            max_chars=3000,
            tool_timeout=5.0,
        )
    ]


def test_mcp_refuses_what_it_cannot_do(run, dbs):
    r = run("mcp", "--db", str(dbs["agent"]), "--port", "9")
    assert r.code == 2
    assert "go with --http" in r.err
    r = run("mcp", "--db", "/nonexistent/x.sqlite")
    assert r.code != 0
    assert r.err.count("\n") == 1


async def test_postgres_with_a_password_in_the_url_never_shows_it(run, pg_samples):
    import getpass

    url = pg_samples.replace("postgresql:///", f"postgresql://{getpass.getuser()}:hunter2-pw@/")
    async with stdio("--db", url) as c:
        texts = []
        for tool, arguments in [("list_sources", {}), ("list_threads", {"limit": 1000}), ("size", {})]:
            result = await c.call_tool(tool, arguments)
            assert not result.is_error, result.content[0].text
            texts.append(result.content[0].text)
        threads = json.loads(texts[1])["threads"]
        assert [t["thread_id"] for t in threads] == [
            t["thread_id"] for t in cli_json(run, "threads", "--json", "--db", pg_samples, "--limit", "1000")
        ]
        texts.append(await error(c, "show_state", thread_id="nope"))
        texts.append(await error(c, "list_threads", db="postgresql://x:hunter2-pw@/elsewhere"))
        assert texts
        for text in texts:
            assert "hunter2" not in text
        assert json.loads(texts[0])["sources"][0]["db"].startswith("postgresql://")


async def test_with_the_apps_graph(run, dbs):
    """--graph, loaded once at start: the state is the exact one, the Mermaid is the app's own with
    the thread's path, and the schema is checked against it, thread by thread or all at once."""
    db = str(dbs["custom"])
    target = str(ROOT / "sample_threads" / "custom_app.py:approval_builder")
    async with stdio("--db", db, "--graph", target, "--no-redact") as c:
        for thread in ("approval-waiting", "approval-resumed"):
            state = await call(c, "show_state", thread_id=thread, checkpoint="1")
            assert state["state"] == cli_json(run, "show", thread, "1", "--json", "--db", db, "--graph", target)
            graph = await call(c, "graph", thread_id=thread)
            assert graph["inferred"] is False
            assert graph["text"] == run("graph", target, "--thread", thread, "--db", db).out
        checked = await call(c, "schema", thread_id="approval-waiting")
        expected = cli_json(run, "schema", target, "approval-waiting", "--db", db, "--json")
        assert checked["schema"]["drift"] == expected["drift"]
        every = await call(c, "schema")
        assert every["threads"] == len(cli_json(run, "threads", "--json", "--db", db))
        assert every["graph"] == target


@pytest.mark.parametrize("command", [["mcp", "--http"], ["tui", "--web"]])
def test_a_port_in_use_is_one_line(dbs, command):
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        r = subprocess.run(
            [sys.executable, "-m", "statectl", *command, "--port", str(port), "--db", str(dbs["agent"])],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
    finally:
        taken.close()
    assert r.returncode == 2
    assert r.stderr == f"statectl: cannot serve on 127.0.0.1:{port}: Address already in use\n"


@pytest.mark.parametrize(("name", "status"), [("custom", None), ("interrupts", "interrupted"), ("custom", "done")])
def test_prune_plan_pages_without_a_list_of_every_thread(run, dbs, monkeypatch, name, status):
    """`prune_plan` reads the store's ids a page at a time (or its threads with a status a chunk at
    a time), never every id as one list: its pages, followed by cursor, are the CLI's plan in the
    CLI's order, and each says how many threads there are in all."""
    import statectl
    from statectl.mcp import tools

    db = str(dbs[name])
    extra = ["-s", status] if status else []
    want = cli_json(run, "prune", "--keep-last", "1", "--json", "--db", db, *extra)["threads"]
    assert len(want) >= 3

    def refused(self):
        raise AssertionError("every thread id read as one list")

    listed = statectl.Store.threads

    def paged_only(self, limit=None, *args, **kwargs):
        if limit is None:
            raise AssertionError("every thread listed as one page")
        return listed(self, limit, *args, **kwargs)

    monkeypatch.setattr(statectl.Store, "every_thread_id", refused)
    monkeypatch.setattr(statectl.Store, "threads", paged_only)
    config = tools.Config(dbs=[db], labels=[db])
    got, cursor = [], None
    for _ in range(len(want)):  # (bounded: a cursor that did not move on would repeat forever)
        page = tools.prune_plan(config, keep_last=1, status=status, threads_per_page=2, cursor=cursor)
        got += page["threads"]
        assert page["totals_cover"].endswith(f" of {len(want)}")
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert got == want
