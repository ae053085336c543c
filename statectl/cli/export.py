"""`statectl export`: threads to a JSON file every command can open."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any, BinaryIO, cast

import typer

from statectl.cli.options import (
    Db,
    Python,
    Root,
    open_store,
    source_spec,
)
from statectl.errors import StatectlError


def export(
    thread_ids: Annotated[list[str] | None, typer.Argument(help="Threads to export.", show_default=False)] = None,
    every: Annotated[bool, typer.Option("--all", help="Export every thread.")] = False,
    output: Annotated[
        Path,
        typer.Option(
            "-o",
            "--output",
            help="File to write (- or /dev/stdout for stdout; - not to a terminal). A symlink is replaced "
            "by the file written, never written through.",
        ),
    ] = Path("-"),
    db: Db = None,
    graph: Annotated[
        str | None,
        typer.Option(
            "--graph",
            help="The app's graph (file.py:graph or module:graph): its channel "
            "specification goes into the export, and every command reading the export is exact "
            "with it, as with --graph.",
            show_default=False,
        ),
    ] = None,
    python: Python = None,
    redact: Annotated[
        bool,
        typer.Option(
            "--redact",
            help="Replace API keys, tokens and e-mail addresses with [REDACTED] "
            "(rows rewritten in their own format; pickled or encrypted values are refused).",
        ),
    ] = False,
    redact_key: Annotated[
        list[str] | None,
        typer.Option(
            "--redact-key",
            help="Replace the whole value of this key wherever it occurs (several allowed).",
            show_default=False,
        ),
    ] = None,
    redact_pattern: Annotated[
        list[str] | None,
        typer.Option(
            "--redact-pattern",
            help="Replace every match of this regular expression (several allowed).",
            show_default=False,
        ),
    ] = None,
    with_store: Annotated[
        bool,
        typer.Option(
            "--store",
            help="Also the long-term memory store's items (every namespace; `statectl store` reads them "
            "back from the export); with it, no thread needs naming.",
        ),
    ] = False,
) -> None:
    """Write threads to a JSON file every command can open.

    All namespaces, the raw rows (blobs base64): `--db FILE` reads it as it reads the database."""
    from statectl.sources.export import write_export

    if not thread_ids and not every and not with_store:
        raise StatectlError(
            "name the threads to export, or give --all", "statectl export THREAD -o FILE (statectl threads lists them)"
        )
    to_stdout = str(output) == "-"
    if to_stdout and sys.stdout.isatty():
        raise StatectlError("the export is JSON for a file, not for the terminal", "give -o FILE, or pipe it (| jq .)")
    if not to_stdout and output.is_dir():
        raise StatectlError(f"{output} is a folder", "give a file name with -o")
    redactor = None
    if redact or redact_key or redact_pattern:
        from statectl.core.redact import Redactor

        redactor = Redactor(builtin=redact, keys=tuple(redact_key or ()), patterns=tuple(redact_pattern or ()))
    memory = None
    if with_store:  # (opened first: a source without a store is one line, nothing written)
        from statectl.sources.memory import open_memory

        memory = open_memory(db if db is not None else Root.db)
    with open_store(db, graph, python) as store, memory if memory is not None else nullcontext():
        named = [store.thread_id(t) for t in thread_ids] if thread_ids else ([] if not every else None)
        # (--all: the ids read a page at a time as they are written: a million are never a list)
        listed: Callable[[], Iterable[str]] = (lambda: named) if named is not None else store.iter_thread_ids
        ids = _Tally(listed)
        if graph is not None:
            for tid in listed():  # (the lines where TARGET does not describe a thread)
                for ns in store.namespaces(tid):
                    store.view(tid, ns, frozenset())
        spec = store.graph
        if to_stdout:
            from statectl.cli.output import Partial

            with Partial("bytes") as written:  # (a file is written whole or not at all: write_file)
                out = cast(BinaryIO, _Counted(sys.stdout.buffer, written))
                write_export(store.source, ids, out, redactor, spec, known=True, memory=memory)
            sys.stdout.buffer.write(b"\n")
        else:
            from statectl.cli.files import write_file

            done = write_file(
                output,
                lambda out: write_export(store.source, ids, out, redactor, spec, known=True, memory=memory),
                _inputs(db),
            )
    if redactor is not None:
        typer.echo(redactor.summary(), err=True)
    if not to_stdout:
        replaced = {
            "replaced": " (it replaced the file that was there)",
            "replaced the symlink": " (it replaced the symlink that was there; the file it named was not written)",
        }.get(done, "")
        stored = " and the memory store" if memory is not None else ""
        typer.echo(f"exported {ids.n} thread{'s' * (ids.n != 1)}{stored} to {output}{replaced}", err=True)


class _Tally:
    """Thread ids to write, read anew on each pass (`every`), counted as they are written."""

    def __init__(self, every: Callable[[], Iterable[str]]) -> None:
        self.every, self.n = every, 0

    def __iter__(self) -> Iterator[str]:
        self.n = 0
        for tid in self.every():
            self.n += 1
            yield tid


class _Counted:
    """A binary output whose bytes written are counted (`Partial`)."""

    def __init__(self, out: Any, written: Any) -> None:
        self._out, self._written = out, written

    def write(self, data: bytes) -> int:
        self._written.wrote(len(data))
        return self._out.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._out, name)


def _inputs(db: str | None) -> list[Path]:
    """The files the export reads (the database and its -wal/-journal, a folder's files), which
    -o must never name."""
    try:
        spec = Path(source_spec(db))
    except StatectlError:
        return []
    if not spec.exists():
        return []
    if spec.is_dir():
        return [spec, *(p for p in spec.rglob("*") if p.is_file())][:10_000]
    return [spec, *(Path(f"{spec}{s}") for s in ("-wal", "-shm", "-journal") if Path(f"{spec}{s}").exists())]
