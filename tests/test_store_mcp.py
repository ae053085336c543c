"""`statectl mcp`'s store tools through the official MCP client: each answers what `statectl
store ... --json` answers, bounded (cursor, pointer) and redacted (a secret in a value is neither
shown nor found by grep)."""

from __future__ import annotations

import json
import sqlite3

import pytest

pytest.importorskip("mcp")

from memory_stores import sqlite_copy
from test_mcp import RAW, SECRET, call, cli_json, error, stdio

pytestmark = pytest.mark.xdist_group("memory")


async def test_store_tools_answer_as_the_commands_do(run, tmp_path):
    db = str(sqlite_copy(tmp_path))
    async with stdio("--db", db, "--no-redact") as c:
        spaces = await call(c, "store_namespaces")
        assert [{k: v for k, v in n.items() if k != "shown"} for n in spaces["namespaces"]] == cli_json(
            run, "store", "--json", "--db", db
        )
        under = await call(c, "store_namespaces", prefix="users.alice")
        assert [n["shown"] for n in under["namespaces"]] == ["users.alice", "users.alice.facts", "users.alice.sessions"]
        for n in spaces["namespaces"]:
            listed = await call(c, "store_items", namespace=n["shown"])
            assert listed["items"] == cli_json(run, "store", "ls", n["shown"], "--json", "--db", db)["items"]
            for item in listed["items"]:
                got = await call(c, "store_get", namespace=n["shown"], key=item["key"])
                assert got["item"] == cli_json(run, "store", "get", n["shown"], item["key"], "--json", "--db", db)
        found = await call(c, "store_grep", filter=["kind=recipe"])
        assert found["items"] == cli_json(
            run, "store", "grep", "-f", "kind=recipe", "--limit", "9", "--json", "--db", db
        )
        found = await call(c, "store_grep", text="rye", namespace="users")
        assert [i["key"] for i in found["items"]] == ["fact-0"]
        page = await call(c, "store_items", namespace="users.alice.facts", limit=2)
        assert page["next_after"] == "fact-1"
        page = await call(c, "store_items", namespace="users.alice.facts", limit=2, after="fact-1")
        assert [i["key"] for i in page["items"]] == ["fact-2"]
        assert page["next_after"] is None
        assert "no namespace 'userz'" in await error(c, "store_items", namespace="userz")
        assert "give text or filter" in await error(c, "store_grep")
        banner = await call(c, "store_get", namespace="settings", key="banner")
        assert banner["item"]["value"]["text"].startswith("line1\x1b[31m")  # (escaped on the wire: RAW checked)


async def test_store_tools_are_bounded_and_redacted(tmp_path):
    from langgraph.store.sqlite import SqliteStore

    db = sqlite_copy(tmp_path)  # (the server opens a checkpoint store: the sample, with items added)
    with sqlite3.connect(db, check_same_thread=False, isolation_level=None) as conn:
        store = SqliteStore(conn)
        store.put(("keys",), "openai", {"text": f"the key is {SECRET}", "owner": "ops"})
        store.put(("notes",), "long", {"text": "line\n" * 20_000})
    async with stdio("--db", str(db), "--max-chars", "5000") as c:
        for tool, args in (
            ("store_namespaces", {}),
            ("store_items", {"namespace": "keys"}),
            ("store_get", {"namespace": "keys", "key": "openai"}),
            ("store_grep", {"text": "the key"}),
        ):
            text = (await c.call_tool(tool, args)).content[0].text
            assert SECRET not in text, tool
            assert not RAW.search(text)
        assert (await call(c, "store_grep", text=SECRET[:20]))["items"] == []  # (searched as shown: no oracle)
        got = await call(c, "store_get", namespace="notes", key="long")
        assert len(json.dumps(got)) <= 5000
        assert got["left_out"]
        part = await call(c, "store_get", namespace="notes", key="long", pointer="/value/text")
        assert part["next_cursor"]
        rest = await call(
            c, "store_get", namespace="notes", key="long", pointer="/value/text", cursor=part["next_cursor"]
        )
        assert rest["text"].startswith("line")


def test_store_namespaces_reads_a_bounded_number_of_namespaces(tmp_path, monkeypatch):
    """A store of more namespaces than the tool reads: the first ones, in order, and a line saying
    the rest were left out (never every namespace held at once)."""
    from statectl.mcp import memory_tools, tools
    from statectl.sources.memory import open_memory

    db = str(sqlite_copy(tmp_path))
    with open_memory(db) as memory:
        every = [".".join(i.namespace) for i in memory.namespaces()]
    monkeypatch.setattr(memory_tools, "NAMESPACES", 4)
    config = tools.Config(dbs=[db], labels=[db])
    got = memory_tools.store_namespaces(config)
    assert [n["shown"] for n in got["namespaces"]] == every[:4]
    assert "only the first 4 namespaces" in got["namespaces_left_out"]
    monkeypatch.setattr(memory_tools, "NAMESPACES", len(every))
    got = memory_tools.store_namespaces(config)
    assert [n["shown"] for n in got["namespaces"]] == every
    assert "namespaces_left_out" not in got
