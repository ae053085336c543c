"""Rich renderables for every view; the CLI prints them, the TUI embeds them."""

from statectl.core.text import FOLD, fold

__all__ = ["FOLD", "Limits", "fold"]


class Limits:
    """How much of a long value the human views show. A state can hold a 900 MB text or 50,000
    messages: by default a text shows its first `text` characters and a list its first `items`
    items (a transcript its last: the newest messages matter most), with a line saying what was
    left out; `show --full` (and `F` in the TUI) shows everything. `--json` is never cut."""

    text = FOLD
    """Characters of a text value (a message: `message`)."""
    message = 1200
    items = 200
    """Items of a list, messages of a transcript or of a step's diff."""
    full = False
    hint = "--full"
    """What shows them whole, in the line that says what was left out (the TUI: its key)."""
    cut = 0
    """How many values the views shortened (the CLI then says how to see them whole)."""

    @classmethod
    def set_full(cls, full: bool) -> None:
        cls.full = full

    @classmethod
    def shorten(cls, text: str, limit: int, count: bool = True) -> str:
        """`fold` that `--full` turns off, counting what it cut (not where `count` is False: a
        caller trying a layout it may not print)."""
        if cls.full or len(text) <= limit:
            return text
        cls.cut += count
        return fold(text, limit)

    @classmethod
    def window(cls, count: int) -> int | None:
        """How many of `count` items to show (None: all), counting a cut."""
        if cls.full or count <= cls.items:
            return None
        cls.cut += 1
        return cls.items
