"""`statectl mcp`: serve statectl's read-only answers to coding agents (Model Context Protocol)."""

from __future__ import annotations

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
    from statectl.mcp.start import configure, serve

    config = configure(db or [Root.db], allow_any_db, graph, python, not no_redact, max_chars, stdio=not http)
    serve(config, tool_timeout, http, host, port, token)
