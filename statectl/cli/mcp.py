"""`statectl mcp`: serve statectl's read-only answers to coding agents (Model Context Protocol)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

from statectl.cli.options import Python, Root
from statectl.errors import StatectlError, install_hint


def mcp(
    db: Annotated[
        list[str] | None,
        typer.Option(
            "--db",
            help="A store the tools may read (several allowed; the first is the default). Default: "
            "as every command finds one ($STATECTL_DB, $DATABASE_URI, ./checkpoints.sqlite, ...).",
            show_default=False,
        ),
    ] = None,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP (default: stdio, as a coding agent starts it).")
    ] = False,
    host: Annotated[
        str, typer.Option("--host", help="With --http: the address to bind (beyond this machine: a token is needed).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="With --http: the port.", min=0, max=65535)] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="With --http: the bearer token clients must send (default: $STATECTL_MCP_TOKEN; made up "
            "and printed when bound beyond 127.0.0.1).",
            show_default=False,
        ),
    ] = None,
    allow_any_db: Annotated[
        bool,
        typer.Option("--allow-any-db", help="Let a tool name any path or URL as its db (default: only --db's)."),
    ] = False,
    graph: Annotated[
        str | None,
        typer.Option(
            "--graph",
            help="The app's graph (file.py:graph or module:graph), loaded once at start: exact state, "
            "the app's own Mermaid, the schema check.",
            show_default=False,
        ),
    ] = None,
    python: Python = None,
    no_redact: Annotated[
        bool,
        typer.Option(
            "--no-redact", help="Show API keys, tokens and e-mail addresses (default: [REDACTED], as --redact)."
        ),
    ] = False,
    max_chars: Annotated[
        int, typer.Option("--max-chars", help="Characters per tool result (more: a cursor to page on).", min=2000)
    ] = 20_000,
    tool_timeout: Annotated[
        float, typer.Option("--tool-timeout", help="Seconds one tool call may take.", min=1)
    ] = 120.0,
) -> None:
    """Serve the read-only answers to coding agents (MCP).

    Over stdio by default (as a coding agent starts it), or streamable HTTP with --http.

    Tools: list_sources, list_threads, thread_log, show_state, diff, graph, size, prune_plan,
    schema. Results are JSON, at most --max-chars characters each, with a cursor to page on;
    secrets are redacted; nothing is ever written. Claude Code: `claude mcp add statectl --
    statectl mcp --db checkpoints.sqlite`."""
    try:
        import mcp as _  # noqa: F401
    except ImportError:
        raise StatectlError("statectl mcp needs the MCP SDK", install_hint("mcp")) from None
    if not http and (host != "127.0.0.1" or token is not None or port != 8765):
        raise StatectlError("--host, --port and --token go with --http")
    from statectl import secrets as secret_text
    from statectl.mcp.tools import Config
    from statectl.sources import resolve_db

    specs = [resolve_db(d) for d in db] if db else [resolve_db(Root.db)]
    for spec in specs:  # a wrong store is one line now, not a failed tool call later
        from statectl.sources import open_source

        open_source(spec).close()
    spec_graph = None
    if graph is not None:
        from statectl.project.introspect import graph_spec

        with _stdout_to_stderr(not http):  # (the app's prints are not the protocol's)
            spec_graph = graph_spec(graph, python)
    redactor = None
    if not no_redact:
        from statectl.core.redact import Redactor

        redactor = Redactor()
    config = Config(
        dbs=specs,
        labels=[secret_text.redact(s) for s in specs],
        allow_any_db=allow_any_db,
        graph=spec_graph,
        target=graph,
        python=python,
        redactor=redactor,
        limit=max_chars,
    )
    from statectl.mcp.server import build

    server = build(config, tool_timeout)
    if not http:
        server.run("stdio")
        return
    from statectl.listen import token_for

    _serve_http(server, host, port, token_for(host, token or os.environ.get("STATECTL_MCP_TOKEN") or None))


@contextmanager
def _stdout_to_stderr(on: bool) -> Iterator[None]:
    """While the app's module loads (it may print, at import or in its factory): its output, through
    `print` or fd 1 (os.write, a C library, a child process), goes to stderr, and stdout, which
    carries the JSON-RPC stream over stdio, gets none of it. While serving, the SDK keeps fd 1 for
    itself the same way (a tool that loads the app again prints to stderr too)."""
    if not on:
        yield
        return
    sys.stdout.flush()
    try:
        kept = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # (no fd 1 or 2: nothing to keep apart)
        yield
        return
    shown = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stderr.flush()
        sys.stdout = shown
        os.dup2(kept, 1)
        os.close(kept)


def _serve_http(server: object, host: str, port: int, token: str | None) -> None:
    import uvicorn

    from statectl.listen import LOCAL, bind, url_host
    from statectl.mcp.server import http_app

    sock = bind(host, port)  # (before the URL is printed: a client may come at once)
    port = sock.getsockname()[1]
    app = http_app(server, host, port, token)  # type: ignore[arg-type]
    typer.echo(f"statectl mcp: serving http://{url_host(host)}:{port}/mcp", err=True)
    if token is not None:
        typer.echo(f"statectl mcp: clients send the header  Authorization: Bearer {token}", err=True)
    if host not in LOCAL:
        typer.echo(
            f"statectl mcp: warning: bound to {host}: anyone who reaches it with the token reads these stores",
            err=True,
        )
    sys.stderr.flush()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
