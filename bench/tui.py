"""`statectl tui` speed on the large database, driven with Textual's Pilot (headless).

Goals (issue 6): first screen under 1 s; moving one step under 100 ms (from the key event to
the state pane holding the new checkpoint's rendered lines; the next frame paints them). Also
the graph view (`g`): from the key to the drawing of the thread's path. Each figure is printed
beside a floor measured in the same run: for the first screen, a bare Textual app showing a
DataTable of the same thread rows read with raw SQL; for a step, raw SQL plus msgpack parsing of
that one checkpoint.

    python bench/tui.py [--db bench/data/large.sqlite] [--runs 5] [--steps 30]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

FIRST_SCREEN = """
import asyncio, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {tests!r})
from tui_helpers import settle
import statectl
from statectl.tui.early import PAGE, first_page
args = sys.argv[1:]
store = statectl.open(args[0])  # (as `statectl tui` does: the first page read while Textual starts)
early = first_page(store, PAGE) if len(args) == 1 else None
from statectl.tui import make_app
app = make_app(store, args[1] if len(args) > 1 else None, poll=0, early=early)
async def main():
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        print(time.perf_counter() - t0)
asyncio.run(main())
"""
FLOOR_SCREEN = """
import asyncio, sqlite3, sys, time
t0 = time.perf_counter()
from textual.app import App
from textual.widgets import DataTable
class Floor(App):
    def compose(self):
        yield DataTable()
    def on_mount(self):
        c = sqlite3.connect(f"file:{{sys.argv[1]}}?mode=ro", uri=True)
        rows = c.execute("SELECT thread_id, COUNT(*), MAX(checkpoint_id) FROM checkpoints GROUP BY thread_id "
                         "ORDER BY 3 DESC LIMIT 500").fetchall()
        t = self.query_one(DataTable)
        t.add_columns("thread", "checkpoints", "latest")
        t.add_rows(rows)
async def main():
    async with Floor().run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        print(time.perf_counter() - t0)
asyncio.run(main())
"""


def process(cmd: list[str], runs: int) -> tuple[float, float]:
    """Best whole-process time and the time to the settled first screen the child reports."""
    best = (float("inf"), float("inf"))
    for _ in range(runs):
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        best = min(best, (time.perf_counter() - t0, float(out.strip().splitlines()[-1])))
    return best


def raw_step(db: str, thread: str, checkpoint_id: str) -> float:
    import ormsgpack

    def hook(code, data):
        return ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)

    t0 = time.perf_counter()
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    (blob,) = c.execute(
        "SELECT checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?",
        (thread, checkpoint_id),
    ).fetchone()
    c.execute("SELECT * FROM writes WHERE thread_id = ? AND checkpoint_id = ?", (thread, checkpoint_id)).fetchall()
    ormsgpack.unpackb(blob, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
    c.close()
    return time.perf_counter() - t0


async def steps(db: str, thread: str, n: int, mode: str) -> tuple[list[float], list[float]]:
    """Time from a key press to the state pane showing the newly selected checkpoint."""
    from textual import events
    from tui_helpers import settle

    from statectl.tui import make_app
    from statectl.tui.widgets.timeline import Timeline

    app = make_app(db, thread, poll=0)
    took, floors = [], []
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        if mode == "diff":
            await pilot.press("d")
            await settle(pilot)
        screen = app.screen
        timeline = screen.query_one(Timeline)
        for _ in range(n):
            row = timeline.cursor_row
            t0 = time.perf_counter()
            # the key goes in as the terminal driver delivers it (Pilot's press() also waits for
            # the process to look idle, which would be timed too)
            app._driver.send_message(events.Key("j", "j"))
            while timeline.cursor_row == row or screen.shown != (timeline.selected, screen.mode):
                await asyncio.sleep(0.0005)
            took.append(time.perf_counter() - t0)  # the pane holds the new checkpoint's lines
            floors.append(raw_step(db, thread, timeline.selected))
            await settle(pilot)
    return took, floors


def raw_path(db: str, thread: str) -> float:
    """The floor of the graph view: what a thread's path is read from (every write's task path
    and channel, every checkpoint's metadata) with raw SQL, and its newest checkpoint parsed."""
    import ormsgpack

    t0 = time.perf_counter()
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    c.execute("SELECT checkpoint_id, task_path, channel FROM writes WHERE thread_id = ?", (thread,)).fetchall()
    rows = c.execute(
        "SELECT checkpoint, metadata FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_id DESC", (thread,)
    ).fetchall()
    ormsgpack.unpackb(rows[0][0], ext_hook=lambda code, data: data, option=ormsgpack.OPT_NON_STR_KEYS)
    c.close()
    return time.perf_counter() - t0


