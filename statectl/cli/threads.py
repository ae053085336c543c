"""`statectl threads`: the threads of a store, with status and a preview."""

# (no `from __future__ import annotations`: Typer reads the command's annotations at every start,
# and strings it must eval, each compiled again: ~2 ms of `threads`; evaluated here, in the .pyc)

from typing import Annotated, Any

import typer

from statectl.cli.options import (
    Db,
    Json,
    open_store,
)
from statectl.cli.output import emit, emit_json, plain_pipe, print_notes, write_plain
from statectl.cli.typer_compat import Exit
from statectl.errors import StatectlError

HELD = 500
"""The largest `--json` page listed whole (a page of the first threads, found by an index, is
the quickest so); a longer one, or all, is written as it is read (issue 54: `--limit 100000`
held its page whole, 351 MB on Postgres)."""


def threads(
    db: Db = None,
    json: Json = False,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            help="At most N threads, most recently updated first (0: all; default 100 in the table, all with --json).",
            show_default=False,
        ),
    ] = None,
    after: Annotated[
        str | None,
        typer.Option(
            "--after", help="Start after this thread id (the last one of the previous page).", show_default=False
        ),
    ] = None,
    sort: Annotated[
        str | None,
        typer.Option(
            "--sort",
            help="recent (newest activity first; default for SQLite) or id (default "
            "for Postgres, where recent must scan the whole table).",
            show_default=False,
        ),
    ] = None,
    match: Annotated[
        str | None,
        typer.Option(
            "--match", "-m", help="Only threads whose id contains this text (ignoring case).", show_default=False
        ),
    ] = None,
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            "-s",
            help="Only threads with this status: done, interrupted, error or pending (several: error,interrupted).",
            show_default=False,
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Only threads updated since then: a duration back from now (30m, "
            "2h, 3d, 1w) or a date/time (2026-11-01, 2026-11-01T09:30; UTC unless it names an "
            "offset).",
            show_default=False,
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option("--until", help="Only threads last updated before then (as --since).", show_default=False),
    ] = None,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than", help="Only threads not updated for this long (2h: --until 2h).", show_default=False
        ),
    ] = None,
    meta: Annotated[
        list[str] | None,
        typer.Option(
            "--meta",
            help="Only threads whose newest checkpoint's metadata has KEY=VALUE "
            "(a run's configurable values such as user_id; several: all must hold).",
            show_default=False,
        ),
    ] = None,
    failed_node: Annotated[
        str | None,
        typer.Option(
            "--failed-node", help="Only threads that stopped on an error raised in this node.", show_default=False
        ),
    ] = None,
    exit_code: Annotated[
        bool,
        typer.Option(
            "--exit-code",
            help="Exit 1 when any thread matches, 0 when none does (for cron "
            "alerts: statectl threads -s interrupted --older-than 2h --exit-code).",
        ),
    ] = False,
) -> None:
    """List the threads, with status, last update and a preview.

    Columns: checkpoints (all namespaces), namespaces, the newest root step, when it was saved,
    status (done, interrupted, error, pending) and a preview (the error, the pending interrupt,
    else the first user message)."""
    if limit is not None and limit < 0:
        raise StatectlError("--limit must be 0 (all) or more")
    from statectl.core.listing import Selection

    chosen = Selection.parse(match, status, since, until, older_than, meta, failed_node, sort)
    with open_store(db) as store:
        large = json and (not limit or limit > HELD)  # (a page that can be large: written as read)
        chunks = chosen.stream(store, after) if large else None
        if chunks is not None:
            if _stream_json(store, chunks, limit or None) and exit_code:
                raise Exit(1)
            return
        rows, shown = chosen.page(store, limit if limit is not None else (None if json else 100), after)
        if json:  # what the table shows: the preview, the interrupt's question, the error and its node
            emit_json([{**t.to_json(), **shown[t.thread_id].to_json()} for t in rows])
            if exit_code and rows:
                raise Exit(1)
            return
        wanted, where = chosen.status, chosen.where
        if not (plain_pipe() and _write_plain(rows, store.label, match, wanted, shown, bool(where))):
            from statectl.render.tables import threads_table

            emit(threads_table(rows, store.label, match, wanted, shown, filtered=bool(where)))
        print_notes(store)
    if exit_code and rows:
        raise Exit(1)


def _write_plain(rows: Any, label: str, match: str | None, wanted: Any, shown: Any, filtered: bool) -> bool:
    """The table into a pipe, without Rich (`render.pipe`); False where Rich must lay it out."""
    from statectl.render.pipe import threads_text

    text = threads_text(rows, label, match, wanted, shown, filtered)
    if text is None:
        return False
    write_plain(text)
    return True


def _stream_json(store: Any, chunks: Any, limit: int | None = None) -> bool:
    """`threads --json` of a whole store or a large page (at most `limit`), written as it is read
    (the same JSON array), a chunk of threads and their previews at a time: memory does not grow
    with the store or the page. Any thread?"""
    import itertools
    import sys

    from statectl.cli.output import Partial, json_bytes
    from statectl.core.listing import previewed

    chunks = iter(chunks)
    first: list = next(chunks, [])  # (an unknown --after is said before anything is written)
    out = sys.stdout.buffer
    out.write(b"[")
    with Partial("threads") as written:
        for chunk in itertools.chain([first], chunks):
            rows = chunk[: limit - written.count] if limit else chunk
            shown = previewed(store, rows)
            for t in rows:
                out.write(
                    (b"," if written.count else b"") + json_bytes({**t.to_json(), **shown[t.thread_id].to_json()})
                )
                written.wrote()
            if limit and written.count >= limit:
                break
    out.write(b"]\n")
    return written.count > 0
