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

import os
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from statectl.errors import StatectlError
from statectl.sources.base import Source

SQLITE_HEADER = b"SQLite format 3\x00"

SQLITE_TABLES: dict[str, frozenset[str]] = {
    # SqliteSaver (`writes.task_path`: its setup() adds it to an older table)
    "checkpoints": frozenset(
        {"thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type", "checkpoint", "metadata"}
    ),
    "writes": frozenset({"thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel", "type", "value"}),
    # SqliteStore, often kept in the checkpointer's file
    "store": frozenset({"prefix", "key", "value"}),
    "store_vectors": frozenset({"prefix", "key", "field_name", "embedding"}),
    "store_migrations": frozenset({"v"}),
    "vector_migrations": frozenset({"v"}),
}
"""The tables LangGraph creates in a SQLite file, and the columns each has at least."""

POSTGRES_TABLES: dict[str, frozenset[str]] = {
    "checkpoint_migrations": frozenset({"v"}),
    "checkpoints": frozenset(
        {"thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type", "checkpoint", "metadata"}
    ),
    "checkpoint_blobs": frozenset({"thread_id", "checkpoint_ns", "channel", "version", "type", "blob"}),
    "checkpoint_writes": frozenset(
        {"thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel", "type", "blob"}
    ),
}
"""The tables `PostgresSaver.setup()` creates, and the columns each has at least."""

REFUSED = "copy into a new file, or a store LangGraph's saver writes"


@dataclass(frozen=True)
class Destination:
    """Where a copy goes: a SQLite file (new, empty or a checkpoint database) or a Postgres database."""

    kind: str
    """sqlite or postgres."""
    spec: str
    """The path or URL as given (a URL's password is never printed: `label`)."""
    label: str
    new: bool = False
    """A SQLite file that does not exist yet (created whole at the end, or not at all)."""
    folders: tuple[str, ...] = ()
    """The folders a new file goes in that do not exist yet, outermost first (`make_folders`)."""

    def make_folders(self) -> list[Path]:
        """Create the missing folders of a new file (as `mkdir -p`): those it created, outermost
        first (`remove_folders` takes them back when the file is not made)."""
        made: list[Path] = []
        for folder in self.folders:
            try:
                os.mkdir(folder)
            except FileExistsError:
                continue
            except OSError as exc:
                remove_folders(made)
                raise StatectlError(f"cannot create {self.spec}: {folder}: {exc.strerror or exc}") from None
            made.append(Path(folder))
        return made


def remove_folders(made: list[Path]) -> None:
    """Remove the folders `make_folders` created (innermost first), where they are still empty."""
    for folder in reversed(made):
        try:
            folder.rmdir()
        except OSError:
            break


def destination(spec: str, source: Source, source_spec: str | None) -> Destination:
    """`--to DEST` checked before anything is written, and without writing: a Postgres URL, a
    new file in an existing folder, an empty file or a LangGraph checkpoint store; never the
    source itself, a folder, an export, a server or another application's database."""
    from statectl.secrets import is_conninfo

    if spec.startswith(("postgres://", "postgresql://")) or is_conninfo(spec):
        return _postgres(spec, source, source_spec)
    if spec.startswith(("http://", "https://")):
        raise StatectlError(
            "copy writes SQLite files and Postgres databases, not a LangGraph server",
            "copy to a file (--to threads.sqlite) or a postgresql:// URL",
        )
    try:
        return _sqlite(spec, Path(spec).expanduser(), source, source_spec)
    except OSError as exc:  # (a folder on the way this user may not enter, a loop of links)
        raise StatectlError(f"cannot use {spec}: {exc.strerror or exc}") from None


def _sqlite(spec: str, path: Path, source: Source, source_spec: str | None) -> Destination:
    if path.is_symlink():  # (one planted in a shared folder would have the copy write into what it names)
        raise StatectlError(f"--to {spec} is a symlink: not followed", "name the file it points to, or a new file")
    if path.is_dir() or path.name == ".langgraph_api":
        raise StatectlError(f"{spec} is a folder", "--to takes a SQLite file (new or existing) or a postgresql:// URL")
    for suffix in ("-wal", "-shm", "-journal"):
        base = Path(str(path)[: -len(suffix)])
        if path.name.endswith(suffix) and base.is_file():
            raise StatectlError(f"{spec} is SQLite's own file beside {base}", "--to names the database file itself")
    if not path.exists():
        missing: list[Path] = []
        folder = path.parent
        while not folder.exists() and not folder.is_symlink() and len(missing) < 64:
            missing.append(folder)  # (made when the copy is written, as `mkdir -p` would)
            folder = folder.parent
        if not folder.is_dir():
            raise StatectlError(f"cannot create {spec}: {folder} is not a folder")
        if not os.access(folder, os.W_OK):
            raise StatectlError(f"cannot create {spec}: the folder {folder} is not writable")
        _can_create(spec, folder / path.name)
        return Destination("sqlite", str(path), str(path), new=True, folders=tuple(str(f) for f in reversed(missing)))
    if not stat.S_ISREG(path.stat().st_mode):
        raise StatectlError(f"{spec} is not a regular file", "--to takes a SQLite file or a postgresql:// URL")
    if source.kind == "sqlite" and source_spec is not None:
        read = Path(source_spec).expanduser()
        if read.exists() and path.samefile(read):  # (the same inode: a link, a hard link, ./ or ~)
            raise StatectlError(
                f"--to names the database being read ({spec})",
                "copy to another file; fork and replay write into the source only with --in-place",
            )
    with path.open("rb") as fh:
        head = fh.read(16)
    if head and head != SQLITE_HEADER:
        raise StatectlError(
            f"{spec} is not a SQLite database",
            "copy writes into a SQLite checkpoint file or a new file (an export is read-only)",
        )
    if not os.access(path, os.W_OK):
        raise StatectlError(f"{spec} is read-only")
    if head:  # (an empty file is a new database to SQLite)
        _langgraph_file(spec, path)
    return Destination("sqlite", str(path), str(path))


