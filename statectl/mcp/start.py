"""`statectl mcp` started (`start`): what it was asked (`Serving`, which the command,
cli/mcp.py, only parses), its stores checked and its configuration made (`configure`), then
served over stdio or streamable HTTP (`serve`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from statectl.errors import StatectlError, install_hint

if TYPE_CHECKING:
    from statectl.mcp.tools import Config

HOST, PORT = "127.0.0.1", 8765
"""Where `--http` listens unless told: this machine only."""
MAX_CHARS = 20_000
"""Characters a tool result holds, unless told (more: a cursor to page on)."""
TOOL_TIMEOUT = 120.0
"""Seconds one tool call may take, unless told."""


@dataclass(frozen=True)
class Serving:
    """What `statectl mcp` was asked: the stores, the transport, the app's graph, the answers."""

    dbs: Sequence[str | None]
    """The stores the tools may read, the first the default (None: found as every command finds one)."""
    allow_any_db: bool = False
    """A tool may name any path or URL as its db, not only `dbs`."""
    http: bool = False
    """Streamable HTTP on `host`:`port` (bearer `token`); else stdio."""
    host: str = HOST
    port: int = PORT
    token: str | None = None
    graph: str | None = None
    """The app's graph (file.py:graph or module:graph), loaded once, with `python`."""
    python: str | None = None
    redact: bool = True
    max_chars: int = MAX_CHARS
    tool_timeout: float = TOOL_TIMEOUT


def start(asked: Serving) -> None:
    """Serve what `asked` says until stopped; one line (`StatectlError`) for a missing MCP SDK,
    transport options without --http, or a store that does not open."""
    try:
        import mcp as _  # noqa: F401
    except ImportError:
        raise StatectlError("statectl mcp needs the MCP SDK", install_hint("mcp")) from None
    if not asked.http and (asked.host != HOST or asked.token is not None or asked.port != PORT):
        raise StatectlError("--host, --port and --token go with --http")
    config = configure(
        asked.dbs, asked.allow_any_db, asked.graph, asked.python, asked.redact, asked.max_chars, stdio=not asked.http
    )
    serve(config, asked.tool_timeout, asked.http, asked.host, asked.port, asked.token)


def configure(
    dbs: Sequence[str | None],
    allow_any_db: bool,
    graph: str | None,
    python: str | None,
    redact: bool,
    max_chars: int,
    stdio: bool,
) -> Config:
    """The server's settings: each store of `dbs` resolved and opened once (a wrong store is one
    line now, not a failed tool call later), the app's `graph` loaded (its prints kept off stdout
    when it carries the protocol, `stdio`), and the redaction rules unless not `redact`."""
    from statectl import secrets as secret_text
    from statectl.mcp.tools import Config
    from statectl.sources import open_source, resolve_db

    specs = [resolve_db(d) for d in dbs]
    for spec in specs:
        open_source(spec).close()
    spec_graph = None
    if graph is not None:
        from statectl.project.introspect import graph_spec

        with _stdout_to_stderr(stdio):  # (the app's prints are not the protocol's)
            spec_graph = graph_spec(graph, python)
    redactor = None
    if redact:
        from statectl.core.redact import Redactor

        redactor = Redactor()
    return Config(
        dbs=specs,
        labels=[secret_text.redact(s) for s in specs],
        allow_any_db=allow_any_db,
        graph=spec_graph,
        target=graph,
        python=python,
        redactor=redactor,
        limit=max_chars,
    )


def serve(config: Config, timeout: float, http: bool, host: str, port: int, token: str | None) -> None:
    """Serve `config`'s tools, each call at most `timeout` seconds: over stdio, or with `http` over
    streamable HTTP on `host`:`port` (bearer `token`, else $STATECTL_MCP_TOKEN, made up beyond
    this machine)."""
    from statectl.mcp.server import build

    server = build(config, timeout)
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
    _said(f"statectl mcp: serving http://{url_host(host)}:{port}/mcp")
    if token is not None:
        _said(f"statectl mcp: clients send the header  Authorization: Bearer {token}")
    if host not in LOCAL:
        _said(f"statectl mcp: warning: bound to {host}: anyone who reaches it with the token reads these stores")
    sys.stderr.flush()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


def _said(line: str) -> None:
    """One line on stderr, at once (what the server says to whoever started it)."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
