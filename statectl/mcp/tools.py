"""What `statectl mcp` answers: the read-only commands' JSON, as plain functions of a `Config`.

Each tool opens the store afresh (a thread written since is seen), computes what the command's
`--json` gives, redacts secrets, and sizes the result for a model's context (`paging`). Nothing
the data names is imported or run; the app's graph, where one is configured, was loaded once at
start, as `--graph` loads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import count, islice
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from statectl.errors import NotFoundError, StatectlError
from statectl.mcp import paging

if TYPE_CHECKING:
    from statectl.core.redact import Redactor
    from statectl.store import Store


# Each tool's parameters are declared here once, with the description a client sees: the server
# (server.py) registers these functions as they are, less their `config`.
Db = Annotated[
    str | None,
    Field(description="Which store: one list_sources names (its db or index); default: the first."),
]
Thread = Annotated[str, Field(description="A thread id, or a unique prefix of one.")]
Ns = Annotated[str, Field(description="Checkpoint namespace (a subgraph's); '' is the root graph.")]
Cursor = Annotated[str | None, Field(description="next_cursor from the previous result, to page on.")]
Pointer = Annotated[
    str | None,
    Field(description="A JSON pointer into the result (/values/messages/3/content): only that part, whole or paged."),
]
Status = Annotated[str | None, Field(description="done, interrupted, error or pending (several: 'error,interrupted').")]


@dataclass
class Config:
    """The server's settings, fixed at start."""

    dbs: list[str]
    """The stores a tool may name (`--db`, as resolved); the first is the default."""
    labels: list[str]
    """The same, as shown (passwords left out)."""
    allow_any_db: bool = False
    graph: Any = None
    """The app's `GraphSpec` (`--graph TARGET`), or None."""
    target: str | None = None
    python: str | None = None
    redactor: Any = None
    """A `core.redact.Redactor` (the `--redact` rules), or None with `--no-redact`."""
    limit: int = paging.LIMIT
    _schema: Any = field(default=None, repr=False)

    def spec(self, db: str | None) -> str:
        """The store a tool's `db` argument names: a configured one (by its text, label or number),
        or with --allow-any-db any path or URL."""
        if db is None or db == "":
            return self.dbs[0]
        for i, (spec, label) in enumerate(zip(self.dbs, self.labels, strict=True)):
            if db in (spec, label, str(i)):
                return spec
        if self.allow_any_db:
            return db
        raise StatectlError(
            f"db {db!r} is not one this server was started with",
            f"use one of: {', '.join(self.labels)} (list_sources), or start it with --allow-any-db",
        )

    def schema(self) -> Any:
        """The app's schema (`--graph`), loaded on first use; None without a graph."""
        if self._schema is None and self.target is not None:
            from statectl.project.introspect import load_schema

            self._schema = load_schema(self.target, self.python)
        return self._schema


@contextmanager
def opened(config: Config, db: str | None) -> Iterator[Store]:
    from statectl.sources import open_source
    from statectl.store import Store

    store = Store.of(open_source(config.spec(db)), config.graph)  # (the graph loaded once, at start)
    try:
        yield store
    finally:
        store.close()


def finish(config: Config, result: dict[str, Any], store: Store | None = None) -> dict[str, Any]:
    """The result redacted, with the store's label and what the data cannot say."""
    out = {"db": store.label if store is not None else None, **result}
    if store is not None and store.notes:
        out["notes"] = list(store.notes)
    if out["db"] is None:
        del out["db"]
    return redact_result(out, config.redactor)


def redact_result(result: dict[str, Any], redactor: Redactor | None) -> dict[str, Any]:
    """A tool's result redacted, its cursor aside (made of what is shown already: redacted again,
    its base64 could read as a key)."""
    shown = redact({k: v for k, v in result.items() if k != "next_cursor"}, redactor)
    return {k: result[k] if k == "next_cursor" else shown[k] for k in result}


def redact(value: Any, redactor: Redactor | None) -> Any:
    """`value` as `export --redact` writes it (`Redactor.value`: texts, mapping keys, the values
    of secret keys): what a tool shows, and what it pages, shortens and searches (redacted before
    it is cut, a secret is never half-shown; searched as shown, a search is no oracle)."""
    return value if redactor is None else redactor.value(value)


