"""What differs between the store kinds statectl writes, as the core sees it: one class a kind
(`SqliteKind`, `PostgresKind`) on the `StoreKind` contract, in `STORE_KINDS`. A new writable
store type declares here the SQL `prune --sql` prints for it and what a `--to` destination of
its kind must hold (`core.destination` asks each kind in turn, and a `Destination` is one of
them); its writer (`project.write_targets`) takes its `kind` from here.
tests/test_store_kinds.py holds every kind to every duty.

Imports only the standard library and `statectl.errors` at the top: the writer runs in the
project's interpreter."""

from __future__ import annotations

import os
import stat
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from statectl.errors import StatectlError

if TYPE_CHECKING:
    from statectl.sources.base import Source

REFUSED = "copy into a new file, or a store LangGraph's saver writes"

GONE = "statectl_gone"
"""Postgres: the blob versions the deleted checkpoints named (a temporary table of the script)."""


@dataclass(frozen=True)
class Destination:
    """Where a copy goes: a SQLite file (new, empty or a checkpoint database) or a Postgres database."""

    kind: str
    """A kind statectl writes (`core.store_kinds.STORE_KINDS`): sqlite or postgres."""
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


class StoreKind(ABC):
    """A store kind statectl writes: every difference the core knows of, declared once."""

    kind: ClassVar[str]
    """The sources' `kind` (`Source.kind`)."""
    tables: ClassVar[Mapping[str, frozenset[str]]]
    """The tables LangGraph creates in a store of this kind, and the columns each has at least:
    a `--to` destination holds these or nothing of LangGraph's."""
    writes_table: ClassVar[str]
    """LangGraph's table of pending writes (what `prune --sql` deletes beside the checkpoints)."""
    blob_per_version: ClassVar[bool]
    """The layout of a checkpoint's channel values: one blob a channel version beside the
    checkpoint (Postgres), or the whole checkpoint in one blob (SQLite). The writer writes it
    (`WriteTarget.blob_per_version`); LangGraph.js's saver, whose versions are integers, keeps
    one blob for two branches that write a channel at the same version (`core.js.lost_branch_values`)."""
    js_bytes_as_text: ClassVar[bool]
    """LangGraph.js's saver of this kind reads a pending write of raw bytes back as text (SQLite's
    `CAST(value AS TEXT)`): a task's bytes result is shown as LangGraph.js reads it."""

    # -- `--to`: a destination of this kind --------------------------------------------------------
    @staticmethod
    @abstractmethod
    def claims(spec: str) -> bool:
        """Whether `--to spec` names a store of this kind (asked in `STORE_KINDS`' order: the last
        takes what no other claims)."""

    @staticmethod
    @abstractmethod
    def destination(spec: str, source: Source, source_spec: str | None) -> Destination:
        """`--to spec` checked read-only: a store of this kind that LangGraph's saver may write
        (new, empty, or holding `tables`), never the store being read; else one clear line."""

    # -- `prune --sql`: the dialect ----------------------------------------------------------------
    @staticmethod
    @abstractmethod
    def literal(text: str) -> str:
        """`text` as an SQL literal that reads back exactly, under every server setting; a text
        that is not printable written as the hex of its UTF-8 bytes (nothing raw printed)."""

    @staticmethod
    @abstractmethod
    def sql_begin(planned: bool) -> Iterator[str]:
        """The statements before the deletes (`planned`: some checkpoints go), `BEGIN` among them."""

    @staticmethod
    @abstractmethod
    def delete_checkpoints(where: str) -> str:
        """The statement that deletes the checkpoints `where` names (after their writes)."""

    @staticmethod
    @abstractmethod
    def sql_end(planned: bool) -> Iterator[str]:
        """The statements after the deletes, `COMMIT` last."""


# -- SQLite ---------------------------------------------------------------------------------------
SQLITE_HEADER = b"SQLite format 3\x00"


