"""What `statectl log` shows besides its lines: the steps it selects (or streams), the key a
`-S` names checked, and the notes under it. The CLI prints them; the TUI and MCP may share them."""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING, Any

from statectl.errors import NotFoundError

if TYPE_CHECKING:
    from statectl.core.state import ThreadView
    from statectl.model import CheckpointRecord


def selection(
    view: ThreadView,
    node: str | None,
    changed: str | None,
    grep: str | None,
    max_count: int | None,
    streamed: bool = False,
    entries: bool = True,
) -> tuple[list[CheckpointRecord], Any]:
    """(the checkpoints `log` lists, their log entries). `streamed`: every step, newest first,
    each entry made as it is read (a long thread's first step printed within a second); else the
    steps `--node`, `-S KEY` and `--grep` keep (a `-S` key no checkpoint holds: NotFoundError
    naming the close ones). `entries`: False where only the checkpoints are wanted (JSON)."""
    from statectl.core.timeline import iter_entries, select

    if streamed:
        return view.records[:max_count], islice(iter_entries(view), max_count)
    records, ents = select(view, node, changed, grep, max_count, entries_wanted=entries)
    if changed is not None and not records:
        known_key(view, changed)
    return records, ents


def notes(view: ThreadView, ents: Any) -> list[str]:
    """The notes under `log`'s lines: loops, metadata that did not decode, steps without RAN."""
    blank = sum(1 for e in ents if not e.ran and e.record.source not in ("input", None))
    unread = sorted({str(r.metadata["$undecoded"]) for r in view.records if "$undecoded" in r.metadata})
    no_ran = [
        f"{blank} step{'s' * (blank > 1)} show no RAN: the writes that made "
        f"{'them' if blank > 1 else 'it'} are not in the database (neither in the writes "
        "table nor in the checkpoints' metadata)"
    ] * bool(blank)
    return [*view.loop_notes, *(f"metadata: {u}" for u in unread), *no_ran]


def known_key(view: ThreadView, key: str) -> None:
    """`log -S KEY` that matched nothing: a key no checkpoint of the thread holds is a mistake to
    say (with the closest keys, as a mistyped thread id), not "0 of N checkpoints"."""
    import difflib

    keys: set[str] = set()
    for rec in view.records:
        values = view.snapshot(rec.checkpoint_id).values
        if isinstance(values, dict):
            keys.update(k for k in values if not k.startswith("$"))
    if key in keys:
        return
    close = difflib.get_close_matches(key, sorted(keys), n=3, cutoff=0.6)
    raise NotFoundError(
        f"no state key {key!r} in thread {view.thread_id}",
        f"did you mean {' or '.join(close)}?" if close else f"its keys: {', '.join(sorted(keys)) or 'none'}",
    )
