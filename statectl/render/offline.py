"""`replay --offline`: the recording an offline run answers from (`--dry-run`), and where a run
left it (the divergence report), as Rich text."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from statectl.core.recording import Recording, content_text, word_diff
from statectl.core.reducers import is_message, message_data


def _where(ns: str, step: int, node: str) -> str:
    return f"step {step}  {node}" + (f"  (in {ns})" if ns else "")


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
    inputs = sorted(rec.inputs, key=lambda pair: pair[0])
    for call in rec.calls:
        while inputs and inputs[0][0] <= call.checkpoint_id and not call.ns:  # (where the input came)
            lines.append(_input_line(inputs.pop(0)[1]))
        line = Text("  ")
        line.append(f"{labels[call.kind]}  ", style="green" if call.kind == "model" else "cyan")
        line.append(_where(call.ns, call.step, call.node), style="bold")
        line.append("  ")
        line.append(call.preview(), style="dim")
        lines.append(line)
    lines.extend(_input_line(value) for _, value in inputs)
    wrote = [s for s in rec.silent if s.why != "wrote no state"]
    if wrote:
        lines.append(Text("run as code (no model answer or tool result recorded: a model they call is not answered):"))
        for s in wrote:
            lines.append(Text(f"  {_where(s.ns, s.step, s.node)}  {s.why}", style="yellow"))
    if not rec.calls:
        lines.append(Text("note: the branch recorded no model answer and no tool result", style="dim"))
    return Group(*lines)


def _input_line(value: Any) -> Text:
    return Text(f"  input         then the branch's next run, with {_one_line(_input_text(value))}", style="dim")


def _input_text(value: Any) -> Any:
    """A run's input, its messages as `role: text` (the data's wrappers left out)."""
    if not isinstance(value, dict):
        return value
    parts = []
    for key, item in value.items():
        items = item if isinstance(item, list) else [item]
        if items and all(is_message(m) for m in items):
            said = "; ".join(
                f"{message_data(m).get('type')}: {content_text(message_data(m).get('content'))}" for m in items
            )
            parts.append(f"{key}: {said}")
        else:
            parts.append(f"{key}: {json.dumps(item, ensure_ascii=False, default=str)}")
    return ", ".join(parts)


def divergence_view(report: dict[str, Any]) -> RenderableType:
    """Where the run left the recording and why: the first message that differs, word by word.
    One numbering: the new branch's own step (as `log` shows it there), and the checkpoints its
    task and the recorded call ran from (as `show` takes them: `log`'s 12 characters)."""
    new_step = report.get("new_step")
    step = new_step if isinstance(new_step, int) else int(report.get("step", -1))
    where = _where(str(report.get("ns") or ""), step, str(report.get("node", "?")))
    why = str(report.get("why", "diverged"))
    head = Text("replay left the recording at ", style="bold red")
    head.append(where, style="bold")
    if why == "network":
        ran = where_from(report)
        return Group(head, *([Text(ran, style="dim")] if ran else []), Text(str(report.get("detail", "")), style="red"))
    head.append(f": {why}", style="bold red")
    lines: list[RenderableType] = [head]
    ran = where_from(report)
    if ran:
        lines.append(Text(ran, style="dim"))
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


def where_from(report: dict[str, Any]) -> str:
    """The checkpoints the new branch's task and the recorded call ran from (`show` takes them)."""
    new, old = report.get("checkpoint_id"), report.get("original_checkpoint_id")
    parts = []
    if isinstance(new, str):
        parts.append(f"the new branch's task ran from checkpoint {new[-12:]}")
    if isinstance(old, str):
        parts.append(f"the recorded call from {old[-12:]} (the original branch)")
    return "  " + "; ".join(parts) if parts else ""


def _one_line(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
