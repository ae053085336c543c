"""The long-term memory store's reading duties, declared once: what every memory source must do
(abstract) and may do (a default body and a capability flag), and the records it answers with.

A LangGraph app keeps a `BaseStore` beside its checkpoints: items `(namespace, key) -> value`
(a JSON object), with created/updated times, an optional TTL and an optional vector index. One
implementation per source kind reads them without LangGraph: `SqliteMemory` (`SqliteStore`'s
tables), `PostgresMemory` (`PostgresStore`'s), `FolderMemory` (`langgraph dev`'s `store.pckl`),
`ServerMemory` (a LangGraph server's `/store` API). `tests/test_store_contract.py` runs each
against every duty below.
"""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson

from statectl.errors import SourceError

Namespace = tuple[str, ...]
"""A namespace as LangGraph has it: a tuple of labels (none contains a `.`; shown joined by `.`)."""

PREVIEW_CHARS = 200
"""How much of a value a listing reads (SQL sources cut it in the query: a listing never reads
a whole value)."""

SCAN_BATCH = 500
"""Items a scan reads per query (memory holds one batch, whatever the store's size)."""


class NoStore(SourceError):
    """The source opens, and holds no long-term memory store ("no store in ...")."""


@dataclass(frozen=True)
class MemoryItem:
    """One stored item (LangGraph's `Item`), as read."""

    namespace: Namespace
    key: str
    value: Any
    """The decoded value (a dict as LangGraph stores it); None in a listing (see `preview`), or
    when it does not decode (see `error`)."""
    created_at: str | None
    """ISO 8601, UTC."""
    updated_at: str | None
    expires_at: str | None = None
    """When the TTL sweeper may delete it (None: no TTL, or a source that keeps none)."""
    ttl_minutes: float | None = None
    size: int = 0
    """The bytes the stored value takes (its JSON text where the source stores text)."""
    preview: str | None = None
    """The beginning of the value's JSON text (at most PREVIEW_CHARS), in listings."""
    error: str | None = None
    """Why the stored value does not decode (the item is still listed)."""
    vectors: tuple[tuple[str, int], ...] = ()
    """Its indexed fields: (field path, dimensions); never the vectors themselves."""


@dataclass(frozen=True)
class NamespaceInfo:
    """A namespace's counts, read from the index (no value decoded)."""

    namespace: Namespace
    items: int
    bytes: int
    newest: str | None
    """The latest `updated_at` of its items (ISO 8601, UTC)."""
    expiring: int
    """Items with a TTL (an `expires_at`)."""


@dataclass(frozen=True)
class VectorInfo:
    """What the vector index holds, without reading a vector whole."""

    count: int
    bytes: int
    dims: tuple[int, ...]
    """The distinct dimensions of the stored vectors (one, in a healthy index)."""
    orphans: tuple[tuple[Namespace, str], ...]
    """Vectors whose item is gone (at most ORPHANS_SHOWN)."""


ORPHANS_SHOWN = 100


