"""A row-cursor table with the keys of a pager: j/k, Home/End to the first/last row."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import DataTable


class Rows(DataTable):
    """DataTable whose rows are the unit (its Home/End scroll sideways; here they move the cursor)."""

    BINDINGS = [
        Binding("j", "cursor_down", show=False),
        Binding("k", "cursor_up", show=False),
        Binding("home", "scroll_top", show=False),
        Binding("end", "scroll_bottom", show=False),
    ]

    def __init__(self, columns: dict[str, str], *, id: str | None = None,
                 zebra_stripes: bool = False) -> None:
        """`columns`: column key -> header label, in order."""
        super().__init__(id=id, cursor_type="row", zebra_stripes=zebra_stripes)
        self.columns_spec = columns

    def on_mount(self) -> None:
        for key, label in self.columns_spec.items():
            self.add_column(label, key=key)

    def _update_dimensions(self, new_rows) -> None:
        """Measure new rows as DataTable does, then drop what was drawn before they were measured.

        DataTable measures rows added since its last Idle and widens its columns, but keeps the
        lines it drew in between (its render caches are keyed by an update count this step does not
        advance): on a busy machine a row drawn at header widths (`ran` cut to `Tod`) stayed so
        until something else invalidated the caches (Textual 8.2.8; the version is pinned in the
        dev extras so that a change there is seen by the snapshot tests)."""
        before = [c.content_width for c in self.columns.values()]
        super()._update_dimensions(new_rows)
        if [c.content_width for c in self.columns.values()] != before:
            self._clear_caches()
            self._update_count += 1
            self.refresh()

    def add_row(self, *cells, **kwargs):
        """Every cell holds data: its control characters are shown escaped (render/safe.py)."""
        from statectl.render.safe import safe_text

        return super().add_row(*(safe_text(c) for c in cells), **kwargs)

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
