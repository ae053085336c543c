"""The `statectl` command line: parse, call the core, render or dump JSON, exit."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

try:  # Typer with click vendored (>= 0.2x)
    from typer.exceptions import Abort, Exit, TyperException
except ImportError:  # Typer on click
    from click.exceptions import Abort, Exit  # type: ignore[assignment]
    from click.exceptions import ClickException as TyperException  # type: ignore[assignment]

from statectl.errors import NotFoundError, StatectlError

app = typer.Typer(
    name="statectl",
    help="Inspect LangGraph checkpoints: threads, history, state — read-only, from the database alone. "
         "--db also takes a LangGraph server's URL (http://127.0.0.1:2024 for `langgraph dev`); "
         "a deployment's key: --api-key KEY or $LANGSMITH_API_KEY / $LANGGRAPH_API_KEY. "
         "Encrypted checkpoints (EncryptedSerializer): --aes-key KEY or $LANGGRAPH_AES_KEY. "
         "Pickled values (pickle_fallback): --unpickle-inert reads them without importing or "
         "calling anything. --timeout SECONDS (or $STATECTL_TIMEOUT): the longest a source may "
         "make a command wait (Postgres: connect 10, locks 10, a query 60; HTTP: 30). Output for "
         "a terminal goes through a pager as git's does (less -FRX; $STATECTL_PAGER or $PAGER; "
         "--no-pager).",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,  # decoded state can hold secrets
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _plain_values() -> None:
    """Typer 0.2x converts every value through a pydantic TypeAdapter built on first use:
    importing pydantic and building the adapters costs 40-70 ms a command, more than all of
    statectl's own start-up. statectl's parameters are plain: str, bool, int and float (with a
    minimum), a Path, a list of str. Convert those directly, as Typer on click did, and leave any
    other to Typer. (Typer 0.1x, on click, has no adapters: nothing to do.)"""
    try:
        from dataclasses import dataclass
        from pathlib import Path as _Path

        from typer import _coercion, core
        from typer._click.exceptions import BadParameter
    except ImportError:
        return
    base, runtime = getattr(core, "_TyperParameter", None), getattr(_coercion, "RuntimeParam", None)
    if base is None or runtime is None or not hasattr(base, "get_runtime_param"):
        return
    plain = {str: str, bool: bool, int: int, float: float, _Path: _Path}
    path_checks = ("exists", "writable", "resolve_path", "allow_dash")  # (readable: only with exists)

    @dataclass(frozen=True)
    class Plain(runtime):  # type: ignore[misc, valid-type]
        convert: Any = str

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if isinstance(value, (list, tuple)):
                return [self._one(v, param, ctx) for v in value]
            return self._one(value, param, ctx)

        def _one(self, value: Any, param: Any, ctx: Any) -> Any:
            if isinstance(value, self.convert):
                out = value
            else:
                try:
                    out = self.convert(value)
                except (TypeError, ValueError):
                    kind = {int: "an integer", float: "a number"}.get(self.convert, self.convert.__name__)
                    raise BadParameter(f"{value!r} is not {kind}", ctx=ctx, param=param) from None
            low = getattr(self.parameter_info, "min", None)
            if low is not None and out < low:
                raise BadParameter(f"{out} is below the minimum {low}", ctx=ctx, param=param)
            return out

    build = base.get_runtime_param

    def get_runtime_param(self: Any) -> Any:
        if getattr(self, "_runtime_param", None) is None:
            desc = getattr(self, "type_descriptor", None)
            info = getattr(desc, "parameter_info", None)
            ann = getattr(desc, "annotation", None)
            if getattr(ann, "__origin__", None) is list and getattr(ann, "__args__", None) == (str,):
                ann = str
            simple = (info is not None and ann in plain and getattr(info, "max", None) is None
                      and not getattr(desc, "is_choice", True) and getattr(desc, "file_annotation", 1) is None
                      and not any(getattr(info, k, False) for k in path_checks))
            if simple and desc is not None and ann is not None:
                self._runtime_param = Plain(parameter_info=info, annotation=desc.annotation, convert=plain[ann])
        return build(self)

    base.get_runtime_param = get_runtime_param


_plain_values()


def _completing(fn: Any) -> Any:
    """A shell-completion callback that never fails the shell (a wrong --db completes nothing)."""
    def complete(ctx: Any, incomplete: str) -> list[str]:
        params = dict(ctx.params)
        if params.get("thread_id") is None and ctx.args:  # (resilient parsing leaves it unparsed)
            params["thread_id"] = ctx.args[0]
        try:
            with _open(params.get("db")) as store:
                return [c for c in fn(store, params, incomplete) if c.startswith(incomplete)][:200]
        except Exception:
            return []
    return complete


@_completing
def _complete_thread(store: Any, params: dict, incomplete: str) -> list[str]:
    fast = getattr(store.source, "thread_ids", None)  # (SQLite, Postgres: the index alone)
    if fast is not None:
        return fast(incomplete, 200)
    return [t.thread_id for t in store.threads(200, None, "id", incomplete or None)]


@_completing
def _complete_ns(store: Any, params: dict, incomplete: str) -> list[str]:
    return store.namespaces(store.thread_id(params["thread_id"]))


@_completing
def _complete_checkpoint(store: Any, params: dict, incomplete: str) -> list[str]:
    view = store.view(params["thread_id"], params.get("ns") or "")
    return ["latest", *(r.checkpoint_id[-12:] for r in view.records)]


@_completing
def _complete_key(store: Any, params: dict, incomplete: str) -> list[str]:
    view = store.view(params["thread_id"], params.get("ns") or "")
    values = view.snapshot(view.records[0].checkpoint_id).values
    return sorted(values) if isinstance(values, dict) else []


Db = Annotated[str | None, typer.Option(
    "--db", help="SQLite checkpoint file, statectl export, langgraph dev folder (.langgraph_api), "
                 "postgresql:// URL or http(s):// LangGraph server (with --api-key KEY) "
                 "(default: $STATECTL_DB, $DATABASE_URI, then "
                 "./checkpoints.sqlite, ./langgraph.db or ./.langgraph_api).",
    show_default=False)]
Json = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
Full = Annotated[bool, typer.Option("--full", help="Show long values whole (by default a text "
                                    "shows its first 400 characters, a list its first 200 items and "
                                    "a transcript its newest 200 messages).")]
Python = Annotated[str | None, typer.Option(
    "--python", help="Load TARGET in this interpreter (the project's, e.g. .venv/bin/python), "
    "for a statectl installed on its own (pipx, uv tool). Default: statectl's own if it has "
    "LangGraph, else the active virtualenv's or ./.venv's.", show_default=False)]
Graph = Annotated[str | None, typer.Option(
    "--graph", help="The app's graph (file.py:graph or module:graph), loaded as --python says: "
    "exact where the data alone must infer (a reducer's empty value before its first write, the "
    "order of tasks due together). Nothing of it runs on the data.", show_default=False)]
Ns = Annotated[str, typer.Option("--ns", help="Checkpoint namespace (subgraph); '' is the root graph.",
                                 autocompletion=_complete_ns)]
Thread = Annotated[str, typer.Argument(help="The thread's id, or a unique prefix of it.",
                                       autocompletion=_complete_thread)]
Checkpoint = Annotated[str | None, typer.Argument(
    help="Checkpoint id, unique prefix or suffix, 'latest', or step number.", show_default=False,
    autocompletion=_complete_checkpoint)]

def _version(value: bool) -> None:
    if value:
        from statectl import __version__

        typer.echo(f"statectl {__version__}")
        raise typer.Exit()


class _Root:
    db: str | None = None
    """`statectl --db X COMMAND`: the database for the command (its own --db wins)."""


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False,
          db: Annotated[str | None, typer.Option(
              "--db", help="The database for the command (as the command's own --db).",
              show_default=False)] = None) -> None:
    """Inspect LangGraph checkpoints: threads, history, state — read-only, from the database alone."""
    _Root.db = db


STEPS_OK = {"ignore_unknown_options": True}
"""Lets a negative step (`-1`, the input checkpoint) be a positional selector."""


def _console():
    from statectl.render.safe import SafeConsole

    # Data is never markup: a thread id or state key with "[/x]" or ":smile:" prints as written;
    # nor are its control characters sent to the terminal (shown as \x1b: render/safe.py).
    if _Pager.width is not None:  # a pager shows colour and the terminal's width
        return SafeConsole(soft_wrap=False, markup=False, emoji=False, force_terminal=True, width=_Pager.width)
    return SafeConsole(soft_wrap=False, markup=False, emoji=False)


def _print(renderable: Any, lines: bool = False) -> None:
    """Print for the terminal, or into a pipe at natural width; `lines`: a report of lines (a
    diff) that a pipe gets unwrapped, one line per line, for grep."""
    console = _console()
    console.print(renderable, crop=console.is_terminal,  # piped tables keep their natural width
                  soft_wrap=lines and not console.is_terminal)


def _json_bytes(value: Any) -> bytes:
    from statectl.jsonout import json_bytes

    return json_bytes(value)


def _json(value: Any) -> None:
    sys.stdout.buffer.write(_json_bytes(value) + b"\n")


def _notes(store: Any, extra: list[str] = ()) -> None:  # type: ignore[assignment]
    """What the data cannot say, under the human output (dim, one line each)."""
    from rich.text import Text

    from statectl.render import Limits

    cut = [f"{Limits.cut} long value{'s were' if Limits.cut > 1 else ' was'} shortened: --full shows "
           f"{'them' if Limits.cut > 1 else 'it'} whole, --json exactly"] if Limits.cut else []
    for note in [*store.notes, *extra, *cut]:
        _console().print(Text(f"note: {note}", style="dim"), soft_wrap=True)


def _full(full: bool) -> None:
    if full:
        from statectl.render import Limits

        Limits.set_full(True)


def _open(db: str | None, graph: str | None = None, python: str | None = None):
    import statectl

    store = statectl.open(db if db is not None else _Root.db, graph=graph, python=python)
    # where the graph does not describe a thread: one line on stderr, the rest still shown
    store.on_graph_note = lambda note: typer.echo(f"statectl: note: {_escape(note)}", err=True)
    return store


@app.command()
def threads(db: Db = None, json: Json = False,
            limit: Annotated[int | None, typer.Option(
                "--limit", help="At most N threads, most recently updated first (0: all; default "
                "100 in the table, all with --json).", show_default=False)] = None,
            after: Annotated[str | None, typer.Option(
                "--after", help="Start after this thread id (the last one of the previous page).",
                show_default=False)] = None,
            sort: Annotated[str | None, typer.Option(
                "--sort", help="recent (newest activity first; default for SQLite) or id (default "
                "for Postgres, where recent must scan the whole table).", show_default=False)] = None,
            match: Annotated[str | None, typer.Option(
                "--match", "-m", help="Only threads whose id contains this text (ignoring case).",
                show_default=False)] = None,
            status: Annotated[str | None, typer.Option(
                "--status", "-s", help="Only threads with this status: done, interrupted, error or "
                "pending (several: error,interrupted).", show_default=False)] = None,
            since: Annotated[str | None, typer.Option(
                "--since", help="Only threads updated since then: a duration back from now (30m, "
                "2h, 3d, 1w) or a date/time (2026-11-01, 2026-11-01T09:30; UTC unless it names an "
                "offset).", show_default=False)] = None,
            until: Annotated[str | None, typer.Option(
                "--until", help="Only threads last updated before then (as --since).",
                show_default=False)] = None,
            older_than: Annotated[str | None, typer.Option(
                "--older-than", help="Only threads not updated for this long (2h: --until 2h).",
                show_default=False)] = None,
            meta: Annotated[list[str] | None, typer.Option(
                "--meta", help="Only threads whose newest checkpoint's metadata has KEY=VALUE "
                "(a run's configurable values such as user_id; several: all must hold).",
                show_default=False)] = None,
            failed_node: Annotated[str | None, typer.Option(
                "--failed-node", help="Only threads that stopped on an error raised in this node.",
                show_default=False)] = None,
            exit_code: Annotated[bool, typer.Option(
                "--exit-code", help="Exit 1 when any thread matches, 0 when none does (for cron "
                "alerts: statectl threads -s interrupted --older-than 2h --exit-code).")] = False) -> None:
    """List the threads, with status, last update and a preview.

    Columns: checkpoints (all namespaces), namespaces, the newest root step, when it was saved,
    status (done, interrupted, error, pending) and a preview (the error, the pending interrupt,
    else the first user message)."""
    if limit is not None and limit < 0:
        raise StatectlError("--limit must be 0 (all) or more")
    if sort not in (None, "recent", "id"):
        raise StatectlError(f"unknown sort {sort!r}", "use recent or id")
    from statectl.status import STATUSES

    wanted = None
    if status is not None:
        wanted = frozenset(s.strip() for s in status.split(",") if s.strip())
        if not wanted or wanted - set(STATUSES):
            raise StatectlError(f"unknown status {status!r}",
                                f"use {', '.join(STATUSES[:-1])} or {STATUSES[-1]}; several: error,interrupted")
    where = _thread_filter(since, until, older_than, meta, failed_node)
    with _open(db) as store:
        rows = store.threads(limit if limit is not None else (None if json else 100), after, sort, match or None,
                             wanted, where)
        if json:
            _json([t.to_json() for t in rows])
            if exit_code and rows:
                raise Exit(1)
            return
        from statectl.preview import previews
        from statectl.render.tables import threads_table

        shown = previews(store.source, rows)  # the shown page only
        _print(threads_table(rows, store.label, match, wanted, shown, filtered=bool(where)))
        _notes(store)
    if exit_code and rows:
        raise Exit(1)


def _thread_filter(since: str | None, until: str | None, older_than: str | None,
                   meta: list[str] | None, failed_node: str | None) -> Any:
    from statectl.status import ThreadFilter, parse_when

    def when(option: str, text: str | None) -> Any:
        if text is None:
            return None
        try:
            return parse_when(text)
        except ValueError:
            raise StatectlError(f"{option} {text!r} is neither a duration nor a date",
                                "use 30m, 2h, 3d, 1w, or 2026-11-01 / 2026-11-01T09:30") from None

    bound = [w for w in (when("--until", until), when("--older-than", older_than)) if w is not None]
    pairs = []
    for item in meta or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise StatectlError(f"--meta {item!r} is not KEY=VALUE", "e.g. --meta user_id=u-42")
        pairs.append((key, value))
    return ThreadFilter(since=when("--since", since), until=min(bound) if bound else None,
                        meta=tuple(pairs), failed_node=failed_node)


@app.command()
def log(thread_id: Thread, db: Db = None, ns: Ns = "", json: Json = False,
        graph: Graph = None, python: Python = None,
        patch: Annotated[bool, typer.Option("-p", "--patch", help="Show each step's diff under "
                                            "its line, like git log -p.")] = False,
        full: Full = False,
        max_count: Annotated[int | None, typer.Option(
            "-n", "--max-count", help="At most N checkpoints (after the filters), newest first.",
            min=0, show_default=False)] = None,
        node: Annotated[str | None, typer.Option(
            "--node", help="Only the steps where this node ran.", show_default=False)] = None,
        changed: Annotated[str | None, typer.Option(
            "-S", "--changed", help="Only the steps that changed this state key.", show_default=False)] = None,
        grep: Annotated[str | None, typer.Option(
            "--grep", help="Only checkpoints whose state (messages, values) contains this text, "
            "ignoring case.", show_default=False)] = None,
        oneline: Annotated[bool, typer.Option("--oneline", help="One short line per checkpoint: "
                                              "id, step, source, what ran.")] = False,
        local: Annotated[bool, typer.Option("--local", help="Times in the local time zone "
                                            "(default: UTC).")] = False) -> None:
    """The history of a thread, newest first, like get_state_history.

    THREAD_ID: an id or a unique prefix of one."""
    _full(full)
    with _open(db, graph, python) as store:
        view = store.view(thread_id, ns)
        ents = None
        records = view.records
        if node is not None or changed is not None or not json:
            from statectl.timeline import entries

            ents = [e for e in entries(view) if (node is None or node in e.ran)
                    and (changed is None or changed in e.changed)]
            records = [e.record for e in ents]
        if grep is not None:
            from statectl.timeline import state_text

            needle = grep.casefold()
            found = {r.checkpoint_id for r in records if needle in state_text(view, r)}
            records = [r for r in records if r.checkpoint_id in found]
            ents = None if ents is None else [e for e in ents if e.record.checkpoint_id in found]
        if max_count is not None:
            records = records[:max_count]
            ents = None if ents is None else ents[:max_count]
        if json:
            from statectl.diff import step_diff

            out = sys.stdout.buffer
            for rec in records:
                data = step_diff(view, rec).to_json() if patch else view.snapshot(rec.checkpoint_id).to_json()
                out.write(_json_bytes(data) + b"\n")
            return
        assert ents is not None  # (read whenever the output is not JSON)
        from statectl.render.state import writer

        total = len(view.records)
        shown = f"{len(ents)} of {total} checkpoints" if len(ents) != total else \
            f"{total} checkpoint{'s' * (total != 1)}"
        ns = view.checkpoint_ns  # (as resolved: --ns takes a prefix or a subgraph node's name)
        title = f"thread {view.thread_id}" + (f"  ns {ns}" if ns else "") + f"  ({shown})"
        if by := writer(view.records[0].metadata):
            title += f"  written by {by}"
        if oneline and not ents:
            return
        if oneline:
            from statectl.render.tables import oneline_table

            console = _console()  # one line each: cut at a terminal's edge, whole into a pipe
            console.print(oneline_table(ents, local), crop=console.is_terminal, no_wrap=True,
                          overflow="ellipsis" if console.is_terminal else "ignore")
        elif patch:
            from rich.padding import Padding

            from statectl.diff import step_diff
            from statectl.render.diff import diff_body
            from statectl.render.tables import log_line

            console = _console()
            whole = not console.is_terminal  # into a pipe: a line per line, not wrapped at 80
            console.print(title, style="bold", soft_wrap=whole)
            for entry in ents:
                console.print(log_line(entry, local), soft_wrap=whole)
                body = diff_body(step_diff(view, entry.record))
                for part in body:
                    console.print(Padding(part, (0, 0, 0, 4), expand=False), soft_wrap=whole)
                console.print()
                console.file.flush()  # each step as it is ready, also into a pipe
        else:
            from statectl.render.tables import log_table

            _print(log_table(ents, title, local))
        if oneline:
            return
        blank = sum(1 for e in ents if not e.ran and e.record.source not in ("input", None))
        unread = sorted({str(r.metadata["$undecoded"]) for r in view.records if "$undecoded" in r.metadata})
        no_ran = [f"{blank} step{'s' * (blank > 1)} show no RAN: the writes that made "
                  f"{'them' if blank > 1 else 'it'} are not in the database (neither in the writes "
                  "table nor in the checkpoints' metadata)"] * bool(blank)
        _notes(store, [*view.loop_notes, *(f"metadata: {u}" for u in unread), *no_ran])
        others = [repr(n) if n else "'' (root)" for n in sorted(view.namespaces) if n != ns]  # read once
        if others:
            from rich.text import Text

            _console().print(Text(f"other namespaces (--ns): {', '.join(others)}", style="dim"), soft_wrap=True)


@app.command(context_settings=STEPS_OK)
def diff(thread_id: Thread,
         a: Annotated[str | None, typer.Argument(
             help="With B: the 'from' checkpoint. Alone: the checkpoint to compare with its parent "
                  "(default: latest).", show_default=False)] = None,
         b: Annotated[str | None, typer.Argument(help="The 'to' checkpoint.", show_default=False)] = None,
         db: Db = None, ns: Ns = "", json: Json = False, full: Full = False,
         graph: Graph = None, python: Python = None,
         fmt: Annotated[str, typer.Option("--format", help="text, json, or patch (RFC 6902 JSON Patch "
                                          "from A's values to B's).")] = "text",
         key: Annotated[str | None, typer.Option("--key", help="Only this state key.",
                                                 autocompletion=_complete_key)] = None,
         internal: Annotated[bool, typer.Option("--internal", help="Also LangGraph's bookkeeping "
                                                "channels (branch:to:*, __start__, ...).")] = False,
         exit_code: Annotated[bool, typer.Option("--exit-code", help="Exit 1 when there are changes, "
                                                 "0 when there are none (like git diff).")] = False) -> None:
    """What changed between two checkpoints, and which node changed it.

    A and B: an id, a unique prefix or suffix of one, 'latest', or a step number (`-- -1 3` for
    step -1 to step 3). A alone: that checkpoint against its parent (default: the newest)."""
    from statectl.diff import diff as compute
    from statectl.diff import patch, resolve_pair

    _full(full)
    fmt = "json" if json else fmt
    if fmt not in ("text", "json", "patch"):
        raise StatectlError(f"unknown format {fmt!r}", "use text, json or patch")
    with _open(db, graph, python) as store:
        view = store.view(thread_id, ns, None if key is None else frozenset({key}))
        first, second = resolve_pair(view, a, b)
        d = compute(view, first, second, internal=internal)
        if key is not None:
            if not any(s is not None and isinstance(s.values, dict) and key in s.values for s in (d.a, d.b)):
                whole = compute(store.view(thread_id, ns), first, second)
                keys = {k for s in (whole.a, whole.b) if s is not None and isinstance(s.values, dict)
                        for k in s.values}
                raise NotFoundError(f"no state key {key!r} at either checkpoint",
                                    f"keys: {', '.join(sorted(keys)) or 'none'}")
            d = d.only(key)
        if fmt == "json":
            _json(d.to_json())
        elif fmt == "patch":
            _json(patch(d))
        else:
            from statectl.render.diff import diff_view

            _print(diff_view(d), lines=True)
            _notes(store)
    if exit_code and d.has_changes:
        raise Exit(1)


@app.command(context_settings=STEPS_OK)
def show(thread_id: Thread, checkpoint: Checkpoint = None, db: Db = None, ns: Ns = "",
         key: Annotated[str | None, typer.Option("--key", help="Show only this state key.",
                                                 autocompletion=_complete_key)] = None,
         json: Json = False, full: Full = False, graph: Graph = None, python: Python = None) -> None:
    """The state at a checkpoint (latest by default).

    A header (next, tasks, interrupts, errors), then each state key: messages as a transcript,
    todos, files, any other value as a tree.

    THREAD_ID: an id or a unique prefix of one. CHECKPOINT: an id, a unique prefix or suffix of
    one, 'latest', or a step number (`-- -1` for step -1)."""
    _full(full)
    keys = None if key is None else frozenset({key})
    with _open(db, graph, python) as store:
        snap = store.snapshot(thread_id, checkpoint, ns, keys)
        if key is not None and (not isinstance(snap.values, dict) or key not in snap.values):
            whole = store.snapshot(thread_id, checkpoint, ns).values
            names = ", ".join(whole) if isinstance(whole, dict) else "none"
            raise NotFoundError(f"no state key {key!r} at this checkpoint", f"keys: {names}")
        if json:
            _json(snap.to_json())
            return
        from statectl.render.state import snapshot_view

        newest = store.view(thread_id, ns, keys).records[0]  # the view the snapshot came from
        _print(snapshot_view(snap, key, newest=snap.checkpoint_id == newest.checkpoint_id))
        _notes(store)


@app.command()
def export(thread_ids: Annotated[list[str] | None, typer.Argument(
               help="Threads to export.", show_default=False)] = None,
           every: Annotated[bool, typer.Option("--all", help="Export every thread.")] = False,
           output: Annotated[Path, typer.Option("-o", "--output", help="File to write (- for stdout, "
                                                "not a terminal).")] = Path("-"),
           db: Db = None, graph: Annotated[str | None, typer.Option(
               "--graph", help="The app's graph (file.py:graph or module:graph): its channel "
               "specification goes into the export, and every command reading the export is exact "
               "with it, as with --graph.", show_default=False)] = None,
           python: Python = None,
           redact: Annotated[bool, typer.Option(
               "--redact", help="Replace API keys, tokens and e-mail addresses with [REDACTED] "
               "(rows rewritten in their own format; pickled or encrypted values are refused).")] = False,
           redact_key: Annotated[list[str] | None, typer.Option(
               "--redact-key", help="Replace the whole value of this key wherever it occurs "
               "(several allowed).", show_default=False)] = None,
           redact_pattern: Annotated[list[str] | None, typer.Option(
               "--redact-pattern", help="Replace every match of this regular expression (several "
               "allowed).", show_default=False)] = None) -> None:
    """Write threads to a JSON file every command can open.

    All namespaces, the raw rows (blobs base64): `--db FILE` reads it as it reads the database."""
    from statectl.sources.export import write_export

    if not thread_ids and not every:
        raise StatectlError("name the threads to export, or give --all",
                            "statectl export THREAD -o FILE (statectl threads lists them)")
    to_stdout = str(output) == "-"
    if to_stdout and sys.stdout.isatty():
        raise StatectlError("the export is JSON for a file, not for the terminal",
                            "give -o FILE, or pipe it (| jq .)")
    if not to_stdout and output.is_dir():
        raise StatectlError(f"{output} is a folder", "give a file name with -o")
    redactor = None
    if redact or redact_key or redact_pattern:
        from statectl.redact import Redactor

        redactor = Redactor(builtin=redact, keys=tuple(redact_key or ()), patterns=tuple(redact_pattern or ()))
    with _open(db, graph, python) as store:
        ids = [store.thread_id(t) for t in thread_ids] if thread_ids else [t.thread_id for t in store.threads()]
        if graph is not None:
            for tid in ids:  # (the lines where TARGET does not describe a thread)
                for ns in store.namespaces(tid):
                    store.view(tid, ns, frozenset())
        spec = store.graph
        if to_stdout:
            write_export(store.source, ids, sys.stdout.buffer, redactor, spec)
            sys.stdout.buffer.write(b"\n")
        else:
            _write_atomically(output, lambda out: write_export(store.source, ids, out, redactor, spec))
    if redactor is not None:
        typer.echo(redactor.summary(), err=True)
    if not to_stdout:
        typer.echo(f"exported {len(ids)} thread{'s' * (len(ids) != 1)} to {output}", err=True)


def _write_atomically(path: Path, write: Any) -> None:
    """Stream into a temporary file beside `path`, then rename it over `path`: a failed export
    leaves no half-written file, and a file it replaces stays whole until the new one is."""
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    except OSError as exc:
        raise StatectlError(f"cannot write {path}: {exc.strerror}") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(fd, 0o666 & ~umask)  # as a plain open() would have made it
        with os.fdopen(fd, "wb") as out:
            write(out)
        os.replace(tmp, path)
    except OSError as exc:
        raise StatectlError(f"cannot write {path}: {exc.strerror}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


TARGET_SHAPE = r"^(?:.+\.py|[A-Za-z_][\w.]*):[A-Za-z_][\w.]*$"
"""path/to/file.py:attr or package.module:attr (a thread id rarely looks like this)."""


def _is_target(text: str | None) -> bool:
    import re

    return text is not None and re.match(TARGET_SHAPE, text) is not None


@app.command(context_settings=STEPS_OK)
def schema(args: Annotated[list[str] | None, typer.Argument(
               help="TARGET (file.py:graph or module:graph), then THREAD with --db; or only "
                    "THREAD with --db to infer the schema from history.", show_default=False)] = None,
           db: Db = None, ns: Ns = "", json: Json = False,
           thread: Annotated[str | None, typer.Option("--thread", help="Thread to check the "
                                                         "schema against (drift).")] = None,
           all_threads: Annotated[bool, typer.Option(
               "--all-threads", help="Check every thread of --db against TARGET's schema before "
               "deploying it: keys it lacks, values of another type, reducers it drops, nodes in "
               "`next` it no longer has. Exit 1 when a waiting thread would break.")] = False,
           meta: Annotated[list[str] | None, typer.Option(
               "--meta", help="With --all-threads: only threads whose newest checkpoint's metadata "
               "has KEY=VALUE (a database several graphs share: e.g. --meta graph_id=agent).",
               show_default=False)] = None,
           python: Python = None) -> None:
    """The merged state schema of a graph, or inferred from a thread.

    Fields, types, channels, reducers, visibility, and who declared them (the graph or a
    middleware). With --all-threads: which threads the schema would break."""
    args = list(args or [])
    if all_threads:
        return _check_all_threads(args, db, json, python, thread, meta)
    if meta:
        raise StatectlError("--meta goes with --all-threads",
                            "statectl schema agent.py:graph --all-threads --meta graph_id=agent")
    target = args.pop(0) if args and (_is_target(args[0]) or (db is None and not thread)) else None
    if args:
        thread = thread or args.pop(0)
    if args:
        raise StatectlError(f"unexpected argument {args[0]!r}", "usage: statectl schema [TARGET] [--db DB THREAD]")
    if target is None and thread is None:
        raise StatectlError("give a TARGET (file.py:graph) or --db DB THREAD",
                            "statectl schema agent.py:graph, or statectl schema --db checkpoints.sqlite THREAD")
    from statectl import schema as core

    observed = None
    if thread is not None:
        with _open(db) as store:
            observed = core.infer(store.view(thread, ns))
    if target is None:
        assert observed is not None  # (a thread or a target is required)
        if json:
            _json({"thread_id": thread, "inferred": True, "keys": [o.to_json() for o in observed]})
            return
        from statectl.render.schema import observed_table

        _print(observed_table(observed, f"state keys of thread {thread}"))
        return
    result = _load_schema(target, python)
    drift = core.drift(result, observed) if observed is not None else None
    if json:
        data = result.to_json()
        if drift is not None:
            data["drift"] = {"thread_id": thread, **drift.to_json()}
        _json(data)
        return
    from statectl.render.schema import drift_view, schema_table

    _print(schema_table(result, f"state schema of {target} ({result.kind})"))
    if drift is not None and thread is not None:
        _print(drift_view(drift, thread))


def _load_schema(target: str, python: str | None) -> Any:
    """TARGET's schema: loaded here when statectl's environment has LangGraph, else in the
    project's interpreter (`introspect`)."""
    from statectl.introspect import interpreter, run_there, schema_of

    there = interpreter(python)
    if there is None:
        from statectl.schema import schema
        from statectl.target import load

        return schema(load(target))
    return schema_of(run_there(there, "schema", target))


