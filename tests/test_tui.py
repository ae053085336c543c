"""`statectl tui` driven with Textual's Pilot: open, filter, step, diff, search, back, quit,
live update, failures as notifications. Screens are pinned by the snapshot tests in
test_tui_snapshots.py."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest
from conftest import corrupt_latest
from parity import SAMPLES
from textual.widgets import DataTable, Input, Select, Static
from tui_helpers import doc_text, settle, timeline_ids

import statectl
from statectl.core.diff import diff
from statectl.core.reducers import message_data
from statectl.tui import make_app
from statectl.tui.screens.help import HelpScreen
from statectl.tui.screens.thread import ThreadScreen
from statectl.tui.screens.threads import ThreadsScreen
from statectl.tui.widgets.document import Document
from statectl.tui.widgets.timeline import Timeline

SIZE = (150, 45)


def _rows(app) -> list[str]:
    table = app.screen.query_one("#threads", DataTable)
    return [table.coordinate_to_cell_key((r, 0)).row_key.value for r in range(table.row_count)]


def _plain(renderable) -> str:
    from rich.console import Console

    with open(os.devnull, "w") as devnull:
        console = Console(width=120, record=True, file=devnull)
        console.print(renderable)
    return console.export_text()


def _where(app) -> str:
    return str(app.screen.query_one("#where", Static).render())


async def test_threads_screen_lists_every_thread_with_its_status(dbs):
    app = make_app(str(dbs["custom"]), poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ThreadsScreen)
        expected = statectl.open(str(dbs["custom"])).threads()
        assert _rows(app) == [t.thread_id for t in expected]
        table = app.screen.query_one("#threads", DataTable)
        statuses = {t.thread_id: str(table.get_cell(t.thread_id, "status")) for t in expected}
        assert statuses == {t.thread_id: t.status for t in expected}
        assert {"error", "interrupted", "done"} <= set(statuses.values())


async def test_threads_load_in_pages_as_the_cursor_reaches_the_end(dbs):
    app = make_app(str(dbs["custom"]), poll=0, page=3)
    expected = [t.thread_id for t in statectl.open(str(dbs["custom"])).threads()]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert _rows(app) == expected[:3]
        assert app.screen.more
        assert "3 loaded · 8 threads" in str(app.screen.query_one("#threads-status", Static).render())
        await pilot.press("end")  # the last row: the next page loads
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        assert _rows(app) == expected
        assert not app.screen.more
        await pilot.press("home")
        assert app.screen.query_one("#threads").selected == expected[0]
        assert not app.screen.loading  # (a screen attribute named `loading` once hid it all)


async def test_the_status_line_counts_one_thread_as_one(dbs):
    app = make_app(str(dbs["deep"]), poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        status = str(app.screen.query_one("#threads-status", Static).render())
        assert status == f"1 shown · 1 loaded · 1 thread in {dbs['deep']}", status


async def test_the_first_page_read_before_the_app_starts_is_the_page_shown(dbs):
    """`statectl tui` reads the threads screen's first page while Textual starts (`EarlyRead`):
    the same rows, statuses and previews as read by the screen, the count of all threads, and
    the next page read by the screen as before; a reload reads anew."""
    from statectl.tui.early import first_page

    def shown(app) -> list[tuple]:
        table = app.screen.query_one("#threads", DataTable)
        return [tuple(str(c) for c in table.get_row_at(r)) for r in range(table.row_count)]

    late = make_app(str(dbs["custom"]), poll=0, page=3)
    async with late.run_test(size=SIZE) as pilot:
        await settle(pilot)
        want = shown(late), str(late.screen.query_one("#threads-status", Static).render())
    store = statectl.open(str(dbs["custom"]))
    early = first_page(store, 3)
    app = make_app(store, poll=0, page=3, early=early)
    assert app.db_lock is early.lock
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.early is None  # taken
        assert (shown(app), str(app.screen.query_one("#threads-status", Static).render())) == want
        assert "3 loaded · 8 threads" in want[1]
        for _ in range(2):  # the next pages, read by the screen
            await pilot.press("end")
            await settle(pilot)
        assert _rows(app) == [t.thread_id for t in store.threads()]
        await pilot.press("r")
        await settle(pilot)
        assert _rows(app)[:3] == [r[0] for r in want[0]]


def test_an_early_read_holds_the_lock_before_its_thread_runs(monkeypatch):
    """The app's one-reader lock is taken when the early read is made, not when its thread gets
    to run: a reader that takes the lock first would otherwise wait on a thread that waits on it
    (the threads screen joins the early read under that lock). Its thread is held back here."""
    from statectl.tui import early

    held: list = []

    class Later:
        def __init__(self, target, args, name, daemon):
            self.run = lambda: target(*args)
            held.append(self)

        def start(self):
            pass  # (not scheduled yet)

        def join(self):
            pass

    monkeypatch.setattr(early.threading, "Thread", Later)
    read = early.EarlyRead(lambda: "page")
    assert read.lock.locked()
    held[0].run()
    assert not read.lock.locked()
    assert read.result() == "page"
    failing = early.EarlyRead(lambda: 1 / 0)
    held[1].run()
    assert not failing.lock.locked()
    with pytest.raises(ZeroDivisionError):
        failing.result()


async def test_a_first_page_that_fails_early_is_a_notification(dbs):
    """A read started before the app that fails (the store gone): said as any read's failure is,
    once the screen takes its answer; the app keeps running."""
    from statectl.tui.early import first_page

    store = statectl.open(str(dbs["custom"]))
    store.source.conn.close()
    app = make_app(store, poll=0, early=first_page(store, 500))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert any("could not load threads" in (n.title or "") for n in app._notifications)
        assert app.is_running


async def test_type_to_filter_then_enter_opens_the_thread(dbs):
    app = make_app(str(dbs["custom"]), poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("a", "p", "p", "r")  # typing while the list has focus starts the filter
        await settle(pilot)
        assert app.screen.query_one(Input).value == "appr"
        assert _rows(app) == ["approval-waiting", "approval-resumed"]
        await pilot.press("down")  # arrows move the list while the filter has focus
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ThreadScreen)
        assert app.screen.thread_id == "approval-resumed"
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ThreadsScreen)
        await pilot.press("escape")  # Esc clears the filter
        assert len(_rows(app)) == 8
        await pilot.press("slash", "z", "z", "z")
        assert _rows(app) == []
        await pilot.press("enter")  # nothing to open: nothing happens
        assert isinstance(app.screen, ThreadsScreen)


async def test_fast_typing_keeps_every_key(dbs):
    """Keys that arrive before the filter box has the focus (a fast typist, a paste, tmux
    send-keys) are all text, bound letters like `k` included; after that j/k move again."""
    from textual import events

    app = make_app(str(dbs["custom"]), poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for ch in "nok":  # queued at once, as a burst arrives
            app.post_message(events.Key(ch, ch))
        await settle(pilot)
        assert app.screen.query_one(Input).value == "nok"
        assert _rows(app) == []
        await pilot.press("escape", "escape")  # clear the filter, back to the list
        await pilot.press("j")
        assert app.screen.query_one(Input).value == ""
        assert app.screen.query_one("#threads").cursor_row == 1


async def test_filter_searches_threads_not_loaded_yet(dbs):
    """With only the first page loaded, typing still finds a thread on a later page: the
    database is asked once typing pauses, and the found thread opens with Enter."""
    app = make_app(str(dbs["custom"]), poll=0, page=3)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "notes-edits" not in [t.thread_id for t in app.screen.threads]
        assert app.screen.more
        await pilot.press("n", "o", "t", "e")
        await pilot.pause(0.4)  # the search waits for typing to pause
        await settle(pilot)
        assert _rows(app) == ["notes-edits"]
        assert "every thread searched" in str(app.screen.query_one("#threads-status", Static).render())
        await pilot.press("backspace", "backspace", "backspace", "backspace", "e", "r", "r")
        await pilot.pause(0.4)
        await settle(pilot)
        assert _rows(app) == ["parse-fails"]  # loaded, status `error`; no thread id has "err"
        await pilot.press("backspace", "backspace", "backspace", *"nested")
        await pilot.pause(0.4)
        await settle(pilot)
        assert _rows(app) == ["nested"]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ThreadScreen)
        assert app.screen.thread_id == "nested"


async def test_stepping_shows_the_state_langgraph_reports(dbs):
    store = statectl.open(str(dbs["agent"]))
    view = store.view("bakery-plan")
    app = make_app(str(dbs["agent"]), "bakery-plan", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert timeline_ids(app) == [r.checkpoint_id for r in view.records]
        for moves, index in (("j", 1), ("j", 2), ("down", 3), ("k", 2), ("up", 1)):
            await pilot.press(moves)
            await settle(pilot)
            rec = view.records[index]
            snap = view.snapshot(rec.checkpoint_id)
            assert rec.checkpoint_id in _where(app)
            text = doc_text(app)
            assert f"step  {snap.step}" in text
            assert (", ".join(snap.next) or "(done)") in text
            for key in snap.values:
                assert key in text
        # the last human message of that checkpoint is in the transcript
        human = [message_data(m) for m in snap.values["messages"] if message_data(m).get("type") == "human"]
        assert human
        assert human[-1]["content"][:30] in text


async def test_a_long_thread_opens_on_its_newest_steps_then_lists_the_rest(dbs, monkeypatch):
    """A thread longer than FIRST steps: its newest steps are on screen first (the cursor on the
    newest), the rest follow, read a chunk at a time, in order, the cursor left where it was."""
    monkeypatch.setattr(ThreadScreen, "FIRST", 5)
    ids = [r.checkpoint_id for r in statectl.open(str(dbs["agent"])).view("bakery-plan").records]
    seen: list[tuple[bool, list[str]]] = []
    handled = ThreadScreen.on_thread_loaded

    def spy(self, message):
        seen.append((message.whole, [e.record.checkpoint_id for e in message.entries]))
        return handled(self, message)

    monkeypatch.setattr(ThreadScreen, "on_thread_loaded", spy)
    app = make_app(str(dbs["agent"]), "bakery-plan", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert seen == [(False, ids[:5]), (True, ids)]
        assert timeline_ids(app) == ids
        assert app.screen.query_one(Timeline).cursor_row == 0
        assert ids[0] in _where(app)


async def test_postgres_threads_and_steps(pg_samples):
    """The same screens on a PostgresSaver database: threads in id order (Postgres' keyset
    order), the timeline and each step's state as LangGraph reports it."""
    store = statectl.open(pg_samples)
    view = store.view("bakery-plan")
    app = make_app(pg_samples, "bakery-plan", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert timeline_ids(app) == [r.checkpoint_id for r in view.records]
        for index in (1, 2):
            await pilot.press("j")
            await settle(pilot)
            snap = view.snapshot(view.records[index].checkpoint_id)
            assert snap.checkpoint_id in _where(app)
            assert f"step  {snap.step}" in doc_text(app)
            assert all(k in doc_text(app) for k in snap.values)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ThreadsScreen)
        assert _rows(app) == [t.thread_id for t in store.threads()] == sorted(_rows(app))
    store.close()


