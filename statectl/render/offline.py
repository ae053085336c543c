"""`replay --offline`: the recording an offline run answers from (`--dry-run`), and where a run
left it (the divergence report), as Rich text."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from statectl.core.recording import Recording, content_text, word_diff


def _where(ns: str, step: int, node: str, new_step: int | None = None) -> str:
    moved = f" (the new branch's step {new_step})" if new_step is not None and new_step != step else ""
    return f"step {step}{moved}  {node}" + (f"  (in {ns})" if ns else "")


def recording_view(rec: Recording) -> RenderableType:
    """The calls the original branch recorded after the checkpoint, which an offline run answers,
    and the tasks it runs as code (if they call a model, it cannot answer them)."""
    lines: list[RenderableType] = [
        Text(
            f"offline: answered from the recording of the branch {rec.checkpoint_id} → {rec.end_checkpoint_id}",
            style="bold",
        )
    ]
    labels = {"model": "model answer", "tool": "tool result ", "resume": "resume      "}
    for call in rec.calls:
        line = Text("  ")
        line.append(f"{labels[call.kind]}  ", style="green" if call.kind == "model" else "cyan")
        line.append(_where(call.ns, call.step, call.node), style="bold")
        line.append("  ")
        line.append(call.preview(), style="dim")
        lines.append(line)
    for _, value in rec.inputs:
        lines.append(Text(f"  input         then the branch's next run, with {_one_line(value)}", style="dim"))
    wrote = [s for s in rec.silent if s.why != "wrote no state"]
    if wrote:
        lines.append(Text("run as code (no model answer or tool result recorded: a model they call is not answered):"))
        for s in wrote:
            lines.append(Text(f"  {_where(s.ns, s.step, s.node)}  {s.why}", style="yellow"))
    if not rec.calls:
        lines.append(Text("note: the branch recorded no model answer and no tool result", style="dim"))
    return Group(*lines)


def divergence_view(report: dict[str, Any]) -> RenderableType:
    """Where the run left the recording and why: the first message that differs, word by word."""
    new_step = report.get("new_step")
    where = _where(
        str(report.get("ns") or ""),
        int(report.get("step", -1)),
        str(report.get("node", "?")),
        int(new_step) if isinstance(new_step, int) else None,
    )
    why = str(report.get("why", "diverged"))
    head = Text("replay left the recording at ", style="bold red")
    head.append(where, style="bold")
    if why == "network":
        return Group(head, Text(str(report.get("detail", "")), style="red"))
    head.append(f": {why}", style="bold red")
    lines: list[RenderableType] = [head]
    if report.get("detail"):
        lines.append(Text(str(report["detail"])))
    if "index" in report:
        now, was = report.get("now"), report.get("recorded")
        role = (now or was or {}).get("role", "?")
        lines.append(Text(f"message {report['index']} sent to the model ({role}) differs from the recording:"))
        if now is None or was is None:
            lines.append(
                Text(f"  recorded: {_one_line(was)}" if was else "  recorded: nothing (the request is longer)")
            )
            lines.append(
                Text(f"  now:      {_one_line(now)}" if now else "  now:      nothing (the request is shorter)")
            )
        else:
            line = Text("  ")
            for op, part in word_diff(content_text(was), content_text(now)):
                line.append(
                    part if op == "=" else f"[-{part}-]" if op == "-" else f"{{+{part}+}}",
                    style="" if op == "=" else "red" if op == "-" else "green",
                )
            lines.append(line)
            lines.append(Text(f"  recorded: {_one_line(content_text(was))}", style="dim"))
    if isinstance(report.get("answer"), dict):
        lines.append(Text(f"the recording's answer to it: {_one_line(content_text(report['answer']))}", style="dim"))
    return Group(*lines)


def _one_line(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