def _check_all_threads(args: list[str], db: str | None, json: bool, python: str | None,
                       thread: str | None, meta: list[str] | None = None) -> None:
    """`schema TARGET --all-threads --db DB`: each thread's newest root checkpoint (where a
    waiting thread resumes) against the schema TARGET would deploy."""
    if len(args) != 1 or not _is_target(args[0]) or thread:
        raise StatectlError("--all-threads takes one TARGET (file.py:graph) and --db, no thread",
                            "statectl schema agent.py:graph --all-threads --db checkpoints.sqlite")
    from statectl import schema as core

    target = args[0]
    result = _load_schema(target, python)
    checked, affected = 0, []
    where = _thread_filter(None, None, None, meta, None) if meta else None
    with _open(db) as store:
        for t in store.threads(None, where=where):
            checked += 1
            try:
                found = core.check_thread(result, store.view(t.thread_id), t.status)
            except StatectlError as exc:  # a thread that cannot be read: said, the rest checked
                found = core.ThreadCheck(t.thread_id, t.status, [{"problem": "unreadable", "error": exc.message}])
            if found.problems:
                affected.append(found)
        label = store.label
    affected.sort(key=lambda a: not a.waiting)  # the threads that would break first
    breaking = [a for a in affected if a.waiting]
    if json:
        _json({"target": target, "db": label, "threads": checked, "affected": [a.to_json() for a in affected],
               "waiting_affected": len(breaking)})
    else:
        from statectl.render.schema import thread_checks

        _print(thread_checks(affected, checked, target, label))
    if breaking:
        raise Exit(1)