async def test_diff_toggles_and_names_the_node_that_wrote(dbs):
    store = statectl.open(str(dbs["agent"]))
    view = store.view("bakery-plan")
    app = make_app(str(dbs["agent"]), "bakery-plan", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # find a step that changed something: the first one with a `changed` key
        index = next(
            i for i, r in enumerate(view.records) if diff(view, view.by_id.get(r.parent_checkpoint_id or ""), r).changes
        )
        for _ in range(index):
            await pilot.press("j")
        await pilot.press("d")
        await settle(pilot)
        rec = view.records[index]
        d = diff(view, view.by_id[rec.parent_checkpoint_id], rec)
        text = doc_text(app)
        assert "diff of this step" in _where(app)
        assert text.startswith("diff bakery-plan")
        for change in d.changes:
            assert change.key in text
            for who in change.by:
                assert who in text
        await pilot.press("j")  # the diff stays on while stepping
        await settle(pilot)
        assert view.records[index + 1].checkpoint_id[-12:] in doc_text(app).splitlines()[0]
        await pilot.press("d")
        await settle(pilot)
        assert doc_text(app).startswith("╭─ checkpoint")


async def test_raw_json_is_the_snapshot(dbs):
    store = statectl.open(str(dbs["custom"]))
    app = make_app(str(dbs["custom"]), "many-types", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        shown = json.loads(doc_text(app))
        snap = store.snapshot("many-types")
        assert shown == json.loads(json.dumps(snap.to_json(), default=str))
        await pilot.press("escape")  # Esc leaves the raw view first
        await settle(pilot)
        assert app.screen.mode == "state"


async def test_search_marks_matches_and_n_moves_between_them(dbs):
    app = make_app(str(dbs["agent"]), "bakery-plan", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("enter", "slash", *"lisbon")  # (in the state pane: / searches the state)
        await settle(pilot)
        doc = app.screen.query_one(Document)
        total = doc_text(app).casefold().count("lisbon")
        assert total >= 2
        assert len(doc.matches) == total
        assert f"1 of {total}" in _where(app)
        await pilot.press("enter")  # search box closes, the state pane has focus
        await settle(pilot)
        assert isinstance(app.screen.focused, Document)
        await pilot.press("n")
        assert doc.current == 1
        assert f"2 of {total}" in _where(app)
        await pilot.press("N", "N")
        assert doc.current == total - 1
        line = doc.matches[doc.current][0]
        assert doc.scroll_offset.y <= line < doc.scroll_offset.y + doc.scrollable_content_region.height
        await pilot.press("slash", *"no such text")
        await settle(pilot)
        assert doc.matches == []
        assert "no match" in _where(app)


async def test_fold_hides_a_section_and_search_unfolds_it(dbs):
    app = make_app(str(dbs["agent"]), "bakery-plan", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        doc = app.screen.query_one(Document)
        messages = next(i for i, s in enumerate(doc.sections) if s.title and s.title.startswith("messages"))
        full = doc_text(app)
        doc.fold(messages)
        assert doc.sections[messages].folded
        assert len(doc_text(app)) < len(full)
        assert "→ write_todos(" in full
        assert "→ write_todos(" not in doc_text(app)
        await pilot.press("enter", "slash", *"→ write_todos(")
        await settle(pilot)
        assert not doc.sections[messages].folded
        assert doc.matches


async def test_nested_values_fold_on_their_own(dbs):
    """Every nested list, dict or object is a section: folding one hides only its own lines and
    shows a preview; `]` brings the next section to the top for `z`; a search opens the folds
    that hide a match, and a fold made during a search stays (its matches are not counted)."""
    app = make_app(str(dbs["orchestrator"]), "orchestrate-bakery", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        doc = app.screen.query_one(Document)
        titles = [s.title for s in doc.sections if s.title]
        assert titles[:4] == [
            "analysis_results  (3 items)",
            "[0]  (orchestrator_app.Analysis)",
            "[1]  (orchestrator_app.Analysis)",
            "[2]  (orchestrator_app.Analysis)",
        ]
        second = next(i for i, s in enumerate(doc.sections) if s.title and s.title.startswith("[1]"))
        doc.fold(second)
        lines = [line.strip() for line in doc_text(app).splitlines()]
        assert "confidence: 0.7" not in lines  # [1]'s lines are hidden ...
        assert "confidence: 0.6" in lines
        assert "confidence: 0.8" in lines
        assert any(
            line.startswith("▸ [1]  (orchestrator_app.Analysis)  topic: competitors, finding: ") for line in lines
        )  # folded, with a preview
        doc.focus()  # the section cursor shows at once: on the first title on screen
        await settle(pilot)
        assert doc.sections[doc.cursor].title == "analysis_results  (3 items)"
        await pilot.press("right_square_bracket", "right_square_bracket", "left_square_bracket")
        assert doc.sections[doc.cursor].title.startswith("[0]")
        await pilot.press("left_square_bracket", "z")  # folds the section under the cursor: the whole outline
        assert "confidence: 0.6" not in doc_text(app)
        await pilot.press("slash", *"confidence: 0.7")
        await settle(pilot)
        assert not doc.sections[second].folded
        assert len(doc.matches) == 1
        await pilot.press("enter")
        doc.fold(second)  # folding during a search: the fold stays, its match is dropped
        assert doc.sections[second].folded
        assert doc.matches == []
        doc.action_fold_all()
        assert all(s.folded for s in doc.sections if s.title)
        assert doc.matches == []
        doc.action_fold_all()
        assert len(doc.matches) == 1
        assert doc.matches[0][0] < len(doc._strips)


async def test_interrupt_and_error_banners(dbs):
    app = make_app(str(dbs["agent"]), "investor-email", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        banner = app.screen.query_one("#banner", Static)
        snap = statectl.open(str(dbs["agent"])).snapshot("investor-email")
        assert banner.display
        assert "waiting at an interrupt" in str(banner.render())
        assert snap.interrupts
        assert not banner.has_class("error")
        await pilot.press("j")  # an older step still says where the thread stopped
        await settle(pilot)
        assert "newest checkpoint" in str(banner.render())
    app = make_app(str(dbs["agent"]), "market-lookup-fails", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        banner = app.screen.query_one("#banner", Static)
        assert banner.has_class("error")
        assert "market data service unavailable" in str(banner.render())
        timeline = app.screen.query_one(Timeline)
        assert "error" in str(timeline.get_cell_at((0, list(timeline.widths).index("notes"))))


async def test_subgraph_namespaces_can_be_entered(dbs):
    store = statectl.open(str(dbs["custom"]))
    namespaces = store.namespaces("nested")
    app = make_app(str(dbs["custom"]), "nested", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        select = app.screen.query_one("#ns", Select)
        assert select.display
        assert len(namespaces) == 3
        child = namespaces[1]
        select.value = child
        await settle(pilot)
        assert app.screen.checkpoint_ns == child
        assert timeline_ids(app) == [r.checkpoint_id for r in store.view("nested", child).records]
        assert f"ns {child}" in _where(app)


async def test_subgraph_runs_are_entered_from_the_step_that_started_them(dbs):
    """⤷ marks the step whose task ran a subgraph; `e` enters that run (two levels deep here),
    Esc backs out to the parent graph with the cursor on that step, then to the threads."""
    store = statectl.open(str(dbs["custom"]))
    root, child, grandchild = store.namespaces("nested")
    start = next(
        r
        for r in store.view("nested").records
        if any(w.task_id == child.rsplit(":", 1)[1] for w in store.view("nested").writes(r.checkpoint_id))
    )
    app = make_app(str(dbs["custom"]), "nested", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        marked = [e.record.checkpoint_id for e in timeline.entries if e.subgraphs]
        assert marked == [start.checkpoint_id]
        assert "⤷ research" in str(timeline.get_cell(start.checkpoint_id, "notes"))
        await pilot.press("e")  # on the newest step: no subgraph ran from it
        await settle(pilot)
        assert app.screen.checkpoint_ns == ""
        timeline.select(start.checkpoint_id)
        await pilot.press("e")
        await settle(pilot)
        assert app.screen.checkpoint_ns == child
        assert f"ns {child}" in _where(app)
        assert timeline_ids(app) == [r.checkpoint_id for r in store.view("nested", child).records]
        deeper = next(e for e in app.screen.query_one(Timeline).entries if e.subgraphs)
        app.screen.query_one(Timeline).select(deeper.record.checkpoint_id)
        await pilot.press("e")
        await settle(pilot)
        assert app.screen.checkpoint_ns == grandchild
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.checkpoint_ns == child
        assert app.screen.query_one(Timeline).selected == deeper.record.checkpoint_id
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.checkpoint_ns == root
        assert app.screen.query_one(Timeline).selected == start.checkpoint_id
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ThreadsScreen)


async def test_copy_reload_help_and_quit(dbs):
    store = statectl.open(str(dbs["custom"]))
    app = make_app(str(dbs["custom"]), "notes-edits", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("j", "c")
        assert app.clipboard == store.view("notes-edits").records[1].checkpoint_id
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert app.screen.query_one(Timeline).selected == store.view("notes-edits").records[1].checkpoint_id
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "copy the checkpoint id" in _plain(app.screen.query_one(Static).content)
        await pilot.press("escape")
        assert isinstance(app.screen, ThreadScreen)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_a_corrupt_checkpoint_is_a_notification_not_a_crash(dbs):
    corrupt_latest(dbs["custom"], "notes-edits")
    app = make_app(str(dbs["custom"]), "notes-edits", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert any("could not load" in (n.title or "") for n in app._notifications)
        await pilot.press("j")  # the older checkpoints still show
        await settle(pilot)
        assert "notes-edits" in doc_text(app)
        assert app.is_running


async def test_a_database_that_goes_away_is_a_notification(tmp_path, dbs):
    db = tmp_path / "gone.sqlite"
    db.write_bytes(dbs["custom"].read_bytes())
    app = make_app(str(db), poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        conn = app.store.source.conn
        conn.close()  # what a vanished file or a dropped server connection looks like to a read
        await pilot.press("enter")
        await settle(pilot)
        assert any("could not load" in (n.title or "") for n in app._notifications)
        assert app.is_running


def _notes_graph(db: Path):
    """The sample notes graph, checkpointing to `db` with LangGraph's own SqliteSaver."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "sample_threads"))
    from custom_app import notes_builder

    conn = sqlite3.connect(db, check_same_thread=False)
    return notes_builder.compile(checkpointer=SqliteSaver(conn)), conn


async def test_live_new_checkpoints_appear_without_restarting(tmp_path):
    db = tmp_path / "live.sqlite"
    graph, conn = _notes_graph(db)
    config = {"configurable": {"thread_id": "live"}}
    graph.invoke({"topic": "bread"}, config)
    app = make_app(str(db), "live", poll=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = timeline_ids(app)
        assert len(before) == 4
        graph.invoke({"topic": "cake"}, config)  # a real run writes while the app is open
        graph.invoke({"topic": "pie"}, {"configurable": {"thread_id": "another"}})
        for _ in range(100):
            await pilot.pause(0.05)
            await settle(pilot)
            if len(timeline_ids(app)) > len(before):
                break
        after = timeline_ids(app)
        assert after[len(after) - len(before) :] == before
        assert len(after) == 8
        assert app.screen.query_one(Timeline).selected == after[0]  # it follows the newest
        assert "cake" in doc_text(app)
        await pilot.press("escape")
        for _ in range(100):
            await pilot.pause(0.05)
            if "another" in _rows(app):
                break
        assert set(_rows(app)) == {"live", "another"}
    conn.close()


async def test_the_tui_never_writes(dbs):
    from conftest import digest

    before = digest(dbs["agent"])
    app = make_app(str(dbs["agent"]), poll=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for keys in (
            ["enter"],
            ["j", "j", "d", "v", "slash", "a", "enter", "ctrl+r"],
            ["escape", "escape"],
            ["down", "enter", "question_mark", "escape"],
        ):
            await pilot.press(*keys)
            await settle(pilot)
    assert digest(dbs["agent"]) == before


def test_tui_command_rejects_a_wrong_thread_before_starting(run, dbs):
    r = run("tui", "nope", "--db", str(dbs["agent"]))
    assert r.code == 3
    assert r.out == ""
    assert r.err.strip() == f"statectl: no thread 'nope' in {dbs['agent']} (run `statectl threads` to list the threads)"


@pytest.mark.parametrize("db", ["/no/such/file.sqlite"])
def test_tui_command_rejects_a_bad_database(run, db):
    r = run("tui", "--db", db)
    assert r.code == 2
    assert r.err.startswith("statectl: no such file")


async def test_mouse_selects_a_step_and_folds_a_section(dbs):
    store = statectl.open(str(dbs["agent"]))
    view = store.view("bakery-plan")
    app = make_app(str(dbs["agent"]), "bakery-plan", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one(Timeline)
        rows = list(table.rows)
        y = 1 + sum(table.get_row_height(k) for k in rows[:3])  # the header, rows 0-2 (a folded name: 2 lines)
        await pilot.click(Timeline, offset=(3, y))  # the fourth row
        await settle(pilot)
        assert app.screen.query_one(Timeline).selected == view.records[3].checkpoint_id
        doc = app.screen.query_one(Document)
        title_line = next(
            i for i, segs in enumerate(doc._strips) if "".join(s.text for s in segs).startswith("▾ messages")
        )
        await pilot.click(Document, offset=(4, title_line))
        await settle(pilot)
        section = next(s for s in doc.sections if s.title and s.title.startswith("messages"))
        assert section.folded


async def test_data_that_looks_like_markup_is_shown_as_written(markup_db):
    db, thread, key = markup_db
    app = make_app(str(db), poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#threads", DataTable)
        assert str(table.get_cell(thread, "thread")) == thread
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ThreadScreen)
        assert key in doc_text(app)
        assert "closing [/b] tag :thumbs_up:" in doc_text(app)
        await pilot.press("d")  # the diff view names the key too
        await settle(pilot)
        assert key in doc_text(app)
        assert app.is_running


async def test_filter_by_status_finds_threads_not_loaded_yet(dbs):
    """'interr' matches no thread id; two of the four interrupted threads (two waiting at an
    interrupt, two at a breakpoint) are past the first page, and the database is asked for
    threads with that status too."""
    app = make_app(str(dbs["interrupts"]), poll=0, page=4)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        store = statectl.open(str(dbs["interrupts"]))
        waiting = {t.thread_id for t in store.threads(status=frozenset({"interrupted"}))}
        assert waiting == {"parallel-waiting", "subgraph-waiting", "breakpoint-before", "breakpoint-after"}
        assert waiting - {t.thread_id for t in app.screen.threads} == {"parallel-waiting", "subgraph-waiting"}
        assert app.screen.more
        await pilot.press(*"interr")
        await pilot.pause(0.4)
        await settle(pilot)
        assert set(_rows(app)) == waiting


async def test_a_run_stopped_at_a_breakpoint_is_said_in_the_banner(dbs):
    app = make_app(str(dbs["interrupts"]), "breakpoint-before", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        banner = str(app.screen.query_one("#banner", Static).render())
        assert "stopped before second ran" in banner
        await pilot.press("j")  # an older checkpoint: next is `first`, which did run
        await settle(pilot)
        assert "stopped" not in str(app.screen.query_one("#banner", Static).render())


async def test_the_timeline_is_right_on_the_first_frame(dbs, monkeypatch):
    """On a busy machine the screen could be drawn between a refill and the timeline's next
    Idle (when DataTable measures new rows), and those lines kept header widths (`ran` read
    `Tod`). The timeline now sets its column widths with its rows: a line drawn right after the
    fill, before any Idle, is the line the settled screen shows, node names folded onto more
    lines at the width their column got."""
    from rich.text import Text

    from statectl.render.columns import fold_id

    fill = Timeline.fill
    drawn: list[str] = []

    def fill_and_draw(self, entries, keep=None):
        fill(self, entries, keep)
        drawn.extend("".join(s.text for s in self.render_line(y)) for y in range(1, 4))

    monkeypatch.setattr(Timeline, "fill", fill_and_draw)
    app = make_app(str(dbs["agent"]), "bakery-plan", poll=0)
    async with app.run_test(size=(130, 36)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(Timeline)
        ran = [fold_id(Text(", ".join(e.ran)), table.widths["ran"])[0].plain for e in table.entries[:1]]
        shown = ["".join(s.text for s in table.render_line(y)) for y in range(1, 4)]
        assert drawn[:3] == shown, (drawn, shown)
        assert ran[0] in shown[0], shown


def _malformed(db: Path) -> None:
    """Metadata of the wrong types and a BLOB thread id (hand-made: deliberately broken rows)."""
    with sqlite3.connect(db) as c:
        c.execute(
            'UPDATE checkpoints SET metadata = \'{"source": 5, "step": "x", "parents": 3}\' '
            "WHERE thread_id = 'notes-edits'"
        )
        c.execute(
            "INSERT INTO checkpoints SELECT x'6869', checkpoint_ns, checkpoint_id || 'b', "
            "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints WHERE thread_id = "
            "'nested' LIMIT 1"
        )


async def test_malformed_rows_never_crash_the_tui(dbs, run):
    _malformed(dbs["custom"])
    for thread in (None, "notes-edits"):
        app = make_app(str(dbs["custom"]), thread, poll=0)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("j")
            await settle(pilot)
            await pilot.press("q")
        assert app.return_code in (0, None)
        assert app._exception is None
    for args in (["threads"], ["log", "notes-edits"], ["show", "notes-edits"], ["diff", "notes-edits"]):
        r = run(*args, "--db", str(dbs["custom"]))
        assert r.code == 0, (args, r.err)
    assert "not text" in run("threads", "--db", str(dbs["custom"])).out


async def test_a_bug_in_the_tui_is_one_line_without_locals(dbs, monkeypatch, capsys):
    """Textual prints a crash's traceback with every frame's local variables (state, secrets):
    statectl prints one line and exits 70."""

    def broken(self, *args, **kwargs):
        secret_local = "hunter2-in-a-local"  # noqa: F841 - what a traceback with locals would show
        raise RuntimeError("boom")

    monkeypatch.setattr(ThreadScreen, "show_selected", broken)
    app = make_app(str(dbs["custom"]), "notes-edits", poll=0)
    with pytest.raises(RuntimeError):
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await pilot.pause()
    assert app.return_code == 70
    cap = capsys.readouterr()
    shown = cap.out + cap.err + " ".join(str(r) for r in app._exit_renderables)
    assert "internal error in the TUI: RuntimeError" in shown, shown[-800:]
    assert "hunter2" not in shown, shown[-800:]


async def test_with_the_graph_the_state_pane_shows_facts_and_a_misfit_is_said(dbs):
    """`tui --graph`: the empty values the graph gives are facts (no "(inferred"); a graph that
    does not fit the thread is said once in a notification, and the thread still shows."""
    view = statectl.open(str(dbs["custom"])).view("notes-edits")
    first = next(r for r in view.records if r.step == 0)
    app = make_app(str(dbs["custom"]), "notes-edits", poll=0, graph=str(SAMPLES / "custom_app.py:notes_builder"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for _ in range(view.records.index(first)):
            await pilot.press("j")
        await settle(pilot)
        assert first.checkpoint_id in _where(app)
        text = doc_text(app)
        assert "log: []" in text, text
        assert "(inferred" not in text, text
        assert not app._notifications
    app = make_app(str(dbs["custom"]), "notes-edits", poll=0, graph=str(SAMPLES / "agent_app.py:agent"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        said = [n.message for n in app._notifications]
        assert len(said) == 1, said
        assert "does not match thread 'notes-edits'" in said[0], said
        assert "keys it lacks" in said[0]
        assert timeline_ids(app)


async def test_inferred_values_are_marked_in_the_state_pane(dbs):
    view = statectl.open(str(dbs["custom"])).view("notes-edits")
    first = next(r for r in view.records if r.step == 0)
    app = make_app(str(dbs["custom"]), "notes-edits", poll=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "(inferred" not in doc_text(app)  # the newest checkpoint: every value read
        for _ in range(view.records.index(first)):
            await pilot.press("j")
        await settle(pilot)
        text = doc_text(app)
        assert first.checkpoint_id in _where(app)
        marked = [line for line in text.splitlines() if "(inferred" in line]
        assert len(marked) == 2, marked
        assert marked[0].lstrip().startswith("log: []"), marked
