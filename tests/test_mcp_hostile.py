"""`statectl mcp` on hostile data (issue 50): every string it sends, ids, keys at any depth, values,
error texts and cursors, passes one redaction and one bound measured as sent; paging joins up
across ids it shortens or redacts; a search matches what is shown, never the secret behind
`[REDACTED]`; and an app that prints never reaches the protocol's stdout."""

from __future__ import annotations

import base64
import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any, TypedDict

import pytest

pytest.importorskip("mcp")

from test_mcp import RAW, ROOT, stdio

from statectl.mcp import paging

KEY = "sk-live-" + "Q7w8E9r0T1y2U3i4O5p6A7s8D9"
MAIL = "ops.lead@example.com"
LIMIT = 2000
LONG_ID = "x" * 100_000
IDS = [
    "plain-1",
    "plain-2",
    "plain-3",
    f"key-{KEY}",
    f"mail:{MAIL}",
    LONG_ID,
    "nl\nid",
    "esc\x1b[2Jid",
    "c1\x9b31mid",
    "bidi\u202eid",
]
WEIRD = "plain-1"  # the thread whose state is hostile


class S(TypedDict, total=False):
    notes: dict
    wide: dict
    text: str
    said: str


def _node(state: S) -> dict[str, Any]:
    return {
        # secrets as keys, at every depth, and keys whose value is a secret (any case)
        "notes": {
            MAIL: "a mail as a key",
            KEY: {"deeper": {f"to {MAIL}": KEY}},
            "Authorization": "Basic dXNlcjpwYXNz",
            "visible": "kept",
        },
        # a mapping of 25 keys of 50,000 characters: a pointer's miss once listed them whole
        "wide": {f"k{i:02d}" + "y" * 50_000: i for i in range(25)},
        # characters sent as escapes: a C1 control and a direction override are six characters each
        "text": "\x9b" * 3_000 + "\u202e" * 1_000 + "\x1b" * 1_000 + "é" * 1_000 + "😀" * 500,
        "said": f"contact me with {KEY} please",
    }


@pytest.fixture(scope="module")
def weird_db(tmp_path_factory) -> Path:
    """Real LangGraph runs: one per thread id above (ids with secrets, 100,000 characters, control
    characters), the first thread's state hostile."""
    from conftest import one_node_runs

    def node(state: S) -> dict[str, Any]:
        return _node(state) if state.get("said") == "hostile" else {"said": "a quiet run"}

    runs = [({"said": "hostile" if tid == WEIRD else "quiet"}, {"configurable": {"thread_id": tid}}) for tid in IDS]
    return one_node_runs(tmp_path_factory.mktemp("mcp-hostile") / "weird.sqlite", S, node, runs)


def _secret_free(text: str) -> None:
    for secret in (KEY, KEY[8:20], MAIL, "example.com", "dXNlcjpwYXNz"):
        assert secret not in text, secret


async def _raw(c, tool: str, bound: int = LIMIT, **arguments) -> tuple[bool, str]:
    result = await c.call_tool(tool, arguments)
    (content,) = result.content
    assert len(content.text) <= bound, (tool, len(content.text))  # as sent: every escape counted
    assert not RAW.search(content.text)
    return result.is_error, content.text


async def _ok(c, tool: str, bound: int = LIMIT, **arguments) -> dict:
    failed, text = await _raw(c, tool, bound, **arguments)
    assert not failed, text
    return json.loads(text)


async def _error(c, tool: str, bound: int = LIMIT, **arguments) -> str:
    failed, text = await _raw(c, tool, bound, **arguments)
    assert failed, text
    assert "\n" not in text
    assert "Traceback" not in text
    return text


