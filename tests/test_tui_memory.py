"""The TUI's memory screen (`m`): the store's namespaces, a namespace's items, the value pane as
`store get` renders it, on stores LangGraph wrote (SqliteStore; InMemoryStore under langgraph dev)."""

from __future__ import annotations

from pathlib import Path

import pytest
from memory_stores import folder_copy, folder_oracle, sqlite_copy, sqlite_oracle
from rich.console import Console
from textual.widgets import Static
from tui_helpers import settle

from statectl.tui import make_app
from statectl.tui.screens.help import keys_table
from statectl.tui.screens.memory import MemoryScreen
from statectl.tui.screens.thread import ThreadScreen
from statectl.tui.screens.threads import ThreadsScreen

SIZE = (100, 30)


@pytest.fixture(params=["sqlite", "folder"])
def store_db(request, tmp_path) -> tuple[str, object]:
    if request.param == "sqlite":
        path = sqlite_copy(tmp_path)
        return str(path), sqlite_oracle(path)
    folder = folder_copy(tmp_path)
    return str(folder), folder_oracle(folder)


def _text(renderable, width: int = 120) -> str:
    console = Console(width=width, record=True, color_system=None, force_terminal=False)
    console.print(renderable)
    return console.export_text()


def _cells(screen, table_id: str, column: int = 0) -> list[str]:
    table = screen.query_one(table_id)
    return [str(table.get_row_at(i)[column]) for i in range(table.row_count)]


async def _go_to(pilot, namespace: str) -> None:
    screen = pilot.app.screen
    names = [c.strip().rstrip("/") for c in _cells(screen, "#mem-ns")]
    for _ in range(names.index(namespace)):
        await pilot.press("j")
    await settle(pilot)


async def test_m_lists_every_namespace_and_its_items_as_langgraph_does(store_db):
    db, oracle = store_db
    with oracle as store:
        want = sorted(store.list_namespaces(limit=1000))
        items = {ns: sorted(i.key for i in store.search(ns, limit=1000) if i.namespace == ns) for ns in want}
    app = make_app(db, poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MemoryScreen)
        rows = [c.strip().rstrip("/") for c in _cells(screen, "#mem-ns")]
        counts = _cells(screen, "#mem-ns", 1)
        own = {r: int(n) for r, n in zip(rows, counts, strict=True) if not n.startswith("(")}
        assert sorted(own) == sorted(".".join(ns) for ns in want)  # full names, never shortened
        for ns in want:
            assert own[".".join(ns)] == len(items[ns])
        await _go_to(pilot, "users.alice.facts")
        assert sorted(_cells(screen, "#mem-items")) == items[("users", "alice", "facts")]
        await pilot.press("q")
    assert not app.is_running


async def test_the_value_pane_is_store_get_escaped_never_markup(store_db):
    db, _oracle = store_db
    app = make_app(db, poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        await _go_to(pilot, "settings")
        screen = app.screen
        keys = _cells(screen, "#mem-items")
        for _ in range(keys.index("banner")):
            await pilot.press("enter" if _ == 0 else "j")
            await settle(pilot)
        shown = _text(screen.query_one("#mem-value", Static).content)
        assert "key       banner" in shown
        assert "[bold]not markup[/bold]" in shown
        assert "\\x1b[31m" in shown
        assert "\\x07" in shown
        assert "\x1b" not in shown
        assert "\x07" not in shown
        if db.endswith(".sqlite"):  # (SqliteStore's vector index; the folder has none)
            assert "indexed   1 field(s): $ (8 dims)" in shown  # (as `store get` shows it)
        # Esc goes back a pane at a time: value -> items -> namespaces -> threads
        await pilot.press("tab")  # (focus: the items, then the value)
        await pilot.press("tab")
        assert screen.focused is screen.query_one("#mem-right")
        for expected in ("#mem-items", "#mem-ns"):
            await pilot.press("escape")
            assert screen.focused is screen.query_one(expected)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ThreadsScreen)


