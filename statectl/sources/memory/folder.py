"""A `langgraph dev` folder's store (`store.pckl`, `store.vectors.pckl`: FORMAT-langgraph-api.md
§5), read with the inert unpickler: nothing imported, nothing called."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from statectl.codec.unpickle import Stub, loads, one_file, to_data
from statectl.errors import DecodeError, SourceError
from statectl.sources.base import read_regular
from statectl.sources.memory.base import (
    ORPHANS_SHOWN,
    PREVIEW_CHARS,
    MemoryItem,
    MemorySource,
    Namespace,
    NamespaceInfo,
    NoStore,
    VectorInfo,
    iso,
    json_text,
)

STORE, VECTORS = "store.pckl", "store.vectors.pckl"


def _pairs(value: Any) -> list[tuple[Any, Any]]:
    """A pickled dict's items (a dict, or a stand-in of a dict subclass such as defaultdict)."""
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, Stub):
        return list(value._dictitems) + (list(value._state.items()) if isinstance(value._state, dict) else [])
    return []


def _slots(item: Any) -> dict[str, Any]:
    """A pickled `langgraph.store.base.Item`'s fields: `BUILD (None, {slot: value})`."""
    state = item._state if isinstance(item, Stub) else item
    if isinstance(state, tuple) and len(state) == 2:
        return {**(state[0] or {}), **(state[1] or {})} if all(isinstance(s, dict | None) for s in state) else {}
    return state if isinstance(state, dict) else {}


def _when(value: Any) -> str | None:
    try:
        data = to_data(value)
    except DecodeError:
        return None
    if isinstance(data, dict) and "$datetime" in data:
        return iso(data["$datetime"])
    return iso(data) if isinstance(data, str) else None


class FolderMemory(MemorySource):
    """The items the server's `InMemoryStore` persisted (no TTL kept: the folder has none)."""

    kind = "folder"

    def __init__(self, folder: Path) -> None:
        self.folder, self.label = folder, str(folder)
        self._stamp: tuple | None = None
        if not (folder / STORE).exists():
            raise NoStore(f"no store in {folder}", f"a langgraph dev folder keeps its store in {STORE}")
        self._fresh()
        self.has_vectors = (folder / VECTORS).exists()

    def _stat(self) -> tuple:
        out: list[tuple[int, int, int] | None] = []
        for name in (STORE, VECTORS):
            try:
                st = os.stat(self.folder / name)
                out.append((st.st_ino, st.st_mtime_ns, st.st_size))
            except OSError:
                out.append(None)
        return tuple(out)

    def _load(self, name: str) -> Any:
        path = self.folder / name
        data = read_regular(path)
        if not data:
            return {}
        try:
            return loads(data)
        except DecodeError as exc:
            raise SourceError(f"{path} is not a langgraph dev store file: {exc.message}") from None

    def _fresh(self) -> None:
        """Read the files again if the server replaced them (it writes by rename)."""
        stamp = self._stat()
        if stamp == self._stamp:
            return
        store, vectors = self._load(STORE), self._load(VECTORS)
        self._items: dict[str, dict[str, MemoryItem]] = {}
        with one_file():  # (its items may all name one shared tree: read once, not once an item)
            self._read_items(store)
        self._vectors: dict[tuple[str, str], dict[str, int]] = {}
        for ns, by_key in _pairs(vectors):
            text = ".".join(str(n) for n in ns) if isinstance(ns, tuple) else str(ns)
            for key, fields in _pairs(by_key):
                self._vectors[(text, str(key))] = {
                    str(f): len(v) if isinstance(v, list) else 0 for f, v in _pairs(fields)
                }
        self._stamp = stamp

    def _read_items(self, store: Any) -> None:
        for ns, by_key in _pairs(store):
            namespace = tuple(str(n) for n in ns) if isinstance(ns, tuple) else (str(ns),)
            text = ".".join(namespace)
            kept = self._items.setdefault(text, {})
            for key, raw in _pairs(by_key):
                slots = _slots(raw)
                error = None
                try:
                    value = to_data(slots.get("value"))
                except DecodeError as exc:
                    value, error = None, exc.message
                body = json_text(value)
                kept[str(key)] = MemoryItem(
                    namespace=namespace,
                    key=str(key),
                    value=value,
                    created_at=_when(slots.get("created_at")),
                    updated_at=_when(slots.get("updated_at")),
                    size=len(body.encode()),
                    preview=body[:PREVIEW_CHARS],
                    error=error if error else None if "value" in slots else "not a stored item",
                )

    # -- duties -----------------------------------------------------------------------------
    def namespaces(self, prefix: Namespace = ()) -> list[NamespaceInfo]:
        self._fresh()
        out = []
        for text in sorted(self._items):
            items = list(self._items[text].values())
            if not items or items[0].namespace[: len(prefix)] != prefix:
                continue
            newest = max((i.updated_at for i in items if i.updated_at), default=None)
            out.append(NamespaceInfo(items[0].namespace, len(items), sum(i.size for i in items), newest, 0))
        return out

    def items(self, namespace: Namespace, limit: int | None = None, after: str | None = None) -> list[MemoryItem]:
        self._fresh()
        kept = self._items.get(".".join(namespace), {})
        keys = [k for k in sorted(kept) if after is None or k > after]
        return [_listed(kept[k]) for k in keys[:limit]]

    def item(self, namespace: Namespace, key: str) -> MemoryItem | None:
        self._fresh()
        text = ".".join(namespace)
        found = self._items.get(text, {}).get(key)
        if found is None:
            return None
        vectors = tuple(sorted(self._vectors.get((text, key), {}).items()))
        return MemoryItem(**{**found.__dict__, "vectors": vectors, "preview": None})

    def scan(self, prefix: Namespace = (), narrow: dict[str, Any] | None = None) -> Iterator[MemoryItem]:
        self._fresh()
        for text in sorted(self._items):
            ns = self._items[text]
            if ns and next(iter(ns.values())).namespace[: len(prefix)] == prefix:
                for key in sorted(ns):
                    yield MemoryItem(**{**ns[key].__dict__, "preview": None})

    def vectors(self) -> VectorInfo | None:
        if not self.has_vectors:
            return None
        self._fresh()
        dims = sorted({d for fields in self._vectors.values() for d in fields.values()})
        count = sum(len(f) for f in self._vectors.values())
        orphans = tuple((tuple(t.split(".")), k) for t, k in sorted(self._vectors) if k not in self._items.get(t, {}))[
            :ORPHANS_SHOWN
        ]
        return VectorInfo(
            count, sum(d * 8 for fields in self._vectors.values() for d in fields.values()), tuple(dims), orphans
        )

    def table_bytes(self) -> dict[str, int]:
        out = {}
        for name in (STORE, VECTORS):
            try:
                out[name] = (self.folder / name).stat().st_size
            except OSError:
                pass
        return out


def _listed(item: MemoryItem) -> MemoryItem:
    """An item as a listing gives it: the preview, not the value (as SQL sources do)."""
    return MemoryItem(**{**item.__dict__, "value": None})
