"""`statectl graph`: the graph as Mermaid or drawn in the terminal, with a thread's path."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from statectl.cli.options import (
    Db,
    Json,
    Ns,
    Python,
    open_store,
)
from statectl.cli.output import emit_json, make_console
from statectl.errors import StatectlError


def graph(
    target: Annotated[
        str | None,
        typer.Argument(
            help="file.py:graph or module:graph (without it: the graph inferred from --thread's history).",
            show_default=False,
        ),
    ] = None,
    db: Db = None,
    ns: Ns = "",
    thread: Annotated[str | None, typer.Option("--thread", help="Draw this thread's path on the graph.")] = None,
    xray: Annotated[bool, typer.Option("--xray", help="Inline subgraphs.")] = False,
    fmt: Annotated[
        str,
        typer.Option("--format", help="mermaid, md (a ```mermaid block for GitHub), or term (drawn in the terminal)."),
    ] = "mermaid",
    json: Json = False,
    python: Python = None,
) -> None:
    """The graph (Mermaid or terminal), with a thread's path.

    LangGraph's own nodes and edges; with --thread, the path the thread took."""
    if fmt not in ("mermaid", "md", "term"):
        raise StatectlError(f"unknown --format {fmt!r}", "use mermaid, md or term")
    if target is None and thread is None:
        raise StatectlError(
            "give a TARGET (file.py:graph) or --db DB --thread THREAD",
            "statectl graph agent.py:graph, or statectl graph --db checkpoints.sqlite --thread T",
        )
    from statectl.core import mermaid as core

    path = view = None
    if thread is not None:
        with open_store(db) as store:
            view = store.view(thread, ns)
            if target is None:
                if json:
                    emit_json(core.inferred_json(view))
                    return
                if fmt == "term":
                    path = core.thread_path(view, line_only=False)
                    term_graph(core.inferred_drawable(view, path), path, core.term_title(None, view))
                    return
                text = core.inferred(view)
            else:
                path = core.thread_path(view, deep=xray)
    if target is not None:
        from statectl.project.introspect import load_drawing

        data, text, nodes = load_drawing(target, python, xray, structure=json or fmt == "term")
        if fmt == "term" and not json:
            assert data is not None
            term_graph(data, path, core.term_title(target, view))
            return
        if json:
            assert data is not None
            emit_json({**data, "path": core.path_json(path)} if path is not None else data)
            return
        if path is not None:
            text = core.overlay(text, nodes, path)
    sys.stdout.write(core.fence(text) if fmt == "md" else text)


def term_graph(structure: dict, path: Any, title: str) -> None:
    from statectl.core import mermaid as core
    from statectl.render.graph_layout import LEGEND
    from statectl.render.graph_text import drawing_text, term

    drawing = term(structure, path)
    legend = LEGEND.split("   ", 1)[1] if path is not None else "┄ ▽ conditional edge"
    if path is not None and not path.recorded:
        legend = f"note: {core.no_steps(path)}\n{legend}"
    console = make_console()
    console.print(drawing_text(drawing, title, legend), crop=False, soft_wrap=True)
