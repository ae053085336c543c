"""Views true at every step: a checkpoint that is not its branch's newest says what happened
next (not "waiting"); the log names the node that failed; a key written with the value it had
is "written, unchanged", not "changed", the same in the log, the diff's JSON and the TUI."""

from __future__ import annotations

import sqlite3

from tui_helpers import settle

import statectl
from statectl.core.diff import ROOT_KEY, step_diff
from statectl.core.timeline import entries
from statectl.tui import make_app
from statectl.tui.widgets.timeline import Timeline


def test_log_changed_is_what_the_diff_changed(dbs):
    """For every step of every sample thread, CHANGED is exactly the keys the step's diff
    changed (step 23 of bakery-plan listed `messages`, which HITL wrote back as it was)."""
    seen_unchanged = 0
    for name in ("agent", "custom", "deep"):
        with statectl.open(str(dbs[name])) as store:
            for t in store.threads():
                view = store.view(t.thread_id)
                for e in entries(view):
                    if view.parent(e.record) is None:
                        continue
                    d = step_diff(view, e.record)
                    keys = {c.key for c in d.changes} - {ROOT_KEY}  # (a functional API's return value)
                    assert set(e.changed) == keys, (t.thread_id, e.record.step)
                    assert not set(e.unchanged) & set(e.changed)
                    seen_unchanged += bool(e.unchanged)
    assert seen_unchanged  # (the samples hold such writes: the check above is not empty)


def test_log_says_written_unchanged_and_the_failing_node(run, dbs):
    out = run("log", "bakery-plan", "--db", str(dbs["agent"])).out
    row = next(line for line in out.splitlines() if line.lstrip().startswith("23 "))
    assert "hitl_edited_tool_calls" in row
    assert "written, unchanged: messages" in row
    assert "hitl_edited_tool_calls, messages" not in row
    out = run("log", "market-lookup-fails", "--db", str(dbs["agent"])).out
    assert "error in tools: RuntimeError(" in out
    out = run("log", "market-lookup-fails", "--oneline", "--db", str(dbs["agent"])).out
    assert "error in tools:" in out


async def test_tui_timeline_changed_leaves_out_unchanged_writes(dbs):
    app = make_app(str(dbs["agent"]), "bakery-plan", poll=0)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(Timeline)
        keys = list(table.widths)
        row = next(r for r in range(table.row_count) if table.entries[r].record.step == 23)
        assert str(table.get_row_at(row)[keys.index("changed")]) == "hitl_edited_tool_calls"


def test_show_at_an_answered_interrupt_says_what_came_next(run, dbs):
    old = run("show", "approval-resumed", "1", "--db", str(dbs["custom"])).out
    assert 'then  answered at step 2 with "yes"' in old
    waiting = run("show", "approval-waiting", "--db", str(dbs["custom"])).out
    assert "then " not in waiting  # the newest: it still waits


async def test_tui_banner_waiting_only_at_the_newest(dbs):
    from textual.widgets import Static

    app = make_app(str(dbs["custom"]), "approval-resumed", poll=0)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(Timeline)
        row = next(r for r in range(table.row_count) if table.entries[r].record.step == 1)
        table.move_cursor(row=row, animate=False)
        await settle(pilot)
        banner = str(app.screen.query_one("#banner", Static).render())
        assert 'interrupted here — answered at step 2 with "yes"' in banner
        assert "waiting" not in banner
    app = make_app(str(dbs["custom"]), "approval-waiting", poll=0)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        assert "waiting at an interrupt" in str(app.screen.query_one("#banner", Static).render())


def test_a_failed_step_retried_says_so(run, tmp_path):
    """A real run that fails, then is resumed (invoke(None)) and succeeds: at the failed
    checkpoint, `show` says where it was retried."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class S(TypedDict):
        n: int

    calls = []

    def flaky(s: S) -> dict:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("upstream timed out")
        return {"n": s["n"] + 1}

    def first(s: S) -> dict:
        return {"n": 1}

    g = StateGraph(S)
    g.add_node("first", first)
    g.add_node("flaky", flaky)
    g.add_edge(START, "first")
    g.add_edge("first", "flaky")
    g.add_edge("flaky", END)
    db = tmp_path / "retry.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    graph = g.compile(checkpointer=SqliteSaver(conn))
    config = {"configurable": {"thread_id": "flaky"}}
    try:
        graph.invoke({"n": 0}, config)
    except RuntimeError:
        pass
    graph.invoke(None, config)
    conn.close()
    log = run("log", "flaky", "--db", str(db)).out
    assert "error in flaky: RuntimeError" in log
    failed = run("show", "flaky", "1", "--db", str(db)).out
    assert "flaky: RuntimeError('upstream timed out')" in failed
    assert "then  retried at step 2" in failed


def test_threads_json_carries_what_the_table_shows(run, dbs):
    """`threads --json` had no preview, question or error: it now carries what the PREVIEW
    column shows, and the node that raised (a Send's task included: `tools` in create_agent)."""
    import json

    rows = {t["thread_id"]: t for t in json.loads(run("threads", "--db", str(dbs["agent"]), "--json").out)}
    failed = rows["market-lookup-fails"]
    assert failed["error_node"] == "tools"
    assert failed["error"].startswith('RuntimeError("market data service unavailable')
    assert failed["preview"] == failed["error"]
    assert rows["investor-email"]["interrupt"] == rows["investor-email"]["preview"] == "send_email"
    assert rows["bakery-plan"]["preview"] == "I want to open a bakery in Lisbon. Help me shape the idea."
    assert "error" not in rows["bakery-plan"]
    assert "interrupt" not in rows["bakery-plan"]
    custom = {t["thread_id"]: t for t in json.loads(run("threads", "--db", str(dbs["custom"]), "--json").out)}
    assert custom["parse-fails"]["error_node"] == "parse"
    assert custom["approval-waiting"]["interrupt"] == "Publish this draft?"  # (its question, as the table shows)
    table = run("threads", "--db", str(dbs["agent"])).out
    assert '✖ tools: RuntimeError("market data service' in table
