"""`statectl doctor`: what is wrong with a store, each finding naming the thread, the checkpoint
and what to do.

Three kinds of check, thread by thread (memory does not grow with the store):
- integrity: ancestry that loops, parents that are not there (after a prune that is how history
  begins, but a delta channel replayed from them cannot be rebuilt), rows that do not decode,
  checkpoints LangGraph's loader would reject, and, where the store can say (`Source.orphans`),
  writes and blob versions no checkpoint holds and blob versions a checkpoint names that are gone;
- load safety: every class the stored values name, looked up in the project's interpreter by a
  callable the caller gives (`project.classes`: nothing the data names is imported), grouped by
  class with the threads it would break or silently change; and, with a schema (`--graph`), the
  newest state of each thread against it;
- operations: threads waiting on an interrupt or failed for longer than `older_than`, a channel
  that outgrows the rest (stored again at every step that writes it), bookkeeping that outweighs
  state, and the largest threads' prunable bytes (`prune`'s plan).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from statectl.core import integrity, loadsafety
from statectl.core.findings import (
    BOOKKEEPING_MIN,
    ERROR,
    INFO,
    JUMP,
    JUMP_MIN,
    LARGE_CHANNEL,
    LEVELS,
    PRUNE_KEEP,
    THREADS_SHOWN,
    WARNING,
    Finding,
    Named,
    Options,
    Report,
    at,
    sorted_findings,
)
from statectl.core.store_kinds import store_kind
from statectl.errors import StatectlError
from statectl.model import CheckpointRecord
from statectl.sources.ahead import Ahead, batched

if TYPE_CHECKING:
    from statectl.core.reader import StoreReader

__all__ = ["ERROR", "INFO", "LEVELS", "WARNING", "Finding", "Options", "Report", "diagnose", "sorted_findings"]


# -- the run --------------------------------------------------------------------------------------
def diagnose(store: StoreReader, options: Options, on_thread: Callable[[], object] | None = None) -> Report:
    """Every check of this module's docstring over every thread of `store`."""
    source = store.source
    report = Report(store.label)
    named: dict[tuple[str, str], Named] = {}
    for batch in thread_batches(every_thread(store)):
        here = store.on(Ahead(source, [s.thread_id for s in batch]), store.graph) if batched(source) else store
        for summary in batch:
            report.threads += 1
            mark = len(report.findings)
            try:
                report.checkpoints += _thread(here, summary, options, report.findings, named)
            except StatectlError as exc:
                if any(f.kind in DAMAGED for f in report.findings[mark:]):
                    continue  # (the damaged row is said once, where it is)
                report.findings.append(
                    Finding(
                        ERROR, "integrity", "unreadable", exc.message, "statectl show names the row", summary.thread_id
                    )
                )
            here.refresh(summary.thread_id)  # (views are cached: keep one thread's at a time)
            if on_thread is not None:
                on_thread()
    if (orphans := source.orphans()) is not None:
        report.findings += integrity.orphans(orphans)
    else:
        report.not_checked.append(f"writes and blob versions no checkpoint holds: not listed by a {source.kind} source")
    loadsafety.load_safety(named, options, report)
    if options.plan and store_kind(source.kind) is not None and not source.shallow:  # (a kind prune plans)
        report.findings += _prunable(store)
    return report


def every_thread(store: StoreReader) -> Iterable[Any]:
    after = None
    while True:  # (a page at a time: summaries are not all held)
        page = store.threads(500, after, "id")
        yield from page
        if not page or not getattr(page, "more", len(page) == 500):
            return
        after = page[-1].thread_id


DAMAGED = ("undecodable", "unreadable")
"""A row's own findings: a thread whose reading fails after one is not said to fail again."""

BATCH, BATCH_CHECKPOINTS = 200, 5_000
"""Threads read together where the source can (`sources.ahead`), and at most this many of their
checkpoints (a batch's rows are held while it is checked)."""


def thread_batches(summaries: Iterable[Any]) -> Iterator[list[Any]]:
    batch: list[Any] = []
    held = 0
    for s in summaries:
        if batch and (len(batch) == BATCH or held + (s.checkpoints or 0) > BATCH_CHECKPOINTS):
            yield batch
            batch, held = [], 0
        batch.append(s)
        held += s.checkpoints or 0
    if batch:
        yield batch


