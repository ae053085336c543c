"""A scrollable page of Rich renderables in foldable sections, with search (the state pane).

The renderables are rendered to segment lines once per width, so scrolling and moving between
search matches cost nothing, and a state with thousands of messages draws only the visible lines.
Lines are kept as plain segment lists and become `Strip`s only when drawn: a Strip carries seven
caches, and tens of thousands of them made the cyclic collector stall keypresses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import RenderableType
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

MATCH = Style(bgcolor="yellow", color="black")
CURRENT = Style(bgcolor="dark_orange", color="black", bold=True)
HEADER = Style(bold=True, color="cyan")


@dataclass
class Section:
    """One foldable block: a title line (None: always shown, no title) and its body."""

    title: str | None
    body: RenderableType
    folded: bool = False
    note: str = ""
    """Shown after the title when folded (a one-line summary)."""
    lines: list[list[Segment]] = field(default_factory=list)
    width: int = 0
    """The width `lines` were rendered at (0: not yet)."""


def lay_out(sections: list[Section], console, width: int) -> None:
    """Render each section's body to strips at `width` (safe in a worker thread: rendering
    only reads the console's options)."""
    options = console.options.update(width=width, height=None, highlight=False)
    for s in sections:
        if s.width != width:
            s.lines = console.render_lines(s.body, options, pad=False)
            s.width = width


