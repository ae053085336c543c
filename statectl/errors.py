"""The one error type statectl raises; the CLI turns it into one line on stderr."""

from __future__ import annotations


class StatectlError(Exception):
    """An error a user can act on: `message` says what is wrong, `hint` what to do. Itself: a
    usage error (an invalid option value, a missing argument), exit 2 as Typer's own; exit 1 is
    kept for `diff --exit-code` finding changes."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class SourceError(StatectlError):
    """The database cannot be opened or is not a LangGraph checkpoint store."""

    exit_code = 2


class OnlyMemoryStore(SourceError):
    """A database holding LangGraph's long-term memory store (SqliteStore, PostgresStore) and no
    checkpoints: `statectl store` reads it; `size` and `doctor` check the store alone."""


class NotFoundError(StatectlError):
    """A thread, namespace or checkpoint that the database does not hold."""

    exit_code = 3


class ThreadNotFound(NotFoundError):
    """No thread has this exact id (`Store.thread_id` then tries it as a prefix)."""


class DecodeError(StatectlError):
    """A stored value that cannot be decoded (corrupt bytes)."""

    exit_code = 4

    @classmethod
    def corrupt(cls, thread_id: str, checkpoint_id: str, why: str) -> DecodeError:
        """The one line for a checkpoint whose stored value cannot be read."""
        return cls(f"checkpoint {checkpoint_id} of thread {thread_id!r} is corrupt: {why}")


def install_hint(extra: str) -> str:
    """The line that adds `extra` ("mcp", "postgres", ...) to statectl as it was installed: statectl
    is not on PyPI, so from the folder it was installed from, with pipx, `uv tool` or pip."""
    import json
    import re
    import sys
    from importlib import metadata

    where, packages = "./statectl", []
    try:
        dist = metadata.distribution("statectl")
        url = json.loads(dist.read_text("direct_url.json") or "{}").get("url", "")
        if url.startswith("file://"):
            from urllib.parse import unquote, urlparse

            where = unquote(urlparse(url).path)
        for req in dist.requires or []:
            if re.search(rf"extra\s*==\s*['\"]{re.escape(extra)}['\"]", req):
                packages.append(req.split(";")[0].strip().replace(" ", ""))
    except (metadata.PackageNotFoundError, ValueError):  # (run from a checkout, not installed)
        pass
    spec = f"'{where}[{extra}]'"
    prefix = sys.prefix.replace("\\", "/")
    if "/pipx/venvs/" in prefix:
        inject = f" (or: pipx inject statectl {' '.join(repr(p) for p in packages)})" if packages else ""
        return f"pipx install --force {spec}{inject}"
    if "/uv/tools/" in prefix:
        return f"uv tool install --force {spec}"
    return f"pip install {spec}"
