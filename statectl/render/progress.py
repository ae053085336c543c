"""A progress bar for long work (on stderr, only on a terminal): count, rate and time left."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn


@contextmanager
def progress_bar(what: str, total: int) -> Iterator[Callable[[], None]]:
    """A bar of `total` steps on stderr, gone when done; yields the function that moves it one
    step. Ctrl+C stops it cleanly (the bar is removed, the interrupt goes on)."""
    bar = Progress(
        TextColumn(f"{what}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    with bar:
        task = bar.add_task(what, total=total)
        yield lambda: bar.advance(task)
