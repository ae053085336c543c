"""`replay --dry-run`'s plan and how a re-run ended, as Rich text."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text

from statectl.core.rerun_plan import Plan
from statectl.model import Snapshot


def _one_line(value: object, limit: int = 160) -> str:
    """A value as compact JSON on one line (a text as itself)."""

    if isinstance(value, str):
        text = value
    else:
        from statectl.codec.jsonout import json_bytes

        text = json_bytes(value).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plan_view(plan: Plan) -> RenderableType:
    """What would run first, which saved results LangGraph hands back, where the branch starts."""
    lines: list[RenderableType] = []
    where = f"thread {plan.thread_id}" + (f"  ns {plan.start_ns}" if plan.start_ns else "")
    lines.append(
        Text(f"replay {where} from checkpoint {plan.start_checkpoint_id}  (dry run: nothing runs)", style="bold")
    )
    lines.append(
        Text(
            f"the new branch starts from {plan.start_checkpoint_id}: its first new checkpoint is a "
            f"child of it; the thread's other checkpoints stay as they are"
        )
    )
    if plan.tasks:
        lines.append(Text("first step:"))
    for t in plan.tasks:
        line = Text("  ")
        if t.reused:
            line.append("keeps ", style="dim")
            line.append(t.name, style="bold")
            line.append("  its saved result is handed back, it does not run", style="dim")
        else:
            line.append("runs  ", style="green")
            line.append(t.name, style="bold green")
        lines.append(line)
        lines.append(Padding(Text(f"path {list(t.path)}, task {t.id}", style="dim"), (0, 0, 0, 8)))
        for i in t.interrupts:
            answer = "answered by --resume" if plan.resuming else "raised again"
            lines.append(Text(f"        interrupt {i.id}: {_one_line(i.value)}  ({answer})", style="yellow"))
    if plan.until:
        lines.append(Text(f"stops before: {', '.join(plan.until)}"))
    lines += [Text(f"note: {n}", style="dim") for n in plan.notes]
    return Group(*lines)


def outcome_view(thread_id: str, label: str, status: str, snap: Snapshot, failure: str | None) -> RenderableType:
    """How the new branch ended: done, waiting at an interrupt (the question), or an error (the node)."""
    head = Text(f"the new branch of thread {thread_id} in {label} ", style="bold")
    if status == "error":
        failed = [t.name for t in snap.tasks if t.error is not None]
        head.append(f"ended in an error in {', '.join(failed) or 'a task'}: ", style="bold red")
        head.append(failure or "", style="red")
    elif snap.interrupts:
        head.append("waits at an interrupt: ", style="bold yellow")
        head.append("; ".join(_one_line(i.value, 200) for i in snap.interrupts), style="yellow")
    elif snap.next:
        head.append(f"stopped before {', '.join(snap.next)}", style="bold yellow")
    else:
        head.append("is done", style="bold green")
    return Group(head, Text(f"newest checkpoint {snap.checkpoint_id}", style="dim"))