@app.command()
def size(thread_id: Annotated[str | None, typer.Argument(
             help="A thread: its bytes by channel and its size per step (default: the whole store).",
             show_default=False, autocompletion=_complete_thread)] = None,
         db: Db = None, json: Json = False,
         limit: Annotated[int, typer.Option("--limit", help="Largest threads to list (0: all).",
                                            min=0)] = 20) -> None:
    """Where the bytes go: by table, by thread, by channel.

    Per store: each table and its indexes, free pages (what VACUUM gives back), and the largest
    threads with their bytes per checkpoint and growth. Per thread: the bytes of each channel
    across the history and in the newest checkpoint, and the checkpoint size per step. Read
    from SQL lengths and the msgpack structure; no value is decoded."""
    from statectl import size as core

    with _open(db) as store:
        if thread_id is None:
            report = core.store_size(store.source, limit or None)
            if json:
                _json(report.to_json())
                return
            from statectl.render.size import store_view

            _print(store_view(report))
            return
        found = core.thread_channels(store.source, store.thread_id(thread_id))
    if json:
        _json(found.to_json())
        return
    from statectl.render.size import thread_view

    _print(thread_view(found))


@app.command()
def prune(db: Db = None, json: Json = False,
          keep_last: Annotated[int, typer.Option("--keep-last", help="Keep the N newest checkpoints of "
                                                 "each namespace.", min=0)] = 0,
          older_than: Annotated[str | None, typer.Option(
              "--older-than", help="Only checkpoints older than this may go (2h, 30d, or a date).",
              show_default=False)] = None,
          thread: Annotated[list[str] | None, typer.Option(
              "--thread", help="Only this thread (several allowed; default: every thread).",
              show_default=False, autocompletion=_complete_thread)] = None,
          status: Annotated[str | None, typer.Option(
              "-s", "--status", help="Only threads with this status (done, interrupted, error, pending).",
              show_default=False)] = None,
          as_sql: Annotated[bool, typer.Option("--sql", help="Print the SQL that carries the plan "
                                               "out (one transaction), for you to review and run.")] = False) -> None:
    """Which checkpoints could be deleted safely: a plan, or its SQL.

    statectl writes nothing: --sql prints the SQL for you to review and run. Always kept: each
    namespace's newest checkpoint and its pending writes, branch heads and fork points, the
    ancestors a delta channel is rebuilt from, subgraphs with their parent checkpoint.
    --keep-last N and --older-than D say how much history stays."""
    if not keep_last and older_than is None:
        raise StatectlError("say how much history to keep: --keep-last N and/or --older-than DURATION",
                            "statectl prune --keep-last 10 --older-than 30d")
    from statectl import prune as core
    from statectl.status import STATUSES, parse_when

    cutoff = None
    if older_than is not None:
        try:
            cutoff = parse_when(older_than)
        except ValueError:
            raise StatectlError(f"--older-than {older_than!r} is neither a duration (2h, 30d) nor a date") from None
    wanted = None
    if status is not None:
        wanted = frozenset(x.strip() for x in status.split(",") if x.strip())
        if not wanted or wanted - set(STATUSES):
            raise StatectlError(f"unknown status {status!r}", f"use {', '.join(STATUSES)}")
    with _open(db) as store:
        kind = {"SqliteSource": "sqlite", "PostgresSource": "postgres"}.get(type(store.source).__name__)
        if kind is None:
            raise StatectlError(f"{store.label}: prune plans SQLite files and Postgres databases",
                                "exports, langgraph dev folders and servers are not pruned this way")
        if getattr(store.source, "shallow", False):
            raise StatectlError(f"{store.label}: a ShallowPostgresSaver keeps one checkpoint per "
                                "namespace already: nothing to prune")
        if thread:
            ids = [store.thread_id(t) for t in thread]
        else:
            ids = [t.thread_id for t in store.threads(None, status=wanted)]
        if thread and wanted:
            keep = {t.thread_id for t in store.threads(None, status=wanted)}
            ids = [t for t in ids if t in keep]
        plans = [core.plan_thread(store, t, keep_last, cutoff) for t in ids]
        label = store.label
    if as_sql:
        sys.stdout.write(core.sql([p for p in plans if p.drop], kind))
        return
    if json:
        _json({"db": label, "threads": [p.to_json() for p in plans], "drop": sum(len(p.drop) for p in plans),
               "bytes": sum(p.bytes for p in plans), "applied": False})
        return
    from statectl.render.size import prune_view

    _print(prune_view(plans, label))


