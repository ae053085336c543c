"""`statectl mcp`'s long-term memory store tools: namespaces, a namespace's items, one item, and
grep, as `statectl store ... --json` gives them, redacted and bounded as every tool's result."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from itertools import islice
from typing import Annotated, Any

from pydantic import Field

from statectl.errors import StatectlError
from statectl.mcp import paging
from statectl.mcp.tools import Config, Cursor, Db, Pointer, finish, redact, result_part

NAMESPACES = 10_000
"""The most namespaces store_namespaces reads (a prefix lists those under it)."""

Namespace = Annotated[
    str, Field(description="A store namespace, labels joined by '.' (users.alice.memories); a unique beginning works.")
]


@contextmanager
def opened_memory(config: Config, db: str | None) -> Iterator[Any]:
    from statectl.sources.memory import open_memory

    memory = open_memory(config.spec(db))
    try:
        yield memory
    finally:
        memory.close()


def store_namespaces(
    config: Config,
    db: Db = None,
    prefix: Annotated[str | None, Field(description="Only namespaces under this one.")] = None,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """The long-term memory store's namespaces (as BaseStore.list_namespaces), each with its item
    count, bytes, newest update and items expiring (TTL)."""
    from statectl.core.memory import namespace_json, parse_namespace

    want = parse_namespace(prefix or "")
    with opened_memory(config, db) as memory:
        infos = list(islice(memory.each_namespace(want), NAMESPACES + 1))  # (bounded: millions of namespaces)
        items = redact(
            [{**namespace_json(i), "shown": ".".join(i.namespace)} for i in infos[:NAMESPACES]], config.redactor
        )
        out = paging.page_items(items, cursor, config.limit, "namespaces", lambda page: {"namespaces": page})
        if len(infos) > NAMESPACES:
            out["namespaces_left_out"] = (
                f"only the first {NAMESPACES:,} namespaces are listed: give a prefix to list those under it"
            )
        return finish(config, out, memory)


def store_items(
    config: Config,
    namespace: Namespace,
    db: Db = None,
    limit: Annotated[int, Field(description="Items per page (1-1000), in key order.")] = 50,
    after: Annotated[str | None, Field(description="Start after this key (next_after of the last page).")] = None,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """A namespace's items: key, created, updated, expiry, size and the value's beginning (values are
    not read whole: store_get reads one)."""
    from statectl.core.memory import item_json, namespace_json, resolve_namespace

    if not 1 <= limit <= 1000:
        raise StatectlError("limit must be from 1 to 1000")
    with opened_memory(config, db) as memory:
        resolved = resolve_namespace(memory, namespace)
        rows = [] if resolved.namespace is None else memory.items(resolved.namespace, limit + 1, after)
        more = len(rows) > limit
        rows = rows[:limit]
        items = redact([item_json(i, value=False) for i in rows], config.redactor)
        out = paging.page_items(items, cursor, config.limit, "items", lambda page: {"items": page})
        out["namespace"] = None if resolved.namespace is None else list(resolved.namespace)
        out["namespaces_under"] = redact([namespace_json(c) for c in resolved.children[:100]], config.redactor)
        out["next_after"] = rows[-1].key if more and rows else None  # (the key: the next page's `after`)
        return finish(config, out, memory)


def store_get(
    config: Config,
    namespace: Namespace,
    key: Annotated[str, Field(description="The item's key (a unique beginning works).")],
    db: Db = None,
    pointer: Pointer = None,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """One store item as BaseStore.get gives it (value, created_at, updated_at) with its expiry and
    the fields indexed for vector search (dimensions only)."""
    from statectl.core.memory import item_json, resolve_item

    with opened_memory(config, db) as memory:
        item = resolve_item(memory, namespace, key)
        data = redact(item_json(item), config.redactor)
        return finish(config, result_part(config, data, "item", pointer, cursor), memory)


def store_grep(
    config: Config,
    text: Annotated[str | None, Field(description="Plain text, ignoring case, in the key or value.")] = None,
    filter: Annotated[  # noqa: A002 - BaseStore.search's word
        list[str] | None,
        Field(description='KEY=VALUE as BaseStore.search(filter=...) matches (VALUE as JSON: 4.5, {"$gt": 3}).'),
    ] = None,
    namespace: Annotated[str | None, Field(description="Only this namespace and those under it.")] = None,
    db: Db = None,
    limit: Annotated[int, Field(description="At most this many items (1-1000).")] = 50,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Store items whose value matches every filter and holds the text, across namespaces. Vector
    similarity (search(query=...)) needs the app's embedding model: not offered."""
    from statectl.core.memory import item_json, matches_filter, matches_text, parse_filters, resolve_namespace
    from statectl.sources.memory.base import MemoryItem

    if not text and not filter:
        raise StatectlError("give text or filter (KEY=VALUE)")
    if not 1 <= limit <= 1000:
        raise StatectlError("limit must be from 1 to 1000")
    wanted = parse_filters(filter or [])
    with opened_memory(config, db) as memory:
        prefix: tuple[str, ...] = ()
        if namespace:
            resolved = resolve_namespace(memory, namespace, children=False)
            prefix = resolved.namespace if resolved.namespace is not None else resolved.prefix

        def keep(item: MemoryItem) -> bool:  # (text matched as shown, redacted: a search is no oracle)
            if item.error is not None or not matches_filter(item.value, wanted, memory.sql_filters):
                return False
            shown = MemoryItem(item.namespace, item.key, redact(item.value, config.redactor), None, None)
            return not text or matches_text(shown, text)

        found = memory.search(keep, prefix, limit, wanted if memory.sql_filters and wanted else None)
        items = redact([item_json(i) for i in found], config.redactor)
        out = paging.page_items(items, cursor, config.limit, "items", lambda page: {"items": page})
        return finish(config, out, memory)
