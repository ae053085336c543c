"""Time travel's writes, for the CLI and the TUI alike: a copy of threads, and a fork or re-run in
a copy (by default `./statectl-scratch.sqlite`) or in place, each through the writer
(`statectl.project.writer`) in the project's interpreter."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from statectl.errors import StatectlError

if TYPE_CHECKING:
    from statectl.core.reader import StoreReader
    from statectl.project.launch import Writer

SCRATCH = "statectl-scratch.sqlite"
"""Where fork and replay write when neither --to nor --in-place is given (the current folder)."""


@dataclass(frozen=True)
class Target:
    """Where new checkpoints go (`spec`, a path or URL; `label` to print), and the thread and the
    checkpoint there that they grow from."""

    spec: str
    label: str
    kind: str
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    allow: tuple[str, ...] = ()
    """`--allow-type`: the types reading the thread may build besides those the graph declares."""

    def request(self, graph: str, op: str, **extra: Any) -> dict[str, Any]:
        """The writer's request for `op` (state, fork, replay) on `graph` here."""
        from statectl.project.write_targets import TARGETS
        from statectl.settings import current

        return {
            "op": op,
            "dest": TARGETS[self.kind].dest_row(self.spec, current().timeout),
            "target": graph,
            "thread_id": self.thread_id,
            "checkpoint_ns": self.checkpoint_ns,
            "checkpoint_id": self.checkpoint_id,
            "allow": list(self.allow),
            **extra,
        }


def loaded(
    python: str | None,
    graph: str,
    values: dict[str, Any] | None = None,
    as_node: str | None = None,
    until: list[str] | None = None,
    allow: list[str] | None = None,
    thread_id: str = "",
    check: Iterable[dict[str, Any]] = (),
    nodes: list[str] | None = None,
) -> Writer:
    """A writer that has loaded `graph` and checked what the request will give it (`values`' keys
    and types, the nodes `as_node` and `until` name) and what it will read (`check`: the rows of
    the checkpoint and its ancestors, every type they name allowed by the graph or `allow`),
    waiting for the request (`start`/`run` with `writer=`). Asked before the thread is copied: a
    graph that does not load, a key or node it does not have, or a value naming a type it does
    not declare is one line and leaves nothing written. `nodes`: those the thread ran, for
    `replay --offline`, checked against the graph's."""
    import orjson

    from statectl.project.launch import Writer, writer_python

    writer = Writer(writer_python(python), "travel")
    try:
        load: dict[str, Any] = {"op": "load", "target": graph, "values": values, "as_node": as_node, "until": until}
        load |= {"allow": allow or [], "thread_id": thread_id, "check": list(check)}
        if nodes:
            load["nodes"] = nodes
        writer.line(load, lambda row: orjson.dumps(row, option=orjson.OPT_NON_STR_KEYS))
        writer.answer()
    except BaseException:
        writer.stop()
        raise
    return writer


def start(python: str | None, request: dict[str, Any], writer: Writer | None = None) -> Writer:
    """A writer running `request` (answers: `Writer.result()` or `Writer.answers()`); `writer`:
    one `loaded` already."""
    import orjson

    from statectl.project.launch import Writer, writer_python

    if writer is None:
        writer = Writer(writer_python(python), "travel")
    writer.send([request], orjson.dumps)
    return writer


def run(python: str | None, request: dict[str, Any], writer: Writer | None = None) -> dict[str, Any]:
    """`request` carried out; its answer (an error answer raises `StatectlError`)."""
    writer = start(python, request, writer)
    try:
        return writer.result()
    except BaseException:
        writer.stop()
        raise


def prepare(
    store: StoreReader,
    db_spec: str | None,
    thread: str,
    checkpoint: str | None,
    ns: str,
    to: str | None,
    in_place: bool,
    python: str | None,
    confirm: Callable[[str], None],
    say: Callable[[str], None],
    ready: Callable[[Iterator[dict[str, Any]]], None] = lambda rows: None,
) -> Target:
    """Resolve the thread and checkpoint in `store`; then where to write: the source itself
    (`in_place`, after `confirm(question)`), or a copy (`to`, else the scratch file) that holds the
    thread (copied there first when it does not). `ready(rows)` runs once the thread, the
    checkpoint and the place are known good and before anything is asked or written (the CLI
    loads the graph there and checks `rows`, what the fork will read: `loaded`)."""
    from statectl.core.copy import chain_rows, thread_rows
    from statectl.sources import open_source

    if in_place and to is not None:
        raise StatectlError("--in-place writes into the source; --to writes elsewhere: give one")
    view = store.view(thread, ns)
    rec = view.resolve(checkpoint)
    tid, ns = view.thread_id, view.checkpoint_ns
    kind, label = store.source.kind, store.label
    if in_place:
        from statectl.project.write_targets import TARGETS

        if kind not in TARGETS or db_spec is None:
            raise StatectlError(
                f"{label}: --in-place writes only SQLite files and Postgres databases",
                "leave it out: statectl writes into a copy (--to FILE, or the scratch file)",
            )
        ready(chain_rows(store.source, rec))
        confirm(f"write into thread {tid} of {label} (the source itself)?")
        return Target(db_spec, label, kind, tid, ns, rec.checkpoint_id)
    from statectl.core.destination import destination

    dest = destination(to if to is not None else SCRATCH, store.source, db_spec)
    holds = False
    if not dest.new:
        try:
            there = open_source(dest.spec)
            try:
                holds = bool(there.checkpoints(tid, None))
            finally:
                there.close()
        except StatectlError:
            holds = False
    # what the writer will read: the checkpoint and its ancestors; and, when the thread is copied,
    # every row of it (a refusal must leave no hostile row written in the destination)
    ready(
        chain_rows(store.source, rec)
        if holds
        else (r for r in thread_rows(store.source, tid, tid) if r["op"] != "thread")
    )
    if holds:
        say(f"using thread {tid} already in {dest.label}")
    else:
        done = copy_threads(store, db_spec, [tid], dest.spec, python=python)
        n = done["checkpoints"]
        say(f"copied thread {tid} ({n} checkpoint{'s' * (n != 1)}) to {dest.label}")
    there = open_source(dest.spec)
    try:
        ids = {r.checkpoint_id for r in there.checkpoints(tid, ns)}
    finally:
        there.close()
    if rec.checkpoint_id not in ids:
        raise StatectlError(
            f"checkpoint {rec.checkpoint_id} is not in {dest.label}'s copy of thread {tid}",
            "--to another file, or copy the thread again with statectl copy --replace",
        )
    return Target(dest.spec, dest.label, dest.kind, tid, ns, rec.checkpoint_id)


