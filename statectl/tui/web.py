"""`statectl tui --web`: the same TUI in a browser, served by textual-serve.

Each browser tab runs its own `statectl tui` (the command line given, without --web) under
Textual's web driver. Every request must carry the token, as Jupyter's do: the printed URL has it,
and the page keeps it in a same-site, HttpOnly cookie for its websocket. Every request and upgrade
must also name this server in its Host and, when it sends one, its Origin (`statectl.listen.Guard`):
another site's page, or one whose DNS name was rebound to 127.0.0.1, is refused.
"""

from __future__ import annotations

import logging
import shlex
import socket
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from textual_serve.server import Server

from statectl.listen import LOCAL, Guard, bind, token_for, url_host

PAGE = Path(__file__).resolve().parent / "webpage"
"""statectl's page for textual-serve (its template without the web font it loaded from the
internet) and the glyphs Roboto Mono lacks (statectl-symbols.ttf, a subset of Noto Sans Symbols 2)."""


class WebServer(Server):
    """textual-serve's server, on a socket bound beforehand (a port in use is one line, and port 0
    says the one it got), behind the guard, and with URLs from the Host the browser used."""

    def __init__(self, command: str, sock: socket.socket, token: str, shown: str = "") -> None:
        host, port = sock.getsockname()[:2]
        # (statectl's page: textual-serve's, with every font served from here, none from the web)
        super().__init__(command, host=host, port=port, title="statectl", templates_path=PAGE)
        self.sock = sock
        self.token = token
        self.guard = Guard(host, port, token, shown)
        self.cookie = f"statectl_token_{port}"  # (a cookie is per host, not per port: one per server)

    def initialize_logging(self) -> None:  # (no request log: URLs can hold the token)
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)

    async def _make_app(self) -> Any:
        from aiohttp import web

        app = await super()._make_app()
        app.router.add_static("/statectl-web", PAGE, name="statectl-web")  # (the symbols font; guarded)

        @web.middleware
        async def guard(request: web.Request, handler: Any) -> Any:
            query = request.query.get("token")
            refused = self.guard.refusal(
                request.headers.getall("Host", []),
                request.headers.getall("Origin", []),
                query or request.cookies.get(self.cookie),
            )
            if refused is None and not request.raw_path.startswith("/"):  # (absolute form: names a host itself)
                refused = (403, "a request names its path only, not a site (http://host/...)")
            if refused is not None:
                return web.Response(status=refused[0], text=f"statectl tui --web: {refused[1]}\n")
            response = await handler(request)
            if query and not response.prepared:
                response.set_cookie(self.cookie, self.token, httponly=True, samesite="Strict")
            return response

        app.middlewares.append(guard)
        return app

    async def on_startup(self, app: Any) -> None:
        """Nothing printed: textual-serve's banner gives the URL without its token (a 401);
        `serve` has said the URL to open."""

    async def handle_index(self, request: Any) -> Any:
        # (the address the browser reached: its Host header, which the guard checked)
        self.public_url = f"{request.scheme}://{request.headers.get('Host', request.host)}"
        return await super().handle_index(request)

    def serve(self, debug: bool = False) -> None:
        import asyncio
        import signal

        from aiohttp import web

        self.initialize_logging()
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.request_exit)
        web.run_app(self._make_app(), sock=self.sock, handle_signals=False, loop=loop, print=lambda *a: None)


def serve(argv: list[str], host: str, port: int, token: str | None, say: Any) -> None:
    """Serve `statectl ARGV...` (a `tui` command line) at host:port until Ctrl+C; `say` prints a
    line for the user."""
    token = token_for(host, token, always=True)
    assert token is not None
    sock = bind(host, port)
    command = shlex.join([sys.executable, "-m", "statectl", *argv])
    shown = socket.gethostname() if host in ("0.0.0.0", "::") else url_host(host)
    server = WebServer(command, sock, token, shown)
    url = f"http://{shown}:{server.port}/?token={quote(token, safe='')}"
    say(f"statectl tui --web: open {url}  (Ctrl+C stops)")
    if host not in LOCAL:
        say(f"statectl tui --web: warning: bound to {host}: anyone with the URL and its token reads these threads")
    server.serve()
