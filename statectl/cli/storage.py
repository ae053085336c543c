"""`statectl size` and `prune`: where the bytes go, and what can safely go."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager as ContextManager
from contextlib import closing, nullcontext
from pathlib import Path
from typing import Annotated, Any

import typer

from statectl.cli.options import (
    Db,
    Json,
    complete_thread,
    open_store,
)
from statectl.cli.output import emit, emit_json, error_text
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
    from statectl.errors import OnlyMemoryStore

    try:
        opened = open_store(db)
    except OnlyMemoryStore:  # (a memory store in a file of its own: its size alone)
        if thread_id is not None:
            raise
        _memory_size(db, json)
        return
    with opened as store:
        if thread_id is None:
            report = core.store_size(store.source, limit or None)
            from statectl.cli.store import beside  # (the long-term memory store, counted apart)
            from statectl.core.memory_checks import memory_size

            with beside(db) or nullcontext() as memory:
                kept = memory_size(memory) if memory is not None else None
            if json:
                emit_json({**report.to_json(), **({"store": kept} if kept is not None else {})})
                return
            from statectl.render.size import store_view

            emit(store_view(report))
            if kept is not None:
                from statectl.render.memory import size_view

                emit(size_view(kept))
            return
        found = core.thread_channels(store.source, store.thread_id(thread_id))
    if json:
        emit_json(found.to_json())
        return
    from statectl.render.size import thread_view

    emit(thread_view(found))


def _memory_size(db: str | None, json: bool) -> None:
    from statectl.cli.store import beside
    from statectl.core.memory_checks import memory_size

    with beside(db) as memory:
        kept = memory_size(memory)
    if json:
        emit_json({"db": memory.label, "store": kept})
        return
    from statectl.render.memory import size_view

    emit(size_view(kept))


REFUSED = {
    "folder": (
        "a `langgraph dev` folder is the dev server's own store: prune --apply does not write to it",
        "delete what you no longer need through the server (DELETE /threads/{thread_id})",
    ),
    "export": ("an export is statectl's own file: nothing to prune", "export again with the threads you want"),
    "server": (
        "a LangGraph server prunes with its own API: prune --apply does not write through it",
        "POST /threads/prune with strategy keep_latest, or checkpointer.ttl in langgraph.json",
    ),
}
"""Where `prune` does not write, and what to do instead: every kind a source reads that no
`core.store_kinds` class declares (tests/test_store_kinds.py)."""

Apply = Annotated[
    bool,
    typer.Option(
        "--apply",
        help="Carry the plan out: delete what it lists, a thread per transaction (after a confirmation).",
    ),
]


def prune(
    db: Db = None,
    json: Json = False,
    keep_last: Annotated[
        int | None,
        typer.Option("--keep-last", help="Keep the N newest checkpoints of each namespace.", min=0, show_default=False),
    ] = None,
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
    apply: Apply = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="With --apply: do not ask (cron, CI).")] = False,
    backup: Annotated[
        Path | None,
        typer.Option(
            "--backup",
            help="With --apply (SQLite): first copy the database to this new file (SQLite's backup API).",
            show_default=False,
            dir_okay=False,
        ),
    ] = None,
    vacuum: Annotated[
        bool,
        typer.Option("--vacuum", help="With --apply: VACUUM afterwards, and say the bytes it gave back."),
    ] = False,
    batch: Annotated[int, typer.Option("--batch", help="With --apply: checkpoints per DELETE statement.", min=1)] = 500,
) -> None:
    """What can be deleted safely: a plan, its SQL, or --apply.

    Always kept: each namespace's newest checkpoint and its pending writes, branch heads and fork
    points, the ancestors a delta channel is rebuilt from, subgraphs with their parent checkpoint.
    --keep-last N and --older-than D say how much history stays. Without --apply nothing is
    written; --sql prints the SQL for you to review and run. --apply deletes what the plan lists,
    each thread in its own transaction on a fresh read of it (a thread a run wrote to meanwhile is
    pruned on the fresh plan and reported; one locked past --timeout is skipped and reported).
    Exit 1 when a thread was skipped."""
    if keep_last == 0 and older_than is None:
        raise StatectlError(
            "--keep-last 0 keeps no history, and prune never deletes a namespace's newest checkpoint "
            "(it is the thread's state): 0 would prune as --keep-last 1 does",
            "--keep-last 1 keeps only the newest; or bound by age: --older-than 30d",
        )
    keep_last = keep_last or 0  # (with --older-than, 0: no bound by count)
    cutoff = _check_options(keep_last, older_than, apply, as_sql, yes=yes, backup=backup, vacuum=vacuum)
    from statectl.core import prune as core
    from statectl.sources.status import parse_statuses

    wanted = parse_statuses(status)
    spool = core.Spool()
    with open_store(db) as store, closing(spool):
        kind = _prunable(store, apply, backup)
        if backup is not None:
            from statectl.project.prune import backup_target

            backup_target(backup)  # (before the plan, not after the question)
        applier = _applier(store, keep_last, cutoff, batch) if apply else None
        try:
            ids = store.selected_ids(thread, wanted)
            # (the progress bar's total: a whole store's counted from the index, on a terminal only)
            total = len(ids) if isinstance(ids, list) else store.count_threads
            if json and applier is None and not as_sql:  # (the plan as JSON: written as each thread is planned)
                return _plan_json(store, ids, keep_last, cutoff, total)
            plans = _plans(store, ids, keep_last, cutoff, spool, total)
            label = store.label
            if applier is not None:
                _apply(applier, plans, label, yes=yes, backup=backup, vacuum=vacuum, json=json)
                return
        finally:
            if applier is not None:
                # the reading connection first: the last to close a WAL database moves its log
                # into the file and removes -wal and -shm, which a read-only one cannot do
                store.close()
                applier.close()
        if as_sql:
            sys.stdout.writelines(line + "\n" for line in core.sql_lines([p for p in plans if p.drop], kind))
            return
        if json:
            emit_json(core.plans_json(label, plans))
            return
    from statectl.render.size import prune_view

    emit(prune_view(plans, label))


def _report(report: dict[str, Any], outcomes: list[Any], drop: int, *, interrupted: bool, json: bool) -> None:
    """What `--apply` did: JSON, or the table and totals. Each thread's outcome is made into its
    JSON or its row as it is written (a store of a million threads holds its outcomes, not a
    dict or a laid-out row of each as well)."""
    totals = {
        "drop": drop,
        "dropped": sum(o.dropped for o in outcomes),
        "bytes": sum(o.bytes for o in outcomes),
        "interrupted": interrupted,
        "longest_transaction_s": round(max((o.held for o in outcomes), default=0.0), 4),
    }
    if not json:
        from statectl.render.size import applied_view

        emit(applied_view({**report, **totals}, outcomes))
        return
    from statectl.cli.output import json_bytes

    # the document `emit_json({**report, "threads": [...], **totals})` writes, byte for byte
    out = sys.stdout.buffer
    out.write(json_bytes(report)[:-1] + b',"threads":[')
    for i, o in enumerate(outcomes):
        out.write((b"," if i else b"") + json_bytes(o.to_json()))
    out.write(b"]," + json_bytes(totals)[1:] + b"\n")


def _check_options(
    keep_last: int,
    older_than: str | None,
    apply: bool,
    as_sql: bool,
    *,
    yes: bool,
    backup: Path | None,
    vacuum: bool,
) -> Any:
    """The --older-than moment; one line for options that do not go together or keep nothing."""
    from statectl.core.prune import cutoff_of

    cutoff = cutoff_of(keep_last, older_than, "--keep-last", "--older-than")
    if apply and as_sql:
        raise StatectlError("--sql prints the SQL and --apply runs it: choose one")
    needs = [n for n, v in (("--yes", yes), ("--backup", backup), ("--vacuum", vacuum)) if v]
    if needs and not apply:
        raise StatectlError(f"{', '.join(needs)} go with --apply", "add --apply to carry the plan out")
    return cutoff


def _prunable(store: Any, apply: bool, backup: Path | None) -> str:
    """The store's kind, where prune plans (and --apply writes); else one line saying what to do."""
    from statectl.project.write_targets import write_target

    kind = store.source.kind
    target = write_target(kind)
    if target is None:
        if apply:
            refused = REFUSED.get(kind, (f"statectl does not write a store of kind {kind!r}", None))
            raise StatectlError(f"{store.label}: {refused[0]}", refused[1])
        raise StatectlError(
            f"{store.label}: prune plans SQLite files and Postgres databases",
            "exports, langgraph dev folders and servers are not pruned this way",
        )
    if store.source.shallow:
        raise StatectlError(
            f"{store.label}: a ShallowPostgresSaver keeps one checkpoint per namespace already: nothing to prune"
        )
    if backup is not None:
        target.refuse_backup(store.label)
    return kind


