"""What the commands share: the options written once (`Annotated` aliases), shell completion,
and opening the store a command names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from statectl.cli.output import error_text

if TYPE_CHECKING:
    from statectl.store import Store


class Root:
    db: str | None = None
    """`statectl --db X COMMAND`: the database for the command (its own --db wins)."""


def source_spec(db: str | None) -> str:
    """What --db (else `statectl --db`, $STATECTL_DB, ...) names, as resolved: to tell a
    destination that is the source itself."""
    from statectl.sources import resolve_db

    return resolve_db(db if db is not None else Root.db)


def open_store(db: str | None, graph: str | None = None, python: str | None = None) -> Store:
    """The store --db names (else `statectl --db`, $STATECTL_DB, ...), with the settings of this
    command; a graph that does not describe a thread is one line on stderr."""
    import statectl

    store = statectl.open(db if db is not None else Root.db, graph=graph, python=python)
    # where the graph does not describe a thread: one line on stderr, the rest still shown
    store.on_graph_note = lambda note: typer.echo(f"statectl: note: {error_text(note)}", err=True)
    return store


def completing(fn: Any) -> Any:
    """A shell-completion callback that never fails the shell (a wrong --db completes nothing)."""

    def complete(ctx: Any, incomplete: str) -> list[str]:
        params = dict(ctx.params)
        if params.get("thread_id") is None and ctx.args:  # (resilient parsing leaves it unparsed)
            params["thread_id"] = ctx.args[0]
        try:
            with open_store(params.get("db")) as store:
                found = [c for c in fn(store, params, incomplete) if c.startswith(incomplete)][:200]
        except Exception:
            return []
        return [w for w in found if w.isprintable()]  # (bash's quoting: typer_compat.quote_for_bash)

    # Typer reads a completion callback's parameters at every start, every command's: annotations
    # left strings (`from __future__ import annotations`) were compiled and evaluated each time
    complete.__annotations__ = {"ctx": Any, "incomplete": str, "return": list[str]}
    return complete


@completing
def complete_thread(store: Store, params: dict, incomplete: str) -> list[str]:
    return store.source.thread_ids(incomplete, 200)  # (SQLite, Postgres: the index alone)


@completing
def complete_ns(store: Store, params: dict, incomplete: str) -> list[str]:
    return store.namespaces(store.thread_id(params["thread_id"]))


@completing
def complete_checkpoint(store: Store, params: dict, incomplete: str) -> list[str]:
    view = store.view(params["thread_id"], params.get("ns") or "")
    return ["latest", *(r.checkpoint_id[-12:] for r in view.records)]


@completing
def complete_key(store: Store, params: dict, incomplete: str) -> list[str]:
    view = store.view(params["thread_id"], params.get("ns") or "")
    values = view.snapshot(view.records[0].checkpoint_id).values
    return sorted(values) if isinstance(values, dict) else []


Db = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="SQLite checkpoint file, statectl export, langgraph dev folder (.langgraph_api), "
        "postgresql:// URL or http(s):// LangGraph server (with --api-key KEY) "
        "(default: $STATECTL_DB, $DATABASE_URI, then "
        "./checkpoints.sqlite, ./langgraph.db or ./.langgraph_api).",
        show_default=False,
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
Full = Annotated[
    bool,
    typer.Option(
        "--full",
        help="Show long values whole (by default a text "
        "shows its first 400 characters, a list its first 200 items and "
        "a transcript its newest 200 messages).",
    ),
]
Python = Annotated[
    str | None,
    typer.Option(
        "--python",
        help="Load TARGET in this interpreter (the project's, e.g. .venv/bin/python), "
        "for a statectl installed on its own (pipx, uv tool). Default: statectl's own if it has "
        "LangGraph, else the active virtualenv's or ./.venv's.",
        show_default=False,
    ),
]
WriterPython = Annotated[
    str | None,
    typer.Option(
        "--python",
        help="The interpreter whose LangGraph writes (the project's, e.g. .venv/bin/python), "
        "for a statectl installed on its own (pipx, uv tool). Default: statectl's own if it has "
        "LangGraph, else the active virtualenv's or ./.venv's.",
        show_default=False,
    ),
]
"""`--python` of `copy`, which loads no graph."""
Graph = Annotated[
    str | None,
    typer.Option(
        "--graph",
        help="The app's graph (file.py:graph or module:graph), loaded as --python says: "
        "exact where the data alone must infer (a reducer's empty value before its first write, the "
        "order of tasks due together). Nothing of it runs on the data.",
        show_default=False,
    ),
]
Ns = Annotated[
    str, typer.Option("--ns", help="Checkpoint namespace (subgraph); '' is the root graph.", autocompletion=complete_ns)
]
Thread = Annotated[
    str, typer.Argument(help="The thread's id, or a unique prefix of it.", autocompletion=complete_thread)
]
Checkpoint = Annotated[
    str | None,
    typer.Argument(
        help="Checkpoint id, unique prefix or suffix, 'latest', or step number.",
        show_default=False,
        autocompletion=complete_checkpoint,
    ),
]


STEPS_OK = {"ignore_unknown_options": True}
"""Lets a negative step (`-1`, the input checkpoint) be a positional selector."""
