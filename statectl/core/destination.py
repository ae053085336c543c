"""Where `copy`, `fork --to` and `replay --to` may write: checked read-only, before the writer
starts (its `SqliteSaver.setup()` switches a file to WAL and adds tables; `PostgresSaver.setup()`
creates tables and runs migrations).

A destination is a new file, an empty one, or a LangGraph checkpoint store, and never the store
being read:

* SQLite: a file holding only the tables LangGraph's savers and stores create (`checkpoints`,
  `writes`, `store`, `store_vectors` and their migrations), each with LangGraph's columns. A
  file that also holds an application's tables, views or triggers is the application's: refused.
* Postgres: the schema `PostgresSaver` would write in (the first of the search path that exists)
  holds none of its four tables, or all of them with its columns. Other tables are the
  application's neighbours (a LangGraph server keeps its own beside the checkpoints) and are
  never touched: allowed; a foreign table under one of LangGraph's names is refused.
* The same store is told by what it is, not by how it is spelled: a file by its inode (through
  links, `./`, `~`), a Postgres database by the server's system identifier, the database and the
  schema, whichever URL reaches it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from statectl.core.store_kinds import STORE_KINDS, Destination, remove_folders
from statectl.errors import StatectlError

if TYPE_CHECKING:
    from statectl.sources.base import Source

__all__ = ["Destination", "destination", "remove_folders"]


def destination(spec: str, source: Source, source_spec: str | None) -> Destination:
    """`--to DEST` checked before anything is written, and without writing: a Postgres URL, a
    new file in an existing folder, an empty file or a LangGraph checkpoint store; never the
    source itself, a folder, an export, a server or another application's database. Each kind
    statectl writes checks what names it (`core.store_kinds`)."""
    for kind in STORE_KINDS.values():
        if kind.claims(spec):
            return kind.destination(spec, source, source_spec)
    raise StatectlError(
        "copy writes SQLite files and Postgres databases, not a LangGraph server",
        "copy to a file (--to threads.sqlite) or a postgresql:// URL",
    )
