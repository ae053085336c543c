"""`statectl schema`: the merged state schema, drift against a thread, or what history shows."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from statectl.render.tables import Columns
from statectl.schema import Drift, Observed, Schema

YES = Text("✓", style="green")


def schema_table(s: Schema, title: str) -> RenderableType:
    table = Columns(title, ["field", "type", "channel", "reducer", "req", "in", "out", "private",
                            "declared by"], flex=(1, 8))
    for f in s.fields:
        by = Text()
        for i, name in enumerate(f.declared_by):
            if i:
                by.append(", ")
            by.append(name, style="bold" if name == f.winner else "")
            if name == f.winner:
                by.append(" (wins)", style="yellow")
        table.add_row(Text(f.name, style="bold"), Text(f.type, style="cyan"), f.channel,
                      f.reducer or "", YES if f.required else "", YES if f.input else "",
                      YES if f.output else "", Text(", ".join(f.private), style="magenta"), by,
                      style="dim" if f.private else None)
    parts: list[RenderableType] = [table]
    if s.kind == "create_agent":
        parts.append(Text("merged in this order (a later declaration wins): " + " → ".join(s.sources),
                          style="dim"))
    parts.extend(Text(f"note: {n}", style="yellow") for n in s.notes)
    return Group(*parts)


def drift_view(d: Drift, thread: str) -> RenderableType:
    lines = [Text(f"drift against thread {thread}:", style="bold")]
    if not (d.unknown_keys or d.never_written or d.type_mismatches):
        lines.append(Text("  none: every key is in the schema, every field was written, types fit",
                          style="green"))
    if d.unknown_keys:
        lines.append(Text.assemble(("  keys the schema does not have: ", "bold red"), ", ".join(d.unknown_keys)))
    if d.never_written:
        lines.append(Text.assemble(("  fields never written: ", "bold yellow"), ", ".join(d.never_written)))
    for m in d.type_mismatches:
        lines.append(Text.assemble(("  type mismatch: ", "bold red"), (m["field"], "bold"),
                                   f" declared {m['declared']}, observed {', '.join(m['observed'])}"))
    return Group(*lines)


def observed_table(rows: list[Observed], title: str) -> RenderableType:
    table = Columns(title, ["key", "observed types", "first step", "last changed", "accumulates",
                            "checkpoints"], right=(2, 3, 5), flex=(1,))
    for o in rows:
        table.add_row(Text(o.name, style="bold"), Text(", ".join(o.types), style="cyan"),
                      "" if o.first_step is None else str(o.first_step),
                      "" if o.last_changed_step is None else str(o.last_changed_step),
                      YES if o.accumulates else "", str(o.checkpoints))
    return Group(table, Text("inferred from the thread's history alone (no schema given)", style="dim"))
