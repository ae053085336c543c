"""Serving over the network (`mcp --http`, `tui --web`): a socket bound before anything is
printed (a port in use is one line; port 0 says the one it got), a token beyond this machine, and
one guard on every request of both servers: the Host a browser names and the Origin it sends must
be the server's own (a web page the user visits cannot read it, even by rebinding its DNS name to
127.0.0.1), and the token, where there is one, must come with it."""

from __future__ import annotations

import re
import secrets
import socket
from collections.abc import Sequence
from dataclasses import dataclass

from statectl.errors import StatectlError

LOCAL = ("127.0.0.1", "localhost", "::1")
"""Addresses only this machine reaches: served without a token unless the server wants one."""

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
"""The Host names (without the port) a browser on this machine uses to reach a loopback server."""

_HOST = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9_](?:[a-z0-9_.-]{0,251}[a-z0-9_])?)(?::([0-9]{1,5}))?")
_TOKEN = re.compile(r"[!-~]{1,512}")  # printable ASCII, no space: a URL's query and a header carry it


def bind(host: str, port: int) -> socket.socket:
    """A listening socket: a client that comes before the server is up waits in the backlog."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(100)
    except (OSError, OverflowError) as exc:
        sock.close()
        raise StatectlError(f"cannot serve on {host}:{port}: {getattr(exc, 'strerror', None) or exc}") from None
    sock.setblocking(False)
    return sock


def token_for(host: str, token: str | None, always: bool = False) -> str | None:
    """The token given (printable ASCII, no space); else, bound beyond this machine or `always`,
    one made up; else none."""
    if token is not None and not _TOKEN.fullmatch(token):
        raise StatectlError("--token: printable ASCII without spaces (at most 512 characters)")
    if token is None and (always or host not in LOCAL):
        return secrets.token_urlsafe(24)
    return token


def url_host(host: str) -> str:
    """The host as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


def _host_port(value: str, default: int) -> tuple[str, int] | None:
    """`name[:port]` of a Host header (lowercase, the port said or `default`); None when it is
    not one (a path, a user, a space, a control character)."""
    m = _HOST.fullmatch(value.lower())
    if m is None:
        return None
    port = int(m.group(2)) if m.group(2) is not None else default
    return (m.group(1), port) if port <= 65535 else None


@dataclass(frozen=True)
class Guard:
    """Who a local server answers (`refusal`), the same for `tui --web` and `mcp --http`.

    - Host: a loopback name (localhost, 127.0.0.1, [::1]), the bound address or the name the URL
      printed, with the server's port. A web page whose DNS name was rebound to 127.0.0.1 sends
      its own name, and is refused (403) even with the token: the token may be in the page's URL.
      Bound beyond this machine (0.0.0.0, a LAN address), the name a user types is not known in
      advance (a DNS name, an address behind a NAT): there the token (always set then) is what
      lets any well-formed Host in.
    - Origin, when sent (a browser sends it on every WebSocket upgrade and cross-origin request):
      `http://` and the Host of the request, port included, else 403; `null` is refused. None is
      fine: the address bar's GET and a client that is not a browser send none.
    - The token, where there is one: 401 without it.
    """

    host: str
    """The bound address."""
    port: int
    """The port bound."""
    token: str | None
    """What every request must carry (as the server takes it: query, cookie or bearer header)."""
    shown: str = ""
    """The name the printed URL used, also accepted."""

    def names(self) -> frozenset[str]:
        """The Host names accepted without the token's say."""
        return frozenset({*LOOPBACK_NAMES, url_host(self.host).lower(), url_host(self.shown).lower()} - {"", "[]"})

    def refusal(self, hosts: Sequence[str], origins: Sequence[str], given: str | None) -> tuple[int, str] | None:
        """None when a request with these Host and Origin headers (each as many times as sent)
        and this token (None: none) is answered; else the HTTP status and the one line to say."""
        token_ok = self.token is None or (
            given is not None and secrets.compare_digest(given.encode("utf-8", "replace"), self.token.encode())
        )
        if len(hosts) != 1 or (named := _host_port(hosts[0], 80)) is None:
            return 403, "a request must name this server in one Host header"
        beyond = self.host not in LOCAL and self.token is not None and token_ok
        if not beyond and (named[1] != self.port or named[0] not in self.names()):
            return 403, "this server answers requests for itself only (Host names another site)"
        if len(origins) > 1:
            return 403, "one Origin header at most"
        if origins:
            scheme, _, rest = origins[0].partition("://")
            if scheme.lower() != "http" or _host_port(rest, 80) != named:
                return 403, "this server answers its own pages only (Origin names another site)"
        if not token_ok:
            return 401, "the token is missing or wrong (the one printed when the server started)"
        return None
