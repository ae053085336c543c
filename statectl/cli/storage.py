"""`statectl size` and `prune`: where the bytes go, and what can safely go."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from statectl.cli.options import (
    Db,
    Json,
    complete_thread,
    open_store,
)
from statectl.cli.output import emit, emit_json
from statectl.errors import StatectlError


def size(
    thread_id: Annotated[
        str | None,
        typer.Argument(
            help="A thread: its bytes by channel and its size per step (default: the whole store).",
            show_default=False,
            autocompletion=complete_thread,
        ),
    ] = None,
    db: Db = None,
    json: Json = False,
    limit: Annotated[int, typer.Option("--limit", help="Largest threads to list (0: all).", min=0)] = 20,
) -> None:
    """Where the bytes go: by table, by thread, by channel.

    Per store: each table and its indexes, free pages (what VACUUM gives back), and the largest
    threads with their bytes per checkpoint and growth. Per thread: the bytes of each channel
    across the history and in the newest checkpoint, and the checkpoint size per step. Read
    from SQL lengths and the msgpack structure; no value is decoded."""
    from statectl.core import size as core

    with open_store(db) as store:
        if thread_id is None:
            report = core.store_size(store.source, limit or None)
            if json:
                emit_json(report.to_json())
                return
            from statectl.render.size import store_view

            emit(store_view(report))
            return
        found = core.thread_channels(store.source, store.thread_id(thread_id))
    if json:
        emit_json(found.to_json())
        return
    from statectl.render.size import thread_view

    emit(thread_view(found))


def prune(
    db: Db = None,
    json: Json = False,
    keep_last: Annotated[
        int, typer.Option("--keep-last", help="Keep the N newest checkpoints of each namespace.", min=0)
    ] = 0,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than", help="Only checkpoints older than this may go (2h, 30d, or a date).", show_default=False
        ),
    ] = None,
    thread: Annotated[
        list[str] | None,
        typer.Option(
            "--thread",
            help="Only this thread (several allowed; default: every thread).",
            show_default=False,
            autocompletion=complete_thread,
        ),
    ] = None,
    status: Annotated[
        str | None,
        typer.Option(
            "-s",
            "--status",
            help="Only threads with this status (done, interrupted, error, pending).",
            show_default=False,
        ),
    ] = None,
    as_sql: Annotated[
        bool,
        typer.Option(
            "--sql", help="Print the SQL that carries the plan out (one transaction), for you to review and run."
        ),
    ] = False,
) -> None:
    """Which checkpoints could be deleted safely: a plan, or its SQL.

    statectl writes nothing: --sql prints the SQL for you to review and run. Always kept: each
    namespace's newest checkpoint and its pending writes, branch heads and fork points, the
    ancestors a delta channel is rebuilt from, subgraphs with their parent checkpoint.
    --keep-last N and --older-than D say how much history stays."""
    if not keep_last and older_than is None:
        raise StatectlError(
            "say how much history to keep: --keep-last N and/or --older-than DURATION",
            "statectl prune --keep-last 10 --older-than 30d",
        )
    from statectl.core import prune as core
    from statectl.sources.status import parse_statuses, parse_when

    cutoff = None
    if older_than is not None:
        try:
            cutoff = parse_when(older_than)
        except ValueError:
            raise StatectlError(f"--older-than {older_than!r} is neither a duration (2h, 30d) nor a date") from None
    wanted = parse_statuses(status)
    with open_store(db) as store:
        kind = store.source.kind
        if kind not in ("sqlite", "postgres"):
            raise StatectlError(
                f"{store.label}: prune plans SQLite files and Postgres databases",
                "exports, langgraph dev folders and servers are not pruned this way",
            )
        if getattr(store.source, "shallow", False):
            raise StatectlError(
                f"{store.label}: a ShallowPostgresSaver keeps one checkpoint per namespace already: nothing to prune"
            )
        if thread:
            ids = [store.thread_id(t) for t in thread]
        else:
            ids = [t.thread_id for t in store.threads(None, status=wanted)]
        if thread and wanted:
            keep = {t.thread_id for t in store.threads(None, status=wanted)}
            ids = [t for t in ids if t in keep]
        plans = [core.plan_thread(store, t, keep_last, cutoff) for t in ids]
        label = store.label
    if as_sql:
        sys.stdout.write(core.sql([p for p in plans if p.drop], kind))
        return
    if json:
        emit_json(
            {
                "db": label,
                "threads": [p.to_json() for p in plans],
                "drop": sum(len(p.drop) for p in plans),
                "bytes": sum(p.bytes for p in plans),
                "applied": False,
            }
        )
        return
    from statectl.render.size import prune_view

    emit(prune_view(plans, label))