async def test_secrets_as_keys_and_in_suggestions_are_redacted(weird_db):
    """Item 4: a secret as a mapping's key (at any depth), a key whose value is a secret (in any
    case), a secret in a thread id that a "did you mean" suggests: redacted as export's --redact."""
    async with stdio("--db", str(weird_db), "--max-chars", "20000") as c:
        texts = []
        for tool, arguments in [
            ("list_threads", {}),
            ("show_state", {"thread_id": WEIRD, "key": "notes"}),
            ("show_state", {"thread_id": WEIRD, "pointer": "/values/notes"}),
            ("diff", {"thread_id": WEIRD, "key": "notes"}),
            ("thread_log", {"thread_id": "key-"}),  # a prefix of an id with a secret in it
            ("thread_log", {"thread_id": "mail:"}),
            ("size", {}),
        ]:
            texts.append(json.dumps(await _ok(c, tool, 20_000, **arguments)))
        notes = (await _ok(c, "show_state", thread_id=WEIRD, key="notes"))["state"]["values"]["notes"]
        assert notes["visible"] == "kept"
        assert notes["Authorization"] == "[REDACTED]"
        assert sorted(notes) == ["Authorization", "[REDACTED]", "[REDACTED]~2", "visible"]
        hidden = (await _ok(c, "show_state", thread_id=WEIRD, pointer="/values/notes/[REDACTED]~2"))["value"]
        assert hidden == {"deeper": {"to [REDACTED]": "[REDACTED]"}}
        for wrong in (f"kee-{KEY}", f"mail:{MAIL}x", "key-", "plain-"):  # near ids, ambiguous prefixes
            texts.append(await _error(c, "show_state", thread_id=wrong, checkpoint="nope"))
        said = await _error(c, "thread_log", thread_id="key-[REDACTE]")
        assert "did you mean key-[REDACTED]" in said  # (suggested as shown)
        texts.append(said)
    for text in texts:
        _secret_free(text)


async def test_every_result_and_error_is_bounded_as_sent(weird_db):
    """Item 5: results of control characters, 100,000-character ids and 1M characters of keys, and
    errors that echo them, within --max-chars as sent (every escape counted)."""
    async with stdio("--db", str(weird_db), "--max-chars", str(LIMIT)) as c:
        for tool, arguments in [
            ("list_threads", {"limit": 1000}),
            ("show_state", {"thread_id": WEIRD}),
            ("show_state", {"thread_id": WEIRD, "pointer": "/values/text"}),
            ("show_state", {"thread_id": WEIRD, "pointer": "/values/wide"}),
            ("diff", {"thread_id": WEIRD}),
            ("thread_log", {"thread_id": WEIRD}),
            ("schema", {"thread_id": WEIRD}),
            ("size", {"thread_id": WEIRD}),
            ("prune_plan", {"keep_last": 1}),
            ("thread_log", {"thread_id": LONG_ID}),
            ("show_state", {"thread_id": LONG_ID}),
            ("diff", {"thread_id": LONG_ID}),
            ("graph", {"thread_id": LONG_ID}),
            ("schema", {"thread_id": LONG_ID}),
            ("size", {"thread_id": LONG_ID}),
        ]:
            await _ok(c, tool, **arguments)
        # a long text of escapes is read whole, page by page, each page within the bound
        read, cursor = "", None
        for _ in range(200):
            part = await _ok(c, "show_state", thread_id=WEIRD, pointer="/values/text", cursor=cursor)
            read += part["text"]
            cursor = part["next_cursor"]
            if cursor is None:
                break
        assert read == _node({})["text"]
        for tool, arguments in [
            ("show_state", {"thread_id": WEIRD, "pointer": "/values/wide/nope"}),  # 1M characters of keys
            ("show_state", {"thread_id": WEIRD, "pointer": "/values/notes/" + "z" * 100_000}),
            ("show_state", {"thread_id": "z" * 100_000}),
            ("show_state", {"thread_id": WEIRD, "pointer": "values" + "\x9b" * 50_000}),
            ("list_threads", {"cursor": "A" * 100_000}),
        ]:
            await _error(c, tool, **arguments)
        assert "no thread 'zzzz" in await _error(c, "thread_log", thread_id="z" * 100_000)
        assert "no 'nope' at pointer '/values/wide'" in await _error(
            c, "show_state", thread_id=WEIRD, pointer="/values/wide/nope"
        )


