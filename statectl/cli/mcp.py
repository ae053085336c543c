"""`statectl mcp`: serve statectl's read-only answers to coding agents (Model Context Protocol).

The command parses its options into `statectl.mcp.start.Serving` and calls `start`; its options
are declared here, each once, grouped as `--help` lists them: the stores, the transport, the
app's graph, the answers."""

from __future__ import annotations

from typing import Annotated

import typer

from statectl.cli.options import Python, Root
from statectl.mcp.start import HOST, MAX_CHARS, PORT, TOOL_TIMEOUT

# -- the stores -----------------------------------------------------------------------------------
Dbs = Annotated[
    list[str] | None,
    typer.Option(
        "--db",
        help="A store the tools may read (several allowed; the first is the default). Default: "
        "as every command finds one ($STATECTL_DB, $DATABASE_URI, ./checkpoints.sqlite, ...).",
        show_default=False,
    ),
]
AllowAnyDb = Annotated[
    bool,
    typer.Option("--allow-any-db", help="Let a tool name any path or URL as its db (default: only --db's)."),
]
# -- the transport --------------------------------------------------------------------------------
Http = Annotated[
    bool, typer.Option("--http", help="Serve streamable HTTP (default: stdio, as a coding agent starts it).")
]
Host = Annotated[
    str, typer.Option("--host", help="With --http: the address to bind (beyond this machine: a token is needed).")
]
Port = Annotated[int, typer.Option("--port", help="With --http: the port.", min=0, max=65535)]
Token = Annotated[
    str | None,
    typer.Option(
        "--token",
        help="With --http: the bearer token clients must send (default: $STATECTL_MCP_TOKEN; made up "
        "and printed when bound beyond 127.0.0.1).",
        show_default=False,
    ),
]
# -- the app's graph ------------------------------------------------------------------------------
Graph = Annotated[
    str | None,
    typer.Option(
        "--graph",
        help="The app's graph (file.py:graph or module:graph), loaded once at start: exact state, "
        "the app's own Mermaid, the schema check.",
        show_default=False,
    ),
]
# -- the answers ----------------------------------------------------------------------------------
NoRedact = Annotated[
    bool,
    typer.Option("--no-redact", help="Show API keys, tokens and e-mail addresses (default: [REDACTED], as --redact)."),
]
MaxChars = Annotated[
    int, typer.Option("--max-chars", help="Characters per tool result (more: a cursor to page on).", min=2000)
]
ToolTimeout = Annotated[float, typer.Option("--tool-timeout", help="Seconds one tool call may take.", min=1)]


def mcp(
    db: Dbs = None,
    http: Http = False,
    host: Host = HOST,
    port: Port = PORT,
    token: Token = None,
    allow_any_db: AllowAnyDb = False,
    graph: Graph = None,
    python: Python = None,
    no_redact: NoRedact = False,
    max_chars: MaxChars = MAX_CHARS,
    tool_timeout: ToolTimeout = TOOL_TIMEOUT,
) -> None:
    """Serve the read-only answers to coding agents (MCP).

    Over stdio by default (as a coding agent starts it), or streamable HTTP with --http.

    Tools: list_sources, list_threads, thread_log, show_state, diff, graph, size, prune_plan,
    schema. Results are JSON, at most --max-chars characters each, with a cursor to page on;
    secrets are redacted; nothing is ever written. Claude Code: `claude mcp add statectl --
    statectl mcp --db checkpoints.sqlite`."""
    from statectl.mcp.start import Serving, start

    start(
        Serving(
            dbs=db or [Root.db],
            http=http,
            host=host,
            port=port,
            token=token,
            allow_any_db=allow_any_db,
            graph=graph,
            python=python,
            redact=not no_redact,
            max_chars=max_chars,
            tool_timeout=tool_timeout,
        )
    )