def copy_threads(
    store: StoreReader,
    db_spec: str | None,
    ids: list[str],
    to: str,
    as_id: str | None = None,
    replace: bool = False,
    python: str | None = None,
    transform: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
    raw: bool = False,
) -> dict[str, Any]:
    """Copy `ids` from the open `store` (opened from `db_spec`, as resolved) to `to` through the
    writer, in one transaction; what was written. A new file appears whole, or not at all.
    `transform`: each row changed on its way (`migrate`; None leaves a row out); `raw`: the rows
    reach it with their values as stored bytes, put in base64 only on their way to the writer
    (one encoding, no decoding, of what `transform` reads and rewrites)."""
    import orjson

    from statectl.core.destination import destination, remove_folders
    from statectl.project.launch import Writer, writer_python
    from statectl.project.write_targets import TARGETS
    from statectl.settings import current

    dest = destination(to, store.source, db_spec)
    made = dest.make_folders()  # (a new file's missing folders: taken back if it is not made)
    try:
        tmp = _scratch_path(Path(dest.spec)) if dest.new else None
    except OSError as exc:  # (access() may allow what creating refuses: a read-only mount, /sys)
        remove_folders(made)
        raise StatectlError(f"cannot create {dest.spec}: {exc.strerror or type(exc).__name__}") from None
    except BaseException:
        remove_folders(made)
        raise
    rows: Iterator[dict[str, Any]] = _rows(
        {"op": "open", **TARGETS[dest.kind].dest_row(str(tmp) if tmp else dest.spec, current().timeout)},
        [(t, as_id or t) for t in ids],
        store.source,
        replace,
        raw,
    )
    if transform is not None:
        rows = (new for new in map(transform, rows) if new is not None)
    writer = Writer(writer_python(python), "copy")
    try:
        writer.send(rows, lambda row: orjson.dumps(row, option=orjson.OPT_NON_STR_KEYS, default=_as_b64))
        done = writer.result()
        if tmp is not None:
            try:
                os.link(tmp, dest.spec)  # (never over a file that appeared meanwhile)
            except FileExistsError:
                raise StatectlError(f"{dest.spec} appeared while copying: nothing was written to it") from None
            except OSError as exc:
                raise StatectlError(f"cannot create {dest.spec}: {exc.strerror or type(exc).__name__}") from None
    except BaseException:
        writer.stop()
        raise
    finally:
        if tmp is not None:
            for leftover in (tmp, Path(f"{tmp}-journal")):
                if leftover.exists():
                    leftover.unlink()
        if not Path(dest.spec).exists():
            remove_folders(made)
    return {**done, "to": dest.label, "ids": {t: as_id or t for t in ids}}


def _rows(
    opening: dict[str, Any], pairs: list[tuple[str, str]], source: Any, replace: bool, raw: bool = False
) -> Iterator[dict[str, Any]]:
    from statectl.codec.values import b64
    from statectl.core.copy import stored, thread_rows

    yield opening
    for thread_id, as_id in pairs:
        yield from thread_rows(source, thread_id, as_id, replace, stored if raw else b64)
    yield {"op": "commit"}


def _as_b64(value: object) -> str:
    """Stored bytes in a row (`copy_threads`' `raw`) as the writer reads them: base64 text."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON")


def _scratch_path(dest: Path) -> Path:
    """A new file beside `dest` that the copy is written to first (mode 0600: it may hold secrets)."""
    import tempfile

    try:
        fd, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".statectl-part", dir=dest.parent)
    except OSError as exc:  # (the folder allows it, the file system refuses: /sys, a read-only mount)
        raise StatectlError(f"cannot create {dest}: {exc.strerror or exc}") from None
    os.close(fd)
    return Path(name)
