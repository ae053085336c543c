"""`PostgresStore`'s tables (`store`, `store_vectors`), read with statectl's own SQL, read-only
(the session `PostgresSource` uses: statectl's bounds on every wait, a read-only transaction)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from statectl.errors import SourceError
from statectl.sources.memory.base import (
    ORPHANS_SHOWN,
    PREVIEW_CHARS,
    SCAN_BATCH,
    MemoryItem,
    MemorySource,
    Namespace,
    NamespaceInfo,
    NoStore,
    VectorInfo,
    decode_json,
    iso,
    ns_text,
    ns_tuple,
)
from statectl.sources.postgres.session import Queries

# (values are read as text, decoded by statectl: psycopg's own jsonb loader recurses without bound)
COLUMNS = "key, {value}, octet_length(value::text), created_at, {updated_at}, {expires_at}, {ttl_minutes}, prefix"


def like_literal(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class PostgresMemory(MemorySource, Queries):
    """The store a `PostgresStore` wrote (after `setup()`), beside `PostgresSaver`'s tables or alone."""

    kind = "postgres"
    sql_filters = True

    def __init__(self, url: str) -> None:
        self._open(url)
        cols = {
            str(t): str(c)
            for t, c in self._query(
                "SELECT attname, attrelid::regclass::text FROM pg_attribute WHERE attrelid IN "
                "(SELECT r FROM (VALUES (to_regclass('store')), (to_regclass('store_vectors'))) v(r) "
                "WHERE r IS NOT NULL) AND attnum > 0 AND NOT attisdropped"
            )
        }
        store = {c for c, t in cols.items() if t == "store"}
        if not store:
            self.close()
            raise NoStore(
                f"no store in {self.label}",
                "LangGraph's PostgresStore keeps its items in a table `store` (after setup())",
            )
        if not {"prefix", "key", "value"} <= store:
            self.close()
            raise SourceError(f"{self.label} has a `store` table that LangGraph did not write")
        # PostgresStore's MIGRATIONS: expires_at and ttl_minutes come with migration 2
        self.col = {c: c if c in store else "NULL" for c in ("updated_at", "expires_at", "ttl_minutes")}
        self.col["updated_at"] = "updated_at" if "updated_at" in store else "created_at"
        self.has_ttl = "expires_at" in store
        self.has_vectors = any(t == "store_vectors" for t in cols.values())

    def _rows(self, sql: str, args: Any = ()) -> list[tuple]:
        return self._query(sql.format_map(self.col), args)

    def _item(self, r: tuple, value: Any = None, error: str | None = None, **kw: Any) -> MemoryItem:
        key, _, size, created, updated, expires, ttl, prefix = r
        return MemoryItem(
            namespace=ns_tuple(str(prefix)),
            key=str(key),
            value=value,
            created_at=iso(created),
            updated_at=iso(updated),
            expires_at=iso(expires),
            ttl_minutes=None if ttl is None else float(ttl),
            size=size or 0,
            error=error,
            **kw,
        )

    def _under(self, prefix: Namespace) -> tuple[str, tuple]:
        if not prefix:
            return "TRUE", ()
        text = ns_text(prefix)
        return "(prefix = %s OR prefix LIKE %s)", (text, like_literal(text) + ".%")

    def namespaces(self, prefix: Namespace = ()) -> list[NamespaceInfo]:
        where, args = self._under(prefix)
        rows = self._rows(
            "SELECT prefix, count(*), sum(octet_length(value::text)), max({updated_at}), count({expires_at}) "
            f"FROM store WHERE {where} GROUP BY prefix ORDER BY prefix",
            args,
        )
        return [NamespaceInfo(ns_tuple(str(p)), n, int(b or 0), iso(newest), e) for p, n, b, newest, e in rows]

    def namespace_names(self) -> list[Namespace]:
        return [ns_tuple(str(p)) for (p,) in self._rows("SELECT DISTINCT prefix FROM store ORDER BY prefix")]

    def items(self, namespace: Namespace, limit: int | None = None, after: str | None = None) -> list[MemoryItem]:
        sql = COLUMNS.format(value=f"left(value::text, {PREVIEW_CHARS})", **{k: "{" + k + "}" for k in self.col})
        rows = self._rows(
            f"SELECT {sql} FROM store WHERE prefix = %s AND key {'>' if after is not None else '>='} %s ORDER BY key"
            + ("" if limit is None else f" LIMIT {int(limit)}"),
            (ns_text(namespace), after or ""),
        )
        return [self._item(r, preview=r[1]) for r in rows]

    def _whole(self) -> str:
        return COLUMNS.format(value="value::text", **{k: "{" + k + "}" for k in self.col})

    def item(self, namespace: Namespace, key: str) -> MemoryItem | None:
        rows = self._rows(
            f"SELECT {self._whole()} FROM store WHERE prefix = %s AND key = %s", (ns_text(namespace), key)
        )
        if not rows:
            return None
        vectors: tuple[tuple[str, int], ...] = ()
        if self.has_vectors:  # (pgvector's vector_dims)
            vectors = tuple(
                (str(f), int(n or 0))
                for f, n in self._rows(
                    "SELECT field_name, vector_dims(embedding) FROM store_vectors WHERE prefix = %s AND key = %s "
                    "ORDER BY field_name",
                    (ns_text(namespace), key),
                )
            )
        value, error = decode_json(rows[0][1])
        return self._item(rows[0], value, error, vectors=vectors)

    def scan(self, prefix: Namespace = ()) -> Iterator[MemoryItem]:
        where, args = self._under(prefix)
        mark: tuple[str, str] = ("", "")
        while True:
            rows = self._rows(
                f"SELECT {self._whole()} FROM store WHERE {where} AND (prefix, key) > (%s, %s) "
                f"ORDER BY prefix, key LIMIT {SCAN_BATCH}",
                (*args, *mark),
            )
            for r in rows:
                value, error = decode_json(r[1])
                yield self._item(r, value, error)
            if len(rows) < SCAN_BATCH:
                return
            mark = (str(rows[-1][7]), str(rows[-1][0]))

    def vectors(self) -> VectorInfo | None:
        if not self.has_vectors:
            return None
        count, size = self._rows("SELECT count(*), coalesce(sum(pg_column_size(embedding)), 0) FROM store_vectors")[0]
        dims = tuple(
            int(n or 0)
            for (n,) in self._rows("SELECT DISTINCT vector_dims(embedding) FROM store_vectors ORDER BY 1 LIMIT 20")
        )
        orphans = tuple(
            (ns_tuple(str(p)), str(k))
            for p, k in self._rows(
                "SELECT v.prefix, v.key FROM store_vectors v LEFT JOIN store s ON s.prefix = v.prefix AND "
                f"s.key = v.key WHERE s.key IS NULL GROUP BY v.prefix, v.key LIMIT {ORPHANS_SHOWN}"
            )
        )
        return VectorInfo(int(count), int(size), dims, orphans)

    def close(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None:
            conn.close()
