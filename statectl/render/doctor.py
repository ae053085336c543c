"""`statectl doctor`: findings by severity, each with where and what to do."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from statectl.core.doctor import Report, sorted_findings

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def doctor_view(report: Report, fail_on: str) -> RenderableType:
    lines: list[RenderableType] = []
    for f in sorted_findings(report.findings):
        where = []
        if f.thread_id is not None:
            where.append(f"thread {f.thread_id}")
        if f.checkpoint_ns:
            where.append(f"ns {f.checkpoint_ns}")
        if f.checkpoint_id is not None:
            where.append(f"checkpoint {f.checkpoint_id}")
        line = Text.assemble((f"{f.severity:<8}", STYLE[f.severity]), (f"{f.check:<11}", "dim"))
        if where:
            line.append(", ".join(where) + ": ", style="bold")
        line.append(f.message)
        lines.append(line)
        if f.threads:
            more = f" and {f.count - len(f.threads)} more" if f.count > len(f.threads) else ""
            lines.append(Text(f"{'':19}threads: {', '.join(t for t in f.threads)}{more}", style="dim"))
        if f.fix:
            lines.append(Text(f"{'':19}→ {f.fix}", style="green"))
    for note in report.not_checked:
        lines.append(Text(f"not checked: {note}", style="dim"))
    counts = {lvl: sum(f.severity == lvl for f in report.findings) for lvl in ("error", "warning", "info")}
    verdict = "healthy" if not report.at_least(fail_on) else f"findings at {fail_on} or worse"
    lines.append(
        Text(
            f"{report.threads:,} threads, {report.checkpoints:,} checkpoints of {report.label}: "
            f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} note(s) — {verdict}.",
            style="bold",
        )
    )
    return Group(*lines)
