"""How commands print: one safe console, JSON lines, the notes under a report, error lines."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from statectl.cli.pager import Pager

if TYPE_CHECKING:
    from statectl.store import Store


def make_console() -> Any:
    from statectl.render.safe import SafeConsole

    # Data is never markup: a thread id or state key with "[/x]" or ":smile:" prints as written;
    # nor are its control characters sent to the terminal (shown as \x1b: render/safe.py).
    if Pager.width is not None:  # a pager shows colour and the terminal's width
        return SafeConsole(soft_wrap=False, markup=False, emoji=False, force_terminal=True, width=Pager.width)
    console = SafeConsole(soft_wrap=False, markup=False, emoji=False)
    from statectl.render.columns import PIPE_WIDTH, natural_width

    if natural_width(console):  # a pipe or a file: no line is wrapped or cut at 80 columns
        console.width = PIPE_WIDTH
    return console


def plain_pipe() -> bool:
    """Whether output goes to a pipe or a file that `render.pipe` writes without Rich: what a
    console makes there (`natural_width`, no pager), with none of the variables that make Rich
    treat it as a terminal (FORCE_COLOR, TTY_COMPATIBLE: such output is left to Rich)."""
    env = os.environ
    if Pager.width is not None or {"COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE"} & env.keys():
        return False
    isatty = getattr(sys.stdout, "isatty", None)
    return isatty is not None and not isatty()


def write_plain(text: str) -> None:
    """Lines made by `render.pipe` (escaped, trimmed), written as they are."""
    sys.stdout.write(text)
    sys.stdout.flush()


def emit(renderable: Any, lines: bool = False) -> None:
    """Print for the terminal, or into a pipe at natural width; `lines`: a report of lines (a
    diff) that a pipe gets unwrapped, one line per line, for grep."""
    from statectl.render.columns import PlainTable, Stacked, natural_width
    from statectl.render.plain import Lines, plain_text

    console = make_console()
    if natural_width(console) and (text := plain_text([renderable])) is not None:
        console.print(Lines(text), crop=False)  # (into a pipe: the same lines, without Rich's layout)
        return
    # (a streamed table: each chunk of rows printed on its own, never all laid out at once)
    for part in renderable.stream(console) if isinstance(renderable, PlainTable | Stacked) else [renderable]:
        console.print(
            part,
            crop=console.is_terminal,  # piped tables keep their natural width
            soft_wrap=lines and not console.is_terminal,
        )


def json_bytes(value: Any) -> bytes:
    from statectl.codec import jsonout

    return jsonout.json_bytes(value)


class Partial:
    """A streamed output (written as it is read: `threads --json`, `prune --json`, `log -p`,
    `export` to stdout): where an error stops it part-way (a query past --timeout, a lock, a
    row that does not decode), its one line says the output above is partial and how much of
    it there is, never a cut left silent. `wrote()` counts what was written."""

    def __init__(self, what: str) -> None:
        self.what, self.count = what, 0

    def wrote(self, n: int = 1) -> None:
        self.count += n

    def __enter__(self) -> Partial:
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        from statectl.errors import StatectlError

        if isinstance(exc, StatectlError):
            done = f"after {self.count:,} {self.what}" if self.count else "part-way"
            exc.message = f"{exc.message}; the output stopped {done}: what is above is partial"


def emit_json(value: Any) -> None:
    sys.stdout.buffer.write(json_bytes(value) + b"\n")


def print_notes(store: Store, extra: Sequence[str] = ()) -> None:
    """What the data cannot say, under the human output (dim, one line each)."""
    from statectl.render import Limits

    cut = (
        [
            f"{Limits.cut} long value{'s were' if Limits.cut > 1 else ' was'} shortened: --full shows "
            f"{'them' if Limits.cut > 1 else 'it'} whole, --json exactly"
        ]
        if Limits.cut
        else []
    )
    notes = [*store.notes, *extra, *cut]
    if not notes:
        return
    if plain_pipe():
        from statectl.render.pipe import shown

        text = "".join(line.rstrip(" ") + "\n" for note in notes for line in f"note: {shown(note)}".split("\n"))
        if "\t" not in text:
            write_plain(text)
            return
    from rich.text import Text

    for note in notes:
        make_console().print(Text(f"note: {note}", style="dim"), soft_wrap=True)


def set_full(full: bool) -> None:
    if full:
        from statectl.render import Limits

        Limits.set_full(True)


def error_text(text: str) -> str:
    """An error line: no secret of the source in it, its control characters shown escaped."""
    from statectl.escape import escape
    from statectl.secrets import scrub

    return escape(scrub(text))
