"""`statectl threads` and `statectl log` tables."""

from __future__ import annotations

from datetime import datetime

from rich.table import Table
from rich.text import Text

from statectl.model import ThreadSummary
from statectl.render.values import fold
from statectl.status import uuid6_time
from statectl.timeline import LogEntry

STATUS_STYLE = {"done": "green", "interrupted": "bold yellow", "error": "bold red", "pending": "cyan"}


def _when(iso: str | None) -> str:
    if not iso:
        return ""
    try:
        return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return iso


def threads_table(threads: list[ThreadSummary], label: str, total: int | None = None) -> Table:
    total = len(threads) if total is None else total
    more = f" (newest {len(threads)} shown; --limit 0 for all)" if total > len(threads) else ""
    table = Table(title=f"{total} threads in {label}{more}", title_justify="left", header_style="bold")
    table.add_column("thread", overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("checkpoints", justify="right")
    table.add_column("ns", justify="right")
    table.add_column("step", justify="right")
    table.add_column("updated (UTC)", no_wrap=True)
    for t in threads:
        table.add_row(t.thread_id, Text(t.status, style=STATUS_STYLE.get(t.status, "")),
                      str(t.checkpoints), str(t.namespaces), "" if t.step is None else str(t.step),
                      _when(t.updated_at))
    return table


def short_id(checkpoint_id: str) -> str:
    """The distinguishing end of a UUIDv6 checkpoint id (its start is a shared timestamp)."""
    return checkpoint_id[-12:]


def log_table(entries: list[LogEntry], title: str) -> Table:
    table = Table(title=title, title_justify="left", header_style="bold")
    table.add_column("step", justify="right")
    table.add_column("source")
    table.add_column("checkpoint", style="dim", no_wrap=True)
    table.add_column("time", no_wrap=True)
    table.add_column("ran", overflow="fold")
    table.add_column("changed", overflow="fold")
    table.add_column("notes")
    for e in entries:
        r = e.record
        table.add_row("" if r.step is None else str(r.step), r.source or "", short_id(r.checkpoint_id),
                      _when(uuid6_time(r.checkpoint_id))[11:], ", ".join(e.ran), ", ".join(e.changed),
                      _notes(e), style=None if e.on_latest_line else "dim")
    return table


def _notes(e: LogEntry) -> Text:
    notes = Text()
    for err in e.errors:
        notes.append(f"error: {fold(err, 70)} ", style="bold red")
    for intr in e.interrupts:
        notes.append(f"interrupt: {fold(intr, 60)} ", style="bold yellow")
    if e.children > 1:
        notes.append(f"⑂ {e.children} branches ", style="magenta")
    if not e.on_latest_line:
        notes.append("(off the latest branch)", style="dim")
    return notes


def log_line(e: LogEntry) -> Text:
    """One log entry as a heading line (for `log -p`, where each is followed by its diff)."""
    r = e.record
    line = Text.assemble(("step " + ("?" if r.step is None else str(r.step)), "bold"), "  ",
                         (r.source or "", "bold blue"), "  ", (r.checkpoint_id, "dim"), "  ",
                         _when(uuid6_time(r.checkpoint_id)))
    if e.ran:
        line.append("  ran: ", style="dim")
        line.append(", ".join(e.ran), style="bold")
    notes = _notes(e)
    if notes:
        line.append("  ")
        line.append_text(notes)
    return line
