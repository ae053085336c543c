"""`statectl log`, `show` and `diff`: a thread's history, the state at a checkpoint, what a step changed."""

# (no `from __future__ import annotations`: Typer reads the commands' annotations at every start,
# and strings it must eval, each compiled again; evaluated here, in the .pyc)

import sys
from typing import Annotated, Any

import typer

from statectl.cli.options import (
    Checkpoint,
    Db,
    Full,
    Graph,
    Json,
    Ns,
    Python,
    Thread,
    complete_key,
    open_store,
)
from statectl.cli.output import (
    emit,
    emit_json,
    json_bytes,
    make_console,
    plain_pipe,
    print_notes,
    set_full,
    write_plain,
)
from statectl.cli.typer_compat import Exit
from statectl.errors import StatectlError


def log(
    thread_id: Thread,
    db: Db = None,
    ns: Ns = "",
    json: Json = False,
    graph: Graph = None,
    python: Python = None,
    patch: Annotated[
        bool, typer.Option("-p", "--patch", help="Show each step's diff under its line, like git log -p.")
    ] = False,
    full: Full = False,
    max_count: Annotated[
        int | None,
        typer.Option(
            "-n",
            "--max-count",
            help="At most N checkpoints (after the filters), newest first.",
            min=0,
            show_default=False,
        ),
    ] = None,
    node: Annotated[
        str | None, typer.Option("--node", help="Only the steps where this node ran.", show_default=False)
    ] = None,
    changed: Annotated[
        str | None,
        typer.Option("-S", "--changed", help="Only the steps that changed this state key.", show_default=False),
    ] = None,
    grep: Annotated[
        str | None,
        typer.Option(
            "--grep",
            help="Only checkpoints whose state (messages, values) contains this text, ignoring case.",
            show_default=False,
        ),
    ] = None,
    oneline: Annotated[
        bool, typer.Option("--oneline", help="One short line per checkpoint: id, step, source, what ran.")
    ] = False,
    local: Annotated[bool, typer.Option("--local", help="Times in the local time zone (default: UTC).")] = False,
) -> None:
    """The history of a thread, newest first, like get_state_history.

    THREAD: an id or a unique prefix of one."""
    set_full(full)
    with open_store(db, graph, python) as store:
        view = store.view(thread_id, ns)
        from statectl.core.log import selection

        streamed = patch and not json and not oneline and node is None and changed is None and grep is None
        records, ents = selection(view, node, changed, grep, max_count, streamed=streamed, entries=not json)
        if json:
            from statectl.core.diff import step_diff

            out = sys.stdout.buffer
            for rec in records:
                data = step_diff(view, rec).to_json() if patch else view.snapshot(rec.checkpoint_id).to_json()
                out.write(json_bytes(data) + b"\n")
            return
        assert ents is not None  # (read whenever the output is not JSON)
        from statectl.render.pipe import writer

        total, count = len(view.records), len(records)
        shown = f"{count} of {total} checkpoints" if count != total else f"{total} checkpoint{'s' * (total != 1)}"
        ns = view.checkpoint_ns  # (as resolved: --ns takes a prefix or a subgraph node's name)
        title = f"thread {view.thread_id}" + (f"  ns {ns}" if ns else "") + f"  ({shown})"
        if by := writer(view.records[0].metadata, _newest_ts(view)):
            title += f"  written by {by}"
        if oneline and not ents:
            return
        if patch and not oneline:
            ents = _log_patch(view, ents, title, local)
        elif not (plain_pipe() and _log_plain(ents, title, local, oneline)):
            _log_rich(ents, title, local, oneline)
        if oneline:
            return
        from statectl.core.log import notes

        print_notes(store, notes(view, ents))
        others = [repr(n) if n else "'' (root)" for n in sorted(view.namespaces) if n != ns]  # read once
        if others:
            _dim_line(f"other namespaces (--ns): {', '.join(others)}")


