"""`statectl copy`: threads, with their whole history, into a SQLite file or a Postgres database."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from statectl.cli.options import Db, Json, Python, Root, complete_thread, open_store
from statectl.cli.output import emit_json
from statectl.errors import StatectlError

To = Annotated[
    str | None,
    typer.Option(
        "--to",
        help="Where to write: a SQLite file (created if new; an existing checkpoint database) or a "
        "postgresql:// URL. Written through LangGraph's own saver, in one transaction.",
        show_default=False,
    ),
]


def copy(
    thread_ids: Annotated[
        list[str] | None,
        typer.Argument(
            help="Threads to copy (ids or unique prefixes).", show_default=False, autocompletion=complete_thread
        ),
    ] = None,
    to: To = None,
    db: Db = None,
    every: Annotated[bool, typer.Option("--all", help="Copy every thread.")] = False,
    match: Annotated[
        str | None,
        typer.Option(
            "--match", "-m", help="Every thread whose id contains this text (ignoring case).", show_default=False
        ),
    ] = None,
    as_id: Annotated[
        str | None,
        typer.Option("--as", help="Copy the one thread under this id instead.", show_default=False),
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace a thread the destination already holds (else refused).")
    ] = False,
    python: Python = None,
    json: Json = False,
) -> None:
    """Copy threads with their whole history to another store: every namespace, checkpoint,
    pending write, blob version, metadata and id unchanged.

    From any store statectl reads but a server (SQLite, Postgres, a langgraph dev folder, an
    export) into a SQLite file or a Postgres database, in the layout LangGraph's own saver
    writes: LangGraph (in --python's interpreter) reads the copy as it reads the source. The
    source is only read. Nothing is written unless every row is."""
    if to is None:
        raise StatectlError(
            "say where to copy: --to FILE or --to postgresql://...", "statectl copy THREAD --to local.sqlite"
        )
    if not thread_ids and not every and match is None:
        raise StatectlError(
            "name the threads to copy, or give --all or --match TEXT",
            "statectl copy THREAD --to local.sqlite (statectl threads lists them)",
        )
    with open_store(db) as store:
        ids = [store.thread_id(t) for t in thread_ids or ()]
        if every or match is not None:
            ids += [t.thread_id for t in store.threads(None, match=match) if t.thread_id not in ids]
        if not ids:
            raise StatectlError(f"no thread id contains {match!r}", "statectl threads lists them")
        if as_id is not None and len(ids) != 1:
            raise StatectlError("--as renames one thread", f"{len(ids)} threads were named")
        done = copy_threads(store, db, ids, to, as_id=as_id, replace=replace, python=python)
    if json:
        emit_json(done)
        return
    n = done["threads"]
    typer.echo(
        f"copied {n} thread{'s' * (n != 1)} ({done['checkpoints']} checkpoints, {done['writes']} writes) "
        f"to {done['to']}",
        err=True,
    )


def copy_threads(
    store: Any,
    db: str | None,
    ids: list[str],
    to: str,
    as_id: str | None = None,
    replace: bool = False,
    python: str | None = None,
) -> dict[str, Any]:
    """Copy `ids` from the open `store` (opened from `db`) to `to` through the writer; what was written."""
    import orjson

    from statectl.core.copy import destination
    from statectl.project.launch import Writer, writer_python
    from statectl.settings import current
    from statectl.sources import resolve_db

    dest = destination(to, store.source, resolve_db(db if db is not None else Root.db))
    tmp = _scratch_path(Path(dest.spec)) if dest.new else None
    rows: Iterator[dict[str, Any]] = _rows(
        dest.writer_spec(str(tmp) if tmp else None, current().timeout),
        [(t, as_id or t) for t in ids],
        store.source,
        replace,
    )
    writer = Writer(writer_python(python), "copy")
    try:
        writer.send(rows, lambda row: orjson.dumps(row, option=orjson.OPT_NON_STR_KEYS))
        done = writer.result()
        if tmp is not None:
            try:
                os.link(tmp, dest.spec)  # (never over a file that appeared meanwhile)
            except FileExistsError:
                raise StatectlError(f"{dest.spec} appeared while copying: nothing was written to it") from None
    except BaseException:
        writer.stop()
        raise
    finally:
        if tmp is not None:
            for leftover in (tmp, Path(f"{tmp}-journal")):
                if leftover.exists():
                    leftover.unlink()
    return {**done, "to": dest.label, "ids": {t: as_id or t for t in ids}}


def _rows(
    opening: dict[str, Any], pairs: list[tuple[str, str]], source: Any, replace: bool
) -> Iterator[dict[str, Any]]:
    from statectl.core.copy import thread_rows

    yield opening
    for thread_id, as_id in pairs:
        yield from thread_rows(source, thread_id, as_id, replace)
    yield {"op": "commit"}


def _scratch_path(dest: Path) -> Path:
    """A new file beside `dest` that the copy is written to first (mode 0600: it may hold secrets)."""
    import tempfile

    fd, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".statectl-part", dir=dest.parent)
    os.close(fd)
    return Path(name)