def _applier(store: Any, keep_last: int, cutoff: Any, batch: int) -> Any:
    """The writer, opened before planning: a read-only file or role is said before any work."""
    from statectl.project.write_targets import TARGETS

    return TARGETS[store.source.kind].pruner(store, keep_last, cutoff, batch)


def _plans(
    store: Any, ids: Iterable[str], keep_last: int, cutoff: Any, spool: Any, total: int | Callable[[], int]
) -> list[Any]:
    """Each thread's plan, what it drops kept in `spool`; a progress bar on a terminal (stderr)
    from PROGRESS_FROM threads (`total`: how many, or what counts them)."""
    from statectl.core import prune as core

    with _progress("planning", total) as advance:
        out = []
        for plan in core.plan_threads(store, ids, keep_last, cutoff):
            out.append(spool.keep(plan))
            advance()
        return out


def _plan_json(store: Any, ids: Iterable[str], keep_last: int, cutoff: Any, total: int | Callable[[], int]) -> None:
    """`prune --json`: each thread's plan written as it is made, the totals after them (the same
    document as one `emit_json`): memory holds one thread's plan, not every thread's."""
    from statectl.cli.output import Partial, json_bytes
    from statectl.core import prune as core

    out = sys.stdout.buffer
    out.write(b'{"db":' + json_bytes(store.label) + b',"threads":[')
    drop = freed = 0
    with _progress("planning", total) as advance, Partial("threads' plans") as written:
        for i, p in enumerate(core.plan_threads(store, ids, keep_last, cutoff)):
            drop, freed = drop + len(p.drop), freed + p.bytes
            out.write((b"," if i else b"") + json_bytes(p.to_json()))
            written.wrote()
            advance()
    out.write(b'],"drop":' + json_bytes(drop) + b',"bytes":' + json_bytes(freed) + b',"applied":false}\n')