def _log_plain(ents: Any, title: str, local: bool, oneline: bool) -> bool:
    """`log`'s table or `--oneline` into a pipe, without Rich (`render.pipe`); False where Rich
    must lay it out (a tab)."""
    from statectl.render.pipe import log_text, oneline_text

    text = oneline_text(ents, local) if oneline else log_text(ents, title, local)
    if text is None:
        return False
    write_plain(text)
    return True


def _log_rich(ents: Any, title: str, local: bool, oneline: bool) -> None:
    """`log`'s table or `--oneline`, laid out by Rich (a terminal, a pager, a tab)."""
    if oneline:
        from statectl.render.tables import oneline_table

        console = make_console()  # one line each: cut at a terminal's edge, whole into a pipe
        console.print(
            oneline_table(ents, local),
            crop=console.is_terminal,
            no_wrap=True,
            overflow="ellipsis" if console.is_terminal else "ignore",
        )
        return
    from statectl.render.columns import PlainTable, natural_width
    from statectl.render.tables import log_table

    emit(log_table(ents, title, local, plain=PlainTable.PLAIN and natural_width(make_console())))


def _log_patch(view: Any, ents: Any, title: str, local: bool) -> Any:
    """`log -p`: each step's line, its diff under it, streamed as read."""
    from statectl.cli.output import Partial
    from statectl.render.diff import stream_log_patch

    console = make_console()
    console.print(title, style="bold", soft_wrap=not console.is_terminal)
    with Partial("steps") as written:
        return stream_log_patch(console, view, ents, local, written.wrote)


def _dim_line(text: str) -> None:
    """A dim line under a report (soft-wrapped: whole into a pipe, written there without Rich)."""
    if plain_pipe():
        from statectl.render.pipe import shown

        plain = "".join(line.rstrip(" ") + "\n" for line in shown(text).split("\n"))
        if "\t" not in plain:
            write_plain(plain)
            return
    from rich.text import Text

    make_console().print(Text(text, style="dim"), soft_wrap=True)


def _newest_ts(view: Any) -> Any:
    """The newest checkpoint's `ts` (who wrote it: LangGraph.js writes it its own way), or None
    where that checkpoint cannot be read (the log still lists it)."""
    try:
        return view.checkpoint(view.records[0].checkpoint_id).get("ts")
    except StatectlError:
        return None


