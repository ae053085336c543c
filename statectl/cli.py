"""The `statectl` command line: parse, call the core, render or dump JSON, exit."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import orjson
import typer

try:  # Typer with click vendored (>= 0.2x)
    from typer.exceptions import Abort, Exit, TyperException
except ImportError:  # Typer on click
    from click.exceptions import Abort, Exit
    from click.exceptions import ClickException as TyperException

from statectl.errors import StatectlError

app = typer.Typer(
    name="statectl",
    help="Inspect LangGraph checkpoints: threads, history, state — read-only, from the database alone.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,  # decoded state can hold secrets
    rich_markup_mode=None,
)

Db = Annotated[Optional[str], typer.Option(
    "--db", help="SQLite checkpoint file or statectl export (default: $STATECTL_DB, "
                 "then ./checkpoints.sqlite or ./langgraph.db).", show_default=False)]
Json = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
Ns = Annotated[str, typer.Option("--ns", help="Checkpoint namespace (subgraph); '' is the root graph.")]
Thread = Annotated[str, typer.Argument(help="thread_id")]
Checkpoint = Annotated[Optional[str], typer.Argument(
    help="Checkpoint id, unique prefix or suffix, 'latest', or step number.", show_default=False)]


def _console():
    from rich.console import Console

    return Console(soft_wrap=False)


def _print(renderable: Any) -> None:
    _console().print(renderable)


def _json(value: Any) -> None:
    sys.stdout.buffer.write(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS) + b"\n")


def _open(db: str | None):
    import statectl

    return statectl.open(db)


@app.command()
def threads(db: Db = None, json: Json = False,
            limit: Annotated[int, typer.Option("--limit", help="Most recent N threads in the table "
                                               "(0: all; --json always lists all).")] = 100) -> None:
    """List the threads: checkpoints, namespaces, last step, last update, status."""
    with _open(db) as store:
        rows = store.threads()
        if json:
            _json([t.to_json() for t in rows])
            return
        from statectl.render.tables import threads_table

        shown = rows[:limit] if limit > 0 else rows
        _print(threads_table(shown, store.label, total=len(rows)))


@app.command()
def log(thread_id: Thread, db: Db = None, ns: Ns = "", json: Json = False) -> None:
    """The history of a thread, newest first, like get_state_history."""
    with _open(db) as store:
        view = store.view(thread_id, ns)
        if json:
            out = sys.stdout.buffer
            for rec in view.records:
                out.write(orjson.dumps(view.snapshot(rec.checkpoint_id).to_json(),
                                       option=orjson.OPT_NON_STR_KEYS) + b"\n")
            return
        from statectl.render.tables import log_table
        from statectl.timeline import entries

        title = f"thread {thread_id}" + (f"  ns {ns}" if ns else "") + f"  ({len(view.records)} checkpoints)"
        _print(log_table(entries(view), title))
        others = [n for n in store.namespaces(thread_id) if n != ns]
        if others and not json:
            _console().print(f"[dim]other namespaces (use --ns): {', '.join(others)}[/dim]")


@app.command()
def show(thread_id: Thread, checkpoint: Checkpoint = None, db: Db = None, ns: Ns = "",
         key: Annotated[Optional[str], typer.Option("--key", help="Show only this state key.")] = None,
         json: Json = False) -> None:
    """The state at a checkpoint (latest by default): header, messages, todos, files, values."""
    with _open(db) as store:
        snap = store.snapshot(thread_id, checkpoint, ns)
        if key is not None and (not isinstance(snap.values, dict) or key not in snap.values):
            keys = ", ".join(snap.values) if isinstance(snap.values, dict) else "none"
            raise StatectlError(f"no state key {key!r} at this checkpoint", f"keys: {keys}")
        if json:
            data = snap.to_json()
            if key is not None:
                data["values"] = {key: snap.values[key]}
            _json(data)
            return
        from statectl.render.state import snapshot_view

        _print(snapshot_view(snap, key))


@app.command()
def export(thread_ids: Annotated[Optional[list[str]], typer.Argument(
               help="Threads to export (default: all).", show_default=False)] = None,
           output: Annotated[Path, typer.Option("-o", "--output", help="File to write (- for stdout).")] = Path("-"),
           db: Db = None) -> None:
    """Write threads (all namespaces, raw rows) to a JSON file every command can open with --db."""
    from statectl.sources.export import export_threads

    with _open(db) as store:
        ids = thread_ids or [t.thread_id for t in store.threads()]
        doc = orjson.dumps(export_threads(store.source, ids))
    if str(output) == "-":
        sys.stdout.buffer.write(doc + b"\n")
        return
    if output.exists() and output.is_dir():
        raise StatectlError(f"{output} is a folder", "give a file name with -o")
    try:
        output.write_bytes(doc)
    except OSError as exc:
        raise StatectlError(f"cannot write {output}: {exc.strerror}") from None
    typer.echo(f"exported {len(ids)} thread(s) to {output}", err=True)


def main(argv: list[str] | None = None) -> None:
    """Entry point: every failure becomes one line on stderr and a non-zero exit."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    try:
        app(args=args, prog_name="statectl", standalone_mode=False)
    except StatectlError as exc:
        if debug:
            raise
        typer.echo(f"statectl: {exc}", err=True)
        sys.exit(exc.exit_code)
    except Exit as exc:
        sys.exit(exc.exit_code)
    except TyperException as exc:  # usage errors: unknown option, missing argument, ...
        typer.echo(f"statectl: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except (Abort, KeyboardInterrupt):
        sys.exit(130)
    except BrokenPipeError:
        sys.stderr.close()  # a closed pipe (statectl log | head) is not an error
        sys.exit(0)
    except Exception as exc:  # noqa: BLE001 - a bug must still not dump state into a traceback
        if debug:
            raise
        typer.echo(f"statectl: internal error: {type(exc).__name__} (run with --debug for details)",
                   err=True)
        sys.exit(70)