@app.command()
def graph(target: Annotated[str | None, typer.Argument(
              help="file.py:graph or module:graph (without it: the graph inferred from --thread's "
                   "history).", show_default=False)] = None,
          db: Db = None, ns: Ns = "",
          thread: Annotated[str | None, typer.Option("--thread", help="Draw this thread's path "
                                                        "on the graph.")] = None,
          xray: Annotated[bool, typer.Option("--xray", help="Inline subgraphs.")] = False,
          fmt: Annotated[str, typer.Option("--format", help="mermaid, md (a ```mermaid block "
                                           "for GitHub), or term (drawn in the terminal).")] = "mermaid",
          json: Json = False, python: Python = None) -> None:
    """The graph (Mermaid or terminal), with a thread's path.

    LangGraph's own nodes and edges; with --thread, the path the thread took."""
    if fmt not in ("mermaid", "md", "term"):
        raise StatectlError(f"unknown --format {fmt!r}", "use mermaid, md or term")
    if target is None and thread is None:
        raise StatectlError("give a TARGET (file.py:graph) or --db DB --thread THREAD",
                            "statectl graph agent.py:graph, or statectl graph --db checkpoints.sqlite --thread T")
    from statectl import graph as core

    path = view = None
    if thread is not None:
        with _open(db) as store:
            view = store.view(thread, ns)
            if target is None:
                if json:
                    _json(core.inferred_json(view))
                    return
                if fmt == "term":
                    path = core.thread_path(view, line_only=False)
                    _term_graph(core.inferred_drawable(view, path), path, core.term_title(None, view))
                    return
                text = core.inferred(view)
            else:
                path = core.thread_path(view, deep=xray)
    if target is not None:
        from statectl.introspect import interpreter, run_there

        there = interpreter(python)
        if there is None:
            from statectl.target import load

            obj = load(target)
            data = core.structure(obj, xray) if json or fmt == "term" else None
            text, nodes = core.mermaid(obj, xray) if not json else ("", [])
        else:
            out = run_there(there, "graph", target, xray)
            data, text, nodes = out["structure"], out["mermaid"], out["nodes"]
        if fmt == "term" and not json:
            assert data is not None
            _term_graph(data, path, core.term_title(target, view))
            return
        if json:
            assert data is not None
            _json({**data, "path": core.path_json(path)} if path is not None else data)
            return
        if path is not None:
            text = core.overlay(text, nodes, path)
    sys.stdout.write(core.fence(text) if fmt == "md" else text)