def diff(
    thread_id: Thread,
    a: Annotated[
        str | None,
        typer.Argument(
            help="With B: the 'from' checkpoint. Alone: the checkpoint to compare with its parent (default: latest).",
            show_default=False,
        ),
    ] = None,
    b: Annotated[str | None, typer.Argument(help="The 'to' checkpoint.", show_default=False)] = None,
    db: Db = None,
    ns: Ns = "",
    json: Json = False,
    full: Full = False,
    graph: Graph = None,
    python: Python = None,
    fmt: Annotated[
        str, typer.Option("--format", help="text, json, or patch (RFC 6902 JSON Patch from A's values to B's).")
    ] = "text",
    key: Annotated[str | None, typer.Option("--key", help="Only this state key.", autocompletion=complete_key)] = None,
    internal: Annotated[
        bool, typer.Option("--internal", help="Also LangGraph's bookkeeping channels (branch:to:*, __start__, ...).")
    ] = False,
    exit_code: Annotated[
        bool, typer.Option("--exit-code", help="Exit 1 when there are changes, 0 when there are none (like git diff).")
    ] = False,
    db_b: Annotated[
        str | None,
        typer.Option(
            "--db-b",
            help="B is in this store (the same thread id, or THREAD:CHECKPOINT): the "
            "original run against its re-run in a copy.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """What changed between two checkpoints, and which node changed it.

    A and B: an id, a unique prefix or suffix of one, 'latest', or a step number (`-- -1 3` for
    step -1 to step 3). A alone: that checkpoint against its parent (default: the newest).
    Across threads: `diff T1:CKPT T2:CKPT`, or `diff T1 T2` for their newest checkpoints; across
    stores: `diff THREAD [A] [B] --db-b OTHER` or `diff T1[:A] T2[:B] --db-b OTHER` (B in OTHER)."""
    from statectl.core.compare import named_diff
    from statectl.core.diff import patch

    set_full(full)
    fmt = "json" if json else fmt
    if fmt not in ("text", "json", "patch"):
        raise StatectlError(f"unknown format {fmt!r}", "use text, json or patch")
    with open_store(db, graph, python) as store:
        other = None if db_b is None else (lambda: open_store(db_b, graph, python))
        d = named_diff(store, thread_id, a, b, ns, key, internal, other)
        if fmt == "json":
            emit_json(d.to_json())
        elif fmt == "patch":
            emit_json(patch(d))
        else:
            from statectl.render.diff import diff_view

            emit(diff_view(d), lines=True)
            print_notes(store)
    if exit_code and d.has_changes:
        raise Exit(1)


def show(
    thread_id: Thread,
    checkpoint: Checkpoint = None,
    db: Db = None,
    ns: Ns = "",
    key: Annotated[
        str | None, typer.Option("--key", help="Show only this state key.", autocompletion=complete_key)
    ] = None,
    json: Json = False,
    full: Full = False,
    graph: Graph = None,
    python: Python = None,
) -> None:
    """The state at a checkpoint (latest by default).

    A header (next, tasks, interrupts, errors), then each state key: messages as a transcript,
    todos, files, any other value as a tree.

    THREAD: an id or a unique prefix of one. CHECKPOINT: an id, a unique prefix or suffix of
    one, 'latest', or a step number (`-- -1` for step -1)."""
    set_full(full)
    keys = None if key is None else frozenset({key})
    with open_store(db, graph, python) as store:
        from statectl.codec.arrays import tail
        from statectl.render import Limits

        with tail(None if json or full else Limits.items):  # (a transcript: the newest it prints decoded)
            snap = store.key_snapshot(thread_id, checkpoint, ns, key)
        if json:
            emit_json(snap.to_json())
            return
        from statectl.core.afterwards import afterwards

        view = store.view(thread_id, ns, keys)  # the view the snapshot came from
        then = afterwards(view, snap.checkpoint_id, bool(snap.interrupts), bool(snap.errors))
        newest = snap.checkpoint_id == view.records[0].checkpoint_id
        if not (plain_pipe() and _show_plain(snap, key, newest, then)):
            from statectl.render.state import snapshot_view

            emit(snapshot_view(snap, key, newest=newest, then=then))
        _store_files(db, snap.values)
        from statectl.core.js import js_time

        js = ["written by LangGraph.js: its task ids, Sends, interrupts and errors read as it reads them"]
        print_notes(store, js if js_time(snap.created_at) else [])


def _show_plain(snap: Any, key: str | None, newest: bool, then: str | None) -> bool:
    """`show`'s view into a pipe, without Rich (`render.pipe_show`); False where Rich must lay
    it out."""
    if not (sys.stdout.encoding or "").lower().startswith("utf"):  # (Rich draws ASCII boxes there)
        return False
    from statectl.render.pipe_show import show_text

    text = show_text(snap, key, newest, then)
    if text is None:
        return False
    write_plain(text)
    return True


def _store_files(db: str | None, values: Any) -> None:
    """Under a deepagents thread's state: which paths of its filesystem live in the long-term
    memory store beside it, and where (a `CompositeBackend` route to a `StoreBackend`)."""
    if not isinstance(values, dict) or "files" not in values:
        return
    from statectl.core.memory import store_routes, tool_paths

    paths = tool_paths(values.get("messages"))
    if not paths:
        return
    from statectl.cli.store import beside
    from statectl.errors import StatectlError

    try:
        memory = beside(db)
    except StatectlError:  # (a store that does not open: `show` still shows the thread)
        return
    if memory is None:
        return
    with memory:
        routes = store_routes(memory, paths, values.get("files") or {})
    if routes:
        from statectl.render.memory import store_routes_view

        emit(store_routes_view(routes))
