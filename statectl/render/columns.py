"""The width policy of every table: identifiers are never shortened.

A column says what it holds, and that decides how it gives way when a table is wider than the
terminal, in this order:

1. `TEXT` (a preview, notes, reasons): an empty one is left out, then each is shortened with an
   ellipsis down to a floor, then left out;
2. `TIME`: left out;
3. `COUNT` (numbers, sizes, shares): left out, the rightmost first;
4. `ID` (thread ids, checkpoint ids as shown, node, channel and namespace names): folded onto
   further lines of its row, never cut.

`FIXED` columns (a status, a step, a source: short words) stay as they are. What was left out is
said under the table. A text column may hold why a user opened the row (an error, an interrupt's
question, a branch): such a row's reason (`PlainTable.add_row(under=...)`) then goes on a line of
its own under the row, as `git log --graph` folds, instead of being left out with the column.
Into a pipe or a file (no terminal, no COLUMNS) nothing gives way: every cell is whole and every
row one line, for grep and cut.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.control import strip_control_codes
from rich.text import Span, Text

from statectl.escape import escape
from statectl.render.pipe import COUNT, GAP, ID, TEXT, TIME, Col
from statectl.render.pipe import FIXED as FIXED  # (the kinds are imported from here)
from statectl.render.safe import safe_text

T = TypeVar("T")
GAP_TEXT = " " * GAP
TEXT_FLOOR = 16
ID_FLOOR = 8


PIPE_WIDTH = 1 << 16
"""A pipe's or a file's width: no line is wrapped or cut (a line longer than this, only under
`--full`, wraps where Rich lays it out; tables and diff bodies, printed plain, never do:
render/plain.py), and nothing pads to it (render.columns.natural_width)."""


class LeftOut:
    hint = "a pipe shows all"
    """What shows the columns a table left out (the CLI's pipe; the TUI: a wider pane)."""


def natural_width(console: Console) -> bool:
    """True where output is not for a person's terminal: a pipe or a file, with no COLUMNS."""
    return not console.is_terminal and "COLUMNS" not in os.environ


class _Fit:
    """One table's widths as they give way (None: left out)."""

    def __init__(self, cols: list[Col], widths: list[int], room: int) -> None:
        self.cols, self.natural, self.room = cols, widths, room
        self.out: list[int | None] = list(widths)
        self.gone: list[int] = []

    def total(self) -> int:
        shown = [w for w in self.out if w is not None]
        return sum(shown) + GAP * max(0, len(shown) - 1)

    def over(self) -> bool:
        return self.total() > self.room

    def kind(self, k: str) -> list[int]:
        return [i for i, c in enumerate(self.cols) if c.kind == k and self.out[i] is not None]

    def drop(self, i: int) -> None:
        self.out[i] = None
        self.gone.append(i)

    def narrow(self, columns: list[int], floor: dict[int, int]) -> None:
        """Take one cell at a time from the widest of `columns`, down to each one's floor."""
        while self.over():
            room = [i for i in columns if (self.out[i] or 0) > floor[i]]
            if not room:
                return
            i = max(room, key=lambda j: (self.out[j] or 0) - floor[j])
            self.out[i] = (self.out[i] or 0) - 1

    def give_back(self) -> None:
        """What a left-out column freed goes back to the text that was shortened."""
        for i in self.kind(TEXT):
            spare = self.room - self.total()
            if spare <= 0:
                return
            self.out[i] = min(self.natural[i], (self.out[i] or 0) + spare)


def fit(cols: list[Col], widths: list[int], empty: list[bool], room: int) -> tuple[list[int | None], list[int]]:
    """Each column's width at `room` cells (None: left out), and which columns were left out.
    Pure: the policy in the module's docstring, tested on its own."""
    f = _Fit(cols, widths, room)
    if not f.over():
        return f.out, f.gone
    for i in f.kind(TEXT):  # a text column with nothing in it
        if empty[i]:
            f.drop(i)
    f.narrow(f.kind(TEXT), {i: max(min(TEXT_FLOOR, widths[i]), cell_len(cols[i].header)) for i in f.kind(TEXT)})
    for k in (TEXT, TIME, COUNT):  # whole columns, the rightmost first
        for i in reversed(f.kind(k)):
            if f.over():
                f.drop(i)
    f.give_back()
    f.narrow(f.kind(ID), {i: max(ID_FLOOR, cell_len(cols[i].header)) for i in f.kind(ID)})
    return f.out, sorted(f.gone)


BREAK_AFTER = (" ", ".", "-/:|", "_")
"""Where a folded identifier's line may end, the better first: after a space, a dot, ..."""


def shorten(cell: Text, width: int) -> None:
    """`cell.truncate(width, overflow="ellipsis")`, without Rich measuring every grapheme of a long
    text first (a preview is a message: 500 of them took the threads screen 0.1 s): the part past
    what can show is cropped before, when what is kept is already wider than `width` (so the
    result is the same to the character)."""
    plain = cell.plain
    for keep in (width + 1, 2 * width + 8) if width > 0 else ():  # (more where zero-width characters are among them)
        if len(plain) > keep and cell_len(plain[:keep]) > width:
            cell.right_crop(len(plain) - keep)
            break
    cell.truncate(width, overflow="ellipsis")


def fold_id(cell: Text, width: int) -> list[Text]:
    """An identifier (or a list of them) on lines of at most `width` characters, every character
    kept: each line ends after a space, else a dot, else a dash..., else between the words of a
    CamelCase name, where one falls in its last two thirds; else it is folded at the width.
    (Identifiers in these tables are single-width characters.)"""
    plain, cuts, start = cell.plain, [], 0
    while len(plain) - start > width:
        end = start + width
        soft = end
        for marks in BREAK_AFTER:
            at = [j + 1 for j in range(start + width // 3, end) if plain[j] in marks]
            if at:
                soft = at[-1]
                break
        else:  # no mark: between two words of a CamelCase name (`LanguageDetector|Middleware.`)
            at = [j for j in range(start + width // 3, end) if plain[j - 1].islower() and plain[j].isupper()]
            soft = at[-1] if at else end
        cuts.append(soft)
        start = soft
    lines = list(cell.divide(cuts))
    for line in lines:
        line.rstrip()
    return lines


def fold_text(cell: Text, width: int) -> list[Text]:
    """Text on lines of at most `width` cells (wide characters counted as two), each ending
    after its last space where it has one; every character kept."""
    plain, cuts, start, used, space = cell.plain, [], 0, 0, None
    for j, ch in enumerate(plain):
        w = cell_len(ch)
        if used + w > width and j > start:
            cut = space + 1 if space is not None and space + 1 > start else j
            cuts.append(cut)
            start, space = cut, None
            used = cell_len(plain[cut:j])
        if ch == " ":
            space = j
        used += w
    lines = list(cell.divide(cuts))
    for line in lines:
        line.rstrip()
    return lines


class PlainTable:
    """Aligned columns without borders (like kubectl and git): a Table costs ~1 ms a row to
    measure and render, this costs a string join, and its lines are easy to grep and cut."""

    PLAIN = True
    """Into a pipe, rows are joined as strings (`_plain_parts`), not laid out by Rich: the same
    text (tests compare the two)."""
    CHUNK = 500
    """Rows laid out into one Text (`stream` prints each on its own: a table of a hundred
    thousand rows never held laid out whole)."""

    def __init__(self, title: str, cols: list[Col]) -> None:
        self.title, self.cols = title, cols
        self.rows: Sequence[tuple[list[Text], str | None]] = []
        self.reasons: dict[int, Text] = {}
        """By row: what stays on screen, on a line under the row, when its `under` column is left out."""
        self.plain_rows: list[list[str]] | None = None
        """Rows given as plain text (`add_plain_row`), for a pipe or a file only."""

    @property
    def headers(self) -> list[str]:
        return [c.header for c in self.cols]

    def add_row(self, *cells: Text | str, style: str | None = None, under: Text | None = None) -> None:
        """A row; `under`: its reason (an error, an interrupt's question, a branch), shown on a
        line of its own under the row where the column holding it (`Col.under`) is left out."""
        assert isinstance(self.rows, list), "rows made on demand take no more"
        if under is not None and under.plain.strip():
            self.reasons[len(self.rows)] = _cell(under)
        self.rows.append(([_cell(c) for c in cells], style))

    def add_plain_row(self, *cells: str) -> None:
        """A row of plain text, for a table printed into a pipe or a file (`natural_width`, with
        `PLAIN`): no Text is made for its cells, and its lines are the ones `add_row` would give
        there, escaped alike. A table holds such rows or the others, never both."""
        assert not self.rows, "a table holds plain rows or Text rows"
        if self.plain_rows is None:
            self.plain_rows = []
        # (as Text(c), then `_cell`; printable ASCII, nearly every cell, has nothing to strip or escape)
        plain = [c if c.isascii() and c.isprintable() else escape(strip_control_codes(c)) for c in cells]
        self.plain_rows.append(plain)

    def rows_of(self, items: Sequence[T], row: Callable[[T], list[Text | str]]) -> None:
        """The rows `row` makes of `items`, made each time they are read (measured, then laid out
        a chunk at a time), never all held."""
        self.rows = _Made(items, row)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self._parts(console, options)

    def stream(self, console: Console) -> Iterator[Any]:
        """The table's parts, to print one at a time (`cli.output.emit`)."""
        return self._parts(console, console.options)

    def _parts(self, console: Console, options: ConsoleOptions) -> Iterator[Any]:
        natural = natural_width(console)
        widths = [cell_len(c.header) for c in self.cols]
        if self.plain_rows is not None and natural and self.PLAIN:
            yield from self._plain_only(widths)
            return
        if self.plain_rows is not None:  # (printed elsewhere after all: laid out as Text rows)
            self.rows, self.plain_rows = [([Text(c) for c in cells], None) for cells in self.plain_rows], None
        empty = [True] * len(self.cols)
        for cells, _style in self.rows:
            for i, cell in enumerate(cells):
                n = cell_len(cell.plain)
                widths[i], empty[i] = max(widths[i], n), empty[i] and not n
        shown, gone = (widths, []) if natural else fit(self.cols, widths, empty, options.max_width)
        if self.title:  # (into a pipe: one line, as the rows)
            yield Text(self.title, style="bold", no_wrap=natural, overflow="ignore" if natural else None)
        if not self.rows:  # no rows: no header
            return
        header = [Text(c.header.upper(), style="bold dim") for c in self.cols]
        if natural and self.PLAIN:  # a pipe or a file: no colour, nothing given way (10x faster, the same text)
            yield from self._plain_parts(
                [c.header.upper() for c in self.cols], widths, ([c.plain for c in cells] for cells, _style in self.rows)
            )
            return
        out = Text()
        self._row(console, header, None, shown, out)
        folded = any(self.cols[i].under for i in gone) and bool(self.reasons)
        indent = next((w for w in shown if w is not None), 0) + GAP  # (under the second column)
        for n, (cells, style) in enumerate(self.rows, 1):
            self._row(console, cells, style, shown, out)
            if folded and n - 1 in self.reasons:
                self._under(self.reasons[n - 1], style, indent, options.max_width, out)
            if n % self.CHUNK == 0 and n < len(self.rows):
                yield self._done(out, natural)
                out = Text()
        yield self._done(out, natural)
        left_out = [self.cols[i].header.upper() for i in gone if not empty[i]]
        if left_out:
            yield Text(
                f"(left out at {options.max_width} columns: {', '.join(left_out)}; {LeftOut.hint})",
                style="dim",
            )

    def _plain_only(self, widths: list[int]) -> Iterator[Any]:
        """`_parts` of plain rows (`add_plain_row`): as `_parts` gives the same rows into a pipe."""
        rows = self.plain_rows or []
        # (each cell measured once, as `_cells` does: printable ASCII is a cell a character)
        sizes = [[len(c) if c.isascii() and c.isprintable() else cell_len(c) for c in cells] for cells in rows]
        for row in sizes:
            for i, n in enumerate(row):
                if n > widths[i]:
                    widths[i] = n
        if self.title:
            yield Text(self.title, style="bold", no_wrap=True, overflow="ignore")
        if rows:
            yield from self._plain_parts([c.header.upper() for c in self.cols], widths, rows, sizes)

    def _plain_parts(
        self, header: list[str], widths: list[int], rows: Iterable[list[str]], sizes: list[list[int]] | None = None
    ) -> Iterator[Any]:
        """`_parts` into a pipe: each chunk of rows one string, as `_row` lays them out (the
        text Rich would print: a pipe shows no style), printed as it is (escaped and trimmed by
        the console like everything else). A chunk with a tab goes through Rich, which expands it.
        `sizes`: each row's cells' widths, measured already (`_plain_only`)."""
        out = [self._plain_row(header, widths)]
        total = len(self.rows) if self.plain_rows is None else len(self.plain_rows)
        right = [c.right for c in self.cols]
        for n, cells in enumerate(rows, 1):
            out.append(
                self._plain_row(cells, widths) if sizes is None else _plain_line(cells, sizes[n - 1], widths, right)
            )
            if n % self.CHUNK == 0 and n < total:
                yield _chunk("\n".join(out))
                out = []
        yield _chunk("\n".join(out))

    def _plain_row(self, cells: list[str], widths: list[int]) -> str:
        parts = self._aligned(list(enumerate(cells)), widths, _cells)
        if parts and parts[-1].endswith(" "):  # (as _row)
            parts[-1] = parts[-1].rstrip()
        return "".join(parts)

    def _aligned(self, cells: list[tuple[int, Any]], widths: list, width: Callable[[Any], int]) -> list[Any]:
        """One line's parts: each (column, cell) padded to its column's width (a right-aligned
        one on its left), GAP apart, with no blank parts at its end (empty last columns)."""
        last = cells[-1][0] if cells else -1
        parts: list[Any] = []
        for j, (i, cell) in enumerate(cells):
            pad = " " * ((widths[i] or 0) - width(cell))
            if j:
                parts.append(" " * GAP)
            if self.cols[i].right:
                parts.append(pad)
            parts.append(cell)
            if not self.cols[i].right and i != last:
                parts.append(pad)
        while parts and not str(parts[-1]).strip():
            parts.pop()
        return parts

    @staticmethod
    def _done(out: Text, natural: bool) -> Text:
        out.rstrip()
        out.no_wrap, out.overflow = True, "ignore" if natural else "ellipsis"
        return out

    @staticmethod
    def _under(reason: Text, style: str | None, indent: int, room: int, out: Text, most: int = 3) -> None:
        """A row's reason on lines of its own, `indent` cells in: folded at the width, at most
        `most` lines (the last shortened)."""
        width = max(room - indent, TEXT_FLOOR)
        lines = fold_text(reason, width) if cell_len(reason.plain) > width else [reason]
        if len(lines) > most:
            rest = lines[most - 1].copy()
            rest.append("…")
            shorten(rest, width)
            lines = [*lines[: most - 1], rest]
        for line in lines:
            start, first_span = len(out), len(out.spans)
            out.append(" " * indent)
            out.append_text(line)
            if style:
                out.spans.insert(first_span, Span(start, len(out), style))
            out.append("\n")

    def _row(self, console: Console, cells: list[Text], style: str | None, shown: list, out: Text) -> None:
        columns: list[tuple[int, list[Text]]] = []
        for i, cell in enumerate(cells):
            width = shown[i]
            if width is None:
                continue
            if cell_len(cell.plain) <= width:
                lines = [cell]
            elif self.cols[i].kind == ID:  # never cut: on as many lines as it takes
                lines = fold_id(cell, width)
            else:
                lines = [cell.copy()]
                shorten(lines[0], width)
            columns.append((i, lines))
        for n in range(max((len(lines) for _, lines in columns), default=0)):
            line = [(i, lines[n] if n < len(lines) else Text("")) for i, lines in columns]
            parts = self._aligned(line, shown, lambda cell: cell_len(cell.plain))
            if parts and isinstance(parts[-1], Text) and parts[-1].plain.endswith(" "):
                parts[-1] = parts[-1].copy()
                parts[-1].rstrip()
            start, first_span = len(out), len(out.spans)
            for part in parts:
                out.append_text(part) if isinstance(part, Text) else out.append(part)
            if style:  # under the cells' own styles, as a line's base style would be
                out.spans.insert(first_span, Span(start, len(out), style))
            out.append("\n")


def _plain_line(cells: list[str], sizes: list[int], widths: list[int], right: list[bool]) -> str:
    """`PlainTable._plain_row` of cells whose widths are known: `_aligned`'s parts, the same
    line, without measuring a cell again (a long log's 17,000 cells)."""
    last = len(cells) - 1
    parts: list[str] = []
    for i, cell in enumerate(cells):
        pad = " " * ((widths[i] or 0) - sizes[i])
        if i:
            parts.append(GAP_TEXT)
        if right[i]:
            parts.append(pad)
        parts.append(cell)
        if not right[i] and i != last:
            parts.append(pad)
    while parts and not parts[-1].strip():
        parts.pop()
    if parts and parts[-1].endswith(" "):
        parts[-1] = parts[-1].rstrip()
    return "".join(parts)


def _cells(text: str) -> int:
    """`cell_len(text)`: printable ASCII is a cell a character (C's test, not Rich's per-string
    set lookup: a long log's table measured its 33,000 cells twice)."""
    return len(text) if text.isascii() and text.isprintable() else cell_len(text)


def _chunk(text: str) -> Any:
    from statectl.render.plain import Lines

    text = text.rstrip()  # (as _done)
    if "\t" in text:  # Rich expands tabs to the next stop: left to it
        return Text(text, no_wrap=True, overflow="ignore")
    return Lines(text)


def _cell(value: Text | str) -> Text:
    """A cell as it will be shown: its control characters escaped before it is measured and
    folded (escaped after layout, `\\x1b` would be 4 cells wider than measured, and the line
    cropped at the terminal's edge, cutting the cells after it)."""
    return safe_text(value if isinstance(value, Text) else Text(value))


class _Made(Sequence[tuple[list[Text], None]], Generic[T]):
    """A table's rows made from its items as they are read (`PlainTable.rows_of`)."""

    def __init__(self, items: Sequence[T], row: Callable[[T], list[Text | str]]) -> None:
        self.items, self.row = items, row

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: Any) -> Any:
        raise TypeError("rows made on demand are read in order")

    def __iter__(self) -> Iterator[tuple[list[Text], None]]:
        for item in self.items:
            yield [_cell(c) for c in self.row(item)], None


class Stacked:
    """Renderables one after another; `cli.output.emit` prints each on its own (a streamed
    table's chunks), a console prints them together."""

    def __init__(self, *parts: Any) -> None:
        self.parts = parts

    def stream(self, console: Console) -> Iterator[Any]:
        for part in self.parts:
            yield from (part.stream(console) if hasattr(part, "stream") else [part])

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.parts
