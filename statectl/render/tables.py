"""`statectl threads` and `statectl log` tables."""

from __future__ import annotations

import os
from datetime import datetime
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Span, Text

from statectl.model import ThreadPage, ThreadSummary
from statectl.render import fold
from statectl.sources.status import uuid6_time

if TYPE_CHECKING:  # `threads` does not pay for the timeline's imports (state, diff, hashing)
    from statectl.core.timeline import LogEntry

STATUS_STYLE = {"done": "green", "interrupted": "bold yellow", "error": "bold red", "pending": "cyan"}


def when(iso: str | None, local: bool = False) -> str:
    """`2026-11-22 15:44:48` (UTC, or with `local` the local time zone)."""
    if not iso:
        return ""
    try:
        when = datetime.fromisoformat(iso)
        return (when.astimezone() if local and when.tzinfo else when).strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return iso


class PlainTable:
    """Aligned columns without borders (like kubectl and git): a Table costs ~1 ms a row to
    measure and render, this costs a string join, and its lines are easy to grep and cut."""

    def __init__(self, title: str, headers: list[str], right: tuple[int, ...] = (), flex: tuple[int, ...] = ()) -> None:
        self.title, self.headers, self.right, self.flex = title, headers, set(right), flex
        self.rows: list[tuple[list[Text], str | None]] = []

    def add_row(self, *cells: Text | str, style: str | None = None) -> None:
        self.rows.append(([c if isinstance(c, Text) else Text(c) for c in cells], style))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        gap = 2
        widths = [max([cell_len(h)] + [cell_len(r[0][i].plain) for r in self.rows]) for i, h in enumerate(self.headers)]
        # In a terminal, flexible columns give way to fit its width; into a pipe or a file (no
        # terminal, no COLUMNS), every cell is whole: grep and cut must not meet an ellipsis.
        natural = not console.is_terminal and "COLUMNS" not in os.environ
        over = 0 if natural else sum(widths) + gap * (len(widths) - 1) - options.max_width
        floor = {i: max(6, cell_len(self.headers[i])) for i in self.flex}
        while over > 0:  # take from the widest flexible column first, down to its header's width
            i = max(self.flex, key=lambda j: widths[j] - floor[j], default=None)
            if i is None or widths[i] <= floor[i]:
                break
            widths[i] -= 1
            over -= 1
        if self.title:  # (into a pipe: one line, as the rows)
            yield Text(self.title, style="bold", no_wrap=natural, overflow="ignore" if natural else None)
        out = Text()
        header = [Text(h.upper(), style="bold dim") for h in self.headers]
        last = len(widths) - 1
        for cells, style in [(header, None), *self.rows] if self.rows else []:  # no rows: no header
            parts: list[Text | str] = []
            for i, cell in enumerate(cells):
                size = cell_len(cell.plain)
                if size > widths[i]:
                    cell = cell.copy()
                    cell.truncate(widths[i], overflow="ellipsis")
                    size = widths[i]
                pad = " " * (widths[i] - size)
                if i:
                    parts.append(" " * gap)
                if i in self.right:
                    parts.append(pad)
                parts.append(cell)
                if i not in self.right and i < last:
                    parts.append(pad)
            while parts and not str(parts[-1]).strip():  # no trailing blanks (empty last columns)
                parts.pop()
            if parts and isinstance(parts[-1], Text) and parts[-1].plain.endswith(" "):
                parts[-1] = parts[-1].copy()
                parts[-1].rstrip()
            start, first_span = len(out), len(out.spans)
            for part in parts:
                out.append_text(part) if isinstance(part, Text) else out.append(part)
            if style:  # under the cells' own styles, as a line's base style would be
                out.spans.insert(first_span, Span(start, len(out), style))
            out.append("\n")
        out.rstrip()
        out.no_wrap, out.overflow = True, "ignore" if natural else "ellipsis"
        yield out


PREVIEW_STYLE = {"error": "red", "interrupt": "yellow", "input": ""}
PREVIEW_MARK = {"error": "✖ ", "interrupt": "⏸ ", "input": ""}


def one_line(text: str, limit: int = 120) -> str:
    """Text on one line (runs of white space, newlines included, become one space), cut."""
    return fold(" ".join(text.split()), limit)


def count_cells(t: ThreadSummary) -> tuple[str, str, str]:
    """A thread's checkpoints, namespaces and step as its row shows them ("?": not counted)."""
    return (
        "?" if t.checkpoints is None else str(t.checkpoints),
        "?" if t.namespaces is None else str(t.namespaces),
        "" if t.step is None else str(t.step),
    )


