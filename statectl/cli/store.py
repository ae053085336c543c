"""`statectl store`: the long-term memory store (LangGraph's `BaseStore`) beside the checkpoints:
its namespaces, a namespace's items, one item, and the items matching a filter or a text."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import typer

from statectl.cli.options import Db, Full, Json, Root
from statectl.cli.output import emit, emit_json, print_notes, set_full
from statectl.errors import StatectlError

store = typer.Typer(
    name="store",
    help="The long-term memory store (BaseStore: SqliteStore, PostgresStore, langgraph dev's "
    "store.pckl, a server's /store API), read-only: without a subcommand, its namespaces as a tree "
    "with items, bytes, items expiring and the newest update.",
    short_help="The long-term memory store: namespaces, items, values.",
    invoke_without_command=True,
    no_args_is_help=False,
    rich_markup_mode=None,
)


def _complete_namespace(ctx: Any, incomplete: str) -> list[str]:
    """Namespaces for the shell (never fails the shell)."""
    try:
        from statectl.sources.memory import open_memory
        from statectl.sources.memory.base import ns_text

        with open_memory(ctx.params.get("db") or Root.db) as memory:
            names = [ns_text(n) for n in memory.namespace_names(incomplete, 200)]  # (the first 200 only)
    except Exception:
        return []
    return [n for n in names if n.startswith(incomplete) and n.isprintable()]


Namespace = Annotated[
    str,
    typer.Argument(
        metavar="NAMESPACE",
        help="A namespace as shown (labels joined by `.`, or `/`); a unique beginning of one works, "
        "and a prefix lists the namespaces under it.",
        autocompletion=_complete_namespace,
        show_default=False,
    ),
]


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


def beside(db: str | None) -> Any:
    """The long-term memory store beside the checkpoints --db names (`size`, `doctor`); None
    where the source holds none."""
    from statectl.sources.memory import open_memory
    from statectl.sources.memory.base import NoStore

    try:
        return open_memory(db if db is not None else Root.db)
    except NoStore:
        return None


def _open(db: str | None) -> Any:
    from statectl.sources.memory import open_memory

    return open_memory(db if db is not None else Root.db)


@store.callback()
def main(ctx: typer.Context, db: Db = None, json: Json = False) -> None:
    """The namespaces as a tree: items, bytes, items expiring (TTL), newest update (the first
    TREE_NODES labels, TREE_CHILDREN under one: the others counted, `store ls PREFIX` lists them)."""
    if ctx.invoked_subcommand is not None:
        if db is not None:
            Root.db = db
        return
    with _open(db) as memory:
        infos = memory.each_namespace()  # (a batch of namespaces at a time, whatever their number)
        if json:
            import sys

            from statectl.cli.output import Partial
            from statectl.codec.jsonout import json_bytes
            from statectl.core.memory import namespace_json

            out = sys.stdout.buffer
            out.write(b"[")
            with Partial("namespaces") as written:  # (every one, written as read: nothing held)
                for info in infos:
                    out.write(b"," * bool(written.count) + json_bytes(namespace_json(info)))
                    written.count += 1
            out.write(b"]\n")
            return
        from statectl.core.memory import tree
        from statectl.render.memory import tree_view

        emit(tree_view(tree(infos), memory.label))
        print_notes(memory)


@store.command("ls")
def ls(
    namespace: Namespace,
    db: Db = None,
    json: Json = False,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit", help="At most N items in key order (0: all; default 100, all with --json).", show_default=False
        ),
    ] = None,
    after: Annotated[
        str | None,
        typer.Option("--after", help="Start after this key (the last one of the previous page).", show_default=False),
    ] = None,
) -> None:
    """A namespace's items: key, updated, size, expiry, a preview.

    The value's beginning is cut in the query (a listing never reads a value whole); a prefix
    lists the namespaces under it."""
    if limit is not None and limit < 0:
        raise StatectlError("--limit must be 0 (all) or more")
    from statectl.core.memory import item_json, namespace_json, resolve_namespace
    from statectl.sources.memory.base import ns_text

    with _open(db) as memory:
        resolved = resolve_namespace(memory, namespace)
        size = limit if limit is not None else (0 if json else 100)
        items = []
        if resolved.namespace is not None:
            items = memory.items(resolved.namespace, size + 1 if size else None, after)
        more = bool(size) and len(items) > size
        items = items[:size] if size else items
        if json:
            emit_json(
                {
                    "namespace": None if resolved.namespace is None else list(resolved.namespace),
                    "items": [item_json(i, value=False) for i in items],
                    "more": more,
                    "namespaces_under": [namespace_json(c) for c in resolved.children],
                    "namespaces_more": resolved.more,
                }
            )
            return
        from statectl.render.memory import files_view, items_table, namespaces_under

        shown = ns_text(resolved.namespace if resolved.namespace is not None else resolved.prefix) or "()"
        if resolved.namespace is None:
            emit(namespaces_under(resolved.children, shown, resolved.more))
            return
        if items and all(i.key.startswith("/") and (i.preview or "").startswith('{"content"') for i in items):
            whole = [w for i in items if (w := memory.item(i.namespace, i.key)) is not None]
            from statectl.core.memory import files_of

            if files_of(whole):  # (deepagents' files, as deepagents shows them)
                emit(files_view(whole, shown))
        emit(items_table(items, shown, memory.label, more, now(), resolved.children, resolved.more))
        print_notes(memory)


@store.command("get")
def get(
    namespace: Namespace,
    key: Annotated[
        str, typer.Argument(metavar="KEY", help="The item's key (a unique beginning works).", show_default=False)
    ],
    db: Db = None,
    json: Json = False,
    full: Full = False,
) -> None:
    """One item and its value, as `show` renders state.

    Created, updated, expiry, the fields indexed for search (dimensions, not the vectors), and
    its value as `show` renders state (messages as a transcript, deepagents files
    as files, long values folded: --full shows them whole)."""
    from statectl.core.memory import item_json, resolve_item

    set_full(full)
    with _open(db) as memory:
        item = resolve_item(memory, namespace, key)
        if json:
            emit_json(item_json(item))
            return
        from statectl.render.memory import item_view

        emit(item_view(item, now()))
        print_notes(memory)


@store.command("grep")
def grep(
    text: Annotated[
        str | None,
        typer.Argument(metavar="TEXT", help="Plain text, ignoring case, in the key or the value.", show_default=False),
    ] = None,
    filters: Annotated[
        list[str] | None,
        typer.Option(
            "--filter",
            "-f",
            metavar="KEY=VALUE",
            help="KEY=VALUE on the value, as LangGraph's store.search(filter=...) matches it: VALUE is JSON "
            'when it parses (4.5, true, "text"), an operator object too (\'score={"$gt": 4}\': $eq $ne $gt '
            "$gte $lt $lte); several: all must hold.",
            show_default=False,
        ),
    ] = None,
    namespace: Annotated[
        str | None,
        typer.Option("--namespace", "-n", help="Only this namespace and those under it.", show_default=False),
    ] = None,
    db: Db = None,
    json: Json = False,
    limit: Annotated[
        int | None,
        typer.Option("--limit", help="At most N items (0: all; default 100, all with --json).", show_default=False),
    ] = None,
) -> None:
    """Items whose value matches every --filter KEY=VALUE and holds TEXT.

    Across namespaces (in namespace and key order; `--json` without --limit: every match,
    written as it is found, in the store's order). Vector similarity (store.search(query=...))
    is out of scope: it needs the app's embedding model; `store get` shows which fields are
    indexed."""
    if limit is not None and limit < 0:
        raise StatectlError("--limit must be 0 (all) or more")
    if not text and not filters:
        raise StatectlError("store grep wants TEXT or --filter KEY=VALUE")
    from statectl.core.memory import Unsearched, item_json, parse_filters, resolve_namespace
    from statectl.core.memory import grep as find

    wanted = parse_filters(filters or [])
    size = limit if limit is not None else (0 if json else 100)
    unsearched = Unsearched()
    with _open(db) as memory:
        prefix: tuple[str, ...] = ()
        if namespace:
            resolved = resolve_namespace(memory, namespace, children=False)
            prefix = resolved.namespace if resolved.namespace is not None else resolved.prefix
        if json and not size:  # (all of them: written as the scan reads them, in the store's order)
            _stream(memory, text, wanted, prefix, unsearched)
            _unsearched_note(unsearched, json)
            return
        found = find(memory, text, wanted, prefix, size + 1 if size else None, unsearched)
        more = bool(size) and len(found) > size
        found = found[:size] if size else found
        if json:
            emit_json([item_json(i) for i in found])
            _unsearched_note(unsearched, json)
            return
        from statectl.render.memory import grep_table

        what = " and ".join([repr(text)] * bool(text) + [f"--filter {f}" for f in filters or []])
        emit(grep_table(found, memory.label, what, more))
        print_notes(memory, _unsearched_note(unsearched, json))


def _unsearched_note(unsearched: Any, json: bool) -> list[str]:
    """The one line saying how many values were too large to search whole for TEXT (on stderr
    under --json, whose stdout stays JSON; else with the notes under the table)."""
    from statectl.core.memory import SEARCH_NODES

    if not unsearched.values:
        return []
    n = unsearched.values
    note = (
        f"{n:,} value{'s' if n > 1 else ''} too large to search whole for TEXT (more than {SEARCH_NODES:,} "
        f"nodes): searched that far, not found there"
    )
    if json:
        typer.echo(f"statectl: note: {note}", err=True)
    return [note]


def _stream(memory: Any, text: str | None, wanted: dict[str, Any], prefix: tuple[str, ...], unsearched: Any) -> None:
    """`store grep --json` of every match, one at a time into the JSON array: memory holds a
    batch of the scan, never the matches."""
    import sys

    from statectl.cli.output import Partial
    from statectl.codec.jsonout import json_bytes  # (once: the match loop imports nothing)
    from statectl.core.memory import item_json, matching

    out = sys.stdout.buffer
    out.write(b"[")
    with Partial("items") as written:
        for item in matching(memory, text, wanted, prefix, unsearched):
            out.write(b"," * bool(written.count) + json_bytes(item_json(item)))
            written.count += 1
    out.write(b"]\n")
