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
from statectl.errors import StatectlError


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
    web: Annotated[
        bool, typer.Option("--web", help="Serve the TUI to a browser (textual-serve); prints the URL.")
    ] = False,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="With --web: the address to bind. Requests must name it (or localhost) as their Host, "
            "except beyond this machine (0.0.0.0), where the token lets any Host in.",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="With --web: the port (0: any free one).", min=0, max=65535)
    ] = 8000,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="With --web: the token every request must carry (default: $STATECTL_WEB_TOKEN, else made up; "
            "the printed URL has it, the page keeps it in a cookie).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Step through a thread's history in a terminal app.

    ? shows the keys; q quits. --web serves the same app to a browser."""
    if web:
        return _web(thread_id, db, ns, graph, python, host, port, token)
    if host != "127.0.0.1" or port != 8000 or token is not None:
        raise StatectlError("--host, --port and --token go with --web")
    store = open_store(db, graph, python)
    store.on_graph_note = None  # (the app says them)
    try:
        if thread_id is not None:
            thread_id = store.view(thread_id, ns).thread_id  # a wrong thread: one line, not an empty app
        from statectl.tui.early import PAGE, first_page

        # the threads screen's first page is read while Textual is imported and starts
        early = first_page(store, PAGE) if thread_id is None else None
        import asyncio

        from statectl.tui import make_app

        app = make_app(store, thread_id, ns, poll, python=python, db_spec=source_spec(db), early=early)
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


WEB_ONLY = {"--web": False, "--host": True, "--port": True, "--token": True}
"""The options of the serving process, left out of the command each browser tab runs (and
whether they take a value)."""


def _web(
    thread_id: str | None,
    db: str | None,
    ns: str,
    graph: str | None,
    python: str | None,
    host: str,
    port: int,
    token: str | None,
) -> None:
    """Check what the TUI would open (one line now, not a broken page later), then serve it."""
    from statectl.errors import install_hint

    try:
        from statectl.tui.web import serve
    except ImportError:
        raise StatectlError(
            "statectl tui --web needs textual-serve",
            install_hint("web"),
        ) from None
    with open_store(db, graph, python) as store:
        if thread_id is not None:
            store.view(thread_id, ns)
    argv, skip = [], False
    for arg in sys.argv[1:]:
        name = arg.split("=", 1)[0]
        if skip:
            skip = False
        elif name in WEB_ONLY:
            skip = WEB_ONLY[name] and "=" not in arg
        else:
            argv.append(arg)
    serve(
        argv, host, port, token or os.environ.get("STATECTL_WEB_TOKEN") or None, lambda line: typer.echo(line, err=True)
    )
