"""The writer process's entry: `python -c BOOT STATECTL_DIR copy|repickle|travel` in the project's
interpreter (`statectl.project.launch` starts it); rows, or a request (after a `load`), on stdin."""

from __future__ import annotations

import os
import sys

from statectl.project.writer import copy_rows, repickle_values, say


def main(argv: list[str]) -> None:
    """`python -c BOOT STATECTL_DIR copy` (rows on stdin) or `... travel` (a request on stdin,
    after a `load` of the graph or alone: `statectl.project.langgraph_runs.serve`)."""
    try:
        import langgraph  # noqa: F401
    except ImportError as exc:
        say(
            error=f"{sys.executable} cannot import {exc.name or 'langgraph'}",
            hint="give the interpreter of the project whose LangGraph writes the store (--python)",
        )
        return
    if argv[0] == "copy":
        copy_rows(iter(sys.stdin.readline, ""))
    elif argv[0] == "repickle":
        repickle_values(iter(sys.stdin.readline, ""))
    else:  # (the request on stdin: a Postgres URL's password never stands in the process list)
        from statectl.project.langgraph_runs import serve

        serve(iter(sys.stdin.readline, ""))
    sys.stdout.flush()
    os._exit(0)  # (nothing of the project's may linger: its threads, its atexit hooks)
