"""A row-cursor table with the keys of a pager: j/k, Home/End to the first/last row."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey


class Folded(Text):
    """A cell on several lines, each already escaped (a folded identifier)."""

    @classmethod
    def lines(cls, lines: Iterable[Text]) -> Folded:
        from statectl.render.safe import safe_text

        out = cls()
        for i, line in enumerate(lines):
            out.append_text(Text("\n") if i else Text())
            out.append_text(safe_text(line))
        return out


class Rows(DataTable):
    """DataTable whose rows are the unit (its Home/End scroll sideways; here they move the cursor)."""

    BINDINGS = [
        Binding("j", "cursor_down", show=False),
        Binding("k", "cursor_up", show=False),
        Binding("home", "scroll_top", show=False),
        Binding("end", "scroll_bottom", show=False),
    ]

    def __init__(self, columns: dict[str, str], *, id: str | None = None, zebra_stripes: bool = False) -> None:
        """`columns`: column key -> header label, in order."""
        super().__init__(id=id, cursor_type="row", zebra_stripes=zebra_stripes)
        self.columns_spec = columns

    def on_mount(self) -> None:
        for key, label in self.columns_spec.items():
            self.add_column(label, key=key)

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """DataTable's measuring, then rows drawn before it drawn again (`textual_compat.remeasure`)."""
        from statectl.tui.textual_compat import remeasure

        remeasure(self, new_rows, super()._update_dimensions)

    def add_row(self, *cells: Any, **kwargs: Any) -> RowKey:
        """Every cell holds data: its control characters are shown escaped (render/safe.py)."""
        from statectl.render.safe import safe_text

        return super().add_row(*(c if isinstance(c, Folded) else safe_text(c) for c in cells), **kwargs)

    def select(self, key: str | None) -> None:
        """Put the cursor on the row with this key, if there is one (after a refill)."""
        if key is not None and key in self.rows:
            self.move_cursor(row=self.get_row_index(key), animate=False)

    @property
    def selected(self) -> str | None:
        """The key of the row under the cursor."""
        if not self.row_count:
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