def named(config: Config, store: Store, given: str) -> str:
    """The thread `given` names (its id, or a unique prefix of one), by the ids as shown where
    secrets are redacted (`Store.thread_id`'s `shown`): no oracle for the secret in an id."""
    return given if config.redactor is None else store.thread_id(given, config.redactor.text)


def said(config: Config, text: str) -> str:
    """A tool error's text as sent: redacted as results are (a "did you mean" names thread ids),
    on one line, control characters written out, at most `ERROR_CHARS`."""
    from statectl.escape import escape
    from statectl.secrets import scrub

    if config.redactor is not None:
        text = config.redactor.text(text)
    return paging.cut(" ".join(escape(scrub(text)).split("\n")), min(config.limit, ERROR_CHARS) - SDK_PREFIX)


ERROR_CHARS = 2000
"""The longest tool error (a pointer's miss lists what is there, a few keys, each shortened)."""
SDK_PREFIX = 64
"""Room for what the SDK puts before a tool's error: `Error executing tool show_state: `."""


def list_sources(
    config: Config,
) -> dict[str, Any]:
    """The stores this server reads (the db argument of the other tools), and the graph it knows."""
    return {
        "sources": [{"db": label, "index": i, "default": i == 0} for i, label in enumerate(config.labels)],
        "any_db": config.allow_any_db,
        "graph": config.target,
    }


