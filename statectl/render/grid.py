"""Two-column rows with a hanging indent: a label column as wide as its widest label, and
content that wraps beside it (the checkpoint header, a transcript, a todo list)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, JustifyMethod, RenderableType, RenderResult
from rich.measure import Measurement
from rich.panel import Panel
from rich.segment import Segment
from rich.text import Text


class Box(Panel):
    """A Panel that, into a pipe or a file, is as wide as what it holds (a Panel expands to the
    console's width, which there is render.columns.PIPE_WIDTH)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from statectl.render.columns import natural_width

        if natural_width(console):
            self.expand = False
        yield from super().__rich_console__(console, options)


class LabelGrid:
    """Draws what `Table.grid(padding=(0, gap))` with a label column and a content column
    draws, without the Table's cost: a Table measures every cell to find column widths and
    wraps each in a padding renderable, which was a third of `show`'s time (and its import)."""

    def __init__(
        self,
        rows: Sequence[tuple[Text, RenderableType]],
        gap: int = 1,
        justify: JustifyMethod = "left",
        label_style: str = "",
        stack_below: int = 0,
    ) -> None:
        """`stack_below`: where the content column would be narrower than this, each label
        goes on its own line and its content under it, indented by two, with the width."""
        self.rows, self.gap, self.justify, self.label_style = rows, gap, justify, label_style
        self.label_width = max((cell_len(label.plain) for label, _ in rows), default=0)
        self.stack_below = stack_below

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.max_width - self.label_width - self.gap < self.stack_below:
            yield from self._stacked(console, options)
            return
        label_width = min(self.label_width, max(0, options.max_width - self.gap - 1))
        width = max(1, options.max_width - label_width - self.gap)
        from statectl.render.columns import natural_width

        if natural_width(console):  # into a pipe: as wide as the widest content, not PIPE_WIDTH
            widest = max((Measurement.get(console, options, c).maximum for _, c in self.rows), default=1)
            width = max(1, min(width, widest))
        left = options.update(width=label_width, justify=self.justify, no_wrap=True, height=None)
        right = options.update(width=width, height=None)
        style = console.get_style(self.label_style)
        gap, new_line = Segment(" " * self.gap, style), Segment.line()
        for label, content in self.rows:
            labels = console.render_lines(label, left, style=style) if label_width else [[]]
            lines = console.render_lines(content, right)
            height = max(len(labels), len(lines))
            labels = Segment.set_shape(labels, label_width, height, style)
            lines = Segment.set_shape(lines, width, height)
            for label_line, line in zip(labels, lines, strict=True):
                yield from label_line
                yield gap
                yield from line
                yield new_line

    def _stacked(self, console: Console, options: ConsoleOptions) -> RenderResult:
        inner = options.update(width=max(1, options.max_width - 2), height=None)
        style = console.get_style(self.label_style)
        indent, new_line = Segment("  "), Segment.line()
        for label, content in self.rows:
            for line in console.render_lines(
                label, options.update(height=None, justify="left"), style=style, pad=False
            ):
                yield from line
                yield new_line
            for line in console.render_lines(content, inner, pad=False):
                yield indent
                yield from line
                yield new_line

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        fixed = self.label_width + self.gap
        inner = [Measurement.get(console, options, content) for _, content in self.rows]
        return Measurement(
            fixed + max((m.minimum for m in inner), default=0), fixed + max((m.maximum for m in inner), default=0)
        )