async def test_paging_joins_up_across_shortened_redacted_and_control_ids(run, weird_db):
    """Item 6: the cursor is opaque (the real last id, or its hash): pages of 1, 2 and 3 threads
    give every thread exactly once, whether its id is shown redacted, shortened or escaped."""
    every = [t["thread_id"] for t in json.loads(run("threads", "--json", "--db", str(weird_db)).out)]
    assert sorted(every) == sorted(IDS)
    for redacting in ([], ["--no-redact"]):
        async with stdio("--db", str(weird_db), "--max-chars", str(LIMIT), *redacting) as c:
            for size in (1, 2, 3):
                shown, cursor = [], None
                for _ in range(len(IDS) + 1):  # (bounded: a cursor that does not move on)
                    page = await _ok(c, "list_threads", limit=size, cursor=cursor)
                    assert 1 <= len(page["threads"]) <= size
                    shown += [t["thread_id"] for t in page["threads"]]
                    cursor = page["next_cursor"]
                    if cursor is None:
                        break
                    if not redacting:  # (base64 is no redaction)
                        _secret_free(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode())
                assert len(shown) == len(every)
                for real, seen in zip(every, shown, strict=True):  # in order, each once
                    if real == LONG_ID:
                        assert seen.startswith("x" * 100)
                        assert len(seen) < LIMIT
                    elif redacting or (KEY not in real and MAIL not in real):
                        assert seen == real
                    else:
                        assert "[REDACTED]" in seen
            # a cursor not made here, or naming no thread, is a one-line error
            assert "not one this server gave" in await _error(c, "list_threads", cursor="garbage!")
            forged = base64.urlsafe_b64encode(b'{"h":"' + b"0" * 32 + b'"}').decode()
            assert "gone" in await _error(c, "list_threads", cursor=forged)
            offset = paging.cursor_of(1)
            assert "not one this server gave" in await _error(c, "list_threads", cursor=offset)
            first = await _ok(c, "list_threads", limit=1)
            assert "not one this server gave" in await _error(
                c, "thread_log", thread_id="plain-2", cursor=first["next_cursor"]
            )


async def test_paging_joins_up_on_postgres(run, pg_empty):
    """The same on Postgres (PostgresSaver's runs, ids in its primary key's order): every thread
    once, in the command's order, at 1, 2 and 3 a page."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(S)
    g.add_node("node", lambda state: {"said": "a quiet run"})
    g.add_edge(START, "node")
    g.add_edge("node", END)
    with PostgresSaver.from_conn_string(pg_empty) as saver:
        saver.setup()
        graph = g.compile(checkpointer=saver)
        for tid in IDS:
            graph.invoke({"said": "quiet"}, {"configurable": {"thread_id": tid}})
    every = [t["thread_id"] for t in json.loads(run("threads", "--json", "--db", pg_empty, "--limit", "100").out)]
    assert sorted(every) == sorted(IDS)
    async with stdio("--db", pg_empty, "--max-chars", str(LIMIT)) as c:
        for size in (1, 2, 3):
            shown, cursor = [], None
            for _ in range(len(IDS) + 1):
                page = await _ok(c, "list_threads", limit=size, cursor=cursor)
                shown += [t["thread_id"] for t in page["threads"]]
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            assert len(shown) == len(every)
            for real, seen in zip(every, shown, strict=True):
                if real == LONG_ID:
                    assert seen.startswith("x" * 100)
                elif KEY in real or MAIL in real:
                    assert "[REDACTED]" in seen
                else:
                    assert seen == real


async def test_grep_matches_what_is_shown_never_the_secret(weird_db):
    """Item 8: a search for a prefix of a redacted secret finds nothing (no oracle); a search for
    `[REDACTED]` or for visible text finds the checkpoint."""
    async with stdio("--db", str(weird_db)) as c:

        async def hits(grep: str) -> list[str]:
            return [e["checkpoint_id"] for e in (await _ok(c, "thread_log", thread_id=WEIRD, grep=grep))["log"]]

        for prefix in (KEY[:12], KEY[:20], KEY, MAIL[:10], MAIL, "dXNlcjpw"):
            assert await hits(prefix) == [], prefix
        assert await hits("[REDACTED]")
        assert await hits("please")
        assert await hits("[redacted] please")  # (ignoring case, as shown)
        # thread ids are searched as shown too: by a prefix, or list_threads' match
        for hidden in (f"key-{KEY[:10]}", f"key-{KEY[:20]}", "mail:ops", f"mail:{MAIL[:12]}"):
            assert "no thread" in await _error(c, "thread_log", thread_id=hidden), hidden
            assert (await _ok(c, "list_threads", match=hidden[5:]))["threads"] == [], hidden
        assert (await _ok(c, "thread_log", thread_id="key-"))["thread_id"] == "key-[REDACTED]"
        assert [t["thread_id"] for t in (await _ok(c, "list_threads", match="mail:"))["threads"]] == ["mail:[REDACTED]"]
    async with stdio("--db", str(weird_db), "--no-redact") as c:
        got = await _ok(c, "thread_log", thread_id=WEIRD, grep=KEY[:12])
        assert got["log"]  # unredacted, the secret is shown, so it is searched
        assert (await _ok(c, "thread_log", thread_id=f"key-{KEY[:10]}"))["thread_id"] == f"key-{KEY}"


def test_sent_is_bounded_for_every_kind_of_character():
    """The bound measures the text as sent: C0 and C1 controls, direction overrides, non-ASCII,
    astral characters, lone surrogates, in values and in keys, and a head no tool pages."""
    for ch in ("\x1b", "\x9b", "\u202e", "é", "😀", "\ud800", '"', "\\"):
        for value in (
            {"thread_id": ch * 50_000, "log": [ch * 10] * 50, "next_cursor": paging.cursor_of(7)},
            {"state": {ch * 30_000 + str(i): ch * 1000 for i in range(30)}},
            {"state": [{ch: ch * 999}] * 500},
        ):
            text = paging.sent(value, LIMIT)
            assert len(text) <= LIMIT, (repr(ch), len(text))
            assert not RAW.search(text)
            got = json.loads(text)
            assert got["left_out"]
            if "next_cursor" in value:
                assert got["next_cursor"] == value["next_cursor"]  # a cursor is never cut
    small = {"a": "\x9b" * 10, "b": "\ud800"}
    assert json.loads(paging.sent(small, LIMIT)) == small  # whole when it fits: exact


PRINTING_APP = """
import os, sys
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

