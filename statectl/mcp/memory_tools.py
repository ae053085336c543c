"""`statectl mcp`'s long-term memory store tools: namespaces, a namespace's items, one item, and
grep, as `statectl store ... --json` gives them, redacted and bounded as every tool's result."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from statectl.errors import StatectlError
from statectl.mcp import paging
from statectl.mcp.tools import Config, _part, finish, redact


@contextmanager
def opened_memory(config: Config, db: str | None) -> Iterator[Any]:
    from statectl.sources.memory import open_memory

    memory = open_memory(config.spec(db))
    try:
        yield memory
    finally:
        memory.close()


def store_namespaces(
    config: Config, db: str | None = None, prefix: str | None = None, cursor: str | None = None
) -> dict[str, Any]:
    from statectl.core.memory import namespace_json, parse_namespace

    want = parse_namespace(prefix or "")
    with opened_memory(config, db) as memory:
        infos = memory.namespaces(want)
        items = redact([{**namespace_json(i), "shown": ".".join(i.namespace)} for i in infos], config.redactor)
        out = paging.page_items(items, cursor, config.limit, "namespaces", lambda page: {"namespaces": page})
        return finish(config, out, memory)


def store_items(
    config: Config,
    namespace: str,
    db: str | None = None,
    limit: int = 50,
    after: str | None = None,
    cursor: str | None = None,
) -> dict[str, Any]:
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
    namespace: str,
    key: str,
    db: str | None = None,
    pointer: str | None = None,
    cursor: str | None = None,
) -> dict[str, Any]:
    from statectl.core.memory import item_json, resolve_item

    with opened_memory(config, db) as memory:
        item = resolve_item(memory, namespace, key)
        data = redact(item_json(item), config.redactor)
        return finish(config, _part(config, data, "item", pointer, cursor), memory)


def store_grep(
    config: Config,
    text: str | None = None,
    filter: list[str] | None = None,  # noqa: A002 - the store's own word (store.search(filter=...))
    namespace: str | None = None,
    db: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> dict[str, Any]:
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
            resolved = resolve_namespace(memory, namespace)
            prefix = resolved.namespace if resolved.namespace is not None else resolved.prefix

        def keep(item: MemoryItem) -> bool:  # (text matched as shown, redacted: a search is no oracle)
            if item.error is not None or not matches_filter(item.value, wanted, memory.sql_filters):
                return False
            shown = MemoryItem(item.namespace, item.key, redact(item.value, config.redactor), None, None)
            return not text or matches_text(shown, text)

        found = memory.search(keep, prefix, limit)
        items = redact([item_json(i) for i in found], config.redactor)
        out = paging.page_items(items, cursor, config.limit, "items", lambda page: {"items": page})
        return finish(config, out, memory)