def _thread(
    store: StoreReader, summary: Any, options: Options, out: list[Finding], named: dict[tuple[str, str], Named]
) -> int:
    """The checks of one thread, each row read once; how many checkpoints it has."""
    from statectl.core.size import channel_lengths
    from statectl.errors import DecodeError
    from statectl.sizes import ChannelSize, ThreadChannels

    source, t = store.source, summary.thread_id
    records = source.checkpoints(t, None)
    by_ns: dict[str, list[CheckpointRecord]] = {}
    for r in records:
        by_ns.setdefault(r.checkpoint_ns, []).append(r)
    growth: ThreadChannels | None = ThreadChannels(t, 0, [], [], "") if "" in by_ns else None
    sizes: dict[str, ChannelSize] = {}
    # a whole thread's rows in a few queries where the source can (Postgres: a round trip a row
    # costs more than the row)
    raws = source.raw_checkpoints(t)
    keys = [(t, r.checkpoint_ns, r.checkpoint_id) for r in records]
    all_writes = source.writes_of(keys) if source.reads_many else None
    from statectl.codec.classes import BlobMemo

    memo = BlobMemo()  # (a Postgres blob's answer by type and text: checkpoints share versions)
    for ns, rows in by_ns.items():
        integrity.ancestry(store, t, ns, rows, out)
        for r in rows:
            type_, blob = raws.get((ns, r.checkpoint_id)) or _raw(source, r, out)
            if blob is None:
                continue
            found = integrity.row(
                r,
                type_,
                blob,
                source,
                out,
                None if all_writes is None else all_writes.get((t, ns, r.checkpoint_id), []),
                memo,
            )
            for module, name, how in found:
                n = named.setdefault((module, name), Named())
                n.how.add(how)
                n.rows += 1
                if len(n.threads) < THREADS_SHOWN and t not in n.threads:
                    n.threads[t] = (ns, r.checkpoint_id)
            if ns == "" and growth is not None:
                if type_ != "msgpack":
                    growth = None  # (another layout: `size`'s own reading, below)
                    continue
                growth.steps.append((r.step, len(blob)))
                if len(growth.steps) == 1:  # the newest (rows come newest first): its channels' sizes
                    try:
                        sizes = {k: ChannelSize(k, v, v) for k, v in channel_lengths(blob).items()}
                    except DecodeError:
                        pass  # (`integrity.row` said it: undecodable)
    if growth is not None:
        growth.steps.reverse()
        growth.channels = list(sizes.values())
        if growth.steps:  # (versions and ids: the newest checkpoint's, times the checkpoints)
            newest = growth.steps[-1][1] - sum(c.latest for c in growth.channels)
            growth.bookkeeping = max(0, newest) * len(growth.steps)
            for c in growth.channels:
                c.history = c.latest * len(growth.steps)
    _operations(store, summary, options, out, growth)
    if options.schema is not None:
        loadsafety.schema_fit(store, summary, options.schema, out)
    return len(records)


def _raw(source: Any, r: CheckpointRecord, out: list[Finding]) -> tuple[str | None, bytes | None]:
    try:
        return source.raw_checkpoint(r.thread_id, r.checkpoint_ns, r.checkpoint_id)
    except StatectlError as exc:
        out.append(at(r, ERROR, "integrity", "unreadable", exc.message, None))
        return None, None


# -- operations -----------------------------------------------------------------------------------
def _operations(store: StoreReader, summary: Any, options: Options, out: list[Finding], growth: Any) -> None:
    from statectl.sources.status import moment

    t = summary.thread_id
    if options.older_than is not None and summary.status in ("interrupted", "error"):
        when = moment(summary.updated_at)
        if when is not None and when < options.older_than:
            what = "waiting on an interrupt" if summary.status == "interrupted" else "failed"
            out.append(
                Finding(
                    options.stale,
                    "operations",
                    f"stale-{summary.status}",
                    f"{what} since {when:%Y-%m-%d %H:%M} UTC",
                    "resume it (statectl fork/replay), or prune it",
                    t,
                )
            )
    _growth(store, t, out, growth)


def _growth(store: StoreReader, t: str, out: list[Finding], found: Any) -> None:
    """A step that jumps, a channel that outgrows the rest, bookkeeping over state: from the
    sizes read with the rows (msgpack), else as `statectl size THREAD` reads them."""
    from statectl.core.size import thread_channels

    if found is None:
        if not store.source.as_stored:  # (a server's JSON: not the sizes its store holds)
            return
        try:
            found = thread_channels(store.source, t)
        except StatectlError:
            return
    steps = found.steps
    for (step_a, a), (step_b, b) in itertools.pairwise(steps):
        if b >= JUMP_MIN and a and b >= JUMP * a:
            out.append(
                Finding(
                    WARNING,
                    "operations",
                    "size-jump",
                    f"its checkpoint grew from {a:,} B at step {step_a} to {b:,} B at step {step_b}",
                    "statectl size THREAD shows the channel; statectl diff THREAD STEP what was written",
                    t,
                )
            )
            break
    for c in found.channels:
        if c.latest >= LARGE_CHANNEL:
            out.append(
                Finding(
                    WARNING,
                    "operations",
                    "large-channel",
                    f"channel {c.channel!r} holds {c.latest:,} B in the newest checkpoint: every step that writes "
                    "it stores it again",
                    "keep large data out of state (a store, a file), or make it a DeltaChannel",
                    t,
                )
            )
    bookkeeping = found.bookkeeping
    state = sum(c.history for c in found.channels)
    if state and bookkeeping > state and bookkeeping >= BOOKKEEPING_MIN:
        out.append(
            Finding(
                INFO,
                "operations",
                "bookkeeping",
                f"channel versions and ids outweigh the state: about {bookkeeping:,} B against {state:,} B over "
                f"{len(found.steps):,} checkpoints",
                "prune old checkpoints (statectl prune)",
                t,
            )
        )


def _prunable(store: StoreReader) -> list[Finding]:
    """The largest threads' prunable bytes, with `prune --keep-last PRUNE_KEEP`."""
    from statectl.core.prune import plan_thread
    from statectl.core.size import store_size

    try:
        largest = store_size(store.source, 5).threads
    except StatectlError:
        return []
    plans = [plan_thread(store, t.thread_id, PRUNE_KEEP) for t in largest]
    plans = [p for p in plans if p.drop]
    if not plans:
        return []
    total, drop = sum(p.bytes for p in plans), sum(len(p.drop) for p in plans)
    return [
        Finding(
            INFO,
            "operations",
            "prunable",
            f"{drop:,} checkpoints ({total:,} B) of the {len(largest)} largest threads could go, keeping {PRUNE_KEEP} "
            "per namespace",
            f"statectl prune --keep-last {PRUNE_KEEP} (add --apply to do it)",
            threads=[p.thread_id for p in plans],
            count=len(plans),
        )
    ]