def _term_graph(structure: dict, path: Any, title: str) -> None:
    from statectl import graph as core
    from statectl.render.graphterm import drawing_text
    from statectl.termgraph import LEGEND

    drawing = core.term(structure, path)
    legend = LEGEND.split("   ", 1)[1] if path is not None else "┄ ▽ conditional edge"
    if path is not None and not path.recorded:
        legend = f"note: {core.no_steps(path)}\n{legend}"
    console = _console()
    console.print(drawing_text(drawing, title, legend), crop=False, soft_wrap=True)


@app.command()
def tui(thread_id: Annotated[str | None, typer.Argument(
            help="Open at this thread (default: the threads screen).", show_default=False)] = None,
        db: Db = None, ns: Ns = "",
        poll: Annotated[float, typer.Option("--poll", help="Seconds between checks for new "
                                            "checkpoints (0: off).", min=0)] = 1.0,
        graph: Graph = None, python: Python = None) -> None:
    """Step through a thread's history in a terminal app.

    ? shows the keys; q quits."""
    store = _open(db, graph, python)
    store.on_graph_note = None  # (the app says them)
    try:
        if thread_id is not None:
            thread_id = store.view(thread_id, ns).thread_id  # a wrong thread: one line, not an empty app
        import asyncio

        from statectl.tui import make_app

        app = make_app(store, thread_id, ns, poll)
        loop = asyncio.new_event_loop()  # (asyncio.run would join a read still running)
        app.run(loop=loop)
        if app.busy_reading():
            # q / Ctrl+C while a read still runs (a slow server, a locked table): quit now rather
            # than wait for it; the read holds nothing that must be written back
            store.abandon()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(app.return_code or 0)
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
    finally:
        store.close()
    if app.return_code:  # the app stopped on an error it has printed in one line
        raise Exit(app.return_code)