class Document(ScrollView, can_focus=True):
    """Sections of renderables; `z` folds the section at the top, `/`-search marks matches."""

    BINDINGS = [
        Binding("z", "fold", "Fold", show=False),
        Binding("Z", "fold_all", "Fold all", show=False),
        Binding("up,k", "scroll_up", show=False),
        Binding("down,j", "scroll_down", show=False),
        Binding("pageup", "page_up", show=False),
        Binding("pagedown,space", "page_down", show=False),
        Binding("home,g", "scroll_home", show=False),
        Binding("end,G", "scroll_end", show=False),
    ]

    class Searched(Message):
        """A search finished or moved: `index` of `total` matches (index -1: none)."""

        def __init__(self, query: str, index: int, total: int) -> None:
            super().__init__()
            self.query, self.index, self.total = query, index, total

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.sections: list[Section] = []
        self._strips: list[list[Segment]] = []
        self._owner: list[int] = []
        """Section index of each strip (title strips included)."""
        self._width = 0
        self.query = ""
        self.matches: list[tuple[int, int, int]] = []
        """(line, start cell, end cell) of each match in the laid-out strips."""
        self._on_line: dict[int, list[int]] = {}
        """Line -> indexes into `matches` (drawing a line looks up only its own)."""
        self.current = -1

    # -- content --------------------------------------------------------------------------------
    def show(self, sections: list[Section], keep_scroll: bool = False) -> None:
        """Replace the content (folds are kept for sections of the same title)."""
        folded = {s.title for s in self.sections if s.folded and s.title}
        for s in sections:
            if s.title in folded:
                s.folded = True
        self.sections = sections
        self._width = 0
        self._layout()
        if not keep_scroll:
            self.scroll_to(0, 0, animate=False)
        if self.query:
            self.search(self.query, move=False)

    @property
    def text_width(self) -> int:
        """The width sections are laid out at (pass it to `lay_out` in a worker)."""
        return max(20, self.scrollable_content_region.width or self.size.width or 100)

    @property
    def text(self) -> str:
        """The laid-out lines as plain text (what a search looks through)."""
        return "\n".join(map(_text, self._strips))

    def _layout(self) -> None:
        width = self.text_width
        if width != self._width:
            lay_out(self.sections, self.app.console, width)
            self._width = width
        strips, owner = [], []
        for i, s in enumerate(self.sections):
            if s.title is not None:
                mark = "▸ " if s.folded else "▾ "
                segs = [Segment(mark + s.title, HEADER)]
                if s.folded and s.note:
                    segs.append(Segment("  " + s.note, Style(dim=True)))
                strips.append(segs)
                owner.append(i)
            if not (s.folded and s.title is not None):
                strips.extend(s.lines)
                owner.extend([i] * len(s.lines))
        self._strips, self._owner = strips, owner
        self.virtual_size = Size(width, len(strips))
        self.refresh()

    def on_resize(self) -> None:
        if self.sections:
            self._layout()
            if self.query:
                self.search(self.query, move=False)

    # -- drawing --------------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = y + scroll_y
        width = self.scrollable_content_region.width
        if index >= len(self._strips):
            return Strip.blank(width, self.rich_style)
        strip = Strip(self._strips[index])
        for n in self._on_line.get(index, ()):
            _, start, end = self.matches[n]
            style = CURRENT if n == self.current else MATCH
            before, hit, after = strip.divide([start, end, strip.cell_length])[:3]
            strip = Strip.join([before, hit.apply_style(style), after])
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style).apply_style(self.rich_style)

    # -- folding --------------------------------------------------------------------------------
    def _section_at_top(self) -> int | None:
        if not self._owner:
            return None
        return self._owner[min(int(self.scroll_offset.y), len(self._owner) - 1)]

    def fold(self, index: int) -> None:
        section = self.sections[index]
        if section.title is None:
            return
        section.folded = not section.folded
        self._layout()
        if self.query:
            self.search(self.query, move=False)
        self.scroll_to(y=self._owner.index(index), animate=False)

    def action_fold(self) -> None:
        index = self._section_at_top()
        if index is not None:
            self.fold(index)

    def action_fold_all(self) -> None:
        titled = [s for s in self.sections if s.title is not None]
        fold = not all(s.folded for s in titled)
        for s in titled:
            s.folded = fold
        self._layout()

    def on_click(self, event: Click) -> None:
        line = int(self.scroll_offset.y) + event.y
        if 0 <= line < len(self._strips):
            index = self._owner[line]
            if self.sections[index].title is not None and self._owner.index(index) == line:
                self.fold(index)

    # -- search ---------------------------------------------------------------------------------
    def search(self, query: str, move: bool = True) -> int:
        """Mark every match of `query` (case-insensitive); unfold sections that hide one; with
        `move`, go to the first match at or below the top line. Returns the number of matches."""
        keep = self.current if query == self.query and not move else -1
        self.query = query
        needle = query.casefold()
        hiding = [s for s in self.sections if needle and s.folded and needle in _plain(s.lines)]
        for s in hiding:
            s.folded = False
        if hiding:
            self._layout()
        self.matches = []
        if needle:
            for line, segments in enumerate(self._strips):
                text = _text(segments).casefold()
                start = text.find(needle)
                strip = Strip(segments) if start >= 0 else None
                while start >= 0:
                    self.matches.append((line, strip.index_to_cell_position(start),
                                         strip.index_to_cell_position(start + len(needle))))
                    start = text.find(needle, start + len(needle))
        self._on_line = {}
        for n, (line, _, _) in enumerate(self.matches):
            self._on_line.setdefault(line, []).append(n)
        self.current = keep if keep < len(self.matches) else -1
        if move and self.matches:
            top = int(self.scroll_offset.y)
            self.current = next((n for n, m in enumerate(self.matches) if m[0] >= top), 0)
            self._reveal()
        self.refresh()
        self.post_message(self.Searched(query, self.current, len(self.matches)))
        return len(self.matches)

    def next_match(self, step: int = 1) -> None:
        if not self.matches:
            self.post_message(self.Searched(self.query, -1, 0))
            return
        self.current = (self.current + step) % len(self.matches)
        self._reveal()
        self.refresh()
        self.post_message(self.Searched(self.query, self.current, len(self.matches)))

    def _reveal(self) -> None:
        line = self.matches[self.current][0]
        height = self.scrollable_content_region.height
        if not self.scroll_offset.y <= line < self.scroll_offset.y + height:
            self.scroll_to(y=max(0, line - height // 3), animate=False)


def _text(segments: list[Segment]) -> str:
    return "".join(seg.text for seg in segments)


def _plain(lines: list[list[Segment]]) -> str:
    return "\n".join(map(_text, lines)).casefold()
