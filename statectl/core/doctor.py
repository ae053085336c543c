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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from statectl.errors import StatectlError
from statectl.model import CheckpointRecord

INFO, WARNING, ERROR = "info", "warning", "error"
LEVELS = (INFO, WARNING, ERROR)
THREADS_SHOWN = 20
"""Threads named per grouped finding (the count says how many in all)."""
LARGE_CHANNEL = 1_000_000
"""A channel's newest value this large (bytes) is a finding: every step that writes it stores it again."""
JUMP = 10
"""A checkpoint this many times its parent's size (and at least `JUMP_MIN`) is a jump."""
JUMP_MIN = 256_000
BOOKKEEPING_MIN = 256_000
"""Bookkeeping (versions, versions seen, ids) this large and larger than the state is a note."""
PRUNE_KEEP = 10
"""The --keep-last of the prune plan doctor reports."""


@dataclass
class Finding:
    severity: str
    check: str
    """integrity, load, schema or operations."""
    kind: str
    message: str
    fix: str | None = None
    thread_id: str | None = None
    checkpoint_ns: str | None = None
    checkpoint_id: str | None = None
    threads: list[str] = field(default_factory=list)
    """A grouped finding's threads (the first THREADS_SHOWN)."""
    count: int = 1
    """How many rows, checkpoints or threads the finding stands for."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"severity": self.severity, "check": self.check, "kind": self.kind}
        for k in ("thread_id", "checkpoint_ns", "checkpoint_id"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        out["message"] = self.message
        if self.fix:
            out["fix"] = self.fix
        if self.threads:
            out["threads"] = self.threads
        out["count"] = self.count
        return out


@dataclass
class Report:
    label: str
    findings: list[Finding] = field(default_factory=list)
    threads: int = 0
    checkpoints: int = 0
    not_checked: list[str] = field(default_factory=list)
    """What this run could not check, and why."""

    def worst(self) -> str | None:
        levels = {f.severity for f in self.findings}
        return next((lvl for lvl in reversed(LEVELS) if lvl in levels), None)

    def at_least(self, level: str) -> list[Finding]:
        return [f for f in self.findings if LEVELS.index(f.severity) >= LEVELS.index(level)]

    def to_json(self) -> dict[str, Any]:
        counts = {lvl: sum(f.severity == lvl for f in self.findings) for lvl in LEVELS}
        return {
            "db": self.label,
            "threads": self.threads,
            "checkpoints": self.checkpoints,
            "counts": counts,
            "findings": [f.to_json() for f in sorted_findings(self.findings)],
            "not_checked": self.not_checked,
        }


def sorted_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (-LEVELS.index(f.severity), f.check, f.kind, f.thread_id or ""))


@dataclass
class Options:
    older_than: datetime | None = None
    """Interrupted or failed threads last updated before this are reported."""
    classes: Callable[[list[tuple[str, str]]], list[dict[str, Any]]] | None = None
    """Looks (module, name) pairs up in the project's interpreter (`project.classes.check`)."""
    schema: Any = None
    """A `core.schema.Schema` (`--graph TARGET`): each thread's newest state is checked against it."""
    plan: bool = True
    """Report the prunable bytes of the largest threads."""


# -- the run --------------------------------------------------------------------------------------
def diagnose(store: Any, options: Options, on_thread: Callable[[], object] | None = None) -> Report:
    """Every check of this module's docstring over every thread of `store`."""
    source = store.source
    report = Report(store.label)
    named: dict[tuple[str, str], _Named] = {}
    for summary in _every_thread(store):
        report.threads += 1
        store.refresh(summary.thread_id)  # (views are cached: keep one thread's at a time)
        try:
            report.checkpoints += _thread(store, summary, options, report.findings, named)
        except StatectlError as exc:
            report.findings.append(
                Finding(ERROR, "integrity", "unreadable", exc.message, "statectl show names the row", summary.thread_id)
            )
        if on_thread is not None:
            on_thread()
    store.refresh()
    orphans = getattr(source, "orphans", None)
    if orphans is not None:
        report.findings += _orphans(orphans())
    else:
        report.not_checked.append(f"writes and blob versions no checkpoint holds: not listed by a {source.kind} source")
    _load_safety(named, options, report)
    if options.plan and source.kind in ("sqlite", "postgres") and not getattr(source, "shallow", False):
        report.findings += _prunable(store)
    return report


