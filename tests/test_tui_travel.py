"""Time travel in the TUI, driven by Pilot: `f` forks at the selected checkpoint with the edited
value (LangGraph's own update_state, into the scratch copy the screen then shows), `r` shows the
dry-run plan and re-runs on Enter, the new branch appears in the timeline, `d` compares it with
the old branch; the database opened is never written."""

from __future__ import annotations

import asyncio
import shutil

import pytest
from conftest import digest
from parity import SAMPLES
from rich.console import Console
from textual.widgets import TextArea
from tui_helpers import doc_text, settle, timeline_ids

from statectl.tui import make_app
from statectl.tui.screens.fork_rerun import ConfirmRun, EditValue
from statectl.tui.widgets.timeline import Timeline

NOTES = f"{SAMPLES}/custom_app.py:notes_builder"
SMALL = (80, 24)


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(SAMPLES / "custom.sqlite", tmp_path / "custom.sqlite")
    return tmp_path


async def _until(pilot, done, seconds: float = 60.0) -> bool:
    """Wait (bounded) for a condition the app reaches through a worker and the writer process."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        await pilot.pause(0.1)
        if done():
            return True
    return False


async def test_fork_then_rerun_then_compare(here):
    before = digest(here / "custom.sqlite")
    app = make_app("custom.sqlite", "notes-edits", poll=0.2, graph=NOTES)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        thread = app.screen
        old = timeline_ids(app)
        assert len(old) == 12
        await pilot.press("j", "j", "j", "j")  # step 2 (the fork of the first run): a new branch from there
        await settle(pilot)
        await pilot.press("f")
        # (the modal pushed, then composed: wait for its text area, on a busy machine later)
        assert await _until(pilot, lambda: isinstance(app.screen, EditValue) and bool(app.screen.query(TextArea))), (
            "the editor never opened"
        )
        area = app.screen.query_one(TextArea)
        assert '"topic": "pricing"' in area.text  # the state as JSON (nothing selected: all of it)
        assert '"count": 1' in area.text
        area.text = area.text.replace('"pricing"', '"rye bread"')
        await pilot.press("ctrl+s")
        assert await _until(pilot, lambda: len(timeline_ids(app)) == 13), timeline_ids(app)
        await settle(pilot)
        new = timeline_ids(app)[0]
        assert new not in old
        assert app.screen.query_one("Timeline").selected == new
        assert app.travel_to == str(here / "statectl-scratch.sqlite") or app.travel_to == "statectl-scratch.sqlite"
        assert "rye bread" in doc_text(app)
        # d on the new branch: against the old branch's head
        await pilot.press("d")
        await settle(pilot)
        assert "the old branch's head" in doc_text(app)
        assert "topic: second run → rye bread" in doc_text(app)
        assert "ec34a0e0aa45" in doc_text(app)  # A: the old head (step 6)
        # r: the plan first (nothing runs yet), then Enter runs it
        await pilot.press("d")
        await settle(pilot)
        await pilot.press("r")
        assert await _until(pilot, lambda: isinstance(app.screen, ConfirmRun) and app.screen.is_mounted), (
            "the plan never showed"
        )
        console = Console(width=200, color_system=None)
        with console.capture() as cap:
            console.print(app.screen.plan)
        plan = cap.get()
        assert "runs  review" in plan, plan
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is thread

        def rows() -> list:
            return [e.record.checkpoint_id for e in thread.query_one(Timeline).entries]

        # (from a checkpoint update_state wrote, LangGraph starts no fork checkpoint: the review step alone)
        assert await _until(pilot, lambda: len(rows()) == 14, 90), rows()
        assert await _until(pilot, lambda: any("re-run is done" in str(n.message) for n in app._notifications))
        await settle(pilot)
        await pilot.press("q")
    assert digest(here / "custom.sqlite") == before


async def test_fork_needs_the_graph(here):
    app = make_app("custom.sqlite", "notes-edits", poll=0)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        assert not isinstance(app.screen, EditValue)
        assert any("needs your graph" in str(n.message) for n in app._notifications)
        await pilot.press("q")
    assert not (here / "statectl-scratch.sqlite").exists()


def test_rerun_plan_at_80x24(snap_compare, here):
    """The dry-run plan the TUI shows before a re-run, at 80x24."""
    app = make_app("custom.sqlite", "notes-edits", poll=0, graph=NOTES)

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("j", "j", "j", "j", "r")  # the fork of the first run: review is due
        await _until(pilot, lambda: isinstance(app.screen, ConfirmRun))
        await settle(pilot)

    assert snap_compare(app, terminal_size=SMALL, run_before=run_before)