async def graph_view(db: str, thread: str, n: int) -> list[float]:
    """Time from `g` to the graph view holding its drawing (the path read, laid out, drawn)."""
    from textual import events
    from tui_helpers import settle

    from statectl.tui import make_app
    from statectl.tui.screens.graph import GraphScreen

    app = make_app(db, thread, poll=0)
    took = []
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        for _ in range(n):
            thread_screen = app.screen
            t0 = time.perf_counter()
            app._driver.send_message(events.Key("g", "g"))
            while not _drawn(app, GraphScreen):
                await asyncio.sleep(0.0005)
            took.append(time.perf_counter() - t0)
            await settle(pilot)
            app.pop_screen()
            await settle(pilot)
            assert app.screen is thread_screen
    return took


def _drawn(app, screen_type) -> bool:
    screen = app.screen
    if not isinstance(screen, screen_type) or not screen.is_mounted:
        return False
    found = screen.query("#graph")
    try:
        return bool(found) and "╭" in str(found.first().render())
    except Exception:
        return False


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", type=Path, default=HERE / "data" / "large.sqlite")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--steps", type=int, default=30)
    a = p.parse_args()
    if not a.db.exists():
        raise SystemExit(f"{a.db} does not exist: run `python bench/make_large.py` first")
    import compileall

    compileall.compile_dir(str(HERE.parent / "statectl"), quiet=1)
    db = str(a.db)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    thread = conn.execute(
        "SELECT thread_id FROM checkpoints GROUP BY thread_id ORDER BY COUNT(*) DESC LIMIT 1"
    ).fetchone()[0]
    n_threads, n_ckpt = conn.execute("SELECT COUNT(DISTINCT thread_id), COUNT(*) FROM checkpoints").fetchone()
    conn.close()
    print(
        f"{a.db.name}: {n_threads} threads, {n_ckpt} checkpoints, {a.db.stat().st_size / 1e6:.0f} MB; "
        f"thread {thread}; best of {a.runs} runs\n"
    )
    py = sys.executable
    first = FIRST_SCREEN.format(tests=str(HERE.parent / "tests"))
    floor_total, floor_ready = process([py, "-c", FLOOR_SCREEN.format(), db], a.runs)
    print(f"{'first screen':<34}{'statectl':>10}{'floor':>10}{'ratio':>8}   goal")
    for name, cmd in (
        ("threads screen", [py, "-c", first, db]),
        (f"thread screen ({thread})", [py, "-c", first, db, thread]),
    ):
        total, ready = process(cmd, a.runs)
        print(
            f"{name + ', shown':<34}{ready * 1000:>8.0f}ms{floor_ready * 1000:>8.0f}ms"
            f"{ready / floor_ready:>7.2f}x   < 1000 ms{'' if ready < 1 else '  (missed)'}"
        )
        print(
            f"{name + ', whole process':<34}{total * 1000:>8.0f}ms{floor_total * 1000:>8.0f}ms"
            f"{total / floor_total:>7.2f}x"
        )
    print(f"\n{'one step (j), ' + str(a.steps) + ' steps':<34}{'median':>10}{'max':>10}{'floor':>10}   goal")
    for mode in ("state", "diff"):
        took, floors = asyncio.run(steps(db, thread, a.steps, mode))
        med, worst, floor = statistics.median(took), max(took), statistics.median(floors)
        print(
            f"{'  ' + mode + ' pane':<34}{med * 1000:>8.1f}ms{worst * 1000:>8.1f}ms{floor * 1000:>8.1f}ms"
            f"   < 100 ms{'' if worst < 0.1 else '  (missed)'}"
        )
    took = asyncio.run(graph_view(db, thread, max(3, a.steps // 5)))
    floor = min(raw_path(db, thread) for _ in range(5))
    med = statistics.median(took)
    print(f"\n{'graph view (g)':<34}{'median':>10}{'max':>10}{'floor':>10}{'ratio':>8}")
    print(
        f"{'  path drawn, ' + str(len(took)) + ' opens':<34}{med * 1000:>8.1f}ms{max(took) * 1000:>8.1f}ms"
        f"{floor * 1000:>8.1f}ms{med / floor:>7.1f}x"
    )


if __name__ == "__main__":
    main()
