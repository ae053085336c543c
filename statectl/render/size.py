"""`statectl size`: a store's parts and largest threads, a thread's channels and its growth."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from statectl.core.size import ChannelSize, StoreSize, ThreadChannels
from statectl.model import is_state_key
from statectl.render.columns import COUNT, FIXED, ID, TEXT, Col, PlainTable, Stacked

BAR = 12
SPARK = "▁▂▃▄▅▆▇█"


def human_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"


def bar(part: int, whole: int, width: int = BAR) -> Text:
    """A share as a bar of block characters, and its percentage."""
    share = part / whole if whole else 0.0
    cells = share * width
    full = int(cells)
    text = "█" * full + ("▌" if cells - full >= 0.5 else "")
    return Text.assemble((text.ljust(width), "cyan"), f" {share * 100:4.1f}%")


KINDS = {
    "PART": ID,
    "THREAD": ID,
    "CHANNEL": ID,
    "BYTES": FIXED,
    "HISTORY": FIXED,
    "DROP": FIXED,
    "FREES": FIXED,
    "FIRST→LAST": TEXT,
    "KEPT BECAUSE": TEXT,
    "DROPPED": FIXED,
    "STATUS": TEXT,
}


def _table(*columns: str) -> PlainTable:
    """A size table: names fold, never cut; shares, counts and growth give way first."""
    return PlainTable(
        "",
        [
            Col(c, KINDS.get(c, COUNT), right=c not in ("PART", "THREAD", "CHANNEL", "SHARE", "KEPT BECAUSE", "STATUS"))
            for c in columns
        ],
    )


def store_view(s: StoreSize) -> RenderableType:
    parts = _table("PART", "BYTES", "SHARE")
    whole = sum(p.bytes for p in s.parts) or s.total
    for p in s.parts:
        parts.add_row(f"{p.name} ({p.note})" if p.note else p.name, human_bytes(p.bytes), bar(p.bytes, whole))
    title = Text.assemble(
        (s.label, "bold"), f"  {human_bytes(s.total)} on disk, {s.thread_count:,} thread{'s' * (s.thread_count != 1)}"
    )
    out: list[RenderableType] = [title, parts]
    if s.threads:
        threads = _table("THREAD", "CKPTS", "BYTES", "FIRST→LAST", "%")
        total = sum(p.bytes for p in s.parts if p.name != "free pages") or 1
        for t in s.threads:  # (bytes per checkpoint: in --json)
            growth = f"{human_bytes(t.first)}→{human_bytes(t.last)}" if t.first is not None else "-"
            threads.add_row(
                t.thread_id, f"{t.checkpoints:,}", human_bytes(t.bytes), growth, f"{t.bytes / total * 100:.1f}"
            )
        shown = len(s.threads)
        out += [
            Text(""),
            Text(
                f"largest threads ({shown} of {s.thread_count:,}; --limit 0 for all)"
                if shown < s.thread_count
                else "threads by size",
                style="bold",
            ),
            threads,
        ]
    out += [Text(n, style="dim") for n in s.notes]
    return Group(*out)


def sparkline(values: list[int], width: int = 60) -> Text:
    """Values (oldest first) as one line of block heights, in at most `width` cells (each cell
    the largest value of its stretch)."""
    if not values:
        return Text("")
    n = len(values)
    if n <= width:
        cells = list(values)
    else:  # each cell the largest of its stretch: [i*n//width, (i+1)*n//width), never empty
        cells = [max(values[i * n // width : (i + 1) * n // width]) for i in range(width)]
    top = max(cells) or 1
    return Text("".join(SPARK[min(len(SPARK) - 1, int(v / top * (len(SPARK) - 1) + 0.5))] for v in cells), style="cyan")


def thread_view(t: ThreadChannels) -> RenderableType:
    whole = sum(c.history + c.writes for c in t.channels) or 1
    table = _table("CHANNEL", "HISTORY", "SHARE", "LATEST", "WRITES")
    state = [c for c in t.channels if is_state_key(c.channel)]
    internal = [c for c in t.channels if not is_state_key(c.channel)]
    if internal:  # LangGraph's bookkeeping channels (triggers, Sends, interrupts): one row
        state.append(
            ChannelSize(
                f"(LangGraph's own: {len(internal)} channels)",
                sum(c.history for c in internal),
                sum(c.latest for c in internal),
                0,
                sum(c.writes for c in internal),
            )
        )
    if t.bookkeeping:
        whole += t.bookkeeping
        state.append(ChannelSize("(versions, versions seen, ids)", t.bookkeeping, 0))
    for c in state:
        table.add_row(
            c.channel,
            human_bytes(c.history),
            bar(c.history + c.writes, whole),
            human_bytes(c.latest) if c.latest else "",
            human_bytes(c.writes) if c.writes else "",
        )
    sizes = [b for _, b in t.steps]
    out: list[RenderableType] = [
        Text.assemble(("thread ", ""), (t.thread_id, "bold"), f"  {t.checkpoints:,} root checkpoints"),
        Text(t.how, style="dim"),
        table,
    ]
    if sizes:
        first, last = sizes[0], sizes[-1]
        steps = [s for s, _ in t.steps if s is not None]
        span = f"steps {steps[0]} to {steps[-1]}" if steps else f"{len(sizes)} checkpoints"
        out += [
            Text(""),
            Text.assemble(
                ("checkpoint size per step", "bold"),
                f" ({span}; {human_bytes(first)} → {human_bytes(last)}, largest {human_bytes(max(sizes))})",
            ),
            sparkline(sizes),
        ]
    return Group(*out)


def prune_view(plans: list, label: str) -> RenderableType:
    """`statectl prune`: per thread what would go and why the rest stays, then the total."""
    table = _table("THREAD", "DROP", "KEEP", "FREES", "KEPT BECAUSE")

    def row(p: Any) -> list[Text | str]:
        why = ", ".join(f"{n} {r}" for r, n in sorted(p.reasons.items(), key=lambda x: -x[1]))
        return [
            p.thread_id,
            f"{len(p.drop):,}",
            f"{p.checkpoints - len(p.drop):,}",
            human_bytes(p.bytes),
            Text(why, style="dim"),
        ]

    table.rows_of(sorted(plans, key=lambda p: (-p.bytes, p.thread_id)), row)  # (made as printed: a row a thread)
    drop = sum(len(p.drop) for p in plans)
    total = sum(p.checkpoints for p in plans)
    return Stacked(
        table,
        Text(
            f"{drop:,} of {total:,} checkpoints in {len(plans):,} thread"
            f"{'s' * (len(plans) != 1)} of {label} could go, freeing "
            f"{human_bytes(sum(p.bytes for p in plans))}. Nothing was changed: "
            "`--sql` prints the SQL that does it, to review and run after a backup.",
            style="bold",
        ),
    )


def applied_view(report: dict, outcomes: Sequence[Any]) -> RenderableType:
    """`statectl prune --apply`: per thread what was deleted (or why not), then the totals, the
    backup and what VACUUM gave back. The rows are made from `outcomes` as they are printed."""
    table = _table("THREAD", "DROPPED", "FREES", "STATUS")

    def row(o: Any) -> list[Text | str]:
        status = o.status + (f": {o.note}" if o.note else "")
        style = "yellow" if o.status != "pruned" else "dim"
        return [o.thread_id, f"{o.dropped:,}", human_bytes(o.bytes), Text(status, style=style)]

    table.rows_of(outcomes, row)
    lines: list[RenderableType] = [table]
    if "backup" in report:
        lines.append(
            Text(f"Backup: {report['backup']['path']} ({human_bytes(report['backup']['bytes'])}), made first.")
        )
    done = sum(1 for o in outcomes if o.dropped)
    lines.append(
        Text(
            f"Deleted {report['dropped']:,} of the {report['drop']:,} planned checkpoints "
            f"({human_bytes(report['bytes'])}) from {done:,} thread{'s' * (done != 1)} of {report['db']}.",
            style="bold",
        )
    )
    skipped = sum(1 for o in outcomes if o.status.startswith("skipped"))
    if skipped:
        lines.append(Text(f"{skipped} thread(s) skipped and left whole: run again to retry.", style="yellow"))
    if report.get("interrupted"):
        lines.append(
            Text(
                "Interrupted: the thread in progress was rolled back; the threads listed above as "
                "pruned stay pruned. The store is consistent; run again to finish.",
                style="yellow",
            )
        )
    if "vacuum" in report and "error" in report["vacuum"]:
        v = report["vacuum"]
        lines.append(
            Text(f"VACUUM failed: {v['error']}" + (f" ({v['hint']})" if v.get("hint") else ""), style="yellow")
        )
    elif "vacuum" in report:
        v = report["vacuum"]
        lines.append(
            Text(
                f"VACUUM: {human_bytes(v['bytes_before'])} → {human_bytes(v['bytes_after'])}, "
                f"{human_bytes(v['given_back'])} given back." + (f" ({v['note']})" if v.get("note") else "")
            )
        )
    return Stacked(*lines)  # (the table streamed: its rows laid out a chunk at a time)