class MemorySource(ABC):
    """Read-only access to one long-term memory store. Every method returns fresh data."""

    label: str
    """What was opened, for messages (never a password)."""
    kind: str
    """sqlite, postgres, folder or server."""
    has_ttl: bool = False
    """Does the store keep expiry times (SqliteStore, PostgresStore)?"""
    has_vectors: bool = False
    """Does the store hold a vector index that can be read (SQLite's `store_vectors`, a folder's
    `store.vectors.pckl`)?"""
    notes: tuple[str, ...] = ()
    """What the store cannot say, found while opening it."""
    sql_filters: bool = False
    """Does LangGraph's store of this kind filter in SQL (SqliteStore, PostgresStore: a value
    without a filter's key matches nothing), or in Python (InMemoryStore: the key reads None)?"""

    # -- required ---------------------------------------------------------------------------
    @abstractmethod
    def namespaces(self, prefix: Namespace = ()) -> list[NamespaceInfo]:
        """Every namespace holding items (in `prefix` and under it), with its counts, in
        namespace order."""

    @abstractmethod
    def items(self, namespace: Namespace, limit: int | None = None, after: str | None = None) -> list[MemoryItem]:
        """The items of one namespace (not those under it) in key order, after key `after`
        (keyset paging), at most `limit`; values are not decoded: `preview` holds their head."""

    @abstractmethod
    def item(self, namespace: Namespace, key: str) -> MemoryItem | None:
        """One item with its decoded value (and its indexed fields); None if there is none."""

    @abstractmethod
    def scan(self, prefix: Namespace = (), narrow: dict[str, Any] | None = None) -> Iterator[MemoryItem]:
        """Every item in `prefix` and the namespaces under it, values decoded, read SCAN_BATCH at
        a time, in the order the store reads fastest (SQLite: its rows' order; callers that show
        them sort what they keep).

        `narrow`: LangGraph's filter dict, a hint: a source whose query can tell may skip items
        that cannot match it as its kind of store matches (`sql_filters`), never one that can;
        the caller still matches what comes (the SQL only narrows what is decoded)."""

    # -- optional ---------------------------------------------------------------------------
    def search(
        self,
        keep: Callable[[MemoryItem], bool],
        prefix: Namespace = (),
        limit: int | None = None,
        narrow: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """The items `keep` accepts, at most `limit`, in (namespace, key) order (the first `limit`
        found in scan order; `narrow` as `scan` takes it, the predicate decides)."""
        out: list[MemoryItem] = []
        for item in self.scan(prefix, narrow):
            if keep(item):
                out.append(item)
                if limit is not None and len(out) >= limit:
                    break
        return sorted(out, key=lambda i: (i.namespace, i.key))

    def namespace_names(self, begins: str = "", limit: int | None = None) -> list[Namespace]:
        """The namespaces holding items whose text begins with `begins`, in text order (a
        namespace before those under it), at most `limit`, without counting them (what typing a
        namespace needs; SQL sources read the index alone, one seek a name when limited)."""
        names = sorted((i.namespace for i in self.namespaces()), key=ns_text)
        return [n for n in names if ns_text(n).startswith(begins)][:limit]

    def each_namespace(self, prefix: Namespace = ()) -> Iterator[NamespaceInfo]:
        """`namespaces(prefix)` one at a time (SQL sources: SCAN_BATCH namespaces a query, so
        that memory stays flat however many there are)."""
        yield from self.namespaces(prefix)

    def keys(self, namespace: Namespace, prefix: str, limit: int = 200) -> list[str]:
        """Keys of a namespace that begin with `prefix` (to complete, and to suggest)."""
        out: list[str] = []
        after = None
        while len(out) < limit:
            page = self.items(namespace, SCAN_BATCH, after)
            out += [i.key for i in page if i.key.startswith(prefix)]
            if len(page) < SCAN_BATCH:
                break
            after = page[-1].key
        return out[:limit]

    def vectors(self) -> VectorInfo | None:
        """The vector index (`has_vectors`); None where there is none."""
        return None

    def table_bytes(self) -> dict[str, int]:
        """Bytes each of the store's tables or files takes where the source can tell ({} else)."""
        return {}

    def close(self) -> None:
        """Release the connection (nothing to do for a file read whole)."""
        return None

    def __enter__(self) -> MemorySource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- helpers the implementations share ------------------------------------------------------
def ns_text(namespace: Namespace) -> str:
    """A namespace as LangGraph's SQL stores keep it (and as statectl shows it): labels joined by `.`."""
    return ".".join(namespace)


@lru_cache(maxsize=4096)
def ns_tuple(text: str) -> Namespace:
    return tuple(text.split(".")) if text else ()


def iso(value: Any) -> str | None:
    """A timestamp as ISO 8601 in UTC: a datetime (naive is UTC, as SQLite's CURRENT_TIMESTAMP),
    or text SQLite or a server gave."""
    if value is None:
        return None
    if isinstance(value, str):
        return _iso_text(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        elif value.utcoffset() == dt.timedelta(0):
            return value.isoformat()
        return value.astimezone(dt.UTC).isoformat()
    return str(value)


@lru_cache(maxsize=4096)
def _iso_text(text: str) -> str:
    """(Cached: a store's items share their seconds; a scan of a million items parses few.)"""
    try:
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    return iso(value) or text


def json_text(value: Any) -> str:
    """A decoded value's JSON text (for previews and sizes of sources that store objects)."""
    try:
        return orjson.dumps(value, default=str).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


def filter_ops(wanted: object) -> list[tuple[str, Any]]:
    """A filter key's value as (operator, value) pairs: `{"$gt": 3, "$lt": 9}` as given, anything
    else as `$eq` (a plain object is compared whole)."""
    if isinstance(wanted, dict) and any(str(k).startswith("$") for k in wanted):
        return list(wanted.items())
    return [("$eq", wanted)]


def widened(number: float) -> tuple[float, float]:
    """A float widened by a few units of its last place each way (SQLite's text-to-float and
    Python's may round a long decimal apart: the SQL keeps both, the predicate decides)."""
    margin = abs(number) * 1e-12 + 1e-300
    return number - margin, number + margin


def decode_json(raw: str | bytes | None) -> tuple[Any, str | None]:
    """(value, None), or (None, why) for stored text that is not JSON."""
    if raw is None:
        return None, "no value stored"
    try:
        return orjson.loads(raw), None
    except orjson.JSONDecodeError as exc:
        return None, f"not JSON ({str(exc).split(':')[0]})"