print("import-time print", flush=True)
os.write(1, b"import-time os.write\\n")
sys.stdout.write("import-time buffered write\\n")


class S(TypedDict, total=False):
    said: str


def node(state: S) -> dict:
    return {"said": "done"}


def make():
    print("the factory prints", flush=True)
    os.write(1, b"the factory writes fd 1\\n")
    g = StateGraph(S)
    g.add_node("node", node)
    g.add_edge(START, "node")
    g.add_edge("node", END)
    return g.compile()
"""


def test_an_app_that_prints_never_reaches_the_protocol(tmp_path, weird_db):
    """Item 7: with --graph, what the app prints (at import, in a factory called at start and again
    for a tool) goes to stderr; stdout holds the JSON-RPC messages alone."""
    app = tmp_path / "printing_app.py"
    app.write_text(PRINTING_APP)
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "graph", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "schema", "arguments": {}}},
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "show_state", "arguments": {"thread_id": "plain-2"}},
        },
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "statectl", "mcp", "--db", str(weird_db), "--graph", f"{app}:make"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    answers = {}
    try:
        for request in requests:
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
            if "id" not in request:
                continue
            while request["id"] not in answers:
                ready, _, _ = select.select([proc.stdout], [], [], 300)
                assert ready, "no answer"
                line = proc.stdout.readline()
                assert line, "the server ended"
                message = json.loads(line)  # every line on stdout is JSON-RPC
                answers[message.get("id")] = message
        proc.stdin.close()
        stderr = proc.stderr.read().decode() if proc.wait(60) is not None and proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert sorted(answers) == [1, 2, 3, 4]
    for i in (2, 3, 4):
        assert not answers[i]["result"].get("isError"), answers[i]
    assert "flowchart" in answers[2]["result"]["content"][0]["text"]
    for said in ("import-time print", "import-time os.write", "the factory prints", "the factory writes fd 1"):
        assert said in stderr
    assert "import-time buffered write" in stderr


def test_a_cursor_is_never_redacted():
    """A cursor is base64url of what is shown already: redacted again, one that happens to read as
    a key (`-AKIA` and 16 capitals) would no longer page on."""
    from statectl.core.redact import Redactor
    from statectl.mcp.tools import redact_result

    looks = "eyJh-AKIAABCDEFGHIJKLMNOP-cd"
    assert Redactor().text(looks) != looks
    got = redact_result({"threads": [looks], "next_cursor": looks, "left_out": None}, Redactor())
    assert got == {"threads": ["eyJh-[REDACTED]-cd"], "next_cursor": looks, "left_out": None}
