"""`statectl schema`: the merged state schema, drift against a thread, or what history shows."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from statectl.core.schema import Drift, Observed, Schema
from statectl.render.columns import COUNT, FIXED, ID, TEXT, Col, PlainTable

YES = Text("✓", style="green")


def schema_table(s: Schema, title: str) -> RenderableType:
    table = PlainTable(
        title,
        [
            Col("field", ID),
            Col("type", TEXT),
            Col("channel", ID),
            Col("reducer", ID),
            Col("req"),
            Col("in"),
            Col("out"),
            Col("private", ID),
            Col("declared by", ID),
        ],
    )
    for f in s.fields:
        by = Text()
        for i, name in enumerate(f.declared_by):
            if i:
                by.append(", ")
            by.append(name, style="bold" if name == f.winner else "")
            if name == f.winner:
                by.append(" (wins)", style="yellow")
        table.add_row(
            Text(f.name, style="bold"),
            Text(f.type, style="cyan"),
            f.channel,
            f.reducer or "",
            YES if f.required else "",
            YES if f.input else "",
            YES if f.output else "",
            Text(", ".join(f.private), style="magenta"),
            by,
            style="dim" if f.private else None,
        )
    parts: list[RenderableType] = [table]
    if s.kind == "create_agent":
        parts.append(Text("merged in this order (a later declaration wins): " + " → ".join(s.sources), style="dim"))
    parts.extend(Text(f"note: {n}", style="yellow") for n in s.notes)
    return Group(*parts)


def drift_view(d: Drift, thread: str) -> RenderableType:
    lines = [Text(f"drift against thread {thread}:", style="bold")]
    if not (d.unknown_keys or d.never_written or d.type_mismatches):
        lines.append(Text("  none: every key is in the schema, every field was written, types fit", style="green"))
    if d.unknown_keys:
        lines.append(Text.assemble(("  keys the schema does not have: ", "bold red"), ", ".join(d.unknown_keys)))
    if d.never_written:
        lines.append(Text.assemble(("  fields never written: ", "bold yellow"), ", ".join(d.never_written)))
    for m in d.type_mismatches:
        lines.append(
            Text.assemble(
                ("  type mismatch: ", "bold red"),
                (m["field"], "bold"),
                f" declared {m['declared']}, observed {', '.join(m['observed'])}",
            )
        )
    return Group(*lines)


def observed_table(rows: list[Observed], title: str) -> RenderableType:
    table = PlainTable(
        title,
        [
            Col("key", ID),
            Col("observed types", TEXT),
            Col("first step", FIXED, right=True),
            Col("last changed", FIXED, right=True),
            Col("accumulates"),
            Col("checkpoints", COUNT, right=True),
        ],
    )
    for o in rows:
        table.add_row(
            Text(o.name, style="bold"),
            Text(", ".join(o.types), style="cyan"),
            "" if o.first_step is None else str(o.first_step),
            "" if o.last_changed_step is None else str(o.last_changed_step),
            YES if o.accumulates else "",
            str(o.checkpoints),
        )
    return Group(table, Text("inferred from the thread's history alone (no schema given)", style="dim"))


def _problem(p: dict[str, Any]) -> str:
    kind = p.get("problem")
    if kind == "unknown_key":
        return f"{p['key']}: not in the schema"
    if kind == "type":
        return f"{p['key']}: holds {p['observed']}, declared {p['declared']}"
    if kind == "reducer_removed":
        return f"{p['key']}: a reducer in the data, a {p['declared']} in the schema"
    if kind == "missing_node":
        return f"next {p['node']}: no such node"
    return f"unreadable: {p.get('error')}"


def thread_checks(affected: list[Any], checked: int, target: str, label: str) -> RenderableType:
    """`schema --all-threads`: one line per affected thread, then a summary."""
    lines = [
        Text.assemble(
            (c.thread_id, "bold"),
            "  ",
            (c.status, "yellow" if c.waiting else "dim"),
            "  ",
            "; ".join(_problem(p) for p in c.problems),
        )
        for c in affected
    ]
    waiting = sum(1 for c in affected if c.waiting)
    lines.append(
        Text(
            f"{checked} thread{'s' * (checked != 1)} of {label} checked against {target}: "
            f"{len(affected)} affected, {waiting} of them waiting to resume"
            + (" (these would break)" if waiting else ""),
            style="bold" if waiting else "",
        )
    )
    return Group(*lines)