class SqliteKind(StoreKind):
    """A SQLite file `SqliteSaver` writes (and `SqliteStore`, often in the same file)."""

    kind = "sqlite"
    tables = {
        # SqliteSaver (`writes.task_path`: its setup() adds it to an older table)
        "checkpoints": frozenset(
            {"thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type", "checkpoint", "metadata"}
        ),
        "writes": frozenset(
            {"thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel", "type", "value"}
        ),
        # SqliteStore, often kept in the checkpointer's file
        "store": frozenset({"prefix", "key", "value"}),
        "store_vectors": frozenset({"prefix", "key", "field_name", "embedding"}),
        "store_migrations": frozenset({"v"}),
        "vector_migrations": frozenset({"v"}),
    }
    writes_table = "writes"
    blob_per_version = False
    js_bytes_as_text = True

    @staticmethod
    def claims(spec: str) -> bool:
        return not spec.startswith(("http://", "https://"))  # (a file: what names no other kind, nor a server)

    @staticmethod
    def destination(spec: str, source: Source, source_spec: str | None) -> Destination:
        try:
            return _sqlite(spec, Path(spec).expanduser(), source, source_spec)
        except OSError as exc:  # (a folder on the way this user may not enter, a loop of links)
            raise StatectlError(f"cannot use {spec}: {exc.strerror or exc}") from None

    @staticmethod
    def literal(text: str) -> str:
        if text.isprintable():
            return "'" + text.replace("'", "''") + "'"
        return f"CAST(X'{text.encode('utf-8', 'surrogatepass').hex()}' AS TEXT)"

    @staticmethod
    def sql_begin(planned: bool) -> Iterator[str]:
        yield "BEGIN;"

    @staticmethod
    def delete_checkpoints(where: str) -> str:
        return f"DELETE FROM checkpoints WHERE {where};"

    @staticmethod
    def sql_end(planned: bool) -> Iterator[str]:
        yield "COMMIT;"


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
        folders = tuple(str(f) for f in reversed(missing))
        return Destination(SqliteKind.kind, str(path), str(path), new=True, folders=folders)
    if not stat.S_ISREG(path.stat().st_mode):
        raise StatectlError(f"{spec} is not a regular file", "--to takes a SQLite file or a postgresql:// URL")
    if source.kind == SqliteKind.kind and source_spec is not None:
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
    return Destination(SqliteKind.kind, str(path), str(path))


def _can_create(spec: str, path: Path) -> None:
    """A file can be made beside `path` (the folder may allow it and the file system refuse it:
    /sys, /proc, a read-only mount): tried with a file of statectl's own, removed at once."""
    import tempfile

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

    tables = SqliteKind.tables
    objects, columns = objects_of(path, tuple(tables))
    foreign = [(kind, name) for kind, name in objects if kind != "table" or name not in tables]
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
        if not tables[name] <= cols:
            raise StatectlError(
                f"{spec} has a `{name}` table that LangGraph did not write (its columns: "
                f"{names(sorted(cols)) or 'none'}): not a LangGraph checkpoint store",
                REFUSED,
            )


def _objects(objects: list[tuple[str, str]], at_least: bool = False) -> str:
    """`tables orders, users`, `table users and view v`: what a file holds, grouped by kind
    (`at_least`: only the first MAX_OBJECTS were read)."""
    parts = []
    for kind in ("table", "view", "trigger"):
        found = [name for k, name in objects if k == kind]
        if found:
            parts.append(f"{kind}{'s' * (len(found) > 1)} {names(found, at_least=at_least)}")
    return " and ".join(parts)


