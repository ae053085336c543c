"""`statectl tui`: step through a thread in a terminal app."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from statectl.cli.options import (
    Db,
    Graph,
    Ns,
    Python,
    open_store,
    source_spec,
)
from statectl.cli.typer_compat import Exit


def tui(
    thread_id: Annotated[
        str | None, typer.Argument(help="Open at this thread (default: the threads screen).", show_default=False)
    ] = None,
    db: Db = None,
    ns: Ns = "",
    poll: Annotated[
        float, typer.Option("--poll", help="Seconds between checks for new checkpoints (0: off).", min=0)
    ] = 1.0,
    graph: Graph = None,
    python: Python = None,
) -> None:
    """Step through a thread's history in a terminal app.

    ? shows the keys; q quits."""
    store = open_store(db, graph, python)
    store.on_graph_note = None  # (the app says them)
    try:
        if thread_id is not None:
            thread_id = store.view(thread_id, ns).thread_id  # a wrong thread: one line, not an empty app
        import asyncio

        from statectl.tui import make_app

        app = make_app(store, thread_id, ns, poll, python=python, db_spec=source_spec(db))
        loop = asyncio.new_event_loop()  # (asyncio.run would join a read still running)
        app.run(loop=loop)
        if app.busy_reading():
            # q / Ctrl+C while a read still runs (a slow server, a locked table): quit now rather
            # than wait for it; the read holds nothing that must be written back
            store.abandon()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(app.return_code or 0)
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
    finally:
        store.close()
    if app.return_code:  # the app stopped on an error it has printed in one line
        raise Exit(app.return_code)
