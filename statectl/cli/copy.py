"""`statectl copy`: threads, with their whole history, into a SQLite file or a Postgres database."""

from __future__ import annotations

from typing import Annotated

import typer

from statectl.cli.options import Db, Json, WriterPython, complete_thread, open_store, source_spec
from statectl.cli.output import emit_json, error_text
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
    threads: Annotated[
        list[str] | None,
        typer.Option(
            "--thread",
            help="A thread to copy (several allowed; as the arguments).",
            show_default=False,
            autocompletion=complete_thread,
        ),
    ] = None,
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
    python: WriterPython = None,
    json: Json = False,
) -> None:
    """Copy threads, whole, into a SQLite file or Postgres.

    Every namespace, checkpoint, pending write, blob version, metadata and id unchanged.

    From any store statectl reads but a server (SQLite, Postgres, a langgraph dev folder, an
    export) into a SQLite file or a Postgres database, in the layout LangGraph's own saver
    writes: LangGraph (in --python's interpreter) reads the copy as it reads the source. The
    source is only read. Nothing is written unless every row is."""
    if to is None:
        raise StatectlError(
            "say where to copy: --to FILE or --to postgresql://...", "statectl copy THREAD --to local.sqlite"
        )
    thread_ids = [*(thread_ids or ()), *(threads or ())]
    if not thread_ids and not every and match is None:
        raise StatectlError(
            "name the threads to copy, or give --all or --match TEXT",
            "statectl copy THREAD --to local.sqlite (statectl threads lists them)",
        )
    from statectl.project.copy_fork_rerun import copy_threads

    with open_store(db) as store:
        ids = [store.thread_id(t) for t in thread_ids or ()]
        if every or match is not None:
            ids += [t.thread_id for t in store.threads(None, match=match) if t.thread_id not in ids]
        if not ids and match is not None:
            raise StatectlError(f"no thread id contains {match!r}", "statectl threads lists them")
        if not ids:  # (--all of an empty store: nothing to do, and the destination is not touched)
            typer.echo(f"statectl: {error_text(f'no threads in {store.label}: nothing copied')}", err=True)
            return
        if as_id is not None and len(ids) != 1:
            raise StatectlError("--as renames one thread", f"{len(ids)} threads were named")
        done = copy_threads(store, source_spec(db), ids, to, as_id=as_id, replace=replace, python=python)
    if json:
        emit_json(done)
        return
    n, c, w = done["threads"], done["checkpoints"], done["writes"]
    typer.echo(
        f"copied {n} thread{'s' * (n != 1)} ({c} checkpoint{'s' * (c != 1)}, {w} write{'s' * (w != 1)}) "
        f"to {done['to']}",
        err=True,
    )
