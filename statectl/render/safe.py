"""Data never reaches the terminal raw: control characters in it are shown escaped
(statectl.escape). Every human output passes through here once, after layout: the CLI's console
(`SafeConsole`), the TUI's laid-out documents (`safe_lines`) and table cells (`safe_text`). Colour statectl emits is
unaffected (Rich adds it when writing, it is not in the text); `--json` keeps the exact values.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from functools import cached_property
from typing import Any

from rich.console import Console
from rich.segment import Segment
from rich.text import Text

from statectl.escape import CONTROLS, escape


def safe_segments(segments: Iterable[Segment]) -> Iterator[Segment]:
    for seg in segments:
        if seg.control is None and CONTROLS.search(seg.text):
            yield Segment(escape(seg.text), seg.style, None)
        else:
            yield seg


def safe_lines(console: Console, renderable: Any, options: Any) -> list[list[Segment]]:
    """`console.render_lines(renderable, options, pad=False)`, escaped."""
    return list(
        Segment.split_and_crop_lines(
            safe_segments(console.render(renderable, options)), options.max_width, pad=False, include_new_lines=False
        )
    )


def safe_text(value: Any) -> Any:
    """A table cell (str or Text) with its control characters escaped, styles kept."""
    if isinstance(value, str):
        return escape(value)
    if not isinstance(value, Text) or not CONTROLS.search(value.plain):
        return value
    cuts = sorted({i for span in value.spans for i in (span.start, span.end)})
    out = Text(style=value.style, justify=value.justify, no_wrap=value.no_wrap, overflow=value.overflow)
    for piece in value.divide(cuts):
        out.append(escape(piece.plain), style=piece.spans[0].style if piece.spans else None)
    return out


class SafeConsole(Console):
    """A Rich console whose output never holds a control character of the data."""

    def on_broken_pipe(self) -> None:
        """The reader went away (`| head`): let the CLI end quietly with its own exit code
        (Rich would exit 1 here)."""
        self.quiet = True
        raise BrokenPipeError

    def render(self, renderable: Any, options: Any = None) -> Iterator[Segment]:
        inside = self._inside
        if getattr(inside, "on", False):  # a part of a renderable being made safe: once is enough
            yield from super().render(renderable, options)
            return
        inside.on = True
        try:
            segments = safe_segments(super().render(renderable, options))
            yield from (segments if self.is_terminal else _no_trailing_blanks(segments))
        finally:
            inside.on = False

    @cached_property
    def _inside(self) -> threading.local:
        """Set while a renderable is made safe, in this thread: Rich renders a renderable's parts
        through `render` again (a padded group of texts, three levels), and escaping and trimming
        them at every level cost log -p a third of its time."""
        return threading.local()


def _no_trailing_blanks(segments: Iterable[Segment]) -> Iterator[Segment]:
    """Segments with the blanks that pad each line to the width removed (into a pipe or a file,
    where padding is noise to grep and diff)."""
    line: list[Segment] = []

    def flush() -> Iterator[Segment]:
        while line and line[-1].control is None and not line[-1].text.strip(" "):
            line.pop()
        if line and line[-1].control is None:
            line[-1] = Segment(line[-1].text.rstrip(" "), line[-1].style)
        yield from line
        line.clear()

    for seg in segments:
        if not line and seg.control is None and not seg.style and " \n" not in seg.text and "\n" in seg.text:
            # (plain lines, none ending in a blank: `Lines`, a long table's chunk, passed whole)
            head, _, rest = seg.text.rpartition("\n")
            yield Segment(head + "\n")
            if rest:
                line.append(Segment(rest, seg.style))
            continue
        if seg.control is not None or "\n" not in seg.text:
            line.append(seg)
            continue
        pieces = seg.text.split("\n")
        for piece in pieces[:-1]:
            if piece:
                line.append(Segment(piece, seg.style))
            yield from flush()
            yield Segment("\n")
        if pieces[-1]:
            line.append(Segment(pieces[-1], seg.style))
    yield from line