async def test_m_from_a_thread_and_the_help_names_it(tmp_path):
    db = sqlite_copy(tmp_path)
    app = make_app(str(db), poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ThreadScreen)
        await pilot.press("m")
        await settle(pilot)
        assert isinstance(app.screen, MemoryScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ThreadScreen)
        await pilot.press("question_mark")
        await settle(pilot)
        assert "Memory (m)" in _text(keys_table())


async def test_a_database_without_a_store_says_so(dbs):
    before = dbs["agent"].read_bytes()
    app = make_app(str(dbs["agent"]), poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        status = str(app.screen.query_one("#mem-status", Static).render())
        assert status.startswith("no store in ")
        assert "agent.sqlite" in status
        assert app.screen.query_one("#mem-ns").row_count == 0
        await pilot.press("q")
    assert dbs["agent"].read_bytes() == before
    assert sorted(p.name for p in dbs["agent"].parent.iterdir() if p.name.startswith("agent")) == ["agent.sqlite"]


def test_reading_leaves_the_store_byte_identical(tmp_path):
    import asyncio

    db = sqlite_copy(tmp_path)
    before = db.read_bytes()

    async def go() -> None:
        app = make_app(str(db), poll=0)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            for key in "mjjjjj":
                await pilot.press(key)
                await settle(pilot)

    asyncio.run(go())
    assert db.read_bytes() == before
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == ["memory.sqlite"]


async def test_keys_and_namespaces_with_control_characters_are_escaped_on_one_line(tmp_path):
    """A bell or a newline in a key or a namespace label (put by SqliteStore): written out, as
    `store ls` shows them (Rich dropped the bell; the newline split the row)."""
    import sqlite3

    from langgraph.store.sqlite import SqliteStore

    db = sqlite_copy(tmp_path)
    with sqlite3.connect(db, check_same_thread=False, isolation_level=None) as conn:
        SqliteStore(conn).put(("zz\x07bell", "x\ny"), "k\x07\nforged", {"text": "v"})
    app = make_app(str(db), poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        screen = app.screen
        names = [c.strip().rstrip("/") for c in _cells(screen, "#mem-ns")]
        assert "zz\\x07bell.x\\ny" in names
        await _go_to(pilot, "zz\\x07bell.x\\ny")
        assert _cells(screen, "#mem-items") == ["k\\x07\\nforged"]
        await pilot.press("q")


async def test_many_namespaces_are_read_one_at_a_time_into_the_bounded_tree(tmp_path, monkeypatch):
    """A store of more namespaces under one label than the tree holds (written by SqliteStore):
    the screen reads them a batch at a time (never the whole list), shows the tree's labels and one
    row counting the rest with the command that lists them, and its status counts every one."""
    import sqlite3

    from langgraph.store.base import PutOp
    from langgraph.store.sqlite import SqliteStore

    from statectl.core.memory import TREE_CHILDREN
    from statectl.sources.memory.sqlite import SqliteMemory

    db = sqlite_copy(tmp_path)
    many = TREE_CHILDREN + 37
    with sqlite3.connect(db, check_same_thread=False, isolation_level=None) as conn:
        before = sum(1 for _ in conn.execute("SELECT DISTINCT prefix FROM store"))
        items = conn.execute("SELECT count(*) FROM store").fetchone()[0]
        SqliteStore(conn).batch([PutOp(("zz", f"u{n:04d}"), "profile", {"text": f"user {n}"}) for n in range(many)])
    monkeypatch.setattr(SqliteMemory, "namespaces", lambda *a, **k: pytest.fail("read every namespace at once"))
    app = make_app(str(db), poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MemoryScreen)
        names = [c.strip() for c in _cells(screen, "#mem-ns")]
        at = names.index("zz/")
        assert names[at + 1 : at + TREE_CHILDREN + 1] == [f"zz.u{n:04d}" for n in range(TREE_CHILDREN)]
        assert names[-1] == f"… {many - TREE_CHILDREN} more namespaces (statectl store ls zz)"
        status = str(screen.query_one("#mem-status", Static).render())
        assert f"{items + many:,} items in {before + many:,} namespaces" in status
        await pilot.press("G")
        await settle(pilot)
        await pilot.press("q")
