"""The long-term memory store a statectl export holds (`export --store`): its items as they were
read from the store exported (values decoded, times in UTC, indexed fields without vectors)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from statectl.errors import SourceError
from statectl.sources.base import read_regular
from statectl.sources.memory.base import (
    PREVIEW_CHARS,
    MemoryItem,
    MemorySource,
    Namespace,
    NamespaceInfo,
    NoStore,
    json_text,
)

SQL_KINDS = ("sqlite", "postgres")
"""The stores that filter in SQL (a value without a filter's key matches nothing)."""


def item_record(item: MemoryItem, redactor: Any = None) -> dict[str, Any]:
    """One item as the export holds it (`redactor`: `export --redact`'s, identifiers as threads')."""

    def rid(text: str) -> str:
        return text if redactor is None else redactor.ident(text)

    value, error = item.value, item.error
    if redactor is not None:
        value = redactor.value(value)
        error = None if error is None else redactor.text(error)
    return {
        "namespace": [rid(n) for n in item.namespace],
        "key": rid(item.key),
        "value": value,
        "created_at": item.created_at,
        "updated_at": item.updated_at,
        "expires_at": item.expires_at,
        "ttl_minutes": item.ttl_minutes,
        "size": item.size,
        "indexed": [[f, d] for f, d in item.vectors],
        "error": error,
    }


def write_store(memory: MemorySource, out: Any, redactor: Any = None) -> int:
    """The `"store"` member of an export: every item of `memory`, one at a time (memory holds a
    scan batch, not the store). Returns the items written."""
    out.write(b',"store":{"from":' + orjson.dumps(memory.kind) + b',"has_ttl":' + orjson.dumps(memory.has_ttl))
    out.write(b',"sql_filters":' + orjson.dumps(memory.sql_filters) + b',"items":[')
    n = 0
    for item in memory.scan(()):
        if memory.has_vectors:  # (the indexed fields come with `item`, not with the scan)
            item = memory.item(item.namespace, item.key) or item
        record = item_record(item, redactor)
        try:
            data = orjson.dumps(record, default=str)
        except TypeError:  # (orjson writes at most 254 levels; the store read a deeper value)
            record.update(value=None, error=record["error"] or "nested too deeply to export (over 254 levels)")
            data = orjson.dumps(record, default=str)
        out.write(b"," * bool(n) + data)
        n += 1
    out.write(b"]}")
    return n


class ExportMemory(MemorySource):
    """The store an export file holds; NoStore when it was exported without `--store`."""

    kind = "export"

    def __init__(self, path: Path, doc: Any = None) -> None:
        self.label = str(path)
        if doc is None:
            try:
                doc = orjson.loads(read_regular(path) or b"")
            except (orjson.JSONDecodeError, OSError) as exc:
                raise SourceError(f"{path} is not a valid statectl export file ({exc})") from None
        if not isinstance(doc, dict) or doc.get("format") != "statectl-export":
            raise SourceError(f"{path} is JSON but not a statectl export file")
        store = doc.get("store")
        if not isinstance(store, dict):
            raise NoStore(f"no store in {path}", "export it with `statectl export --store`")
        self.origin = store.get("from") if isinstance(store.get("from"), str) else None
        self.sql_filters = bool(store.get("sql_filters", self.origin in SQL_KINDS))
        self.has_ttl = bool(store.get("has_ttl"))
        self._items: dict[Namespace, dict[str, MemoryItem]] = {}
        try:
            for raw in store["items"]:
                self._add(raw)
        except (KeyError, TypeError, ValueError) as exc:
            raise SourceError(f"{path}: the export's store is not as statectl writes it ({exc})") from None

    def _add(self, raw: dict[str, Any]) -> None:
        namespace = tuple(str(n) for n in raw["namespace"])
        key = str(raw["key"])
        value, error = raw.get("value"), raw.get("error")
        body = json_text(value) if self.origin != "postgres" else _jsonb_text(value)
        size = raw.get("size")
        ttl = raw.get("ttl_minutes")
        self._items.setdefault(namespace, {})[key] = MemoryItem(
            namespace=namespace,
            key=key,
            value=None if error is not None else value,
            created_at=_text(raw.get("created_at")),
            updated_at=_text(raw.get("updated_at")),
            expires_at=_text(raw.get("expires_at")),
            ttl_minutes=float(ttl) if isinstance(ttl, int | float) and not isinstance(ttl, bool) else None,
            size=size if isinstance(size, int) and not isinstance(size, bool) else len(body.encode()),
            preview=body[:PREVIEW_CHARS],
            error=str(error) if error is not None else None,
            vectors=tuple((str(f), int(d)) for f, d in raw.get("indexed") or ()),
        )

    # -- duties -----------------------------------------------------------------------------
    def namespaces(self, prefix: Namespace = ()) -> list[NamespaceInfo]:
        out = []
        for ns in sorted(self._items):
            if ns[: len(prefix)] != prefix or not self._items[ns]:
                continue
            items = list(self._items[ns].values())
            newest = max((i.updated_at for i in items if i.updated_at), default=None)
            expiring = sum(1 for i in items if i.expires_at)
            out.append(NamespaceInfo(ns, len(items), sum(i.size for i in items), newest, expiring))
        return out

    def items(self, namespace: Namespace, limit: int | None = None, after: str | None = None) -> list[MemoryItem]:
        kept = self._items.get(tuple(namespace), {})
        keys = [k for k in sorted(kept) if after is None or k > after]
        return [MemoryItem(**{**kept[k].__dict__, "value": None, "vectors": ()}) for k in keys[:limit]]

    def item(self, namespace: Namespace, key: str) -> MemoryItem | None:
        found = self._items.get(tuple(namespace), {}).get(key)
        return None if found is None else MemoryItem(**{**found.__dict__, "preview": None})

    def scan(self, prefix: Namespace = (), narrow: dict[str, Any] | None = None) -> Iterator[MemoryItem]:
        for ns in sorted(self._items):
            if ns[: len(prefix)] == prefix:
                kept = self._items[ns]
                for key in sorted(kept):  # (as a store's scan: the indexed fields come with `item`)
                    yield MemoryItem(**{**kept[key].__dict__, "preview": None, "vectors": ()})


def _jsonb_text(value: Any) -> str:
    """A value as PostgreSQL prints a JSONB (`{"a": 1, "b": [2, 3]}`), for previews like its own."""
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return json_text(value)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