def list_threads(
    config: Config,
    db: Db = None,
    status: Status = None,
    match: Annotated[str | None, Field(description="Only thread ids containing this text.")] = None,
    since: Annotated[str | None, Field(description="Updated since: 30m, 2h, 3d, or a date.")] = None,
    older_than: Annotated[str | None, Field(description="Not updated for this long: 2h, 7d.")] = None,
    meta: Annotated[
        list[str] | None, Field(description="KEY=VALUE the newest checkpoint's metadata holds (all must).")
    ] = None,
    limit: Annotated[int, Field(description="Threads per page (1-1000).")] = 50,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Threads, most recently updated first: status, checkpoints, last update, and a preview (the
    error and its node, the pending interrupt's question, else the first user message)."""
    from statectl.core.listing import Selection

    if not 1 <= limit <= 1000:
        raise StatectlError("limit must be from 1 to 1000")
    chosen = Selection.parse(match, status, since, older_than=older_than, meta=meta)
    with opened(config, db) as store:
        after = paging.after_of(cursor, store.iter_thread_ids)
        rows, shown = chosen.page(store, limit, after)
        items = redact([{**t.to_json(), **shown[t.thread_id].to_json()} for t in rows], config.redactor)
        if match and config.redactor is not None:  # (matched in the ids as shown: no oracle)
            pairs = [(t, i) for t, i in zip(rows, items, strict=True) if match.casefold() in i["thread_id"].casefold()]
        else:
            pairs = list(zip(rows, items, strict=True))
        out = paging.page_items(
            [i for _, i in pairs], None, config.limit, "threads", lambda page: {"threads": page, "total": rows.total}
        )
        kept = out["threads"]
        # (the cursor names the real id of the last thread read: shortened or redacted, it pages on)
        if len(kept) < len(pairs):
            last: tuple[Any, Any] | None = pairs[len(kept) - 1]
        else:
            last = (rows[-1], items[-1]) if rows.more and rows else None
        out["next_cursor"] = paging.cursor_after(last[0].thread_id, last[1]["thread_id"]) if last else None
        if len(pairs) < len(items) and out["total"] is not None:
            out["total"] = None  # (counted before the ids as shown were matched)
        out["left_out"] = "more threads follow: call again with cursor" if out["next_cursor"] else None
        return finish(config, out, store)


def thread_log(
    config: Config,
    thread_id: Thread,
    db: Db = None,
    ns: Ns = "",
    node: Annotated[str | None, Field(description="Only the steps where this node ran.")] = None,
    changed: Annotated[str | None, Field(description="Only the steps that changed this state key.")] = None,
    grep: Annotated[str | None, Field(description="Only checkpoints whose state contains this text.")] = None,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """A thread's history, newest first (as get_state_history): each checkpoint's id, step,
    source, the nodes whose writes made it (ran), the state keys they changed, interrupts and
    errors raised from it."""
    from statectl.core.timeline import select
    from statectl.sources.status import uuid6_time

    with opened(config, db) as store:
        view = store.view(named(config, store, thread_id), ns)
        shown = None if config.redactor is None else config.redactor.value  # (grep what is shown)
        _, ents = select(view, node, changed, grep, None, entries_wanted=True, shown=shown)
        assert ents is not None
        items = []
        for e in ents:
            r = e.record
            item: dict[str, Any] = {
                "checkpoint_id": r.checkpoint_id,
                "step": r.step,
                "source": r.source,
                "created_at": uuid6_time(r.checkpoint_id),
                "parent_checkpoint_id": r.parent_checkpoint_id,
                "ran": list(e.ran),
                "changed": list(e.changed),
            }
            for name in ("interrupts", "errors", "failed", "subgraphs"):
                if getattr(e, name):
                    item[name] = list(getattr(e, name))
            if e.children > 1:
                item["branches"] = e.children
            if not e.on_latest_line:
                item["off_latest_line"] = True
            items.append(item)
        items = redact(items, config.redactor)
        head = {
            "thread_id": view.thread_id,
            "checkpoint_ns": view.checkpoint_ns,
            "checkpoints": len(view.records),
            "namespaces": sorted(view.namespaces),
        }
        head = redact(head, config.redactor)
        out = paging.page_items(items, cursor, config.limit, "checkpoints", lambda page: {**head, "log": page})
        notes = list(view.loop_notes)
        if notes:
            out["warnings"] = notes
        return finish(config, out, store)


def show_state(
    config: Config,
    thread_id: Thread,
    checkpoint: Annotated[
        str | None, Field(description="Checkpoint id, unique prefix or suffix, 'latest', or step number.")
    ] = None,
    db: Db = None,
    ns: Ns = "",
    key: Annotated[str | None, Field(description="Only this state key.")] = None,
    pointer: Pointer = None,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """The state at a checkpoint (the newest by default), as get_state gives it: values, next,
    tasks (with their interrupts and errors), metadata, created_at, parent."""
    with opened(config, db) as store:
        snap = store.key_snapshot(named(config, store, thread_id), checkpoint, ns, key)
        data = redact(snap.to_json(), config.redactor)  # (before cutting: a secret is never half-shown)
        head = {"thread_id": snap.thread_id, "checkpoint_id": snap.checkpoint_id}
        return finish(config, result_part(config, data, "state", pointer, cursor, head), store)


def diff(
    config: Config,
    thread_id: Thread,
    a: Annotated[
        str | None, Field(description="With b: the 'from' checkpoint. Alone: compared with its parent.")
    ] = None,
    b: Annotated[str | None, Field(description="The 'to' checkpoint.")] = None,
    db: Db = None,
    ns: Ns = "",
    key: Annotated[str | None, Field(description="Only this state key.")] = None,
    pointer: Pointer = None,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """What changed between two checkpoints (default: the newest against its parent), key by
    key, messages by id, and which node wrote each change."""
    from statectl.core.diff import diff as compute
    from statectl.core.diff import resolve_pair

    with opened(config, db) as store:
        view = store.view(named(config, store, thread_id), ns)
        # (b alone is a checkpoint against its parent, as a alone and the CLI's one argument are)
        first, second = resolve_pair(view, b, None) if a is None else resolve_pair(view, a, b)
        d = compute(view, first, second)
        if key is not None:
            if not any(s is not None and isinstance(s.values, dict) and key in s.values for s in (d.a, d.b)):
                raise NotFoundError(f"no state key {key!r} at either checkpoint")
            d = d.only(key)
        data = redact(d.to_json(), config.redactor)
        return finish(config, result_part(config, data, "diff", pointer, cursor), store)


def result_part(
    config: Config, data: Any, name: str, pointer: str | None, cursor: str | None, head: dict | None = None
) -> dict[str, Any]:
    """`data` whole, or shortened to fit with its cuts named; with `pointer`, that part of it,
    paged where it is long."""
    if pointer:
        part = paging.resolve_pointer(data, pointer)
        return {**(head or {}), "pointer": pointer, **paging.bound(part, cursor, config.limit, pointer.rstrip("/"))}
    if cursor:
        raise StatectlError("a cursor goes with the pointer it came from (pointer=...)")
    small, cuts = paging.shrink(data, config.limit - 400)
    return {name: small, "left_out": paging.cut_note(cuts) if cuts else None}


def graph(
    config: Config,
    thread_id: Annotated[
        str | None, Field(description="The thread whose path to draw (needed when the server has no graph).")
    ] = None,
    db: Db = None,
    ns: Ns = "",
    cursor: Cursor = None,
) -> dict[str, Any]:
    """The graph as a Mermaid flowchart: the app's own (when the server was started with --graph)
    with the thread's path, or the graph a thread's history shows (inferred, and said so)."""
    from statectl.core import mermaid as core

    if thread_id is None and config.target is None:
        raise StatectlError("give thread_id (the graph its history shows); this server has no --graph")
    text = path = store = None
    if thread_id is not None:
        with opened(config, db) as store:
            view = store.view(named(config, store, thread_id), ns)
            if config.target is None:
                text = core.inferred(view)
            else:
                path = core.thread_path(view)
    if text is None:
        from statectl.project.introspect import load_drawing

        assert config.target is not None
        _, text, nodes = load_drawing(config.target, config.python, False, structure=False)
        if path is not None:
            text = core.overlay(text, nodes, path)
    out = {
        "inferred": config.target is None,
        "source": config.target or f"the history of thread {thread_id}",
        "format": "mermaid",
        **paging.page_text(redact(text, config.redactor), cursor, config.limit),
    }
    return finish(config, out, store)


def size(
    config: Config,
    thread_id: Annotated[str | None, Field(description="A thread: its bytes by channel and per step.")] = None,
    db: Db = None,
    limit: Annotated[int, Field(description="Largest threads to list (0: all).")] = 20,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Where the bytes go: by table, the largest threads (without thread_id); by channel and per
    step (with it)."""
    from statectl.core import size as core

    with opened(config, db) as store:
        if thread_id is None:
            data = core.store_size(store.source, limit or None).to_json()
        else:
            data = core.thread_channels(store.source, store.thread_id(named(config, store, thread_id))).to_json()
        data = redact(data, config.redactor)
        return finish(config, paging.bound(data, cursor, config.limit, name="size"), store)


def prune_plan(
    config: Config,
    keep_last: Annotated[int, Field(description="Keep the N newest checkpoints of each namespace.")] = 0,
    older_than: Annotated[str | None, Field(description="Only checkpoints older than this may go.")] = None,
    thread_id: Annotated[str | None, Field(description="Only this thread (default: every thread).")] = None,
    status: Status = None,
    db: Db = None,
    threads_per_page: Annotated[int, Field(description="Threads planned per call (1-500).")] = 50,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """What `statectl prune` could delete safely (a plan only: this server never writes). Always
    kept: each namespace's newest checkpoint, branch heads, fork points, delta ancestors."""
    # The plan `prune` prints (never carried out here), a page of threads at a time.
    from statectl.core import prune as core
    from statectl.sources.status import parse_statuses

    if keep_last < 0:
        raise StatectlError("keep_last must be 0 or more")
    cutoff = core.cutoff_of(keep_last, older_than, "keep_last", "older_than")
    wanted = parse_statuses(status)
    with opened(config, db) as store:
        # (the store's ids a page at a time, or its threads with these statuses a chunk at a
        # time: no list of every thread is held, on a store of a million threads too)
        every: Iterator[str]
        if thread_id is not None:
            every = iter([store.thread_id(named(config, store, thread_id))])
        elif not wanted:
            every = store.iter_thread_ids()
        else:
            every = (t.thread_id for t in store.each_thread(status=wanted))
        counter = count()
        every = (t for t, _ in zip(every, counter, strict=False))  # (next(counter): how many were read)
        start = paging.offset_of(cursor)
        page = list(islice(every, start, start + max(1, min(threads_per_page, 500))))
        plans = list(core.plan_threads(store, page, keep_last, cutoff))
        items = redact([p.to_json() for p in plans], config.redactor)
        out = paging.page_items(
            items,
            None,
            config.limit,
            "threads",
            lambda shown: {
                "threads": shown,
                "drop": sum(len(p.drop) for p in plans[: len(shown)]),
                "bytes": sum(p.bytes for p in plans[: len(shown)]),
                "applied": False,
            },
        )
        end = start + len(out["threads"])
        if thread_id is None and not wanted:
            total = store.count_threads()
        else:
            for _ in every:  # (the rest read and counted, not kept)
                pass
            total = next(counter)
        out["next_cursor"] = paging.cursor_of(end) if end < total else None
        out["totals_cover"] = f"threads {start}..{end} of {total}"
        out["left_out"] = f"{total - end} more threads to plan: call again with cursor" if end < total else None
        out["how_to_apply"] = "statectl prune --apply (in a terminal, by a person): this server never writes"
        return finish(config, out, store)


def schema(
    config: Config,
    thread_id: Annotated[
        str | None, Field(description="The thread whose state keys to infer (and check against the graph).")
    ] = None,
    db: Db = None,
    ns: Ns = "",
    cursor: Cursor = None,
) -> dict[str, Any]:
    """A thread's state keys and their types as its history shows them; with the server's
    --graph, the thread's drift from the graph's schema, or (without a thread) every thread the
    schema would break."""
    # A thread's state keys as its history shows them; with --graph, the graph's schema and the
    # thread's drift from it; with --graph and no thread, every thread checked against it.
    from statectl.core import schema as core

    declared = config.schema()
    if thread_id is None and declared is None:
        raise StatectlError("give thread_id (its keys as history shows them); this server has no --graph")
    with opened(config, db) as store:
        if thread_id is not None:
            view = store.view(named(config, store, thread_id), ns)
            observed = core.infer(view)
            data: dict[str, Any] = {"thread_id": view.thread_id, "keys": [o.to_json() for o in observed]}
            if declared is not None:
                data["graph"] = config.target
                data["drift"] = {"thread_id": view.thread_id, **core.drift(declared, observed).to_json()}
            data = redact(data, config.redactor)
            return finish(config, paging.bound(data, cursor, config.limit, name="schema"), store)
        checked, affected = 0, []
        for t in store.each_thread():
            checked += 1
            try:
                found = core.check_thread(declared, store.view(t.thread_id), t.status)
            except StatectlError as exc:
                found = core.ThreadCheck(t.thread_id, t.status, [{"problem": "unreadable", "error": exc.message}])
            if found.problems:
                affected.append(found.to_json())
        out = paging.page_items(
            redact(affected, config.redactor),
            cursor,
            config.limit,
            "affected threads",
            lambda page: {"graph": config.target, "threads": checked, "affected": page},
        )
        return finish(config, out, store)


def stored_types(
    config: Config,
    db: Db = None,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Every type the stored values name (msgpack ext types, LangChain lc ids, pickled classes),
    with how many values and threads name it, and what LangGraph's strict mode
    (LANGGRAPH_STRICT_MSGPACK=true) does with it; the allowed_msgpack_modules list and the
    JsonPlusSerializer(...) line that make strict mode load every thread. Read-only."""
    # `doctor --types --json`: every type the values name, with the allowlist that makes
    # LangGraph's strict mode load every thread (the types a page at a time; the allowlist whole).
    from statectl.core.types import stored_types as scan
    from statectl.project.classes import safe_lookup

    safe, classes, where = safe_lookup(config.python)
    with opened(config, db) as store:
        report = scan(store, safe, classes=classes)
        report.safe_from = where
        data = redact(report.to_json(), config.redactor)
        types = data.pop("types")
        data.pop("db", None)
        too_long = paging.size(data) > config.limit // 2
        if too_long:  # (a store can name more types than a result holds: the allowlist is then the CLI's)
            for key in ("allowed_msgpack_modules", "allowed_json_modules", "serializer", "notes"):
                data[key] = None
        out = paging.page_items(
            types, cursor, config.limit - paging.size(data), "types", lambda page: {**data, "types": page}
        )
        if too_long:
            out["allowlist_left_out"] = "too long for one result: statectl doctor --types --format python prints it"
        return finish(config, out, store)