def _every_thread(store: Any) -> Iterable[Any]:
    after = None
    while True:  # (a page at a time: summaries are not all held)
        page = store.threads(500, after, "id")
        yield from page
        if not page or not getattr(page, "more", len(page) == 500):
            return
        after = page[-1].thread_id


@dataclass
class _Named:
    how: set[str] = field(default_factory=set)
    threads: dict[str, None] = field(default_factory=dict)
    rows: int = 0


def _thread(
    store: Any, summary: Any, options: Options, out: list[Finding], named: dict[tuple[str, str], _Named]
) -> int:
    """The checks of one thread, each row read once; how many checkpoints it has."""
    from statectl.core.size import channel_lengths
    from statectl.model import ChannelSize, ThreadChannels

    source, t = store.source, summary.thread_id
    records = source.checkpoints(t, None)
    by_ns: dict[str, list[CheckpointRecord]] = {}
    for r in records:
        by_ns.setdefault(r.checkpoint_ns, []).append(r)
    growth: ThreadChannels | None = ThreadChannels(t, 0, [], [], "") if "" in by_ns else None
    sizes: dict[str, ChannelSize] = {}
    # a whole thread's rows in a few queries where the source can (Postgres: a round trip a row
    # costs more than the row)
    whole = getattr(source, "raw_checkpoints", None)
    raws = whole(t) if whole is not None else {}
    batched = getattr(source, "writes_of", None)
    keys = [(t, r.checkpoint_ns, r.checkpoint_id) for r in records]
    all_writes = batched(keys) if batched is not None else None
    for ns, rows in by_ns.items():
        _ancestry(store, t, ns, rows, out)
        for r in rows:
            type_, blob = raws.get((ns, r.checkpoint_id)) or _raw(source, r, out)
            if blob is None:
                continue
            found = _row(
                r,
                type_,
                blob,
                source,
                out,
                None if all_writes is None else all_writes.get((t, ns, r.checkpoint_id), []),
            )
            for module, name, how in found:
                n = named.setdefault((module, name), _Named())
                n.how.add(how)
                n.rows += 1
                if len(n.threads) < THREADS_SHOWN:
                    n.threads[t] = None
            if ns == "" and growth is not None:
                if type_ != "msgpack":
                    growth = None  # (another layout: `size`'s own reading, below)
                    continue
                growth.steps.append((r.step, len(blob)))
                if len(growth.steps) == 1:  # the newest (rows come newest first): its channels' sizes
                    sizes = {k: ChannelSize(k, v, v) for k, v in channel_lengths(blob).items()}
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
        _schema(store, summary, options.schema, out)
    return len(records)


def _raw(source: Any, r: CheckpointRecord, out: list[Finding]) -> tuple[str | None, bytes | None]:
    try:
        return source.raw_checkpoint(r.thread_id, r.checkpoint_ns, r.checkpoint_id)
    except StatectlError as exc:
        out.append(_at(r, ERROR, "integrity", "unreadable", exc.message, None))
        return None, None


def _at(r: CheckpointRecord, severity: str, check: str, kind: str, message: str, fix: str | None) -> Finding:
    return Finding(severity, check, kind, message, fix, r.thread_id, r.checkpoint_ns, r.checkpoint_id)


# -- integrity ------------------------------------------------------------------------------------
REQUIRED = ("channel_values", "channel_versions", "versions_seen")


