"""Every use of Textual's private internals, in one place, each named in `PRIVATE` and checked by
tests/test_framework_compat.py (which fails loudly when a Textual release renames one). The
Textual version is pinned in the dev extras and bounded in the dependencies (<9).

- `App._fatal_error` (overridden): a bug in the TUI exits with one line and code 70, never
  Textual's traceback, whose local variables can hold state and secrets. It uses
  `App._exit_renderables`, `App._return_code` and `App._close_messages_no_wait`.
- `DataTable._update_dimensions` (overridden): rows measured after they were drawn are drawn
  again (`DataTable._clear_caches`, `DataTable._update_count`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rich.text import Text
from textual.app import App
from textual.widgets import DataTable

PRIVATE: dict[type, tuple[str, ...]] = {
    App: ("_fatal_error", "_close_messages_no_wait"),
    DataTable: ("_update_dimensions", "_clear_caches"),
}
"""Private methods statectl overrides or calls, by the class that defines them."""
PRIVATE_STATE = {"App": ("_exit_renderables", "_return_code"), "DataTable": ("_update_count",)}
"""Private attributes an instance holds (checked on a running app by the test)."""


def exit_with_line(app: App, line: str, code: int) -> None:
    """End the app now, printing `line` (plain text, never markup) after it and exiting `code`."""
    app.bell()
    app._exit_renderables.append(Text(line))
    app._return_code = code
    app._close_messages_no_wait()


def remeasure(table: DataTable, new_rows: Iterable[Any], measure: Callable[[Iterable[Any]], None]) -> None:
    """`measure(new_rows)` (DataTable's own `_update_dimensions`), then, where a column widened,
    drop the lines drawn before the rows were measured.

    DataTable measures rows added since its last Idle and widens its columns, but keeps the lines
    it drew in between (its render caches are keyed by an update count this step does not advance):
    on a busy machine a row drawn at header widths (`ran` cut to `Tod`) stayed so until something
    else invalidated the caches (Textual 8.2.8)."""
    before = [c.content_width for c in table.columns.values()]
    measure(new_rows)
    if [c.content_width for c in table.columns.values()] != before:
        table._clear_caches()
        table._update_count += 1
        table.refresh()
