"""`statectl tui --web`: the same TUI in a browser, served by textual-serve.

Each browser tab runs its own `statectl tui` (the command line given, without --web) under
Textual's web driver. Bound beyond this machine, every request must carry the token: the printed
URL has it, and the page keeps it in a same-site cookie for its websocket.
"""

from __future__ import annotations

import logging
import secrets
import shlex
import socket
import sys
from typing import Any

from textual_serve.server import Server

from statectl.listen import LOCAL, bind, token_for, url_host

COOKIE = "statectl_token"


class WebServer(Server):
    """textual-serve's server, on a socket bound beforehand (a port in use is one line, and port 0
    says the one it got), with a token where one is set, and URLs from the Host the browser used."""

    def __init__(self, command: str, sock: socket.socket, token: str | None) -> None:
        host, port = sock.getsockname()[:2]
        super().__init__(command, host=host, port=port, title="statectl")
        self.sock = sock
        self.token = token

    def initialize_logging(self) -> None:  # (no request log: URLs can hold the token)
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)

    async def _make_app(self) -> Any:
        from aiohttp import web

        app = await super()._make_app()
        if self.token is None:
            return app
        token = self.token

        @web.middleware
        async def guard(request: web.Request, handler: Any) -> Any:
            given = request.query.get("token") or request.cookies.get(COOKIE) or ""
            if not secrets.compare_digest(given.encode(), token.encode()):
                return web.Response(status=401, text="statectl tui --web: open the URL printed, with its token\n")
            response = await handler(request)
            if request.query.get("token") and not response.prepared:
                response.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
            return response

        app.middlewares.append(guard)
        return app

    async def handle_index(self, request: Any) -> Any:
        self.public_url = f"{request.scheme}://{request.host}"  # (the address the browser reached)
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
    token = token_for(host, token)
    sock = bind(host, port)
    command = shlex.join([sys.executable, "-m", "statectl", *argv])
    server = WebServer(command, sock, token)
    shown = socket.gethostname() if host in ("0.0.0.0", "::") else url_host(host)
    url = f"http://{shown}:{server.port}/" + (f"?token={token}" if token else "")
    say(f"statectl tui --web: open {url}  (Ctrl+C stops)")
    if host not in LOCAL:
        say(f"statectl tui --web: warning: bound to {host}: anyone with the URL and its token reads these threads")
    server.serve()
