"""`statectl schema`: the merged state schema of a graph or a thread, and which threads it would break."""

from __future__ import annotations

from typing import Annotated

import typer

from statectl.cli.options import (
    Db,
    Json,
    Ns,
    Python,
    open_store,
)
from statectl.cli.output import emit, emit_json
from statectl.cli.typer_compat import Exit
from statectl.errors import StatectlError

TARGET_SHAPE = r"^(?:.+\.py|[A-Za-z_][\w.]*):[A-Za-z_][\w.]*$"
"""path/to/file.py:attr or package.module:attr (a thread id rarely looks like this)."""


def is_target(text: str | None) -> bool:
    import re

    return text is not None and re.match(TARGET_SHAPE, text) is not None


def schema(
    args: Annotated[
        list[str] | None,
        typer.Argument(
            help="TARGET (file.py:graph or module:graph), then THREAD with --db; or only "
            "THREAD with --db to infer the schema from history.",
            show_default=False,
        ),
    ] = None,
    db: Db = None,
    ns: Ns = "",
    json: Json = False,
    thread: Annotated[str | None, typer.Option("--thread", help="Thread to check the schema against (drift).")] = None,
    all_threads: Annotated[
        bool,
        typer.Option(
            "--all-threads",
            help="Check every thread of --db against TARGET's schema before "
            "deploying it: keys it lacks, values of another type, reducers it drops, nodes in "
            "`next` it no longer has. Exit 1 when a waiting thread would break.",
        ),
    ] = False,
    meta: Annotated[
        list[str] | None,
        typer.Option(
            "--meta",
            help="With --all-threads: only threads whose newest checkpoint's metadata "
            "has KEY=VALUE (a database several graphs share: e.g. --meta graph_id=agent).",
            show_default=False,
        ),
    ] = None,
    python: Python = None,
) -> None:
    """The merged state schema of a graph, or inferred from a thread.

    Fields, types, channels, reducers, visibility, and who declared them (the graph or a
    middleware). With --all-threads: which threads the schema would break."""
    args = list(args or [])
    if all_threads:
        return check_all_threads(args, db, json, python, thread, meta)
    if meta:
        raise StatectlError(
            "--meta goes with --all-threads", "statectl schema agent.py:graph --all-threads --meta graph_id=agent"
        )
    # (a first argument shaped like TARGET is one; anything else is a thread of --db or of the
    # database every command finds - and with no database at all, a TARGET that is mistyped)
    target = args.pop(0) if args and (is_target(args[0]) or (db is None and not thread and not _found())) else None
    if args:
        thread = thread or args.pop(0)
    if args:
        raise StatectlError(f"unexpected argument {args[0]!r}", "usage: statectl schema [TARGET] [--db DB THREAD]")
    if target is None and thread is None:
        raise StatectlError(
            "give a TARGET (file.py:graph) or --db DB THREAD",
            "statectl schema agent.py:graph, or statectl schema --db checkpoints.sqlite THREAD",
        )
    from statectl.core import schema as core

    observed = None
    if thread is not None:
        with open_store(db) as store:
            observed = core.infer(store.view(thread, ns))
    if target is None:
        assert observed is not None  # (a thread or a target is required)
        if json:
            emit_json({"thread_id": thread, "inferred": True, "keys": [o.to_json() for o in observed]})
            return
        from statectl.render.schema import observed_table

        emit(observed_table(observed, f"state keys of thread {thread}"))
        return
    from statectl.project.introspect import load_schema

    result = load_schema(target, python)
    drift = core.drift(result, observed) if observed is not None else None
    if json:
        data = result.to_json()
        if drift is not None:
            data["drift"] = {"thread_id": thread, **drift.to_json()}
        emit_json(data)
        return
    from statectl.render.schema import drift_view, schema_table

    emit(schema_table(result, f"state schema of {target} ({result.kind})"))
    if drift is not None and thread is not None:
        emit(drift_view(drift, thread))


def check_all_threads(
    args: list[str], db: str | None, json: bool, python: str | None, thread: str | None, meta: list[str] | None = None
) -> None:
    """`schema TARGET --all-threads --db DB`: each thread's newest root checkpoint (where a
    waiting thread resumes) against the schema TARGET would deploy."""
    if len(args) != 1 or not is_target(args[0]) or thread:
        raise StatectlError(
            "--all-threads takes one TARGET (file.py:graph) and --db, no thread",
            "statectl schema agent.py:graph --all-threads --db checkpoints.sqlite",
        )
    from statectl.core import schema as core
    from statectl.project.introspect import load_schema

    target = args[0]
    result = load_schema(target, python)
    checked, affected = 0, []
    from statectl.sources.status import thread_filter

    where = thread_filter(None, None, None, meta, None) if meta else None
    with open_store(db) as store:
        for t in store.each_thread(where=where):
            checked += 1
            try:
                found = core.check_thread(result, store.view(t.thread_id), t.status)
            except StatectlError as exc:  # a thread that cannot be read: said, the rest checked
                found = core.ThreadCheck(t.thread_id, t.status, [{"problem": "unreadable", "error": exc.message}])
            if found.problems:
                affected.append(found)
        label = store.label
    affected.sort(key=lambda a: not a.waiting)  # the threads that would break first
    breaking = [a for a in affected if a.waiting]
    if json:
        emit_json(
            {
                "target": target,
                "db": label,
                "threads": checked,
                "affected": [a.to_json() for a in affected],
                "waiting_affected": len(breaking),
            }
        )
    else:
        from statectl.render.schema import thread_checks

        emit(thread_checks(affected, checked, target, label))
    if breaking:
        raise Exit(1)


def _found() -> bool:
    """Is there a database without --db (`statectl --db`, $STATECTL_DB, ./checkpoints.sqlite, ...)?"""
    from statectl.cli.options import source_spec

    try:
        source_spec(None)
    except StatectlError:
        return False
    return True
