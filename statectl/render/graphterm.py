"""The terminal drawing of a graph (`termgraph.Drawing`) as Rich text: the thread's path in
colour (ran: green, next: yellow, waiting or failed: red, the selected step: cyan), the rest dim."""

from __future__ import annotations

from rich.text import Text

from statectl.termgraph import Drawing

STYLES = {
    "node:plain": "", "label:plain": "bold",
    "node:visited": "green", "label:visited": "bold green",
    "node:unvisited": "dim", "label:unvisited": "dim",
    "node:next": "bold yellow", "label:next": "bold yellow",
    "node:interrupted": "bold red", "label:interrupted": "bold red",
    "node:failed": "bold red", "label:failed": "bold red",
    "selected": "bold cyan",
    "edge": "dim", "edge:taken": "green",
    "legend": "dim", "title": "bold",
}


def drawing_text(drawing: Drawing, title: str | None = None, legend: str | None = None,
                 plain: bool = False) -> Text:
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
