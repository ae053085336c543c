"""`SqliteStore`'s tables (`store`, `store_vectors`), read with statectl's own SQL, read-only."""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
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
from statectl.sources.sqlite import connect_file

BYTES = "CASE typeof(value) WHEN 'blob' THEN length(value) ELSE length(CAST(value AS BLOB)) END"
"""A value's bytes (SqliteStore writes orjson's bytes: a blob's length is read from its header)."""

NO_STORE_HINT = "LangGraph's SqliteStore keeps its items in a table `store`; is the store in another file?"


def glob_literal(text: str) -> str:
    """`text` matched literally by GLOB (which has no ESCAPE clause): each metacharacter in brackets."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def prefix_where(prefix: Namespace) -> tuple[str, tuple[str, ...]]:
    """SQL keeping a namespace and those under it (`a.b` and `a.b.*`, never `a.bc`)."""
    if not prefix:
        return "1", ()
    text = ns_text(prefix)
    return "(prefix = ? OR prefix GLOB ?)", (text, f"{glob_literal(text)}.*")


SIMPLE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
"""Filter keys narrowed in SQL: `$.key` is the top-level key there as in Python (a dotted key is a
path to SQLite, a top-level key to statectl's matching: left to Python)."""


def narrowing(filters: dict[str, Any] | None, value: str) -> tuple[list[str], list[Any]]:
    """SQL conditions every item matching `filters` (as SqliteStore's SQL and statectl's
    `matches_filter(sql=True)` match) meets: what json_extract can tell, widened, never narrower
    than the predicate; `value` is the JSON text's expression."""
    conds: list[str] = []
    args: list[Any] = []
    for key, wanted in (filters or {}).items():
        if not SIMPLE_KEY.match(key):
            continue
        got, kind = f"json_extract({value}, '$.{key}')", f"json_type({value}, '$.{key}')"
        for op, want in filter_ops(wanted):
            number = None
            if isinstance(want, int | float):
                try:
                    number = float(want)
                except OverflowError:
                    number = None
            if op == "$eq":
                if isinstance(want, str):
                    conds.append(f"{got} = ?")
                    args.append(want)
                elif want is None:
                    conds.append(f"{got} IS NULL")
                elif number is not None and not math.isnan(number):  # (True == 1 == 1.0, as Python has it)
                    conds.append(f"CAST({got} AS REAL) BETWEEN ? AND ?")
                    args += widened(number)
                elif isinstance(want, dict | list):
                    conds.append(f"{kind} = '{'object' if isinstance(want, dict) else 'array'}'")
            elif op == "$ne":
                conds.append(f"{kind} IS NOT NULL")  # (the key is there: SQL's NULL matches nothing)
            elif number is not None and not isinstance(want, bool) and not math.isnan(number):
                # (text that reads as a number compares as one in Python: kept)
                low, high = widened(number)
                bound = f"CAST({got} AS REAL) >= ?" if op in ("$gt", "$gte") else f"CAST({got} AS REAL) <= ?"
                conds.append(f"({kind} = 'text' OR {bound})")
                args.append(low if op in ("$gt", "$gte") else high)
    return conds, args


def _text(head: str | bytes | None) -> str | None:
    """A value's head as text (SqliteStore stores orjson's bytes: a cut may split a character)."""
    return head.decode("utf-8", "replace") if isinstance(head, bytes) else head


class SqliteMemory(MemorySource):
    """The store a `SqliteStore` wrote, alone in its file or beside `SqliteSaver`'s checkpoints."""

    kind = "sqlite"
    sql_filters = True

    def __init__(self, path: Path) -> None:
        self.label, self.path = str(path), path
        try:
            self.conn, self._how, self._private = connect_file(path)
            tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as exc:
            raise SourceError(f"cannot read {path} as SQLite: {exc}") from None
        if "store" not in tables:
            self.close()
            raise NoStore(f"no store in {path}", NO_STORE_HINT)
        cols = {r[1] for r in self.conn.execute("PRAGMA table_info(store)")}
        if not {"prefix", "key", "value"} <= cols:
            self.close()
            raise SourceError(
                f"{path} has a `store` table that LangGraph did not write (its columns: {', '.join(sorted(cols))})"
            )
        # the migrations SqliteStore ships add expires_at, then ttl_minutes (MIGRATIONS 2, 3)
        self.col = {c: c if c in cols else "NULL" for c in ("created_at", "updated_at", "expires_at", "ttl_minutes")}
        self.col["BYTES"] = BYTES
        self.has_ttl = "expires_at" in cols
        vcols = (
            {r[1] for r in self.conn.execute("PRAGMA table_info(store_vectors)")}
            if "store_vectors" in tables
            else set()
        )
        self.has_vectors = {"prefix", "key", "field_name", "embedding"} <= vcols

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        try:
            return self.conn.execute(sql.format_map(self.col), args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise SourceError(f"cannot read {self.label}: {exc}") from None

    def _item(self, prefix: str, row: tuple, value: Any = None, error: str | None = None, **kw: Any) -> MemoryItem:
        key, _, size, created, updated, expires, ttl = row[:7]
        return MemoryItem(
            namespace=ns_tuple(prefix),
            key=str(key),
            value=value,
            created_at=iso(created),
            updated_at=iso(updated),
            expires_at=iso(expires),
            ttl_minutes=ttl,
            size=size or 0,
            error=error,
            **kw,
        )

    # -- duties -----------------------------------------------------------------------------
    def namespaces(self, prefix: Namespace = ()) -> list[NamespaceInfo]:
        where, args = prefix_where(prefix)
        rows = self._query(
            f"SELECT prefix, count(*), sum({BYTES}), max({{updated_at}}), count({{expires_at}}) "
            f"FROM store WHERE {where} GROUP BY prefix ORDER BY prefix",
            args,
        )
        return [NamespaceInfo(ns_tuple(str(p)), n, b or 0, iso(newest), e) for p, n, b, newest, e in rows]

    def each_namespace(self, prefix: Namespace = ()) -> Iterator[NamespaceInfo]:
        if not prefix:
            yield from self._grouped()
            return
        # itself, then those under it: the texts from `a.b.` up to `a.b/` (`/` follows `.`), the
        # one bound a batch starts from its last namespace (with a second lower bound, GLOB's
        # or `>=`, SQLite started every batch at the range's start)
        text = ns_text(prefix)
        yield from self._grouped(text, text + "\x00")
        yield from self._grouped(text + ".", text + "/")

    def _grouped(self, low: str | None = None, high: str | None = None) -> Iterator[NamespaceInfo]:
        """The namespaces from `low` (included) to `high` (excluded), SCAN_BATCH a query."""
        mark, first = low, True
        while True:
            where = [] if mark is None else ["prefix >= ?" if first else "prefix > ?"]
            where += [] if high is None else ["prefix < ?"]
            rows = self._query(
                f"SELECT prefix, count(*), sum({BYTES}), max({{updated_at}}), count({{expires_at}}) FROM store "
                f"WHERE {' AND '.join(where) or '1'} GROUP BY prefix ORDER BY prefix LIMIT {SCAN_BATCH}",
                tuple(a for a in (mark, high) if a is not None),
            )
            for p, n, b, newest, e in rows:
                yield NamespaceInfo(ns_tuple(str(p)), n, b or 0, iso(newest), e)
            if len(rows) < SCAN_BATCH:
                return
            mark, first = rows[-1][0], False

    def namespace_names(self, begins: str = "", limit: int | None = None) -> list[Namespace]:
        where, args = ("prefix GLOB ?", (glob_literal(begins) + "*",)) if begins else ("1", ())
        rows = self._query(
            f"SELECT DISTINCT prefix FROM store WHERE {where} ORDER BY prefix LIMIT ?",
            (*args, -1 if limit is None else limit),
        )  # (the index alone, stopping at `limit` names)
        return [ns_tuple(str(p)) for (p,) in rows]

    def items(self, namespace: Namespace, limit: int | None = None, after: str | None = None) -> list[MemoryItem]:
        rows = self._query(
            f"SELECT key, substr(value, 1, {PREVIEW_CHARS}), {BYTES}, {{created_at}}, "
            "{updated_at}, {expires_at}, {ttl_minutes} FROM store WHERE prefix = ? AND key "
            + (">" if after is not None else ">=")  # (an empty key is a key)
            + " ? ORDER BY key LIMIT ?",
            (ns_text(namespace), after or "", -1 if limit is None else limit),
        )
        return [self._item(ns_text(namespace), r, preview=_text(r[1])) for r in rows]

    def item(self, namespace: Namespace, key: str) -> MemoryItem | None:
        rows = self._query(
            "SELECT key, value, {BYTES}, {created_at}, {updated_at}, {expires_at}, "
            "{ttl_minutes} FROM store WHERE prefix = ? AND key = ?",
            (ns_text(namespace), key),
        )
        if not rows:
            return None
        vectors: tuple[tuple[str, int], ...] = ()
        if self.has_vectors:
            vectors = tuple(
                (str(f), (n or 0) // 4)  # (sqlite-vec's float32 blobs)
                for f, n in self._query(
                    "SELECT field_name, length(embedding) FROM store_vectors WHERE prefix = ? AND key = ? "
                    "ORDER BY field_name",
                    (ns_text(namespace), key),
                )
            )
        value, error = decode_json(rows[0][1])
        return self._item(ns_text(namespace), rows[0], value, error, vectors=vectors)

    def scan(self, prefix: Namespace = (), narrow: dict[str, Any] | None = None) -> Iterator[MemoryItem]:
        """In rowid order, the table's own (its pages read in order: in key order, each row is a
        random read); a WITHOUT ROWID table in key order. `narrow`: SQLite's JSON functions skip
        the rows that cannot match (in C: only candidates are decoded in Python); a value that is
        not JSON makes them fail, then each value is checked first (json_valid)."""
        where, args = prefix_where(prefix)
        columns = "key, value, {BYTES}, {created_at}, {updated_at}, {expires_at}, {ttl_minutes}, prefix"
        by_rowid = self._has_rowid()
        mark: tuple = (0,) if by_rowid else ("", "")
        after = "rowid > ?" if by_rowid else "(prefix, key) > (?, ?)"
        order = "rowid" if by_rowid else "prefix, key"
        text = "CAST(value AS TEXT)"  # (SqliteStore writes bytes; SQLite 3.45+ would read a blob as JSONB)
        conds, cargs = narrowing(narrow, text)
        guarded = not conds
        while True:
            sql = (
                f"SELECT {columns}, {'rowid' if by_rowid else 'NULL'} FROM store WHERE {where} AND {after}"
                f"{''.join(' AND ' + c for c in conds)} ORDER BY {order} LIMIT {SCAN_BATCH}"
            )
            try:
                rows = self.conn.execute(sql.format_map(self.col), (*args, *mark, *cargs)).fetchall()
            except sqlite3.OperationalError as exc:
                if guarded or "JSON" not in str(exc):
                    raise SourceError(f"cannot read {self.label}: {exc}") from None
                guarded = True  # (a value that is not JSON: this batch again, each value checked first)
                conds, cargs = narrowing(narrow, f"(CASE WHEN json_valid({text}) THEN {text} END)")
                continue
            except sqlite3.DatabaseError as exc:
                raise SourceError(f"cannot read {self.label}: {exc}") from None
            for r in rows:
                value, error = decode_json(r[1])
                yield self._item(str(r[7]), r, value, error)
            if len(rows) < SCAN_BATCH:
                return
            mark = (rows[-1][8],) if by_rowid else (str(rows[-1][7]), str(rows[-1][0]))

    def _has_rowid(self) -> bool:
        try:
            self.conn.execute("SELECT rowid FROM store LIMIT 1").fetchall()
            return True
        except sqlite3.DatabaseError:
            return False

    def vectors(self) -> VectorInfo | None:
        if not self.has_vectors:
            return None
        count, size = self._query("SELECT count(*), coalesce(sum(length(embedding)), 0) FROM store_vectors")[0]
        dims = tuple(
            (n or 0) // 4
            for (n,) in self._query("SELECT DISTINCT length(embedding) FROM store_vectors ORDER BY 1 LIMIT 20")
        )
        orphans = tuple(
            (ns_tuple(str(p)), str(k))
            for p, k in self._query(
                "SELECT v.prefix, v.key FROM store_vectors v LEFT JOIN store s ON s.prefix = v.prefix AND "
                f"s.key = v.key WHERE s.key IS NULL GROUP BY v.prefix, v.key LIMIT {ORPHANS_SHOWN}"
            )
        )
        return VectorInfo(count, size, dims, orphans)

    def close(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None:
            conn.close()
        if getattr(self, "_private", None) is not None:
            self._private.close()  # type: ignore[union-attr]
