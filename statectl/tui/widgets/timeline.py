"""The timeline: one row per checkpoint, newest first (step, source, nodes that ran, keys
changed, interrupts, errors, branches)."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding

from statectl.render.tables import _notes, short_id
from statectl.timeline import LogEntry
from statectl.tui.widgets.rows import Rows


class Timeline(Rows):
    """A thread's checkpoints; row keys are checkpoint ids (Home/End: newest/oldest; G: oldest,
    g is the thread screen's graph view)."""

    BINDINGS = [
        Binding("G", "scroll_bottom", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__({"step": "step", "source": "source", "ran": "ran", "changed": "changed",
                          "notes": "notes", "checkpoint": "checkpoint"}, id=id)
        self.entries: list[LogEntry] = []

    def fill(self, entries: list[LogEntry], keep: str | None = None) -> None:
        """Show `entries`; the cursor stays on checkpoint `keep` if it is still there."""
        self.entries = entries
        self.clear()
        for e in entries:
            r = e.record
            dim = "" if e.on_latest_line else "dim"
            alert = "bold red" if e.errors else "bold yellow" if e.interrupts else ""
            self.add_row(Text("" if r.step is None else str(r.step), style=alert or dim, justify="right"),
                         Text(r.source or "", style=dim or "blue"),
                         Text(", ".join(e.ran), style=alert or dim or "bold"),
                         Text(_fold(", ".join(e.changed), 40), style=dim),
                         _notes(e, short=True), Text(short_id(r.checkpoint_id), style="dim"), key=r.checkpoint_id)
        self.select(keep)


def _fold(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