def _progress(label: str, total: int | Callable[[], int]) -> ContextManager[Callable[[], object]]:
    """A progress bar on a terminal (stderr) from PROGRESS_FROM steps; else nothing to see.
    `total` may be what counts the steps: counted only for a terminal."""
    if not sys.stderr.isatty():
        return nullcontext(lambda: None)
    if callable(total):
        total = total()
    if total < PROGRESS_FROM:
        return nullcontext(lambda: None)
    from statectl.render.progress import progress_bar

    return progress_bar(label, total)


PROGRESS_FROM = 20
"""Threads from which planning and `--apply` show a progress bar (on a terminal, on stderr)."""


def _apply(
    applier: Any, plans: list[Any], label: str, *, yes: bool, backup: Path | None, vacuum: bool, json: bool
) -> None:
    """Ask, back up, delete thread by thread, vacuum; then say what was done."""
    from statectl.cli.write_options import confirm
    from statectl.project.prune import Interrupted, Stopped, apply_all
    from statectl.render.size import human_bytes

    todo = [p for p in plans if p.drop]
    drop, size = sum(len(p.drop) for p in todo), sum(p.bytes for p in todo)
    if not todo:
        typer.echo(f"statectl: nothing to prune in {error_text(label)} with these options", err=True)
        if json:
            emit_json({"db": label, "applied": True, "threads": [], "drop": 0, "dropped": 0, "bytes": 0})
        return
    confirm(
        f"Delete {drop:,} checkpoint{'s' * (drop != 1)} ({human_bytes(size)}) from {len(todo):,} "
        f"thread{'s' * (len(todo) != 1)} of {error_text(label)}?",
        yes,
    )
    report: dict[str, Any] = {"db": label, "applied": True}
    if backup is not None:
        report["backup"] = {"path": str(backup), "bytes": applier.backup(backup)}
    outcomes: list[Any] = []
    interrupted = False
    try:
        with _progress("pruning", len(todo)) as advance:
            outcomes = apply_all(applier, todo, lambda _o: advance())
    except Interrupted as stop:
        outcomes, interrupted = stop.outcomes, True
    except Stopped as stop:  # (what was done, then the one line saying why it stopped)
        _report(report, stop.outcomes, drop, interrupted=False, json=json)
        raise
    vacuum_failed = False
    if vacuum and not interrupted:
        try:
            report["vacuum"] = applier.vacuum().to_json()
        except StatectlError as exc:  # (a full disk: the pruning stands; the report says so)
            report["vacuum"] = {"error": exc.message, "hint": exc.hint}
            vacuum_failed = True
    _report(report, outcomes, drop, interrupted=interrupted, json=json)
    if interrupted:
        raise typer.Exit(130)
    if vacuum_failed or any(o.status.startswith("skipped") for o in outcomes):
        raise typer.Exit(1)
