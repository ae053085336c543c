"""The terminal drawing of a graph (`graph_layout.Drawing`) as Rich text: the thread's path in
colour (ran: green, next: yellow, waiting or failed: red, the selected step: cyan), the rest dim."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from statectl.core.mermaid import END, START, ThreadPath
from statectl.escape import escape
from statectl.render.graph_layout import Drawing, Mark, draw

STYLES = {
    "node:plain": "",
    "label:plain": "bold",
    "node:visited": "green",
    "label:visited": "bold green",
    "node:unvisited": "dim",
    "label:unvisited": "dim",
    "node:next": "bold yellow",
    "label:next": "bold yellow",
    "node:interrupted": "bold red",
    "label:interrupted": "bold red",
    "node:failed": "bold red",
    "label:failed": "bold red",
    "selected": "bold cyan",
    "edge": "dim",
    "edge:taken": "green",
    "legend": "dim",
    "title": "bold",
}


def drawing_text(drawing: Drawing, title: str | None = None, legend: str | None = None, plain: bool = False) -> Text:
    """One Text of the whole drawing (lines joined), styled by cell tag unless `plain`."""
    out = Text(no_wrap=True, overflow="ignore", end="")
    if title:
        out.append(title + "\n", style="" if plain else STYLES["title"])
    for chars, tags in zip(drawing.chars, drawing.tags, strict=True):
        line = "".join(chars).rstrip()
        run, style = "", None
        for ch, tag in zip(line, tags, strict=True):
            st = "" if plain or tag is None else STYLES.get(tag, "")
            if st != style and run:
                out.append(run, style=style or None)
                run = ""
            run, style = run + ch, st
        if run:
            out.append(run, style=style or None)
        out.append("\n")
    if legend:
        out.append(legend + "\n", style="" if plain else STYLES["legend"])
    return out


def term(structure: dict[str, Any], path: ThreadPath | None = None, ran: tuple[str, ...] = (), snap: Any = None) -> Any:
    """The graph drawn with box-drawing characters (`graph_layout.Drawing`): LangGraph's nodes and
    edges (`structure`, or `inferred_json`), with a thread's path on it — nodes that ran with
    their counts, edges taken — and `next`, waiting and failed nodes of the newest checkpoint, or
    of `snap` (a selected checkpoint) whose step ran the nodes `ran`."""
    nodes = [n["id"] if isinstance(n, dict) else n for n in structure["nodes"]]
    edges = [(e["source"], e["target"], bool(e.get("conditional"))) for e in structure["edges"]]
    marks: dict[str, Mark] = {}
    taken: set[tuple[str, str]] = set()
    if snap is not None:
        nxt, failed = set(snap.next), {t.name for t in snap.tasks if t.error is not None}
        waiting = {t.name for t in snap.tasks if t.interrupts}
    elif path is not None:
        nxt, failed, waiting = set(path.pending), set(path.failed), set(path.interrupted) - set(path.failed)
    else:
        nxt = failed = waiting = set()
    for n in nodes:
        visits = path.visits.get(n, 0) if path is not None and n not in (START, END) else 0
        if n in failed:
            state = "failed"
        elif n in waiting:
            state = "interrupted"
        elif n in nxt:
            state = "next"
        elif path is None or not path.recorded:
            state = "plain"
        else:
            state = "visited" if n in path.visits or (n == START and path.visits) else "unvisited"
        marks[n] = Mark(state, visits, selected=n in ran)
    if path is not None:
        taken = set(path.edges)
    # (names from the data: escaped before the boxes are measured)
    return draw(nodes, edges, marks, taken, names={n: escape(n) for n in nodes})
