"""The timeline: one row per checkpoint, newest first (step, source, nodes that ran, keys
changed, interrupts, errors, branches), its columns sharing the pane's width by what they hold."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding

from statectl.core.timeline import LogEntry
from statectl.render.columns import fold_id, shorten
from statectl.render.safe import safe_text
from statectl.render.tables import entry_notes, short_id
from statectl.tui.widgets.rows import Folded, Rows

LABELS = {
    "step": "step",
    "source": "source",
    "ran": "ran",
    "changed": "changed",
    "notes": "notes",
    "checkpoint": "checkpoint",
}
MINIMUM = {"step": 0, "ran": 20, "changed": 12, "notes": 10}
"""The columns always given room, in this order while their narrowest useful width (0: the
whole content) fits; a column left out is one the pane cannot hold."""
GROW = (("ran", "changed"), ("notes",))
"""Then the spare width goes to these in turn, up to their whole content (names first, shared
one cell at a time: folded names read best when both columns fold little); `source` and
`checkpoint` come last, where room is left (the where-line shows both)."""
PAD = 2
"""A DataTable cell's padding (one column each side)."""


class Timeline(Rows):
    """A thread's checkpoints; row keys are checkpoint ids (Home/End: newest/oldest; G: oldest,
    g is the thread screen's graph view)."""

    BINDINGS = [
        Binding("G", "scroll_bottom", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(dict(LABELS), id=id)
        self._entries: list[LogEntry] = []
        self._nat: dict[str, int] | None = None
        self.widths: dict[str, int] = {}
        """The columns shown and their widths (they change with the pane's width)."""
        self.marked: set[str] = set()
        """Checkpoints a search found (their step shows a ● mark)."""
        self._diverged: dict[str, str] = {}

    def on_mount(self) -> None:
        pass  # (the columns come with the rows: which fit depends on the pane's width)

    @property
    def entries(self) -> list[LogEntry]:
        return self._entries

    @entries.setter
    def entries(self, entries: list[LogEntry]) -> None:
        if entries is not self._entries:
            self._entries, self._nat = entries, None  # (natural widths measured again, once)

    def fill(self, entries: list[LogEntry], keep: str | None = None) -> None:
        """Show `entries`; the cursor stays on checkpoint `keep` if it is still there."""
        self.entries = entries
        self._draw(keep)

    def on_resize(self) -> None:
        if self.entries and self._share() != self.widths:
            self._draw(self.selected)

    def _natural(self) -> dict[str, int]:
        """Each column's whole width for these entries (measured once per set of entries)."""
        if self._nat is not None:
            return self._nat
        nat = {
            "step": max((len(str(e.record.step)) for e in self.entries), default=0) + 2 + 2 * bool(self._diverged),
            "source": max((len(e.record.source or "") for e in self.entries), default=0),
            "ran": max((len(", ".join(e.ran)) for e in self.entries), default=0),
            "changed": max((len(", ".join(e.changed)) for e in self.entries), default=0),
            "notes": max((len(self._notes(e).plain) for e in self.entries), default=0),
            "checkpoint": 12,
        }
        self._nat = {k: max(v, len(LABELS[k])) for k, v in nat.items()}
        return self._nat

    def _whole(self) -> dict[str, int]:
        """The columns shown when the pane holds every one whole (not an empty changed or
        notes column), at their whole widths."""
        nat = self._natural()
        return {k: nat[k] for k in LABELS if k not in ("changed", "notes") or nat[k] > len(LABELS[k])}

    @property
    def diverged(self) -> dict[str, str]:
        """Where an offline re-run left the recording: checkpoint id (the one its task ran from)
        -> why (its step shows ✖, its notes start with it; the thread screen's banner says it whole)."""
        return self._diverged

    @diverged.setter
    def diverged(self, value: dict[str, str]) -> None:
        self._diverged, self._nat = value, None

    def _notes(self, e: LogEntry) -> Text:
        notes = entry_notes(e, short=True, whole=True)
        left = self._diverged.get(e.record.checkpoint_id)
        if left is not None:
            why = left.partition("\n")[2].partition(": ")[0]
            notes = Text.assemble((f"✖ left the recording: {why} ", "bold red"), notes)
        return notes

    def mark(self, ids: set[str]) -> None:
        """Mark the checkpoints a search found (and unmark the rest)."""
        if ids != self.marked:
            self.marked = ids
            self._draw(self.selected)

    def next_mark(self, step: int, here: bool = False) -> None:
        """Move the cursor to the next (1) or previous (-1) marked row, round the ends; `here`:
        the row under the cursor counts (a new search starts where the cursor is)."""
        rows = sorted(self.get_row_index(cid) for cid in self.marked if cid in self.rows)
        if not rows:
            return
        at = self.cursor_row
        ahead = [r for r in rows if (r >= at if here else r > at)] if step > 0 else [r for r in rows if r < at]
        self.move_cursor(
            row=(ahead[0] if step > 0 else ahead[-1]) if ahead else (rows[0] if step > 0 else rows[-1]), animate=False
        )

    def natural_width(self) -> int:
        """Cells the timeline needs to show every column whole (the pane grows toward it)."""
        return sum(w + PAD for w in self._whole().values()) + 2

    def _share(self) -> dict[str, int]:
        """Column widths for the pane's width: every column whole when they fit; else the
        MINIMUM columns at their narrowest, grown in GROW's order, then `source` and
        `checkpoint` if room is left."""
        avail = max(20, (self.size.width or 80) - 1)  # (a scrollbar may take a column)
        nat, whole = self._natural(), self._whole()
        if sum(w + PAD for w in whole.values()) <= avail:
            return whole
        widths: dict[str, int] = {}
        used = 0
        for key, least in MINIMUM.items():
            want = min(nat[key], least) if least else nat[key]
            if key in whole and used + want + PAD <= avail:
                widths[key] = want
                used += want + PAD
        for group in GROW:  # names (ran, changed) share the spare width a cell at a time; then notes
            growing = [k for k in group if k in widths]
            while used < avail and any(widths[k] < nat[k] for k in growing):
                for key in growing:
                    if widths[key] < nat[key] and used < avail:
                        widths[key] += 1
                        used += 1
        for key in ("source", "checkpoint"):
            if used + nat[key] + PAD <= avail:
                widths[key] = nat[key]
                used += nat[key] + PAD
        return {k: widths[k] for k in LABELS if k in widths}

    def _draw(self, keep: str | None) -> None:
        self.widths = self._share()
        self.clear(columns=True)
        for key, width in self.widths.items():
            self.add_column(LABELS[key], key=key, width=width)
        w = self.widths
        for e in self.entries:
            r = e.record
            dim = "" if e.on_latest_line else "dim"
            alert = "bold red" if e.errors else "bold yellow" if e.interrupts else ""
            step = Text("" if r.step is None else str(r.step), style=alert or dim, justify="right")
            if r.checkpoint_id in self.marked:
                step = Text.assemble(("● ", "bold magenta"), step, justify="right")
            if r.checkpoint_id in self._diverged:
                step = Text.assemble(("✖ ", "bold red"), step, justify="right")
            cells = {
                "step": step,
                "source": Text(r.source or "", style=dim or "blue"),
                "ran": Text(", ".join(e.ran), style=alert or dim or "bold"),
                "changed": Text(", ".join(e.changed), style=dim),
                "notes": self._notes(e),
                "checkpoint": Text(short_id(r.checkpoint_id), style="dim"),
            }
            if "notes" in w:
                shorten(cells["notes"], w["notes"])
            height = 1
            for key in ("ran", "changed"):  # node and channel names: folded onto more lines, never cut
                if key in w and len(cells[key].plain) > w[key]:
                    lines = fold_id(safe_text(cells[key]), w[key])
                    cells[key], height = Folded.lines(lines), max(height, len(lines))
            self.add_row(*(cells[k] for k in w), key=r.checkpoint_id, height=height)
        self.select(keep)
