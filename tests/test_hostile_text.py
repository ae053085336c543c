"""Control characters in the data never reach the terminal: messages, state values and thread ids
holding OSC 52 (writes the clipboard), `ESC [ 2 J` (clears the screen), a window-title OSC, a C1
CSI (`\\x9b`) and U+202E (reads backwards) are shown escaped by every human output, the TUI's
included, and data is never parsed as markup. JSON keeps the exact values. The thread is written
by a real LangGraph run."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "sample_threads"))

OSC52 = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"
HOSTILE = f"see {OSC52} then \x1b[2J\x1b]0;pwned\x07 and \x9b31m and \u202eevil"
THREAD = "t\x1b[2J[red]x[/]"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]")


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory):
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    def reply(state: MessagesState) -> dict:
        return {"messages": [AIMessage(HOSTILE, id="ai-1")]}

    g = StateGraph(MessagesState)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    g.add_edge("reply", END)
    db = tmp_path_factory.mktemp("hostile") / "hostile.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    graph = g.compile(checkpointer=SqliteSaver(conn))
    graph.invoke({"messages": [HumanMessage(HOSTILE, id="h-1")]}, {"configurable": {"thread_id": THREAD}})
    conn.close()
    return db


@pytest.mark.parametrize(
    "args",
    [
        ["threads"],
        ["log", THREAD],
        ["log", "-p", THREAD],
        ["show", THREAD],
        ["diff", THREAD],
        ["schema", THREAD],
        ["graph", "--thread", THREAD],
    ],
)
def test_human_output_shows_control_characters_escaped(run, hostile_db, args):
    r = run(*args, "--db", str(hostile_db))
    assert r.code == 0, r.err
    assert not RAW.search(r.out + r.err), repr(RAW.findall(r.out + r.err))
    if args[0] in ("show", "log"):
        assert "\\x1b" in r.out  # shown, visibly


def test_errors_naming_the_data_are_escaped(run, hostile_db):
    r = run("show", "nope\x1b]0;title\x07\u202e", "--db", str(hostile_db))
    assert r.code == 3
    assert "\\x1b" in r.err
    assert "\\u202e" in r.err
    assert not RAW.search(r.err), repr(r.err)


def test_json_keeps_the_exact_values(run, hostile_db):
    r = run("show", THREAD, "--json", "--db", str(hostile_db))
    values = json.loads(r.out)["values"]
    assert values["messages"][0]["data"]["content"] == HOSTILE


async def test_the_tui_shows_them_escaped_and_never_parses_markup(hostile_db):
    from tui_helpers import settle

    from statectl.tui import make_app
    from statectl.tui.widgets.document import Document
    from statectl.tui.widgets.timeline import Timeline

    app = make_app(str(hostile_db), THREAD, poll=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        doc = app.screen.query_one(Document)
        shown = "".join(seg.text for s in doc.sections for line in s.lines for seg in line)
        assert "\\x1b" in shown, repr(RAW.findall(shown))
        assert not RAW.search(shown), repr(RAW.findall(shown))
        timeline = app.screen.query_one(Timeline)
        for y in range(timeline.row_count + 1):
            assert not RAW.search("".join(s.text for s in timeline.render_line(y)))
        assert "\x1b" not in str(app.screen.title)
        await pilot.press("c")  # copy the checkpoint id: a notification, never markup
        await settle(pilot)
        await pilot.press("q")
    assert app.return_code in (0, None)


def test_a_table_row_with_an_escaped_id_keeps_its_cells_at_80_columns(run, hostile_db, tmp_path, monkeypatch):
    """On a terminal of 80 columns a long thread id holding control characters is measured as it
    is shown (`\\x1b`: 4 cells, not 0), so its row is not cropped at the edge: the cells after the
    id (the bytes `size` counts) stay on the row, whole. (The real run's thread, renamed longer.)"""
    import shutil

    from statectl.cli.output import make_console

    db = tmp_path / "long.sqlite"
    shutil.copy(hostile_db, db)
    long = THREAD + "\x1b[0m" + "y" * 70
    with sqlite3.connect(db) as conn:
        for table in ("checkpoints", "writes"):
            conn.execute(f"UPDATE {table} SET thread_id = ?", (long,))
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("FORCE_COLOR", "1")  # (a terminal: lines end at its edge)
    assert make_console().is_terminal
    r = run("size", "--db", str(db))
    assert r.code == 0, r.err
    plain = re.sub("\x1b\\[[0-9;]*m", "", r.out)  # (statectl's own colour, not the data's)
    assert not RAW.search(plain)
    row = next(line for line in plain.splitlines() if line.startswith("t\\x1b[2J[red]x[/]"))
    assert re.search(r"\d+(\.\d+)? (B|kB)", row), plain
