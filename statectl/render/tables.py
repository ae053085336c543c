"""`statectl threads` and `statectl log` tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from statectl.model import ThreadPage, ThreadSummary
from statectl.render.columns import Col, PlainTable
from statectl.render.pipe import (
    STATUS_STYLE,
    count_cells,
    has_server,
    log_cells,
    log_columns,
    note_parts,
    preview_line,
    short_id,
    thread_columns,
    threads_title,
    when,
)
from statectl.render.safe import safe_text
from statectl.sources.status import uuid6_time

if TYPE_CHECKING:  # `threads` does not pay for the timeline's imports (state, diff, hashing)
    from statectl.core.preview import Preview
    from statectl.core.timeline import LogEntry

PREVIEW_STYLE = {"error": "red", "interrupt": "yellow", "input": ""}


def preview_cell(p: Preview | None) -> Text:
    """A thread's PREVIEW cell: the error (with the node that raised it), the interrupt's
    question, or the first user message, on one line."""
    if p is None:
        return Text("")
    return Text(preview_line(p), style=PREVIEW_STYLE.get(p.kind, ""))


def thread_cells(t: ThreadSummary, columns: dict[str, Col], preview: Preview | None = None) -> list[Text]:
    """A thread's cells for `columns` (`thread_columns`), escaped: measured as they are shown."""
    checkpoints, namespaces, step = count_cells(t)
    cells = {
        "thread": Text(t.thread_id),
        "status": Text(t.status, style=STATUS_STYLE.get(t.status, "")),
        "checkpoints": Text(checkpoints, justify="right"),
        "ns": Text(namespaces, justify="right"),
        "step": Text(step, justify="right"),
        "updated": Text(when(t.updated_at)),
        "server": Text(t.server_status or "", style="dim"),
        "graph": Text(t.graph_id or ""),
        "preview": preview_cell(preview),
    }
    return [safe_text(cells[key]) for key in columns]


def threads_table(
    threads: ThreadPage,
    label: str,
    match: str | None = None,
    status: frozenset[str] | None = None,
    previews: dict[str, Preview] | None = None,
    filtered: bool = False,
) -> PlainTable:
    """The threads table (a pipe gets the same lines from `render.pipe.threads_text`)."""
    cols = thread_columns(has_server(threads), previews is not None)
    table = PlainTable(threads_title(threads, label, match, status, filtered), list(cols.values()))
    for t in threads:
        p = None if previews is None else previews.get(t.thread_id)
        cells = thread_cells(t, cols, p)
        table.add_row(*cells, under=preview_cell(p) if p is not None and p.kind in ("error", "interrupt") else None)
    return table


def log_table(entries: list[LogEntry], title: str, local: bool = False, plain: bool = False) -> PlainTable:
    """`log`'s table; `plain`: for a pipe or a file (`PlainTable.add_plain_row`: the same lines,
    no Text made for its 7 cells a row: on a long thread, a third of `log`'s own time)."""
    table = PlainTable(title, log_columns(local))
    if plain:
        for e in entries:
            table.add_plain_row(*log_cells(e, local))
        return table
    for e in entries:
        r = e.record
        table.add_row(
            "" if r.step is None else str(r.step),
            r.source or "",
            Text(short_id(r.checkpoint_id), style="dim"),
            when(uuid6_time(r.checkpoint_id), local),
            ", ".join(e.ran),
            ", ".join(e.changed),
            entry_notes(e, count=False),
            style=None if e.on_latest_line else "dim",
            under=entry_notes(e, count=False, reasons=True),
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


def entry_notes(
    e: LogEntry, short: bool = False, whole: bool = False, count: bool = True, reasons: bool = False
) -> Text:
    """Errors, interrupts, branch points, subgraph runs (`short`: by node name, not namespace;
    `whole`: errors and interrupt values not folded, for a caller that fits them itself; `count`:
    False where a fold is not worth a note, in a column that may be shortened or left out;
    `reasons`: only errors, interrupts and branch points, what a narrow log keeps under a row)."""
    notes = Text()
    for part, style in note_parts(e, short, whole, count, reasons):
        notes.append(part, style=style)
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
