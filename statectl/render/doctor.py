"""`statectl doctor`: findings by severity, each with where and what to do."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from statectl.core.doctor import Report, sorted_findings

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def doctor_view(report: Report, fail_on: str) -> RenderableType:
    """One row a finding: severity, check, then where, what and what to do, wrapped in its column."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True, style="dim")
    grid.add_column()
    for f in sorted_findings(report.findings):
        body = Text()
        where = []
        if f.thread_id is not None:
            where.append(f"thread {f.thread_id}")
        if f.checkpoint_ns:
            where.append(f"ns {f.checkpoint_ns}")
        if f.checkpoint_id is not None:
            where.append(f"checkpoint {f.checkpoint_id}")
        if where:
            body.append(", ".join(where) + ": ", style="bold")
        body.append(f.message)
        if f.threads:
            more = f" and {f.count - len(f.threads)} more" if f.count > len(f.threads) else ""
            body.append(f"\nthreads: {', '.join(f.threads)}{more}", style="dim")
        if f.fix:
            body.append(f"\n→ {f.fix}", style="green")
        grid.add_row(Text(f.severity, style=STYLE[f.severity]), Text(f.check), body)
    lines: list[RenderableType] = [grid] if report.findings else []
    for note in report.not_checked:
        lines.append(Text(f"not checked: {note}", style="dim"))
    counts = {lvl: sum(f.severity == lvl for f in report.findings) for lvl in ("error", "warning", "info")}
    verdict = "healthy" if not report.at_least(fail_on) else f"findings at {fail_on} or worse"
    lines.append(
        Text(
            f"{report.threads:,} thread{'s' * (report.threads != 1)}, {report.checkpoints:,} "
            f"checkpoint{'s' * (report.checkpoints != 1)} of {report.label}: "
            f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} note(s) — {verdict}.",
            style="bold",
        )
    )
    return Group(*lines)
