"""`statectl doctor`: what is wrong with a store, with an exit code for CI."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from typing import Annotated, Any

import typer

from statectl.cli.options import Db, Json, Python, open_store
from statectl.cli.output import emit, emit_json
from statectl.errors import StatectlError

LEVELS = ("warning", "error")
STALE = "7d"
"""Without --older-than, threads waiting or failed for longer than this are notes."""


def doctor(
    db: Db = None,
    json: Json = False,
    fail_on: Annotated[
        str,
        typer.Option(
            "--fail-on",
            help="Exit 1 when a finding is at least this severe: warning or error.",
            show_default=True,
        ),
    ] = "error",
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            help="Threads waiting on an interrupt or failed since before this (2h, 30d, a date) are warnings "
            "(without it: notes, past 7d).",
            show_default=False,
        ),
    ] = None,
    graph: Annotated[
        str | None,
        typer.Option(
            "--graph",
            help="The app's graph (file.py:graph): each thread's newest state is checked against its schema "
            "(what `schema TARGET --all-threads` checks).",
            show_default=False,
        ),
    ] = None,
    python: Python = None,
    no_plan: Annotated[
        bool, typer.Option("--no-plan", help="Do not plan a prune of the largest threads (faster on big stores).")
    ] = False,
    types: Annotated[
        bool,
        typer.Option(
            "--types",
            help="List every type the stored values name, with the values and threads that name it, and what "
            "LangGraph's strict mode (LANGGRAPH_STRICT_MSGPACK=true) blocks; print the allowlist that loads them.",
        ),
    ] = False,
    format_: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="With --types: text, json, or python (the allowed_msgpack_modules=[...] argument and the "
            "JsonPlusSerializer(...) line).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """What is wrong with a store: integrity, load safety, operations.

    Integrity: ancestry that loops, parents that are gone (an error where a delta channel is
    replayed from them), rows that do not decode or that LangGraph's loader would reject, writes
    and blob versions no checkpoint holds, blob versions a checkpoint names that are gone. Load
    safety: every class the stored values name, looked up in the project's interpreter (--python;
    nothing is imported), with the threads whose values would fail to load or silently become a
    dict; with --graph, each thread's newest state against the graph's schema. Operations: threads
    waiting or failed since before --older-than (warnings; without it, notes past 7d), a channel
    that outgrows the rest, the largest threads' prunable bytes. Exit 0 healthy, 1 with a finding
    at --fail-on or worse.

    With --types: the types view instead (exit 0): every type the values name, and the
    serializer that makes strict mode load every thread."""
    if format_ is not None and not types:
        raise StatectlError("--format goes with --types (say --json for doctor's findings)")
    if json and format_ not in (None, "json"):
        raise StatectlError(f"--json and --format {format_}: say one")
    if types:
        _types(db, python, "json" if json else format_ or "text")
        return
    if fail_on not in LEVELS:
        raise StatectlError(f"--fail-on {fail_on!r}: say warning or error")
    from statectl.core import doctor as core
    from statectl.sources.status import parse_when

    try:
        cutoff = parse_when(older_than or STALE)
    except ValueError:
        raise StatectlError(f"--older-than {older_than!r} is neither a duration (2h, 30d) nor a date") from None
    schema = None
    if graph is not None:
        from statectl.project.introspect import load_schema

        schema = load_schema(graph, python)
    options = core.Options(
        older_than=cutoff,
        stale=core.INFO if older_than is None else core.WARNING,
        classes=_classes(python),
        schema=schema,
        plan=not no_plan,
    )
    from statectl.core.findings import Report
    from statectl.errors import OnlyMemoryStore

    try:
        opened = open_store(db)
    except OnlyMemoryStore:  # (a memory store in a file of its own: its checks alone)
        opened = None
    report = Report("", not_checked=["checkpoints: the database holds none, only a long-term memory store"])
    if opened is not None:
        with opened as store:
            report = _diagnosed(store, options, json)
    from statectl.cli.store import beside, now  # (the long-term memory store: its own checks)
    from statectl.core.memory_checks import memory_findings

    with beside(db) or nullcontext() as memory:
        if memory is not None:
            report.label = report.label or memory.label
            report.findings += memory_findings(memory, now())
    if json:
        emit_json(report.to_json())
    else:
        from statectl.render.doctor import doctor_view

        emit(doctor_view(report, fail_on))
    if report.at_least(fail_on):
        raise typer.Exit(1)


def _diagnosed(store: Any, options: Any, json: bool) -> Any:
    from statectl.core import doctor as core

    if sys.stderr.isatty() and not json:
        from statectl.render.progress import progress_bar

        total = store.count_threads()  # (counted from the index: not every thread summarised first)
        with progress_bar("checking", total) as advance:
            return core.diagnose(store, options, advance)
    return core.diagnose(store, options)


def _classes(python: str | None) -> Any:
    """The lookup of stored classes in the project's interpreter, or None where there is none
    (the report says load safety was not checked)."""
    from statectl.project.introspect import interpreter

    try:
        there = interpreter(python) or sys.executable
    except StatectlError:
        return None
    from statectl.project.classes import check_there

    def look(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        return check_there(there, pairs)[1]

    return look


FORMATS = ("text", "json", "python")


def _types(db: Any, python: str | None, fmt: str) -> None:
    """`doctor --types`: the types the values name, against the project's LangGraph's safe set."""
    if fmt not in FORMATS:
        raise StatectlError(f"--format {fmt!r}: say text, json or python")
    from statectl.core.types import stored_types
    from statectl.project.classes import safe_lookup

    safe, classes, where = safe_lookup(python)
    with open_store(db) as store:
        if sys.stderr.isatty() and fmt == "text":
            from statectl.render.progress import progress_bar

            with progress_bar("reading types", store.count_threads()) as advance:
                report = stored_types(store, safe, advance, classes)
        else:
            report = stored_types(store, safe, classes=classes)
    report.safe_from = where
    if fmt == "json":
        emit_json(report.to_json())
    elif fmt == "python":
        sys.stdout.write(report.python())
    else:
        from statectl.render.types import types_view

        emit(types_view(report))
