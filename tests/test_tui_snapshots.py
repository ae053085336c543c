"""The TUI's screens pinned as SVG snapshots at a fixed size (pytest-textual-snapshot).

Update after an intended change with `python3 tasks.py test tests/test_tui_snapshots.py
--snapshot-update`, and look at the report before committing."""

from __future__ import annotations

import pytest
from tui_helpers import settle

from statectl.tui import make_app

SIZE = (130, 36)


@pytest.fixture
def here(dbs, monkeypatch):
    """Run beside the copied databases, so the path the app shows is the same in every run."""
    monkeypatch.chdir(dbs["agent"].parent)
    return {name: path.name for name, path in dbs.items()}


def _settled(*keys: str):
    async def run_before(pilot) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return run_before


def test_threads_screen(snap_compare, here):
    assert snap_compare(make_app(here["custom"], poll=0), terminal_size=SIZE, run_before=_settled())


def test_thread_screen_state(snap_compare, here):
    app = make_app(here["agent"], "bakery-plan", poll=0)
    assert snap_compare(app, terminal_size=SIZE, run_before=_settled("j", "j", "j"))


def test_thread_screen_diff(snap_compare, here):
    app = make_app(here["agent"], "bakery-plan", poll=0)
    assert snap_compare(app, terminal_size=SIZE, run_before=_settled("j", "j", "j", "j", "d"))


def test_thread_screen_error_and_search(snap_compare, here):
    app = make_app(here["agent"], "market-lookup-fails", poll=0)
    assert snap_compare(app, terminal_size=SIZE, run_before=_settled("enter", "slash", "P", "o", "r", "t", "o"))


def test_help_screen(snap_compare, here):
    app = make_app(here["custom"], "nested", poll=0)
    assert snap_compare(app, terminal_size=SIZE, run_before=_settled("question_mark"))


SMALL, LARGE = (80, 24), (200, 50)
"""The sizes the TUI must read well at: a laptop's default terminal, and a large one."""


@pytest.mark.parametrize(
    "size,thread,keys",
    [(SMALL, "bakery-plan", "jjjjjjjjjj"), (LARGE, "market-lookup-fails", "")],
    ids=["80x24", "200x50"],
)
def test_thread_screen_at_both_sizes(snap_compare, here, size, thread, keys):
    """80x24: node names folded in the middle (the hook name kept), the transcript's messages
    under their role with the pane's width; 200x50: the timeline's pane grown to whole names,
    the changed and notes columns, the error banner on one line."""
    app = make_app(here["agent"], thread, poll=0)
    assert snap_compare(app, terminal_size=size, run_before=_settled(*keys))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "200x50"])
def test_diff_at_both_sizes(snap_compare, here, size):
    app = make_app(here["agent"], "bakery-plan", poll=0)
    assert snap_compare(app, terminal_size=size, run_before=_settled("j", "j", "j", "j", "d"))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "200x50"])
def test_graph_view_at_both_sizes(snap_compare, here, size):
    """`g` on a thread waiting at an approval: the path taken, the node that waits, the step
    selected (two back from the newest) with its nodes in a heavy border and its next double."""
    app = make_app(here["agent"], "investor-email", poll=0)
    assert snap_compare(app, terminal_size=size, run_before=_settled("j", "j", "g"))


def test_interrupt_banner_is_three_lines_at_most(snap_compare, here):
    app = make_app(here["custom"], "approval-waiting", poll=0)
    assert snap_compare(app, terminal_size=SMALL, run_before=_settled())


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "200x50"])
def test_offline_divergence_on_the_timeline(snap_compare, here, size):
    """Where an offline re-run (R) left the recording: ✖ on the row of the checkpoint its task ran
    from (selected), the reason in the notes where the pane has them, and in the banner (b: whole)."""
    from statectl.tui.screens.fork_rerun import divergence_line
    from statectl.tui.widgets.timeline import Timeline

    report = {  # (as the writer reports it: tests/test_offline.py makes one with a real run)
        "why": "request differs",
        "ns": "",
        "step": 2,
        "new_step": 3,
        "node": "SkillsMiddleware.before_agent",
        "index": 2,
        "now": {"role": "tool", "content": "Saved idea 'Pão Bom' for Porto."},
        "recorded": {"role": "tool", "content": "Saved idea 'Pão Bom'."},
    }

    async def run_before(pilot) -> None:
        await settle(pilot)
        timeline = pilot.app.screen.query_one(Timeline)
        at = timeline.entries[-4].record.checkpoint_id
        timeline.diverged = {at: divergence_line(report)}
        timeline.fill(timeline.entries, keep=at)
        pilot.app.screen.show_selected()
        await settle(pilot)

    app = make_app(here["agent"], "bakery-plan", poll=0)
    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.fixture
def memory_here(tmp_path, monkeypatch):
    """memory.sqlite copied, run beside it (the path shown is the same in every run)."""
    from memory_stores import sqlite_copy

    sqlite_copy(tmp_path)
    monkeypatch.chdir(tmp_path)
    return "memory.sqlite"


def test_memory_screen_at_80x24(snap_compare, memory_here):
    """m: the namespaces (full names), the deepagents files' namespace's items, the file's value."""
    app = make_app(memory_here, poll=0)
    assert snap_compare(app, terminal_size=SMALL, run_before=_settled("m", "j", "j", "j", "j", "j"))
