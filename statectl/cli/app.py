"""The `statectl` command line: the Typer app, its commands, and `main`, where every failure
becomes one line on stderr and a documented exit code."""

# (no `from __future__ import annotations`: Typer reads the commands' annotations at every start,
# and strings it must eval, each compiled again; evaluated here, in the .pyc)

import importlib
import os
import sys
from typing import Annotated, Any

import typer

from statectl.cli.argv import take_settings
from statectl.cli.options import STEPS_OK, Root
from statectl.cli.output import error_text
from statectl.cli.pager import start_pager, stop_pager
from statectl.cli.typer_compat import (
    Abort,
    Exit,
    PipeClosed,
    TyperException,
    needed,
    plain_help,
    plain_values,
    quote_for_bash,
    word_metavars,
)
from statectl.errors import StatectlError

app = typer.Typer(
    name="statectl",
    help="Inspect LangGraph checkpoints: threads, history, state — read-only, from the database alone. "
    "--db also takes a LangGraph server's URL (http://127.0.0.1:2024 for `langgraph dev`); "
    "a deployment's key: --api-key KEY or $LANGSMITH_API_KEY / $LANGGRAPH_API_KEY (never sent over plain "
    "http:// to another machine without --insecure). "
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

plain_values()
word_metavars()
if "bash" in os.environ.get("_STATECTL_COMPLETE", ""):  # (bash asks for completions)
    quote_for_bash()


def print_version(value: bool) -> None:
    if value:
        from statectl import __version__

        typer.echo(f"statectl {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    db: Annotated[
        str | None,
        typer.Option("--db", help="The database for the command (as the command's own --db).", show_default=False),
    ] = None,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            help="On a failure, the traceback too (anywhere on the line; the exit code stays the documented one).",
        ),
    ] = False,
    no_pager: Annotated[
        bool, typer.Option("--no-pager", help="Print, do not page (anywhere on the line; or $STATECTL_PAGER=cat).")
    ] = False,
) -> None:
    """Inspect LangGraph checkpoints: threads, history, state — read-only, from the database alone."""
    Root.db = db


COMMANDS: dict[str, tuple[str, bool]] = {
    "threads": ("threads", False),
    "log": ("history", False),
    "diff": ("history", True),
    "show": ("history", True),
    "export": ("export", False),
    "schema": ("schema", True),
    "size": ("storage", False),
    "prune": ("storage", False),
    "doctor": ("doctor", False),
    "graph": ("graph", False),
    "tui": ("tui", False),
    "mcp": ("mcp", False),
    "store": ("store", False),
    "copy": ("copy", False),
    "fork": ("fork", True),
    "replay": ("replay", True),
    "migrate": ("migrate", False),
}
"""Each command: the module of statectl.cli that defines it, and whether a negative step may
stand as a positional argument (STEPS_OK). Imported when the command runs (or for help and
completion, all of them): `statectl threads` does not pay for the other commands' modules."""

GROUPS = frozenset({"store"})
"""The commands that are Typer groups (subcommands of their own)."""

_INFOS: dict[str, Any] = {}


def _commands(names: list[str]) -> list[Any]:
    """The Typer commands named, in the order `statectl --help` lists them."""
    for name in names:
        if name not in _INFOS:
            module, steps_ok = COMMANDS[name]
            fn = getattr(importlib.import_module(f"statectl.cli.{module}"), name)
            one = typer.Typer()
            if isinstance(fn, typer.Typer):  # a command with subcommands (`store ls`, ...)
                one.add_typer(fn, name=name)
                _INFOS[name] = one.registered_groups[0]
                continue
            one.command(context_settings=STEPS_OK if steps_ok else None)(fn)
            _INFOS[name] = one.registered_commands[0]
    return [_INFOS[n] for n in COMMANDS if n in names]


def main(argv: list[str] | None = None) -> None:
    """Entry point: every failure becomes one line on stderr and a non-zero exit."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    if not args or {"-h", "--help"} & set(args):
        plain_help()
    paged = "--no-pager" not in args
    args = [a for a in args if a != "--no-pager"]
    from statectl.render import Limits

    Limits.full, Limits.cut, Limits.hint = False, 0, "--full"  # (main runs more than once in one process in tests)
    if (columns := sys.modules.get("statectl.render.columns")) is not None:  # (after a TUI in this process)
        columns.LeftOut.hint = "a pipe shows all"
    Root.db = None
    pager = None
    try:
        args, settings = take_settings(args)
        name = next((a for a in args if not a.startswith("-")), None)
        infos = _commands([name] if name in COMMANDS else list(COMMANDS))
        app.registered_groups = [i for i in infos if i.name in GROUPS]
        app.registered_commands = needed([i for i in infos if i.name not in GROUPS], args) if name not in GROUPS else []
        # (--install-completion and --show-completion are the root's own options, read before a
        # command's name: with the name first and no shell asking, Typer need not build them)
        app._add_completion = not (args[:1] == [name] and name in COMMANDS and "_STATECTL_COMPLETE" not in os.environ)
        pager = start_pager(args) if paged else None
        with settings.applied():
            code = app(args=args, prog_name="statectl", standalone_mode=False)
        sys.stdout.flush()  # (here, where a closed pipe is caught, not at exit)
        if isinstance(code, int) and code:  # `raise Exit(n)` returns n when not standalone
            sys.exit(code)
    except StatectlError as exc:
        if debug:
            show_traceback()
        typer.echo(f"statectl: {error_text(str(exc))}", err=True)
        sys.exit(exc.exit_code)
    except Exit as exc:
        sys.exit(exc.exit_code)
    except TyperException as exc:  # usage errors: unknown option, missing argument, ...
        typer.echo(f"statectl: {error_text(exc.format_message())}", err=True)
        sys.exit(exc.exit_code)
    except (Abort, KeyboardInterrupt):
        sys.exit(130)
    except (BrokenPipeError, PipeClosed):
        pipe_closed()  # a closed pipe (statectl log | head) is not an error
    except Exception as exc:
        if debug:
            show_traceback()
        typer.echo(f"statectl: internal error: {type(exc).__name__} (run with --debug for details)", err=True)
        sys.exit(70)
    finally:
        app.registered_commands, app.registered_groups = [], []
        app._add_completion = True
        if pager is not None:
            stop_pager(pager)


def show_traceback() -> None:
    """`--debug`: the failure's traceback on stderr, its text without the source's secrets;
    the one line and the documented exit code follow as without it."""
    import traceback

    typer.echo("\n".join(error_text(line) for line in traceback.format_exc().rstrip().splitlines()), err=True)


def pipe_closed() -> None:
    """Exit 0 without a word: nothing more can be written, and Python's own flush of stdout at
    exit must not fail again (stdout now writes to /dev/null)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(0)
