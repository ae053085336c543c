"""`statectl doctor`: findings by severity, each with where and what to do."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from statectl.core.doctor import Finding, Report, sorted_findings
from statectl.escape import escape

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def one_line(text: str) -> str:
    """`text` on one line: control characters escaped, a newline and a tab too (data can hold
    them: a thread id's newline would start what reads as another finding)."""
    return escape(text).replace("\n", "\\n").replace("\t", "\\t")


class FindingBody:
    """Where, what and what to do of one finding, as one block: where and what on one line when
    they fit the width, else where on its own lines (its ids whole: folded onto further lines,
    never cut) and what below it, wrapped at words; the threads and the fix under them."""

    def __init__(self, f: Finding) -> None:
        where = []
        if f.thread_id is not None:
            where.append(f"thread {one_line(f.thread_id)}")
        if f.checkpoint_ns:
            where.append(f"ns {one_line(f.checkpoint_ns)}")
        if f.checkpoint_id is not None:
            where.append(f"checkpoint {one_line(f.checkpoint_id)}")
        self.where = ", ".join(where) + ":" if where else ""
        self.message = one_line(f.message)
        self.threads = ""
        if f.threads:
            more = f" and {f.count - len(f.threads)} more" if f.count > len(f.threads) else ""
            self.threads = f"threads: {', '.join(one_line(t) for t in f.threads)}{more}"
        self.fix = f"→ {one_line(f.fix)}" if f.fix else ""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        if self.where and cell_len(self.where) + 1 + cell_len(self.message) > width:
            yield Text(self.where, style="bold", overflow="fold")
            yield Text(self.message, overflow="fold")
        else:
            head = Text(self.where + " " if self.where else "", style="bold", overflow="fold")
            head.append(self.message, style="not bold")
            yield head
        if self.threads:
            yield Text(self.threads, style="dim", overflow="fold")
        if self.fix:
            yield Text(self.fix, style="green", overflow="fold")


def doctor_view(report: Report, fail_on: str) -> RenderableType:
    """One row a finding: severity, check, then where, what and what to do as one block in its
    column."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True, style="dim")
    grid.add_column(overflow="fold")
    for f in sorted_findings(report.findings):
        grid.add_row(Text(f.severity, style=STYLE[f.severity]), Text(f.check), FindingBody(f))
    lines: list[RenderableType] = [grid] if report.findings else []
    for note in report.not_checked:
        lines.append(Text(f"not checked: {one_line(note)}", style="dim"))
    counts = {lvl: sum(f.severity == lvl for f in report.findings) for lvl in ("error", "warning", "info")}
    verdict = "healthy" if not report.at_least(fail_on) else f"findings at {fail_on} or worse"
    lines.append(
        Text(
            f"{report.threads:,} thread{'s' * (report.threads != 1)}, {report.checkpoints:,} "
            f"checkpoint{'s' * (report.checkpoints != 1)} of {one_line(report.label)}: "
            f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} note(s) — {verdict}.",
            style="bold",
        )
    )
    return Group(*lines)