def _row(
    r: CheckpointRecord, type_: str | None, blob: bytes, source: Any, out: list[Finding], writes: list | None
) -> set[tuple[str, str, str]]:
    """The row and its writes decode, and the row is a checkpoint LangGraph's loader accepts (the
    keys `get_tuple`'s readers index, a serializer type it knows); the classes they name. A
    msgpack row is parsed once, its ext payloads too, without building values from them."""
    from statectl.codec.classes import named, parse_msgpack
    from statectl.codec.formats import checked_checkpoint
    from statectl.errors import DecodeError

    damaged = "the row is damaged: restore it from a backup, or delete the thread"
    try:
        if type_ == "msgpack":
            ck, found = parse_msgpack(blob)
        else:
            ck, found = checked_checkpoint(r.thread_id, r.checkpoint_id, type_, blob), named(type_, blob)
        if writes is None:
            writes = source.writes(r.thread_id, r.checkpoint_ns, r.checkpoint_id)
    except DecodeError as exc:
        out.append(_at(r, ERROR, "integrity", "undecodable", exc.message, damaged))
        return set()
    pickled = False
    for w in writes:
        if w.type == "msgpack" and w.blob:
            try:
                found |= parse_msgpack(w.blob)[1]
            except DecodeError as exc:
                message = f"a write to {w.channel!r} (task {w.task_id}) does not decode: {exc.message}"
                out.append(_at(r, ERROR, "integrity", "undecodable", message, damaged))
        else:
            found |= named(w.type, w.blob)
        pickled |= w.type == "pickle"
    if pickled:
        message = "a write is a pickle: LangGraph loads it only with pickle_fallback=True in the serializer"
        out.append(_at(r, WARNING, "load", "pickled", message, "keep pickle_fallback=True where it is read"))
    if not isinstance(ck, dict):
        out.append(
            _at(r, ERROR, "integrity", "rejected", "LangGraph's loader would fail on it: not a checkpoint", None)
        )
        return found
    undecoded = ck.get("$undecoded")
    if isinstance(undecoded, dict):
        if str(undecoded.get("type")) == "pickle":
            message = "stored as a pickle: LangGraph loads it only with pickle_fallback=True in the serializer"
            out.append(_at(r, WARNING, "load", "pickled", message, "keep pickle_fallback=True where it is read"))
        return found
    missing = [k for k in REQUIRED if not isinstance(ck.get(k), dict)]
    if missing and type_ != "statectl+server":
        message = f"LangGraph's loader would fail on it: no {', '.join(missing)}"
        out.append(_at(r, ERROR, "integrity", "rejected", message, "not a checkpoint LangGraph wrote: delete the row"))
    return found


def _ancestry(store: Any, t: str, ns: str, rows: list[CheckpointRecord], out: list[Finding]) -> None:
    """Loops in the parent chain; parents that are not there (info: how pruned history begins;
    an error where a delta channel must be replayed from them)."""
    parent = {r.checkpoint_id: r.parent_checkpoint_id for r in rows}
    done: set[str] = set()
    for r in rows:
        seen: list[str] = []
        at: str | None = r.checkpoint_id
        while at is not None and at in parent and at not in done:
            if at in seen:
                loop = seen[seen.index(at) :]
                out.append(
                    Finding(
                        ERROR,
                        "integrity",
                        "loop",
                        f"its ancestry loops through {len(loop)} checkpoint(s): "
                        f"{' → '.join(loop[:4])}{' …' if len(loop) > 4 else ''}",
                        "a parent id was rewritten by hand: set it back, or delete the thread",
                        t,
                        ns,
                        at,
                    )
                )
                break
            seen.append(at)
            at = parent[at]
        done.update(seen)
    dangling = [r for r in rows if r.parent_checkpoint_id is not None and r.parent_checkpoint_id not in parent]
    for r in dangling:
        broken = _unreplayable(store, r)
        if broken:
            out.append(
                _at(
                    r,
                    ERROR,
                    "integrity",
                    "delta-ancestor-missing",
                    f"its parent {r.parent_checkpoint_id} is not in the store, and the delta channel(s) "
                    f"{', '.join(broken)} are replayed from it: their value here and at later checkpoints up to the "
                    "next snapshot cannot be rebuilt",
                    "restore the missing checkpoints from a backup (prune keeps them: statectl prune never drops one)",
                )
            )
    if dangling and not any(f.kind == "delta-ancestor-missing" and f.thread_id == t for f in out):
        r = dangling[0]
        out.append(
            Finding(
                INFO,
                "integrity",
                "history-begins",
                f"{len(dangling)} checkpoint(s) name a parent that is not in the store: history begins there (after a "
                "prune, or rows deleted)",
                None,
                t,
                ns,
                r.checkpoint_id,
                count=len(dangling),
            )
        )


