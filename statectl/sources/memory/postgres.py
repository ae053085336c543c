"""`PostgresStore`'s tables (`store`, `store_vectors`), read with statectl's own SQL, read-only
(the session `PostgresSource` uses: statectl's bounds on every wait, a read-only transaction)."""

from __future__ import annotations

import json
import math
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
    filter_ops,
    iso,
    ns_text,
    ns_tuple,
    widened,
)
from statectl.sources.postgres.session import Queries

UTC = 'YYYY-MM-DD"T"HH24:MI:SS.US'
"""Times read as text in UTC (a datetime a row, then its text, cost more than the scan's SQL)."""
# (values are read as text, decoded by statectl: psycopg's own jsonb loader recurses without bound)
COLUMNS = (
    "key, {value}, octet_length(value::text), "
    + ", ".join(f"to_char({{{c}}} AT TIME ZONE 'UTC', '{UTC}')" for c in ("created_at", "updated_at", "expires_at"))
    + ", {ttl_minutes}, prefix"
)


def utc(text: str | None) -> str | None:
    """A time as `UTC` formats it, as `iso` gives one (no fraction when it is 0)."""
    if not text:
        return None
    return (text[:-7] if text.endswith(".000000") else text) + "+00:00"


def like_literal(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _bounds(want: Any) -> tuple[float | None, float | None]:
    """A number's bounds widened (`widened`), or (None, None) for one that is not finite."""
    if not isinstance(want, int | float):
        return None, None
    try:
        number = float(want)
    except OverflowError:
        return None, None
    return widened(number) if math.isfinite(number) else (None, None)


def narrowing(filters: dict[str, Any] | None) -> tuple[list[str], list[Any]]:
    """SQL conditions every item matching `filters` (as PostgresStore's SQL and statectl's
    `matches_filter(sql=True)` match: a top-level key, which must be there) meets; never narrower
    than the predicate, which still decides: text and null exactly (JSONB equality), numbers
    as `numeric` within a few units of the last place (Python compares them as floats), other
    values by their JSON type."""
    conds: list[str] = []
    args: list[Any] = []
    for key, wanted in (filters or {}).items():
        for op, want in filter_ops(wanted):
            if op == "$eq" and (want is None or isinstance(want, str)):
                conds.append("value->%s = %s::jsonb")
                args += [key, json.dumps(want)]
            elif op == "$eq" and isinstance(want, int | float):  # (True == 1 == 1.0, as Python has it)
                low, high = _bounds(want)
                if low is None:
                    conds.append("jsonb_typeof(value->%s) IN ('number', 'boolean')")
                    args.append(key)
                else:
                    conds.append(
                        "CASE jsonb_typeof(value->%s) WHEN 'boolean' THEN true WHEN 'number' THEN "
                        "(value->>%s)::numeric BETWEEN %s::numeric AND %s::numeric ELSE false END"
                    )
                    args += [key, key, low, high]
            elif op == "$eq" and isinstance(want, dict | list):
                conds.append(f"jsonb_typeof(value->%s) = '{'object' if isinstance(want, dict) else 'array'}'")
                args.append(key)
            elif op in ("$gt", "$gte", "$lt", "$lte"):  # (text that reads as a number compares as one)
                low, high = _bounds(want) if not isinstance(want, bool) else (None, None)
                if low is None or high is None:
                    conds.append("jsonb_typeof(value->%s) IN ('number', 'string')")
                    args.append(key)
                else:
                    bound = "(value->>%s)::numeric " + (">= %s::numeric" if op in ("$gt", "$gte") else "<= %s::numeric")
                    conds.append(f"CASE jsonb_typeof(value->%s) WHEN 'string' THEN true WHEN 'number' THEN {bound} END")
                    args += [key, key, low if op in ("$gt", "$gte") else high]
            else:  # ($ne: the key is there; SQL's NULL matches nothing)
                conds.append("value->%s IS NOT NULL")
                args.append(key)
    return conds, args


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
        self.col = {c: c if c in store else "NULL::timestamptz" for c in ("created_at", "updated_at", "expires_at")}
        self.col["ttl_minutes"] = "ttl_minutes" if "ttl_minutes" in store else "NULL"
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
            created_at=utc(created),
            updated_at=utc(updated),
            expires_at=utc(expires),
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

    def each_namespace(self, prefix: Namespace = ()) -> Iterator[NamespaceInfo]:
        if not prefix:
            yield from self._grouped()
            return
        text = ns_text(prefix)  # (itself, then those under it: `a.b.` up to `a.b/`, one bound a batch)
        yield from self._grouped(text, text + "\x01")
        yield from self._grouped(text + ".", text + "/")

    def _grouped(self, low: str | None = None, high: str | None = None) -> Iterator[NamespaceInfo]:
        """The namespaces from `low` (included) to `high` (excluded), SCAN_BATCH a query, in byte
        order whatever the database's collation (`~<~`: PostgresStore's text_pattern_ops index)."""
        mark, first = low, True
        while True:
            where = [] if mark is None else ["prefix ~>=~ %s" if first else "prefix ~>~ %s"]
            where += [] if high is None else ["prefix ~<~ %s"]
            rows = self._rows(
                "SELECT prefix, count(*), sum(octet_length(value::text)), max({updated_at}), count({expires_at}) "
                f"FROM store WHERE {' AND '.join(where) or 'TRUE'} GROUP BY prefix "
                f"ORDER BY prefix USING ~<~ LIMIT {SCAN_BATCH}",
                tuple(a for a in (mark, high) if a is not None),
            )
            for p, n, b, newest, e in rows:
                yield NamespaceInfo(ns_tuple(str(p)), n, int(b or 0), iso(newest), e)
            if len(rows) < SCAN_BATCH:
                return
            mark, first = rows[-1][0], False

    def namespace_names(self, begins: str = "", limit: int | None = None) -> list[Namespace]:
        where, args = ("prefix LIKE %s", (like_literal(begins) + "%",)) if begins else ("TRUE", ())
        rows = self._rows(
            f"SELECT DISTINCT prefix FROM store WHERE {where} ORDER BY prefix"
            + ("" if limit is None else f" LIMIT {int(limit)}"),
            args,
        )  # (stopping at `limit` names)
        return [ns_tuple(str(p)) for (p,) in rows]

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

    def scan(self, prefix: Namespace = (), narrow: dict[str, Any] | None = None) -> Iterator[MemoryItem]:
        """In the table's own order (a sequential read: in key order each row is a random read of
        the heap), through a server-side cursor in one read-only transaction (one snapshot: an
        item updated meanwhile is read once), SCAN_BATCH rows a fetch, each fetch bounded as a
        statement is. `narrow`: rows that cannot match are skipped in the query (only candidates
        are sent and decoded)."""
        where, args = self._under(prefix)
        conds, cargs = narrowing(narrow)
        sql = f"SELECT {self._whole()} FROM store WHERE {where}{''.join(' AND ' + c for c in conds)}"
        try:
            with self.conn.transaction(), self.conn.cursor(name=f"statectl_scan_{id(self):x}", binary=False) as cur:
                cur.execute(sql.format_map(self.col), (*args, *cargs))
                while rows := cur.fetchmany(SCAN_BATCH):
                    for r in rows:
                        value, error = decode_json(r[1])
                        yield self._item(r, value, error)
        except self._psycopg.Error as exc:
            raise self._failed(exc) from None

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