def threads_table(
    threads: ThreadPage,
    label: str,
    match: str | None = None,
    status: frozenset[str] | None = None,
    previews: dict[str, tuple[str, str]] | None = None,
    filtered: bool = False,
) -> PlainTable:
    total, more = threads.total, threads.more
    where = f"matching {match!r} in {label}" if match else f"in {label}"
    if status:
        where = f"{' or '.join(s for s in STATUS_STYLE if s in status)} {where}"
    if filtered:
        where += " (filtered)"
    title = f"{total} thread{'s' * (total != 1)} {where}" if total is not None else f"threads {where}"
    if more:
        title += f" ({len(threads)} shown; next page: --after {threads[-1].thread_id}; all: --limit 0)"
    server = any(t.server_status is not None or t.graph_id is not None for t in threads)
    headers = ["thread", "status", "checkpoints", "ns", "step", "updated (UTC)"]
    headers += ["server", "graph"] if server else []
    headers += ["preview"] if previews is not None else []
    table = PlainTable(title, headers, right=(2, 3, 4), flex=(0, len(headers) - 1) if previews is not None else (0,))
    for t in threads:
        cells: list[Text | str] = [
            t.thread_id,
            Text(t.status, style=STATUS_STYLE.get(t.status, "")),
            *count_cells(t),
            when(t.updated_at),
        ]
        if server:  # a langgraph dev folder or server: its own status and the graph it ran
            cells += [Text(t.server_status or "", style="dim"), t.graph_id or ""]
        if previews is not None:
            kind, text = previews.get(t.thread_id, ("", ""))
            cells.append(Text(PREVIEW_MARK.get(kind, "") + one_line(text), style=PREVIEW_STYLE.get(kind, "")))
        table.add_row(*cells)
    return table


def short_id(checkpoint_id: str) -> str:
    """The distinguishing end of a UUIDv6 checkpoint id (its start is a shared timestamp)."""
    return checkpoint_id[-12:]


def log_table(entries: list[LogEntry], title: str, local: bool = False) -> PlainTable:
    table = PlainTable(
        title,
        ["step", "source", "checkpoint", "time (local)" if local else "time (UTC)", "ran", "changed", "notes"],
        right=(0,),
        flex=(4, 5, 6),
    )
    for e in entries:
        r = e.record
        table.add_row(
            "" if r.step is None else str(r.step),
            r.source or "",
            Text(short_id(r.checkpoint_id), style="dim"),
            when(uuid6_time(r.checkpoint_id), local),
            ", ".join(e.ran),
            ", ".join(e.changed),
            entry_notes(e),
            style=None if e.on_latest_line else "dim",
        )
    return table


def oneline_table(entries: list[LogEntry], local: bool = False) -> Text:
    """`log --oneline`: short id, step, source, what ran, errors and interrupts; no header."""
    out = Text()
    for e in entries:
        r = e.record
        out.append(short_id(r.checkpoint_id), style="yellow")
        out.append(f" {'?' if r.step is None else r.step:>3} {r.source or '':<6} ")
        out.append(when(uuid6_time(r.checkpoint_id), local)[5:], style="dim")
        if e.ran:
            out.append(" " + ", ".join(e.ran), style="bold")
        notes = entry_notes(e, short=True)
        if notes:
            out.append(" ")
            out.append_text(notes)
        out.rstrip()
        out.append("\n")
    out.rstrip()
    out.no_wrap = True
    return out


def entry_notes(e: LogEntry, short: bool = False, whole: bool = False) -> Text:
    """Errors, interrupts, branch points, subgraph runs (`short`: by node name, not namespace;
    `whole`: errors and interrupt values not folded, for a caller that fits them itself)."""
    from statectl.core.timeline import run_node

    notes = Text()
    for err in e.errors:
        notes.append(f"error: {err if whole else fold(err, 70)} ", style="bold red")
    for intr in e.interrupts:
        notes.append(f"interrupt: {intr if whole else fold(intr, 60)} ", style="bold yellow")
    if e.children > 1:
        notes.append(f"⑂ {e.children} branches ", style="magenta")
    for ns in e.subgraphs:
        notes.append(f"⤷ {run_node(ns) if short else ns} ", style="cyan")
    if e.record.parent_checkpoint_id is None and e.record.step not in (None, -1):
        notes.append("first saved checkpoint ", style="dim")  # durability='exit', a shallow saver
    if not e.on_latest_line:
        notes.append("off-branch", style="dim")
    notes.rstrip()
    return notes


def log_line(e: LogEntry, local: bool = False) -> Text:
    """One log entry as a heading line (for `log -p`, where each is followed by its diff)."""
    r = e.record
    line = Text.assemble(
        ("step " + ("?" if r.step is None else str(r.step)), "bold"),
        "  ",
        (r.source or "", "bold blue"),
        "  ",
        (r.checkpoint_id, "dim"),
        "  ",
        when(uuid6_time(r.checkpoint_id), local),
    )
    if e.ran:
        line.append("  ran: ", style="dim")
        line.append(", ".join(e.ran), style="bold")
    notes = entry_notes(e)
    if notes:
        line.append("  ")
        line.append_text(notes)
    return line
