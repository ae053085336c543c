"""A witness for tests/test_offline.py, on the writer's path: with $STATECTL_TEST_NETLOG set, every
network call the Python socket module makes (audit events) is written to that file before it
happens, so a test sees any connection the process attempted, whoever patched what."""

import os
import sys

_LOG = os.environ.get("STATECTL_TEST_NETLOG")
_EVENTS = ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr")

if _LOG:

    def _hook(event: str, args: tuple) -> None:
        if event in _EVENTS:
            if event == "socket.connect" and getattr(args[0], "family", None) == getattr(
                __import__("socket"), "AF_UNIX", -1
            ):
                return
            with open(_LOG, "a", encoding="utf-8") as out:
                out.write(f"{event} {args[1:]!r}\n")

    sys.addaudithook(_hook)
