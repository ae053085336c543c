"""`statectl fork` and `statectl replay`: time travel on a copy (by default) or in place.

Both write through LangGraph's own `update_state` / `stream` on the user's compiled graph, in the
project's interpreter (`statectl.project.langgraph_runs`). With no `--to`, the thread is first copied into
a scratch SQLite file in the current folder (named, kept), so the source is only read.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from statectl.cli.options import (
    STEPS_OK,
    open_store,
    source_spec,
)
from statectl.cli.output import error_text
from statectl.errors import StatectlError

if TYPE_CHECKING:  # (the writes load only when a command writes: `threads` does not pay for them)
    from statectl.project.copy_fork_rerun import Target
    from statectl.project.launch import Writer

GraphTarget = Annotated[
    str | None,
    typer.Option(
        "--graph",
        help="Your graph (file.py:graph or module:graph): LangGraph's own update_state / "
        "stream run on it, with your reducers and nodes.",
        show_default=False,
    ),
]
To = Annotated[
    str | None,
    typer.Option(
        "--to",
        help="Write here (a SQLite file or postgresql:// URL; the thread is copied there "
        "first if it is not in it). Default: ./statectl-scratch.sqlite.",
        show_default=False,
    ),
]
InPlace = Annotated[
    bool,
    typer.Option("--in-place", help="Write into the source itself (SQLite or Postgres), after a confirmation."),
]
Resume = Annotated[
    str | None,
    typer.Option(
        "--resume",
        help="JSON: answer the interrupt waiting at the checkpoint with this value (Command(resume=...)). "
        "This runs the graph: the interrupted node continues with the answer.",
        show_default=False,
    ),
]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before writing in place.")]
AllowType = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-type",
        help="A class that reading the thread may build although your graph's state does not declare "
        "it (several allowed; one class each, no module.*). Only for data you trust: building a class runs its code.",
        show_default=False,
    ),
]


def prepare_target(
    db: str | None,
    thread: str,
    checkpoint: str | None,
    ns: str,
    to: str | None,
    in_place: bool,
    yes: bool,
    python: str | None,
    graph: str,
    allow: list[str] | None = None,
    **checks: Any,
) -> tuple[Target, Writer]:
    """Where to write, and a writer that loaded `graph` and made `checks` (`copy_fork_rerun.loaded`)
    once the thread and checkpoint resolved, before anything is asked or copied: a mistyped
    thread is said before the graph loads, and a graph that fails, or a stored value naming a
    type neither the graph nor `allow` (--allow-type) allows, writes nothing."""
    from dataclasses import replace

    from statectl.project.copy_fork_rerun import loaded, prepare

    writers = []
    allow = allowed_types(allow or [])

    def load(rows: Any) -> None:
        writers.append(loaded(python, graph, allow=allow, thread_id=thread, check=rows, **checks))

    try:
        with open_store(db) as store:
            target = prepare(
                store,
                source_spec(db),
                thread,
                checkpoint,
                ns,
                to,
                in_place,
                python,
                confirm=lambda question: confirm(question, yes),
                say=lambda line: typer.echo(f"statectl: {error_text(line)}", err=True),  # (a thread id is data)
                ready=load,
            )
    except BaseException:
        for writer in writers:
            writer.stop()
        raise
    return replace(target, allow=tuple(allow)), writers[0]


def allowed_types(names: list[str]) -> list[str]:
    import re

    for name in names:
        if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", name):
            raise StatectlError(
                f"--allow-type {name!r} is not module.Name",
                "name one class by its module and name, e.g. --allow-type myapp.models.Note",
            )
    return names


JSON_DEPTH = 200
"""How deep a value given as JSON (--set, --resume, --edit) may nest: the writer's request carries
it in JSON again, whose encoder stops at 255 levels."""


def json_arg(text: str, what: str) -> Any:
    """`text` as JSON (a `json.JSONDecodeError` is the caller's to word); nested deeper than
    `JSON_DEPTH` levels is one line."""
    import json

    too_deep = StatectlError(f"{what}: the JSON is nested deeper than {JSON_DEPTH} levels", "nothing written")
    try:
        value = json.loads(text)
    except RecursionError:
        raise too_deep from None
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > JSON_DEPTH:
            raise too_deep
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return value


def confirm(question: str, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise StatectlError(f"{question.rstrip('?')}: confirm with --yes (there is no terminal to ask)")
    if not typer.confirm(question, default=False):
        raise StatectlError("nothing written")


__all__ = ["STEPS_OK", "AllowType", "GraphTarget", "InPlace", "Resume", "To", "Yes", "json_arg", "prepare_target"]