def _unreplayable(store: Any, r: CheckpointRecord) -> list[str]:
    """The delta channels `r` rebuilds from ancestors: versioned, not stored whole in `r`, with
    supersteps since their snapshot (`counters_since_delta_snapshot`)."""
    counters = r.metadata.get("counters_since_delta_snapshot")
    if not isinstance(counters, dict):
        return []
    from statectl.core.prune import _stored_channels, _versioned

    view = store.view(r.thread_id, r.checkpoint_ns)
    versioned = _versioned(view, r)
    out = []
    for key, pair in counters.items():
        since = pair[1] if isinstance(pair, list) and len(pair) == 2 else None
        if not since or (versioned is not None and key not in versioned):
            continue
        if key not in _stored_channels(store, r.thread_id, r.checkpoint_ns, r.checkpoint_id):
            out.append(str(key))
    return out


def _orphans(found: dict[str, list[tuple]]) -> list[Finding]:
    """`Source.orphans()`'s rows as findings."""
    out = []
    for t, n, size in found.get("writes", []):
        out.append(
            Finding(
                WARNING,
                "integrity",
                "orphan-writes",
                f"{n} write(s), {size} B, belong to no checkpoint",
                "left by a crash or a hand-written DELETE: delete them (they are never read)",
                t,
                count=n,
            )
        )
    for t, n, size in found.get("blobs", []):
        out.append(
            Finding(
                WARNING,
                "integrity",
                "orphan-blobs",
                f"{n} blob version(s), {size} B, no checkpoint names (a run writing right now has some for a moment)",
                "delete them when no run is writing",
                t,
                count=n,
            )
        )
    for t, ns, cid, channel in found.get("missing", []):
        out.append(
            Finding(
                ERROR,
                "integrity",
                "missing-blob",
                f"its version of {channel!r} names a value that is not stored (the channel had one before)",
                "restore the store from a backup",
                t,
                ns,
                cid,
            )
        )
    return out


# -- load safety ----------------------------------------------------------------------------------
LOADS_AS = {
    "msgpack-pydantic": ("silently loads as a plain dict", ERROR),
    "msgpack-ctor": ("loads as its raw data, with a warning in the log", ERROR),
    "json-lc": ("loads as a plain dict", ERROR),
    "pickle": ("fails to load: the checkpoint cannot be read", ERROR),
}


