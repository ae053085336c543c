"""A LangGraph server's store, through its `/store` API (langgraph-sdk), bounded as the server
source bounds every request; reads never refresh a TTL (`refresh_ttl=False`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from statectl.errors import SourceError
from statectl.sources.memory.base import (
    PREVIEW_CHARS,
    MemoryItem,
    MemorySource,
    Namespace,
    NamespaceInfo,
    iso,
    json_text,
)
from statectl.sources.server import ServerSource

PAGE = 1000
"""Items per `POST /store/items/search` (the server's largest page)."""


def _item(raw: dict, listed: bool = False) -> MemoryItem | None:
    ns, key = raw.get("namespace"), raw.get("key")
    if not isinstance(ns, list) or not isinstance(key, str):
        return None
    value = raw.get("value")
    body = json_text(value)
    return MemoryItem(
        namespace=tuple(str(n) for n in ns),
        key=key,
        value=None if listed else value,
        created_at=iso(raw.get("created_at")),
        updated_at=iso(raw.get("updated_at")),
        size=len(body.encode()),
        preview=body[:PREVIEW_CHARS] if listed else None,
    )


class ServerMemory(MemorySource):
    """The store of a `langgraph dev` or deployed LangGraph server."""

    kind = "server"

    def __init__(self, url: str, key: str | None = None) -> None:
        self._server = ServerSource(url, key)
        self.label = self._server.label

    def _all(self, prefix: Namespace = ()) -> list[MemoryItem]:
        """Every item under `prefix`, paged by offset, in (namespace, key) order."""
        server, store = self._server, self._server._client.store
        server._begin()
        seen: set[str] = set()
        out: list[MemoryItem] = []
        offset = 0
        while True:

            def one(offset: int = offset) -> Any:
                answer = store.search_items(list(prefix), limit=PAGE, offset=offset, refresh_ttl=False)
                return answer.get("items") if isinstance(answer, dict) else answer

            rows, n = server._page(
                one, "POST /store/items/search", seen, lambda r: f"{r.get('namespace')}\0{r.get('key')}"
            )
            out += [i for r in rows if (i := _item(r)) is not None]
            if n < PAGE:
                break
            offset += n
        return sorted(out, key=lambda i: (i.namespace, i.key))

    def namespaces(self, prefix: Namespace = ()) -> list[NamespaceInfo]:
        by_ns: dict[Namespace, list[MemoryItem]] = {}
        for item in self._all(prefix):
            by_ns.setdefault(item.namespace, []).append(item)
        return [
            NamespaceInfo(
                ns, len(items), sum(i.size for i in items), max((i.updated_at or "" for i in items), default=None), 0
            )
            for ns, items in sorted(by_ns.items(), key=lambda kv: ".".join(kv[0]))
        ]

    def items(self, namespace: Namespace, limit: int | None = None, after: str | None = None) -> list[MemoryItem]:
        kept = [i for i in self._all(namespace) if i.namespace == namespace and (after is None or i.key > after)]
        return [
            MemoryItem(**{**i.__dict__, "value": None, "preview": json_text(i.value)[:PREVIEW_CHARS]})
            for i in kept[:limit]
        ]

    def item(self, namespace: Namespace, key: str) -> MemoryItem | None:
        server = self._server
        server._begin()
        httpx = server._httpx

        def one() -> Any:
            try:
                return server._client.store.get_item(list(namespace), key, refresh_ttl=False)
            except httpx.HTTPStatusError as exc:
                if exc.response.status_code == 404:
                    return None
                raise

        raw = server._call(one, what="GET /store/items")
        if raw is None:
            return None
        if not isinstance(raw, dict):
            raise SourceError(f"{self.label} answered GET /store/items with something that is not an item")
        return _item(raw)

    def scan(self, prefix: Namespace = (), narrow: dict[str, Any] | None = None) -> Iterator[MemoryItem]:
        yield from self._all(prefix)

    def close(self) -> None:
        self._server.close()
