"""What `render.pipe_show` lays out, as Rich lays it out into a pipe or a file (where nothing
wraps, at 65,536 cells): a text's lines, parts one after another, a box as wide as what it holds
and its title (render.grid.Box), rows of a label column and a content column (render.grid.LabelGrid)
and a tree's guides (rich.tree.Tree), each measured as Rich measures it, by the cells of the text
before its control characters are written out. No Rich here; what it would not lay out as Rich
does raises `Unplain`."""

from __future__ import annotations

from typing import Any, TypeAlias

from statectl.render import Limits
from statectl.render.pipe import width

DROPPED = dict.fromkeys((7, 8, 11, 12, 13))
"""What Rich's Text drops from its text (as render.pipe's)."""
WIDEST = 30_000
"""A line wider than this is left to Rich (the pipe's width is 65,536 cells, less the guides)."""
_UNSAFE = frozenset("\x1c\x1d\x1e\x85\u2028\u2029")
"""What `str.splitlines` splits at besides a newline (Rich measures a text by those lines and
lays it out by newlines alone)."""
TAB = 8
"""Rich's tab stops (a console's `tab_size`)."""


class Unplain(Exception):
    """What this module does not lay out as Rich would: Rich lays it out."""


class PlainText:
    """A Text's lines (`widest`: the cells of the widest)."""

    cut = 0
    """1 for a tool call's line whose arguments were shortened: `render.values.ToolCall` shortens
    them each time Rich measures or draws it, and `Limits` counts each (see `_grid`)."""

    def __init__(self, text: str) -> None:
        text = text.translate(DROPPED)  # (what Rich's Text drops)
        if _UNSAFE & set(text):
            raise Unplain
        self.tabbed = "\t" in text
        self.lines = [_expand(line) if "\t" in line else line for line in text.split("\n")]
        self._widest = max(width(line) for line in self.lines)
        if self._widest > WIDEST:
            raise Unplain

    @property
    def widest(self) -> int:
        """The cells of the widest line. Rich measures a text before it expands its tabs and lays
        it out after, wrapping it where it is measured for (a box, a column): left to Rich."""
        if self.tabbed:
            raise Unplain
        return self._widest

    @widest.setter
    def widest(self, cells: int) -> None:
        self._widest = cells


def _expand(line: str) -> str:
    """A line's tabs expanded as Rich's `Text.expand_tabs` does: each a blank, then blanks to the
    next stop (the cells before it counted as Rich counts them)."""
    out, at = [], 0
    *parts, last = line.split("\t")
    for part in parts:
        part += " "
        at += width(part)
        if at % TAB:
            part += " " * (TAB - at % TAB)
            at += TAB - at % TAB
        out.append(part)
    return "".join(out) + last


class PlainGroup:
    """Parts one after another (rich.console.Group)."""

    def __init__(self, *parts: Any) -> None:
        self.parts = parts

    @property
    def widest(self) -> int:
        return max((p.widest for p in self.parts), default=0)


class PlainBox:
    """`render.grid.Box` (a Panel with a title, into a pipe as wide as it needs)."""

    widest: int

    def __init__(self, body: Part, title: str) -> None:
        self.body, self.title = body, PlainText(title.replace("\n", " "))
        self.widest = max(body.widest + 2, self.title.widest + 4) + 2


class PlainGrid:
    """`render.grid.LabelGrid`: labels (right-justified with `right`), content beside them."""

    def __init__(
        self, rows: list[tuple[PlainText, Any]], gap: int = 1, right: bool = False, stack_below: int = 0
    ) -> None:
        if any(len(label.lines) > 1 for label, _ in rows):
            raise Unplain
        self.rows, self.gap, self.right, self.stack_below = rows, gap, right, stack_below
        self.label_width = max((label.widest for label, _ in rows), default=0)
        self.cuts = sum(p.cut for _, c in rows for p in (c.parts if isinstance(c, PlainGroup) else [c]))
        self.widest = self.label_width + gap + max((c.widest for _, c in rows), default=0)


class PlainTree:
    """rich.tree.Tree: a label and its children under guides."""

    def __init__(self, label: PlainText) -> None:
        self.label = label
        self.children: list[PlainTree] = []

    def add(self, label: PlainText) -> PlainTree:
        child = PlainTree(label)
        self.children.append(child)
        return child

    @property
    def widest(self) -> int:
        return max([self.label.widest, *(c.widest + 4 for c in self.children)])


Part: TypeAlias = "PlainText | PlainGroup | PlainBox | PlainGrid | PlainTree"
"""What lays out into a pipe."""


def lines_of(part: Part, room: int) -> list[str]:
    """`part`'s lines at `room` cells, not padded (as Rich renders it where nothing wraps)."""
    if isinstance(part, PlainText):
        return part.lines
    if isinstance(part, PlainGroup):
        return [line for p in part.parts for line in lines_of(p, room)]
    if isinstance(part, PlainBox):
        return _box(part, room)
    if isinstance(part, PlainGrid):
        return _grid(part, room)
    return _tree(part)


def _pad(line: str, cells: int) -> str:
    return line + " " * (cells - width(line))


def _box(box: PlainBox, room: int) -> list[str]:
    inner = min(room - 2, box.widest - 2)  # (a Panel as wide as its body and title, render.grid.Box)
    title = " " + box.title.lines[0] + " "
    top = "╭─" + title + "─" * (inner - 2 - width(title)) + "─╮"
    body = [f"│ {_pad(line, inner - 2)} │" for line in lines_of(box.body, inner - 2)]
    return [top, *body, "╰" + "─" * inner + "╯"]


def _grid(grid: PlainGrid, room: int) -> list[str]:
    """`render.grid.LabelGrid` into a pipe: content as wide as the widest, or stacked."""
    lw = grid.label_width
    stacked = room - lw - grid.gap < grid.stack_below
    # (a shortened tool call, counted as Rich counts it: measured for the box, measured for the
    # column's width unless stacked, drawn)
    Limits.cut += grid.cuts * (2 if stacked else 3)
    if stacked:
        out = []
        for label, content in grid.rows:
            out += label.lines
            out += ["  " + line for line in lines_of(content, room - 2)]
        return out
    cells = min(room - lw - grid.gap, grid.widest - lw - grid.gap)
    out = []
    for label, content in grid.rows:
        text = label.lines[0].rstrip() if grid.right else label.lines[0]
        head = " " * (lw - width(text)) + text if grid.right else _pad(text, lw)
        for n, line in enumerate(lines_of(content, cells)):
            out.append((head if n == 0 else " " * lw) + " " * grid.gap + _pad(line, cells))
    return out


def _tree(tree: PlainTree) -> list[str]:
    out = list(tree.label.lines)

    def walk(children: list[PlainTree], prefix: str) -> None:
        for i, child in enumerate(children):
            last = i == len(children) - 1
            first, *rest = child.label.lines
            out.append(prefix + ("└── " if last else "├── ") + first)
            more = prefix + ("    " if last else "│   ")
            out.extend(more + line for line in rest)
            walk(child.children, more)

    walk(tree.children, "")
    return out