def _load_safety(named: dict[tuple[str, str], _Named], options: Options, report: Report) -> None:
    from statectl.codec.classes import is_safe

    asked = sorted(k for k in named if not is_safe(*k) and not _langchain_lc(k, named[k]))
    if not asked:
        return
    if options.classes is None:
        report.not_checked.append(
            f"load safety of {len(asked)} class(es) the values name: no project interpreter (--python PATH)"
        )
        return
    answers = options.classes(asked)
    unregistered = []
    for (module, name), answer in zip(asked, answers, strict=True):
        n = named[(module, name)]
        status = answer.get("status")
        threads = list(n.threads)
        how = sorted(n.how)
        if status == "ok":
            if any(h.startswith("msgpack") for h in how):
                unregistered.append(f"{module}.{name}")
            continue
        effect, severity = LOADS_AS[how[-1]] if how else ("", WARNING)
        if status == "__main__":
            report.findings.append(
                Finding(
                    WARNING,
                    "load",
                    "main-module",
                    f"{module}.{name} was defined in a script run as the program (`__main__`): it {effect} in any "
                    f"other entry point ({n.rows} row(s))",
                    "move the class into a module and import it; old rows keep the name",
                    threads=threads,
                    count=len(threads),
                )
            )
        elif status in ("missing module", "missing class"):
            where = (
                f"no module {answer.get('missing')}"
                if status == "missing module"
                else f"no {name} in {answer.get('file')}"
            )
            report.findings.append(
                Finding(
                    severity,
                    "load",
                    "class-missing",
                    f"{module}.{name}: {where}; {n.rows} stored value(s) name it, and each {effect}",
                    "restore the class under that name (an alias: `from new.place import X` in the old module), or "
                    "migrate the rows",
                    threads=threads,
                    count=len(threads),
                )
            )
        else:
            report.findings.append(
                Finding(
                    INFO,
                    "load",
                    "class-unknown",
                    f"{module}.{name}: only importing it could tell whether it loads ({answer.get('why')})",
                    None,
                    threads=threads,
                    count=len(threads),
                )
            )
    if unregistered:
        shown = ", ".join(unregistered[:8]) + (" …" if len(unregistered) > 8 else "")
        report.findings.append(
            Finding(
                INFO,
                "load",
                "strict-msgpack",
                f"{len(unregistered)} class(es) outside LangGraph's safe list are loaded by import and call, which "
                f"LANGGRAPH_STRICT_MSGPACK=true (announced as the future default) blocks: {shown}",
                "list them in the serializer's allowed_msgpack_modules",
                count=len(unregistered),
            )
        )


def _langchain_lc(key: tuple[str, str], n: _Named) -> bool:
    """An `lc` id of LangChain's own (`langchain.schema.messages`...): revived through LangChain's
    own mapping, not imported by that name."""
    return n.how == {"json-lc"} and key[0].split(".")[0] in ("langchain", "langchain_core")


def _schema(store: Any, summary: Any, schema: Any, out: list[Finding]) -> None:
    from statectl.core.schema import check_thread

    found = check_thread(schema, store.view(summary.thread_id), summary.status)
    for p in found.problems:
        what = ", ".join(f"{k}={v}" for k, v in p.items() if k != "problem")
        severity = ERROR if found.waiting else WARNING
        out.append(
            Finding(
                severity,
                "schema",
                p["problem"],
                f"the newest state does not fit the graph's schema: {p['problem']} ({what})"
                + (" — the thread waits and would resume on it" if found.waiting else ""),
                "statectl schema TARGET --all-threads shows each",
                summary.thread_id,
            )
        )


# -- operations -----------------------------------------------------------------------------------
def _operations(store: Any, summary: Any, options: Options, out: list[Finding], growth: Any) -> None:
    from statectl.sources.status import _moment

    t = summary.thread_id
    if options.older_than is not None and summary.status in ("interrupted", "error"):
        when = _moment(summary.updated_at)
        if when is not None and when < options.older_than:
            what = "waiting on an interrupt" if summary.status == "interrupted" else "failed"
            out.append(
                Finding(
                    INFO,
                    "operations",
                    f"stale-{summary.status}",
                    f"{what} since {when:%Y-%m-%d %H:%M} UTC",
                    "resume it (statectl fork/replay), or prune it",
                    t,
                )
            )
    _growth(store, t, out, growth)


def _growth(store: Any, t: str, out: list[Finding], found: Any) -> None:
    """A step that jumps, a channel that outgrows the rest, bookkeeping over state: from the
    sizes read with the rows (msgpack), else as `statectl size THREAD` reads them."""
    from statectl.core.size import thread_channels

    if found is None:
        if store.source.kind not in ("sqlite", "postgres", "export", "folder"):
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


def _prunable(store: Any) -> list[Finding]:
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
