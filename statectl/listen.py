"""Serving over the network (`mcp --http`, `tui --web`): a socket bound before anything is
printed (a port in use is one line; port 0 says the one it got), and a token beyond this machine."""

from __future__ import annotations

import socket

from statectl.errors import StatectlError

LOCAL = ("127.0.0.1", "localhost", "::1")
"""Addresses only this machine reaches: served without a token."""


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


def token_for(host: str, token: str | None) -> str | None:
    """The token given; else, bound beyond this machine, one made up; else none."""
    if token is None and host not in LOCAL:
        import secrets

        return secrets.token_urlsafe(24)
    return token


def url_host(host: str) -> str:
    """The host as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host
