"""`doctor --types`: the types a store's values name, and the serializer line for strict mode."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from statectl.core.types import (
    ALLOW,
    BAD_NAME,
    JS,
    JSON,
    LANGCHAIN,
    MISSING,
    NOT_A_CLASS,
    PICKLE,
    RUNS_CODE,
    SAFE,
    TypesReport,
    python_list,
)
from statectl.escape import escape

MEANING = {
    ALLOW: ("blocked", "yellow", "strict mode returns its raw data unless allowed_msgpack_modules lists it"),
    JSON: (
        "json",
        "yellow",
        "an lc record of the app's class: a plain dict in every mode, unless allowed_json_modules lists it",
    ),
    PICKLE: ("pickle", "yellow", "inside pickle_fallback values: loaded only with pickle_fallback=True"),
    RUNS_CODE: ("runs code", "bold red", "a callable that runs code: never list it; find who wrote these rows"),
    BAD_NAME: ("bad name", "bold red", "not a Python name (damaged or hostile data): nothing can load it"),
    MISSING: (
        "missing",
        "bold red",
        "the project has no such class: raw data in every mode; restore it, or statectl migrate --rename-class",
    ),
    NOT_A_CLASS: ("function", "bold red", "a function, not a class: loading calls it with the data; never list it"),
    SAFE: ("safe", "green", "in LangGraph's safe set: strict mode loads it"),
    LANGCHAIN: ("langchain", "green", "LangChain's own lc record: revived by LangChain"),
    JS: ("js", "cyan", "written by LangGraph.js, which revives its own records"),
}


def _one_line(text: str) -> str:
    return escape(text).replace("\n", "\\n").replace("\t", "\\t")


def types_view(report: TypesReport) -> RenderableType:
    """One row a type: its verdict, its name, how it is stored, values, threads (whole ids)."""
    lines: list[RenderableType] = []
    if report.types:
        table = Table(box=None, padding=(0, 1), show_edge=False)
        table.add_column("strict", no_wrap=True)
        longest = max(len(_one_line(t.dotted)) for t in report.types)
        table.add_column("type", overflow="fold", min_width=min(60, longest))
        table.add_column("stored as", no_wrap=True, style="dim")
        table.add_column("values", justify="right", no_wrap=True)
        table.add_column("threads", justify="right", no_wrap=True)
        table.add_column("first threads", overflow="fold")
        for t in report.types:
            word, style, _ = MEANING[t.verdict]
            more = f" and {t.threads - len(t.thread_ids)} more" if t.threads > len(t.thread_ids) else ""
            table.add_row(
                Text(word, style=style),
                Text(_one_line(t.dotted)),
                Text(", ".join(sorted(t.how))),
                f"{t.values:,}",
                f"{t.threads:,}",
                Text(", ".join(_one_line(x) for x in t.thread_ids) + more, style="dim"),
            )
        lines.append(table)
        lines.append(Text(""))
        for verdict in (ALLOW, MISSING, JSON, PICKLE, RUNS_CODE, NOT_A_CLASS, BAD_NAME):
            if report.of(verdict):
                word, style, meaning = MEANING[verdict]
                lines.append(Text(f"{word}: {meaning}", style=style))
    elif report.as_stored and not report.server_records:  # (values as data: a note says so)
        lines.append(Text("the stored values name no type but plain data", style="dim"))
    for note in report.notes:
        lines.append(Text(f"note: {_one_line(note)}", style="dim"))
    blocked = len(report.of(ALLOW))
    lines.append(
        Text(
            f"{report.threads:,} thread(s), {report.checkpoints:,} checkpoint(s), {report.values:,} value(s) of "
            f"{_one_line(report.label)}: {len(report.types)} type(s), {blocked} that strict mode would not load as "
            f"stored. Safe set: {_one_line(report.safe_from)}.",
            style="bold",
        )
    )
    if report.of(JSON):
        lines.append(Text(f"allowed_json_modules={_one_line(python_list(report.allowed_json_modules()))}", style="dim"))
    if blocked or report.needs_pickle():
        lines.append(Text("strict mode loads every thread with:", style="bold"))
        lines.append(Text(_one_line(report.serializer_line()), style="green"))
        lines.append(Text("(statectl doctor --types --format python prints it as Python)", style="dim"))
    return Group(*lines)
