"""Helpers for the TUI tests: wait until the loading workers are done, read what is shown."""

from __future__ import annotations

from textual.widgets import DataTable
from textual.worker import WorkerCancelled

from statectl.tui.widgets.document import Document
from statectl.tui.widgets.timeline import Timeline


async def settle(pilot, rounds: int = 50) -> None:
    """Wait until no worker is running and the messages they posted are handled."""
    app = pilot.app
    for _ in range(rounds):
        try:
            await app.workers.wait_for_complete()
        except WorkerCancelled:  # an exclusive worker replaced by a newer one: expected
            pass
        await pilot.pause()
        if not any(w.is_running for w in app.workers):
            await pilot.pause()
            # a DataTable measures new rows on its next Idle event; until then its columns are as
            # wide as their headers (a snapshot taken then differs: seen once in ~8 runs)
            if not any(_unmeasured(t) for t in app.screen.query(DataTable)):
                # and still so a moment later: a message handled in that pause (a table refilled)
                # must not leave the screen half-measured
                await pilot.pause(0.05)
                if not any(w.is_running for w in app.workers) and not any(
                    _unmeasured(t) for t in app.screen.query(DataTable)
                ):
                    return
    raise AssertionError("the app never settled (workers running or tables unmeasured)")


def _unmeasured(table: DataTable) -> bool:
    """Rows or cells a DataTable has not measured yet (it does so on its next Idle)."""
    return bool(table._require_update_dimensions or table._new_rows or table._updated_cells)


def doc_text(app) -> str:
    return app.screen.query_one(Document).text


def timeline_ids(app) -> list[str]:
    table = app.screen.query_one(Timeline)
    return [table.coordinate_to_cell_key((row, 0)).row_key.value for row in range(table.row_count)]