# -- Postgres -------------------------------------------------------------------------------------
class PostgresKind(StoreKind):
    """A Postgres database `PostgresSaver` writes: the schema it writes in (the first of the
    search path that exists)."""

    kind = "postgres"
    tables = {
        "checkpoint_migrations": frozenset({"v"}),
        "checkpoints": frozenset(
            {"thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type", "checkpoint", "metadata"}
        ),
        "checkpoint_blobs": frozenset({"thread_id", "checkpoint_ns", "channel", "version", "type", "blob"}),
        "checkpoint_writes": frozenset(
            {"thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel", "type", "blob"}
        ),
    }
    writes_table = "checkpoint_writes"
    blob_per_version = True
    js_bytes_as_text = False

    @staticmethod
    def claims(spec: str) -> bool:
        from statectl.secrets import is_conninfo

        return spec.startswith(("postgres://", "postgresql://")) or is_conninfo(spec)

    @staticmethod
    def destination(spec: str, source: Source, source_spec: str | None) -> Destination:
        return _postgres(spec, source, source_spec)

    @staticmethod
    def literal(text: str) -> str:
        # An escape string (`E'...'`, backslashes doubled) reads the same whether
        # `standard_conforming_strings` is on or off (a plain '...' ends early at a backslash when
        # it is off, and a crafted id could then delete other threads); hex with no backslash.
        if text.isprintable():
            return "E'" + text.replace("'", "''").replace("\\", "\\\\") + "'"
        return f"convert_from(decode('{text.encode('utf-8', 'surrogatepass').hex()}', 'hex'), 'UTF8')"

    @staticmethod
    def sql_begin(planned: bool) -> Iterator[str]:
        # (the literals mean the same either way; this says how to read them)
        yield "SET standard_conforming_strings = on;"
        yield "BEGIN;"
        if planned:
            columns = "thread_id text, checkpoint_ns text, channel text, version text"
            yield f"CREATE TEMP TABLE {GONE} ({columns}) ON COMMIT DROP;"

    @staticmethod
    def delete_checkpoints(where: str) -> str:
        return (
            f"WITH d AS (DELETE FROM checkpoints WHERE {where} RETURNING thread_id, checkpoint_ns, "
            f"checkpoint->'channel_versions' AS v) INSERT INTO {GONE} SELECT DISTINCT d.thread_id, "
            "d.checkpoint_ns, e.key, e.value FROM d, jsonb_each_text(CASE jsonb_typeof(d.v) "
            "WHEN 'object' THEN d.v END) AS e;"
        )

    @staticmethod
    def sql_end(planned: bool) -> Iterator[str]:
        if planned:  # the blob versions that no remaining checkpoint names
            yield (
                f"DELETE FROM checkpoint_blobs b USING (SELECT DISTINCT * FROM {GONE}) g WHERE "
                "b.thread_id = g.thread_id AND b.checkpoint_ns = g.checkpoint_ns AND b.channel = g.channel "
                "AND b.version = g.version AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE "
                "c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns AND "
                "c.checkpoint->'channel_versions'->>b.channel = b.version);"
            )
        yield "COMMIT;"


def _postgres(spec: str, source: Source, source_spec: str | None) -> Destination:
    from statectl.secrets import redact
    from statectl.sources import PG_ENV
    from statectl.sources.postgres.probe import place

    label = redact(spec)
    there = place(spec)
    if source.kind == PostgresKind.kind and source_spec is not None:
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
    for name, required in PostgresKind.tables.items():
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
                f"{names(sorted(cols)) or 'none'}): not a LangGraph checkpoint store",
                "copy into another database or schema",
            )
    if tables and "checkpoint_migrations" not in tables:
        raise StatectlError(
            f"{label}: {schema} has {names(sorted(tables))} but no checkpoint_migrations: "
            "PostgresSaver.setup() did not make them",
            "copy into another database or schema",
        )
    return Destination(PostgresKind.kind, spec, label)


_RELKINDS = {"v": "a view", "m": "a materialized view", "f": "a foreign table", "i": "an index", "S": "a sequence"}


def names(found: Iterable[str], most: int = 6, at_least: bool = False) -> str:
    """Names for a one-line message: at most `most`, each at most 60 characters, every control
    character written out, newlines too (they are the store's data)."""
    from statectl.escape import escape

    shown = [escape(n if len(n) <= 60 else n[:59] + "…").replace("\t", "\\t").replace("\n", "\\n") for n in found]
    listed = ", ".join(shown[:most])
    if len(shown) <= most:
        return listed
    return f"{listed} and {'at least ' * at_least}{len(shown) - most} more"


STORE_KINDS: dict[str, type[StoreKind]] = {k.kind: k for k in (PostgresKind, SqliteKind)}
"""Every store kind statectl writes, by its sources' `kind`; `--to` asks them in this order."""


def store_kind(kind: str) -> type[StoreKind] | None:
    """The declaration of a store of `kind` (a source's `kind`); None where statectl does not
    write that kind (a `langgraph dev` folder, an export, a server)."""
    return STORE_KINDS.get(kind)
