"""What a pipe gets, made without Rich's layout: into a pipe or a file nothing is wrapped, cut or
coloured, so a text, a group of them and a left indent are their plain lines. Rich lays out each
line of a long `log -p` at ~40 us; this joins strings. Anything else (a table, a tab, a
right-justified text) is left to Rich: `plain_text` says None. (Rich also crops a padded line
at the pipe's width, 65,536 cells: a word diff of a long text was cut there; here it is whole.)
The console still escapes and trims what is printed (render.safe), as everything it prints."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.padding import Padding
from rich.segment import Segment
from rich.text import Text


class Lines:
    """Lines of plain text, printed as they are: one segment, no layout."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Segment(self.text + "\n")


def plain_text(renderables: Iterable[Any]) -> str | None:
    """The lines Rich prints of `renderables` one after another into a pipe (soft-wrapped, at
    its natural width), or None where one of them is not a kind this knows."""
    out: list[str] = []
    for r in renderables:
        if not _add(r, "", out):
            return None
    return "\n".join(out)


def _add(r: Any, indent: str, out: list[str]) -> bool:
    t = type(r)
    if t is Text:
        text = r.plain
        if "\t" in text or r.end != "\n" or r.justify not in (None, "default", "left") or text.endswith("\n"):
            return False
        out.extend(indent + line for line in text.split("\n"))
        return True
    if t is Group:
        return all(_add(part, indent, out) for part in r.renderables)
    if t is Padding and not r.expand and r.top == r.right == r.bottom == 0:
        return _add(r.renderable, indent + " " * r.left, out)
    return False