def _take_api_key(args: list[str]) -> list[str]:
    """Options of every command taken out before Typer parses the arguments: `--api-key KEY` (an
    https:// server) and `--aes-key KEY` (an EncryptedSerializer's key), so that no usage message
    or traceback can ever echo a secret, and `--unpickle-inert` (read pickled values with the
    inert unpickler)."""
    from statectl import sources
    from statectl.decode import Options

    sources.API_KEY, Options.aes_key, Options.unpickle, sources.TIMEOUT = None, None, False, None
    out, i = [], 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in ("--api-key", "--aes-key") and (eq or i + 1 < len(args)):
            if not eq:
                value, i = args[i + 1], i + 1
            if name == "--api-key":
                sources.API_KEY = value
            else:
                Options.aes_key = value.encode()
        elif arg == "--unpickle-inert":
            Options.unpickle = True
        elif name == "--timeout" and (eq or i + 1 < len(args)):
            if not eq:
                value, i = args[i + 1], i + 1
            try:
                sources.TIMEOUT = float(value)
            except ValueError:
                raise StatectlError(f"--timeout takes seconds, not {value!r}") from None
            if sources.TIMEOUT <= 0:
                raise StatectlError("--timeout must be more than 0 seconds")
        elif arg == "--":
            out += args[i:]
            break
        else:
            out.append(arg)
        i += 1
    return out