def _can_create(spec: str, path: Path) -> None:
    """A file can be made beside `path` (the folder may allow it and the file system refuse it:
    /sys, /proc, a read-only mount): tried with a file of statectl's own, removed at once."""
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".statectl-probe", dir=path.parent)
    except OSError as exc:
        raise StatectlError(f"cannot create {spec}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(name)


def _langgraph_file(spec: str, path: Path) -> None:
    """Refuse a SQLite file that holds anything LangGraph did not create, or a table under one of
    its names without its columns."""
    from statectl.sources.sqlite import MAX_OBJECTS, objects_of

    objects, columns = objects_of(path, tuple(SQLITE_TABLES))
    foreign = [(kind, name) for kind, name in objects if kind != "table" or name not in SQLITE_TABLES]
    if foreign:
        held = _objects(foreign, at_least=len(objects) >= MAX_OBJECTS)
        raise StatectlError(f"{spec} holds {held}: not a LangGraph checkpoint store", REFUSED)
    ccols = columns.get("checkpoints", frozenset())
    if "thread_ts" in ccols and "checkpoint_id" not in ccols:
        raise StatectlError(
            f"{spec} was written by langgraph 0.0.x/0.1.x (checkpoints keyed by thread_ts): "
            "LangGraph's SqliteSaver no longer writes into it",
            "copy into a new file",
        )
    for name, cols in columns.items():
        if not SQLITE_TABLES[name] <= cols:
            raise StatectlError(
                f"{spec} has a `{name}` table that LangGraph did not write (its columns: "
                f"{_names(sorted(cols)) or 'none'}): not a LangGraph checkpoint store",
                REFUSED,
            )


def _postgres(spec: str, source: Source, source_spec: str | None) -> Destination:
    from statectl.secrets import redact
    from statectl.sources import PG_ENV
    from statectl.sources.postgres.probe import place

    label = redact(spec)
    there = place(spec)
    if source.kind == "postgres" and source_spec is not None:
        here = place("" if source_spec == PG_ENV else source_spec, where="read")
        if here.identity == there.identity:
            raise StatectlError(
                f"--to names the database being read ({label} is {source.label})",
                "copy to another database, schema or file",
            )
    schema, tables = there.identity[2], there.tables
    if schema is None:
        raise StatectlError(
            f"{label}: no schema to write in (none of its search_path exists)", "create the schema, or name another"
        )
    for name, required in POSTGRES_TABLES.items():
        if name not in tables:
            continue
        kind, cols = tables[name]
        if kind not in ("r", "p"):
            raise StatectlError(
                f"{label}: {schema}.{name} is not a table ({_RELKINDS.get(kind, 'relkind ' + kind)}): "
                "not a LangGraph checkpoint store",
                "copy into another database or schema",
            )
        if name == "checkpoints" and "checkpoint_id" not in cols and {"thread_id", "checkpoint"} <= cols:
            raise StatectlError(
                f"{label} holds ShallowPostgresSaver's tables (the latest checkpoint of each thread "
                "only): copy writes whole histories with PostgresSaver",
                "copy into another database or schema",
            )
        if not required <= cols:
            raise StatectlError(
                f"{label}: the table {schema}.{name} is not LangGraph's (its columns: "
                f"{_names(sorted(cols)) or 'none'}): not a LangGraph checkpoint store",
                "copy into another database or schema",
            )
    if tables and "checkpoint_migrations" not in tables:
        raise StatectlError(
            f"{label}: {schema} has {_names(sorted(tables))} but no checkpoint_migrations: "
            "PostgresSaver.setup() did not make them",
            "copy into another database or schema",
        )
    return Destination("postgres", spec, label)


_RELKINDS = {"v": "a view", "m": "a materialized view", "f": "a foreign table", "i": "an index", "S": "a sequence"}


def _objects(objects: list[tuple[str, str]], at_least: bool = False) -> str:
    """`tables orders, users`, `table users and view v`: what a file holds, grouped by kind
    (`at_least`: only the first MAX_OBJECTS were read)."""
    parts = []
    for kind in ("table", "view", "trigger"):
        names = [name for k, name in objects if k == kind]
        if names:
            parts.append(f"{kind}{'s' * (len(names) > 1)} {_names(names, at_least=at_least)}")
    return " and ".join(parts)


def _names(names: Iterable[str], most: int = 6, at_least: bool = False) -> str:
    """Names for a one-line message: at most `most`, each at most 60 characters, every control
    character written out, newlines too (they are the file's data)."""
    from statectl.escape import escape

    shown = [escape(n if len(n) <= 60 else n[:59] + "…").replace("\t", "\\t").replace("\n", "\\n") for n in names]
    listed = ", ".join(shown[:most])
    if len(shown) <= most:
        return listed
    return f"{listed} and {'at least ' * at_least}{len(shown) - most} more"
