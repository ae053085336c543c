"""The threads and log tables and `log --oneline` as a pipe or a file gets them, made without
importing Rich: `statectl threads | grep` pays for no layout engine it does not use (issue 55:
Rich's console, text and styles were a third of the command's start-up). The same lines as
`PlainTable` and Rich print there (tests compare the two); the column declarations (`Col`), the
tables' cells and a log entry's notes live here, for both."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from statectl.core.js import js_time
from statectl.escape import escape
from statectl.model import Record, record
from statectl.render import Limits, fold
from statectl.sources.status import uuid6_time

if TYPE_CHECKING:
    from statectl.core.preview import Preview
    from statectl.core.timeline import LogEntry
    from statectl.model import ThreadPage, ThreadSummary

ID, TEXT, TIME, COUNT, FIXED = "id", "text", "time", "count", "fixed"
GAP = 2
CHUNK = 500
"""Rows a chunk (as `PlainTable.CHUNK`: each chunk's end is trimmed alike)."""
STATUS_STYLE = {"done": "green", "interrupted": "bold yellow", "error": "bold red", "pending": "cyan"}
PREVIEW_MARK = {"error": "✖ ", "interrupt": "⏸ ", "input": ""}
_DROPPED = dict.fromkeys((7, 8, 11, 12, 13))
"""What Rich's `Text` drops from its text (rich.control.STRIP_CONTROL_CODES: a bell, a backspace,
a vertical tab, a form feed, a carriage return); the rest of the controls are shown escaped."""


@record
class Col(Record):
    """A table's column: what it holds (`kind`, render.columns says how each gives way)."""

    header: str
    kind: str = FIXED
    right: bool = False
    under: bool = False
    """A TEXT column whose rows' reasons (`PlainTable.add_row(under=...)`) go under their rows
    when it is left out."""


def when(iso: str | None, local: bool = False) -> str:
    """`2026-11-22 15:44:48` (UTC, or with `local` the local time zone)."""
    if not iso:
        return ""
    try:
        when = datetime.fromisoformat(iso)
        return (when.astimezone() if local and when.tzinfo else when).strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return iso


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


def preview_line(p: Preview) -> str:
    """A thread's PREVIEW cell's text: the error (with the node that raised it), the interrupt's
    question, or the first user message, on one line."""
    text = f"{p.node}: {p.text}" if p.kind == "error" and p.node else p.text
    return PREVIEW_MARK.get(p.kind, "") + one_line(text)


def thread_columns(server: bool = False, preview: bool = True) -> dict[str, Col]:
    """The columns of a threads table, by key: `statectl threads`, the TUI's threads screen;
    `server`: a langgraph dev folder's or a server's own status and the graph it ran."""
    cols = {
        "thread": Col("thread", ID),
        "status": Col("status"),
        "checkpoints": Col("checkpoints", COUNT, right=True),
        "ns": Col("ns", COUNT, right=True),
        "step": Col("step", FIXED, right=True),
        "updated": Col("updated (UTC)", TIME),
    }
    if server:
        cols |= {"server": Col("server"), "graph": Col("graph", ID)}
    if preview:
        cols["preview"] = Col("preview", TEXT, under=True)
    return cols


def threads_title(
    threads: ThreadPage, label: str, match: str | None, status: frozenset[str] | None, filtered: bool
) -> str:
    """The line above a threads table: how many, where, and the next page's `--after`."""
    total, more = threads.total, threads.more
    where = f"matching {match!r} in {label}" if match else f"in {label}"
    if status:
        where = f"{' or '.join(s for s in STATUS_STYLE if s in status)} {where}"
    if filtered:
        where += " (filtered)"
    title = f"{total} thread{'s' * (total != 1)} {where}" if total is not None else f"threads {where}"
    if more:
        title += f" ({len(threads)} shown; next page: --after {threads[-1].thread_id}; all: --limit 0)"
    return title


def has_server(threads: Sequence[ThreadSummary]) -> bool:
    """Whether the table shows a server's own status and graph columns."""
    return any(t.server_status is not None or t.graph_id is not None for t in threads)


def threads_text(
    threads: ThreadPage,
    label: str,
    match: str | None = None,
    status: frozenset[str] | None = None,
    previews: dict[str, Preview] | None = None,
    filtered: bool = False,
) -> str | None:
    """`render.tables.threads_table` as a pipe gets it: its lines, each ending in a newline, or
    None where Rich must lay it out (a tab, which Rich expands to the next stop)."""
    cols = thread_columns(has_server(threads), previews is not None)
    rows = []
    for t in threads:
        checkpoints, namespaces, step = count_cells(t)
        p = None if previews is None else previews.get(t.thread_id)
        cells = {
            "thread": t.thread_id,
            "status": t.status,
            "checkpoints": checkpoints,
            "ns": namespaces,
            "step": step,
            "updated": when(t.updated_at),
            "server": t.server_status or "",
            "graph": t.graph_id or "",
            "preview": "" if p is None else preview_line(p),
        }
        rows.append([shown(cells[key]) for key in cols])
    return table_text(shown(threads_title(threads, label, match, status, filtered)), list(cols.values()), rows)


def writer(metadata: dict[str, Any], ts: object = None) -> str | None:
    """The LangGraph (and LangGraph API server) versions that wrote a checkpoint, where its
    metadata records them (langgraph dev and LangGraph Platform runs do); LangGraph.js, where
    the checkpoint's time `ts` is written as JavaScript writes it."""
    if js_time(ts):
        return "LangGraph.js"
    parts = [
        f"{name} {metadata[key]}"
        for key, name in (("langgraph_version", "langgraph"), ("langgraph_api_version", "langgraph-api"))
        if isinstance(metadata.get(key), str)
    ]
    return ", ".join(parts) or None


def short_id(checkpoint_id: str) -> str:
    """The distinguishing end of a UUIDv6 checkpoint id (its start is a shared timestamp)."""
    return checkpoint_id[-12:]


def log_columns(local: bool = False) -> list[Col]:
    """`log`'s table's columns."""
    return [
        Col("step", FIXED, right=True),
        Col("source"),
        Col("checkpoint", ID),
        Col("time (local)" if local else "time (UTC)", TIME),
        Col("ran", ID),
        Col("changed", ID),
        Col("notes", TEXT, under=True),
    ]


def log_cells(e: LogEntry, local: bool = False) -> list[str]:
    """A log entry's row as plain text (its notes not counted as cut: the column may be left out)."""
    r = e.record
    return [
        "" if r.step is None else str(r.step),
        r.source or "",
        short_id(r.checkpoint_id),
        when(uuid6_time(r.checkpoint_id), local),
        ", ".join(e.ran),
        ", ".join(e.changed),
        "".join(part for part, _style in note_parts(e, count=False)).rstrip(),
    ]


def log_text(entries: list[LogEntry], title: str, local: bool = False) -> str | None:
    """`render.tables.log_table` as a pipe gets it (None where a tab leaves it to Rich)."""
    rows = [[shown(c) for c in log_cells(e, local)] for e in entries]
    return table_text(shown(title), log_columns(local), rows)


def oneline_text(entries: list[LogEntry], local: bool = False) -> str | None:
    """`render.tables.oneline_table` as a pipe gets it: the same text, the same steps (each piece
    rid of what Rich's Text drops, trailing blanks taken off where it takes them off); None where
    a tab leaves it to Rich."""
    out = ""
    for e in entries:
        r = e.record
        out += _kept(short_id(r.checkpoint_id))
        out += _kept(f" {'?' if r.step is None else r.step:>3} {r.source or '':<6} ")
        out += _kept(when(uuid6_time(r.checkpoint_id), local)[5:])
        if e.ran:
            out += _kept(" " + ", ".join(e.ran))
        notes = "".join(_kept(part) for part, _style in note_parts(e, short=True)).rstrip()
        if notes:
            out += " " + notes
        out = out.rstrip() + "\n"
    out = out.rstrip()
    if "\t" in out:
        return None
    return "".join(line.rstrip(" ") + "\n" for line in escape(out).split("\n"))


def note_parts(
    e: LogEntry, short: bool = False, whole: bool = False, count: bool = True, reasons: bool = False
) -> list[tuple[str, str]]:
    """A log entry's notes as (text, style) parts, before the trailing blank is taken off: errors,
    interrupts, branch points, subgraph runs (`render.tables.entry_notes` says what each flag does)."""
    from statectl.core.timeline import run_node

    parts = []
    for n, err in enumerate(e.errors):
        node = e.failed[n] if n < len(e.failed) else "?"
        parts.append((f"error in {node}: {err if whole else Limits.shorten(err, 70, count)} ", "bold red"))
    for intr in e.interrupts:
        parts.append((f"interrupt: {intr if whole else Limits.shorten(intr, 60, count)} ", "bold yellow"))
    if e.unchanged and not short and not reasons:
        parts.append((f"written, unchanged: {', '.join(e.unchanged)} ", "dim"))
    if e.children > 1:
        parts.append((f"⑂ {e.children} branches ", "magenta"))
    if reasons:
        return parts
    for ns in e.subgraphs:
        parts.append((f"⤷ {run_node(ns) if short else ns} ", "cyan"))
    if e.record.parent_checkpoint_id is None and e.record.step not in (None, -1):
        parts.append(("first saved checkpoint ", "dim"))  # durability='exit', a shallow saver
    if not e.on_latest_line:
        parts.append(("off-branch", "dim"))
    return parts


def _kept(text: str) -> str:
    """What Rich's Text keeps of a piece appended to it."""
    return text.translate(_DROPPED)


def shown(text: str) -> str:
    """A cell as a pipe shows it: what Rich's Text drops dropped, the other controls escaped."""
    return escape(text.translate(_DROPPED))


DRAWN = "⏸⑂✖⤷─│└├╭╮╯╰•…→◐☐☑✗"
"""The characters statectl draws into a pipe (marks, guides, a box, an ellipsis): one cell each
in every Unicode version Rich measures by (tests/test_startup.py holds it)."""
_UNDRAWN = dict.fromkeys(map(ord, DRAWN))


def width(text: str) -> int:
    """Terminal cells, as Rich's `cell_len` counts them. Without loading rich.cells and its
    Unicode table (~3 ms a start, issue 55) where each character is one cell: printable ASCII,
    the printable Latin up to U+02FF (which Rich counts one a character without its table) and
    statectl's own drawn characters. Anything else (wide, combining, joined, a control) is
    measured by Rich itself."""
    if text.isascii():
        if text.isprintable():
            return len(text)
    elif (rest := text.translate(_UNDRAWN)).isprintable() and (not rest or max(rest) < "\u0300"):
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def table_text(title: str, cols: list[Col], rows: list[list[str]]) -> str | None:
    """A table's lines into a pipe (`PlainTable` there: nothing given way, every cell whole),
    the cells already `shown`; None where one holds a tab."""
    if "\t" in title or any("\t" in c for cells in rows for c in cells):
        return None
    out = [title] if title else []
    if rows:
        widths = [width(c.header) for c in cols]
        for cells in rows:
            for i, cell in enumerate(cells):
                widths[i] = max(widths[i], width(cell))
        chunk = [_row(cols, [c.header.upper() for c in cols], widths)]
        for n, cells in enumerate(rows, 1):
            chunk.append(_row(cols, cells, widths))
            if n % CHUNK == 0 and n < len(rows):
                out.append("\n".join(chunk).rstrip())
                chunk = []
        out.append("\n".join(chunk).rstrip())
    return "".join(line.rstrip(" ") + "\n" for part in out for line in part.split("\n"))


def _row(cols: list[Col], cells: list[str], widths: list[int]) -> str:
    """One row's line: as `PlainTable._plain_row`."""
    last = len(cells) - 1
    parts: list[str] = []
    for i, cell in enumerate(cells):
        pad = " " * (widths[i] - width(cell))
        if i:
            parts.append(" " * GAP)
        if cols[i].right:
            parts.append(pad)
        parts.append(cell)
        if not cols[i].right and i != last:
            parts.append(pad)
    while parts and not parts[-1].strip():
        parts.pop()
    if parts and parts[-1].endswith(" "):
        parts[-1] = parts[-1].rstrip()
    return "".join(parts)
