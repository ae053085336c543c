"""Long-term memory stores (LangGraph's `BaseStore`): the duties every reader has (`base`), and
one reader per source kind; `open_memory` picks it from what --db names, as `open_source` does
for checkpoints."""

from __future__ import annotations

from pathlib import Path

from statectl.errors import SourceError
from statectl.sources.memory.base import MemoryItem, MemorySource, Namespace, NamespaceInfo, NoStore, VectorInfo

__all__ = ["MemoryItem", "MemorySource", "Namespace", "NamespaceInfo", "NoStore", "VectorInfo", "open_memory"]


def open_memory(db: str | None, api_key: str | None = None) -> MemorySource:
    """Open the store beside (or instead of) the checkpoints --db names, read-only: a SQLite file
    (`SqliteStore`), a Postgres database (`PostgresStore`), a `langgraph dev` folder
    (`store.pckl`), or a LangGraph server's `/store` API. One line if it holds no store."""
    from statectl.secrets import is_conninfo, redact, remember, secrets_of
    from statectl.settings import current
    from statectl.sources import PG_ENV, resolve_db

    spec = resolve_db(db)
    remember(*secrets_of(spec), api_key or current().api_key)
    if spec.startswith(("http://", "https://")):
        from statectl.sources.memory.server import ServerMemory

        return ServerMemory(spec, api_key or current().api_key)
    if spec.startswith(("postgres://", "postgresql://")) or is_conninfo(spec) or spec == PG_ENV:
        from statectl.sources.memory.postgres import PostgresMemory

        return PostgresMemory("" if spec == PG_ENV else spec)
    path = Path(spec).expanduser()
    try:
        path.stat()
    except FileNotFoundError:
        raise SourceError(f"no such file: {redact(spec)}", "check the path given with --db or STATECTL_DB") from None
    except OSError as exc:
        raise SourceError(f"cannot read {redact(spec)}: {exc.strerror or exc}") from None
    if path.is_dir() or path.name.endswith(".pckl"):
        from statectl.sources.langgraph_api import find_folder
        from statectl.sources.memory.folder import STORE, FolderMemory

        folder = find_folder(path)
        if folder is None and path.is_dir() and (path / STORE).is_file():
            folder = path
        if folder is not None:
            return FolderMemory(folder)
        if path.is_dir():
            raise SourceError(f"{spec} is a folder, not a database file")
    from statectl.sources.base import read_regular

    if not path.is_file():
        read_regular(path)  # (a FIFO, a device: one line, never a hang)
    try:
        with path.open("rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise SourceError(f"cannot read {spec}: {exc.strerror}") from None
    if head == b"SQLite format 3\x00":
        from statectl.sources.memory.sqlite import SqliteMemory

        return SqliteMemory(path)
    if head.lstrip()[:1] in (b"{", b"["):
        from statectl.sources.memory.export import ExportMemory

        return ExportMemory(path)
    raise SourceError(f"{spec} is neither a SQLite database nor a langgraph dev folder")
