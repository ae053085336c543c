"""A scrollable page of Rich renderables in foldable sections, with search (the state pane).

The renderables are rendered to segment lines once per width, so scrolling and moving between
search matches cost nothing, and a state with thousands of messages draws only the visible lines.
Lines are kept as plain segment lists and become `Strip`s only when drawn: a Strip carries seven
caches, and tens of thousands of them made the cyclic collector stall keypresses.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from statectl.tui.pages import Section, lay_out

MATCH = Style(bgcolor="yellow", color="black")
CURRENT = Style(bgcolor="dark_orange", color="black", bold=True)
HEADER = Style(bold=True, color="cyan")
CURSOR = Style(reverse=True)


class Document(ScrollView, can_focus=True):
    """Sections of renderables; `z` folds the section at the top, `/`-search marks matches."""

    BINDINGS = [
        Binding("z", "fold", "Fold", show=False),
        Binding("Z", "fold_all", "Fold all", show=False),
        Binding("right_square_bracket", "section(1)", "Next section", show=False),
        Binding("left_square_bracket", "section(-1)", "Previous section", show=False),
        Binding("up,k", "scroll_up", show=False),
        Binding("down,j", "scroll_down", show=False),
        Binding("pageup", "page_up", show=False),
        Binding("pagedown,space", "page_down", show=False),
        Binding("home", "scroll_home", show=False),  # (g is the thread screen's graph view)
        Binding("end,G", "scroll_end", show=False),
    ]

    class Searched(Message):
        """A search finished or moved: `index` of `total` matches (index -1: none)."""

        def __init__(self, query: str, index: int, total: int) -> None:
            super().__init__()
            self.needle, self.index, self.total = query, index, total

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.sections: list[Section] = []
        self._parents: list[int | None] = []
        """Index of the section each one lies in (the nearest earlier one less deep)."""
        self._strips: list[list[Segment]] = []
        self._owner: list[int] = []
        """Section index of each strip (title strips included)."""
        self._width = 0
        self.needle = ""
        self.matches: list[tuple[int, int, int]] = []
        """(line, start cell, end cell) of each match in the laid-out strips."""
        self._on_line: dict[int, list[int]] = {}
        """Line -> indexes into `matches` (drawing a line looks up only its own)."""
        self.current = -1
        self._relayout_due = False
        self.cursor: int | None = None
        """The section `[`/`]` moved to (its title is highlighted); `z` folds it."""

    # -- content --------------------------------------------------------------------------------
    def show(self, sections: list[Section], keep_scroll: bool = False) -> None:
        """Replace the content (folds are kept for sections of the same title)."""
        folded = {s.key or s.title for s in self.sections if s.folded and s.title}
        for s in sections:
            if s.title and (s.key or s.title) in folded:
                s.folded = True
        here = self.sections[self.cursor] if self.cursor is not None else None
        at = (here.key or here.title) if here is not None else None
        self.cursor = next((i for i, s in enumerate(sections) if s.title and (s.key or s.title) == at), None)
        self.sections = sections
        self._parents = []
        stack: list[int] = []
        for i, s in enumerate(sections):
            while stack and sections[stack[-1]].depth >= s.depth:
                stack.pop()
            self._parents.append(stack[-1] if stack else None)
            stack.append(i)
        self._width = 0
        self._layout()
        if not keep_scroll:
            self.scroll_to(0, 0, animate=False)
        if self.needle:
            self.search(self.needle, move=False)

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
        hidden_below: int | None = None  # the depth of a folded section whose outline we are in
        for i, s in enumerate(self.sections):
            if hidden_below is not None and s.depth > hidden_below:
                continue
            hidden_below = None
            indent = [Segment("  " * s.depth)] if s.depth else []
            if s.title is not None:
                mark = "▸ " if s.folded else "▾ "
                segs = [*indent, Segment(mark + s.title, HEADER)]
                if s.folded and s.note:
                    segs.append(Segment("  " + s.note, Style(dim=True)))
                strips.append(segs)
                owner.append(i)
            if s.folded and s.title is not None:
                hidden_below = s.depth
            else:
                strips.extend([*indent, *line] for line in s.lines)
                owner.extend([i] * len(s.lines))
        self._strips, self._owner = strips, owner
        self.virtual_size = Size(width, len(strips))
        self.refresh()

    def on_resize(self) -> None:
        if self.sections:
            self._layout()
            if self.needle:
                self.search(self.needle, move=False)

    # -- drawing --------------------------------------------------------------------------------
    def _check_width(self) -> None:
        """Lay out again when the width text is laid out at is no longer the pane's: a scrollbar
        that appears or goes changes it without a Resize of the widget (on a busy machine the
        page could stay wrapped at the width it had before, a few columns off)."""
        if self.sections and self._width and self.text_width != self._width and not self._relayout_due:
            self._relayout_due = True
            self.call_after_refresh(self._relayout)

    def _relayout(self) -> None:
        self._relayout_due = False
        if self.sections and self.text_width != self._width:
            self._layout()
            if self.needle:
                self.search(self.needle, move=False)

    def render_line(self, y: int) -> Strip:
        if y == 0:
            self._check_width()
        scroll_x, scroll_y = self.scroll_offset
        index = y + scroll_y
        width = self.scrollable_content_region.width
        if index >= len(self._strips):
            return Strip.blank(width, self.rich_style)
        strip = Strip(self._strips[index])
        if (
            self.cursor is not None
            and self._owner[index] == self.cursor
            and (index == 0 or self._owner[index - 1] != self.cursor)
        ):
            strip = strip.apply_style(CURSOR)
        for n in self._on_line.get(index, ()):
            _, start, end = self.matches[n]
            style = CURRENT if n == self.current else MATCH
            before, hit, after = strip.divide([start, end, strip.cell_length])[:3]
            # over the text's own style (a tool call's yellow): black on the mark, always readable
            hit = Strip([Segment(seg.text, (seg.style + style) if seg.style else style, seg.control) for seg in hit])
            strip = Strip.join([before, hit, after])
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style).apply_style(self.rich_style)

    # -- folding --------------------------------------------------------------------------------
    def _section_at_top(self) -> int | None:
        if not self._owner:
            return None
        return self._titled(self._owner[min(int(self.scroll_offset.y), len(self._owner) - 1)])

    def _outer(self, index: int) -> int | None:
        return self._parents[index]

    def _titled(self, index: int | None) -> int | None:
        """The section itself if it has a title, else the nearest titled one it lies in."""
        while index is not None and self.sections[index].title is None:
            index = self._outer(index)
        return index

    def fold(self, index: int) -> None:
        titled = self._titled(index)
        if titled is None:
            return
        index = titled
        self.sections[index].folded = not self.sections[index].folded
        self._layout()
        if self.needle:
            self.search(self.needle, move=False)
        line = self._owner.index(index)
        if not self.scroll_offset.y <= line < self.scroll_offset.y + self.scrollable_content_region.height:
            self.scroll_to(y=line, animate=False)

    def action_fold(self) -> None:
        """`z`: fold the section under the cursor; when its title is not on screen, the cursor
        first moves to the section at the top (it is always where z acts, and visible)."""
        line = self._title_line(self.cursor) if self.cursor is not None else None
        top, height = int(self.scroll_offset.y), self.scrollable_content_region.height
        if line is None or not top <= line < top + height:
            self.cursor = self._section_on_screen()
        if self.cursor is not None:
            self.fold(self.cursor)

    def _section_on_screen(self) -> int | None:
        """The section at the top, else the first whose title is on screen."""
        at_top = self._section_at_top()
        if at_top is not None:
            return at_top
        top, height = int(self.scroll_offset.y), self.scrollable_content_region.height
        for line in range(top, min(top + height, len(self._owner))):
            i = self._owner[line]
            if self.sections[i].title is not None and self._title_line(i) == line:
                return i
        return None

    def on_focus(self) -> None:
        """The section cursor shows where `z` acts as soon as the pane has the keys."""
        if self.cursor is None and self.sections:
            self.cursor = self._section_on_screen()
            self.refresh()

    def _title_line(self, index: int) -> int | None:
        """The line of a section's title, if it is shown."""
        try:
            line = self._owner.index(index)
        except ValueError:
            return None
        return line if self.sections[index].title is not None else None

    def action_section(self, step: int) -> None:
        """Put the section cursor on the next (1) or previous (-1) section title shown; `z`
        folds the section under the cursor."""
        here = self._title_line(self.cursor) if self.cursor is not None else None
        if here is None:
            here = int(self.scroll_offset.y) - (1 if step > 0 else 0)
        titles = [
            line
            for line, i in enumerate(self._owner)
            if self.sections[i].title is not None and (line == 0 or self._owner[line - 1] != i)
        ]
        ahead = [t for t in titles if (t > here if step > 0 else t < here)]
        if not ahead:
            return
        line = ahead[0] if step > 0 else ahead[-1]
        self.cursor = self._owner[line]
        height = self.scrollable_content_region.height
        if not self.scroll_offset.y <= line < self.scroll_offset.y + height:
            self.scroll_to(y=max(0, line - height // 3), animate=False)
        self.refresh()

    def action_fold_all(self) -> None:
        titled = [s for s in self.sections if s.title is not None]
        fold = not all(s.folded for s in titled)
        for s in titled:
            s.folded = fold
        self._layout()
        if self.needle:  # matches that the folds hid are dropped, the rest re-marked
            self.search(self.needle, move=False)

    def on_click(self, event: Click) -> None:
        line = int(self.scroll_offset.y) + event.y
        if 0 <= line < len(self._strips):
            index = self._owner[line]
            if self.sections[index].title is not None and self._owner.index(index) == line:
                self.cursor = index
                self.fold(index)

    # -- search ---------------------------------------------------------------------------------
    def search(self, query: str, move: bool = True) -> int:
        """Mark every match of `query` (case-insensitive) in the lines shown. With `move` (a new
        search): first unfold the sections that hide one, then go to the first match at or
        below the top line. Without (re-marking after a fold or a new layout): folds stay, and
        the matches they hide are not counted. Returns the number of matches."""
        keep = self.current if query == self.needle and not move else -1
        self.needle = query
        needle = query.casefold()
        hiding = set()
        if move and needle:
            for i, s in enumerate(self.sections):
                in_lines = needle in _plain(s.lines)
                if not (in_lines or (s.title and needle in s.title.casefold())):
                    continue
                j = i if in_lines else self._outer(i)  # a folded section still shows its title
                while j is not None:
                    if self.sections[j].folded:
                        hiding.add(j)
                    j = self._outer(j)
        for j in hiding:
            self.sections[j].folded = False
        if hiding:
            self._layout()
        self.matches = []
        if needle:
            for line, segments in enumerate(self._strips):
                text = _text(segments).casefold()
                start = text.find(needle)
                strip = Strip(segments)
                while start >= 0:
                    self.matches.append(
                        (line, strip.index_to_cell_position(start), strip.index_to_cell_position(start + len(needle)))
                    )
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
            self.post_message(self.Searched(self.needle, -1, 0))
            return
        self.current = (self.current + step) % len(self.matches)
        self._reveal()
        self.refresh()
        self.post_message(self.Searched(self.needle, self.current, len(self.matches)))

    def _reveal(self) -> None:
        line = self.matches[self.current][0]
        height = self.scrollable_content_region.height
        if not self.scroll_offset.y <= line < self.scroll_offset.y + height:
            self.scroll_to(y=max(0, line - height // 3), animate=False)


def _text(segments: list[Segment]) -> str:
    return "".join(seg.text for seg in segments)


def _plain(lines: list[list[Segment]]) -> str:
    return "\n".join(map(_text, lines)).casefold()
