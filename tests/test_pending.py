"""A thread whose process died in the middle of a step: status `pending`.

A real run (tests/crash_mid_step.py) on SQLite and on Postgres: `fast` finished and its writes
were saved, then the process exited inside `slow`. LangGraph's own `get_state_history` of the
thread is recorded from the same database and statectl must equal it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import check_status_filter
from parity import check
from textual.widgets import Static
from tui_helpers import settle

import statectl
from statectl.tui import make_app

CRASH = Path(__file__).resolve().parent / "crash_mid_step.py"
THREAD = "crashed-mid-step"


def crash(db: str, out: Path) -> list[dict]:
    """Run the crash into `db` and return LangGraph's history of it."""
    for extra in ([], ["--record", str(out)]):
        proc = subprocess.run(
            [sys.executable, str(CRASH), db, THREAD, *extra], capture_output=True, text=True, timeout=180
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
    return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.fixture(params=["sqlite", "postgres"])
def crashed(request, dbs, tmp_path) -> tuple[str, list[dict]]:
    db = str(dbs["custom"]) if request.param == "sqlite" else request.getfixturevalue("pg_scratch")
    return db, crash(db, tmp_path / "history.jsonl")


def test_a_run_stopped_mid_step_is_pending_and_shown_as_langgraph_records_it(run, crashed, tmp_path):
    db, history = crashed
    assert [h["next"] for h in history] == [["fast", "slow"], ["plan"], ["__start__"]]
    exported = tmp_path / "all.json"
    assert run("export", "--all", "-o", str(exported), "--db", db).code == 0
    for where in (db, str(exported)):
        pending = json.loads(run("threads", "--status", "pending", "--json", "--db", where).out)
        assert [t["thread_id"] for t in pending] == [THREAD], where
        assert check_status_filter(run, where) > 0
        with statectl.open(where) as store:
            assert check(store, history) == 3  # values, next, tasks (fast's result) as LangGraph's
    shown = " ".join(run("show", THREAD, "--db", db).out.split())
    assert "stopped during the step: fast finished" in shown, shown
    assert "slow did not (the process stopped); invoke(None, config) runs slow alone" in shown
    older = run("show", THREAD, "0", "--db", db).out
    assert "stopped" not in older  # (only the newest checkpoint is where the run stopped)


async def test_the_tui_says_where_the_run_stopped(dbs, tmp_path):
    db = str(dbs["custom"])
    crash(db, tmp_path / "history.jsonl")
    app = make_app(db, THREAD, poll=0)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        banner = " ".join(str(app.screen.query_one("#banner", Static).render()).split())
        assert "stopped during the step: fast finished" in banner, banner
        assert "runs slow alone" in banner, banner