def main(argv: list[str] | None = None) -> None:
    """Entry point: every failure becomes one line on stderr and a non-zero exit."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    if not args or {"-h", "--help"} & set(args):
        _plain_help()
    paged = "--no-pager" not in args
    args = [a for a in args if a != "--no-pager"]
    commands = app.registered_commands
    from statectl.render import Limits

    Limits.full, Limits.cut, Limits.hint = False, 0, "--full"  # (main runs more than once in one process in tests)
    _Root.db = None
    pager = None
    try:
        args = _take_api_key(args)
        app.registered_commands = _needed(commands, args)
        pager = _start_pager(args) if paged else None
        code = app(args=args, prog_name="statectl", standalone_mode=False)
        sys.stdout.flush()  # (here, where a closed pipe is caught, not at exit)
        if isinstance(code, int) and code:  # `raise Exit(n)` returns n when not standalone
            sys.exit(code)
    except StatectlError as exc:
        if debug:
            raise
        typer.echo(f"statectl: {_escape(str(exc))}", err=True)
        sys.exit(exc.exit_code)
    except Exit as exc:
        sys.exit(exc.exit_code)
    except TyperException as exc:  # usage errors: unknown option, missing argument, ...
        typer.echo(f"statectl: {_escape(exc.format_message())}", err=True)
        sys.exit(exc.exit_code)
    except (Abort, KeyboardInterrupt):
        sys.exit(130)
    except (BrokenPipeError, _PipeClosed):
        _pipe_closed()  # a closed pipe (statectl log | head) is not an error
    except Exception as exc:
        if debug:
            raise
        typer.echo(f"statectl: internal error: {type(exc).__name__} (run with --debug for details)",
                   err=True)
        sys.exit(70)
    finally:
        app.registered_commands = commands
        if pager is not None:
            _stop_pager(pager)


def _plain_help() -> None:
    """Typer (0.19) escapes `[required]` and `[default: x]` for Rich markup even where help is
    plain text, printing `\\[required]`: keep them as written. And since click 8.3 gave
    `click.Argument` a `help` of its own, Typer's argument help is reset to None by click's
    `__init__`: set it again after (and leave the section to Typer: click's own "Positional
    arguments" would list them twice)."""
    from typer import core, rich_utils

    rich_utils.escape_before_html_export = lambda input_text: input_text.strip()
    if getattr(core, "rich", None) is not None:  # (Typer before 0.17 escaped with rich.markup.escape)
        core.rich = None  # type: ignore[attr-defined]
    core.TyperCommand.format_arguments = lambda self, ctx, formatter: None  # type: ignore[attr-defined]
    init = core.TyperArgument.__init__
    if getattr(init, "_statectl", False):
        return

    def keep_help(self: Any, *args: Any, help: str | None = None, **kwargs: Any) -> None:  # noqa: A002
        init(self, *args, help=help, **kwargs)
        self.help = help

    keep_help._statectl = True  # type: ignore[attr-defined]
    core.TyperArgument.__init__ = keep_help  # type: ignore[method-assign]


PAGED = frozenset({"threads", "log", "show", "diff", "schema", "graph", "size", "prune"})


class _Pager:
    width: int | None = None
    """The terminal's width while output goes to a pager (None: no pager)."""


def _start_pager(args: list[str]) -> Any:
    """Like git: output for a terminal goes through a pager (`less -FRX` unless $LESS is set:
    one screen prints and exits), named by $STATECTL_PAGER, else $PAGER, else less; '' or `cat`
    turns it off, as does --no-pager. Only the commands that print a report; never when the
    output is not a terminal or asks for help."""
    command = next((a for a in args if not a.startswith("-")), None)
    if command not in PAGED or not sys.stdout.isatty() or {"-h", "--help"} & set(args):
        return None
    import shlex
    import shutil

    spec = os.environ.get("STATECTL_PAGER", os.environ.get("PAGER", "less"))
    try:
        argv = shlex.split(spec)
    except ValueError:
        return None
    if not argv or argv[0] == "cat" or shutil.which(argv[0]) is None:
        return None  # (a pager that is not there must not swallow the output)
    import io
    import subprocess

    env = {**os.environ, "LESS": os.environ.get("LESS", "FRX"), "LV": os.environ.get("LV", "-c")}
    width = shutil.get_terminal_size().columns
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, env=env)
    except OSError:
        return None
    _Pager.width = width
    proc.saved_stdout = sys.stdout  # type: ignore[attr-defined]
    sys.stdout = io.TextIOWrapper(proc.stdin, encoding="utf-8", errors="replace")
    return proc


