"""Output for a terminal goes through a pager, as git's does."""

from __future__ import annotations

import os
import sys
from typing import Any

PAGED = frozenset({"threads", "log", "show", "diff", "schema", "graph", "size", "prune", "doctor"})


class Pager:
    width: int | None = None
    """The terminal's width while output goes to a pager (None: no pager)."""


def start_pager(args: list[str]) -> Any:
    """Like git: output for a terminal goes through a pager (`less -FRX` unless $LESS is set:
    one screen prints and exits), named by $STATECTL_PAGER, else $PAGER, else less; '' or `cat`
    turns it off, as does --no-pager. Only the commands that print a report; never when the
    output is not a terminal or asks for help."""
    command = next((a for a in args if not a.startswith("-")), None)
    if command not in PAGED or not sys.stdout.isatty() or {"-h", "--help", "--apply"} & set(args):
        return None  # (`prune --apply` asks on the terminal and shows its progress there)
    import shlex
    import shutil

    spec = os.environ.get("STATECTL_PAGER", os.environ.get("PAGER", "less"))
    try:
        argv = shlex.split(spec)
    except ValueError:
        return None
    if not argv or argv[0] == "cat" or shutil.which(argv[0]) is None:
        return None  # (a pager that is not there must not swallow the output)
    import io
    import subprocess

    env = {**os.environ, "LESS": os.environ.get("LESS", "FRX"), "LV": os.environ.get("LV", "-c")}
    width = shutil.get_terminal_size().columns
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, env=env)
    except OSError:
        return None
    Pager.width = width
    proc.saved_stdout = sys.stdout  # type: ignore[attr-defined]
    sys.stdout = io.TextIOWrapper(proc.stdin, encoding="utf-8", errors="replace")
    return proc


def stop_pager(proc: Any) -> None:
    """Hand the pager the rest of the output and wait until the user quits it."""
    try:
        sys.stdout.close()
    except OSError:  # (the user quit the pager before the end: not an error)
        pass
    sys.stdout = proc.saved_stdout
    Pager.width = None
    while True:
        try:
            proc.wait()
            return
        except KeyboardInterrupt:  # Ctrl+C belongs to the pager while it runs (as in git)
            continue