def _stop_pager(proc: Any) -> None:
    """Hand the pager the rest of the output and wait until the user quits it."""
    try:
        sys.stdout.close()
    except OSError:  # (the user quit the pager before the end: not an error)
        pass
    sys.stdout = proc.saved_stdout
    _Pager.width = None
    while True:
        try:
            proc.wait()
            return
        except KeyboardInterrupt:  # Ctrl+C belongs to the pager while it runs (as in git)
            continue


def _escape(text: str) -> str:
    """An error line: no secret of the source in it, its control characters shown escaped."""
    from statectl.escape import escape
    from statectl.secrets import scrub

    return escape(scrub(text))


class _PipeClosed(Exception):
    """The reader of stdout went away (`statectl log -p T | head`). Not an OSError: click's main
    turns a broken pipe into exit 1 itself, and only where the output outgrew the pipe's buffer."""


def _pipe_safe(info: Any) -> Any:
    """A registered command whose broken pipe reaches `main` as `_PipeClosed`."""
    import functools

    fn = info.callback
    if getattr(fn, "_pipe_safe", False):
        return info

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BrokenPipeError:
            raise _PipeClosed from None

    call._pipe_safe = True  # type: ignore[attr-defined]
    info.callback = call
    return info


def _pipe_closed() -> None:
    """Exit 0 without a word: nothing more can be written, and Python's own flush of stdout at
    exit must not fail again (stdout now writes to /dev/null)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(0)


def _needed(commands: list[Any], args: list[str]) -> list[Any]:
    """The command the arguments name, or all of them (for help and for errors that list them).

    Typer turns every registered command's signature into click parameters on each run; for
    eight commands that is ~8 ms of a start-up that the benchmark counts."""
    name = next((a for a in args if not a.startswith("-")), None)
    named = [c for c in commands if (c.name or c.callback.__name__) == name]
    return [_pipe_safe(c) for c in named or commands]
