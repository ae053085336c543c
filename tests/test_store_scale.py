"""The memory store at scale (issue 56): `grep --filter` narrowed in SQL yet equal to the
predicate (every operator, every JSON type, on stores SqliteStore and PostgresStore wrote), a
whole namespace typed without reading every namespace, the tree bounded, deep values searched.
Counting tests where a cut is about work done; never a wall-clock assertion."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from statectl.core.memory import grep, matches_filter, resolve_namespace
from statectl.sources.memory import MemorySource, open_memory

pytestmark = pytest.mark.xdist_group("memory")

VALUES: list[dict[str, Any]] = [
    {"kind": "a", "n": 1},
    {"kind": "A", "n": 1.0},
    {"kind": "a", "n": True},
    {"kind": None, "n": False},
    {"kind": ["a"], "n": "5"},
    {"kind": {"x": 1}, "n": 5},
    {"kind": "é\u2028", "n": 0.1 + 0.2},
    {"kind": 'k"q\\', "n": 12345678901234567890},
    {"kind": "1", "n": -3.5},
    {"n": "abc", "flag": True},
    {"n": None, "flag": 1},
    {"n": " 7 "},
    {"n": "1e5"},
    {"n": [1, 2], "a.b": 1},
    {"n": {"$gt": 1}, "x-y": "z"},
    {"other": 1},
]
"""Values of every JSON type under the filtered keys, and values without them."""
FILTERS: list[dict[str, Any]] = [
    {"kind": "a"},
    {"kind": "é\u2028"},
    {"kind": 'k"q\\'},
    {"kind": "1"},
    {"kind": None},
    {"kind": ["a"]},
    {"kind": {"x": 1}},
    {"n": 1},
    {"n": True},
    {"n": False},
    {"n": 1.0},
    {"n": 0.1 + 0.2},
    {"n": 12345678901234567890},
    {"n": None},
    {"n": "5"},
    {"n": [1, 2]},
    {"n": {"$gt": 0}},
    {"n": {"$gte": 1, "$lt": 6}},
    {"n": {"$lte": 0.30000000000000004}},
    {"n": {"$gt": "4"}},
    {"n": {"$lt": 100000.0}},
    {"n": {"$ne": 1}},
    {"n": {"$ne": None}},
    {"n": {"$eq": "abc"}},
    {"n": {"$eq": [1, 2]}},
    {"kind": {"$ne": "a"}, "n": {"$gt": -4}},
    {"flag": True},
    {"flag": 1},
    {"missing": None},
    {"missing": {"$ne": 1}},
    {"a.b": 1},
    {"x-y": "z"},
]


def _write(store: Any) -> None:
    from langgraph.store.base import PutOp

    store.batch(
        [PutOp(("t", f"ns{i % 3}"), f"k{i:02d}", value, index=False) for i, value in enumerate(VALUES)]
        + [PutOp(("t", "ns0", "deeper"), f"d{i:02d}", value, index=False) for i, value in enumerate(VALUES)]
        + [PutOp(("t", "ns0-x"), "beside", {"other": 2}, index=False)]  # (after `t.ns0`, not under it)
    )


@pytest.fixture(params=["sqlite", "postgres"])
def shapes(request, tmp_path) -> Iterator[MemorySource]:
    """A store of VALUES written by SqliteStore or PostgresStore, opened by statectl."""
    if request.param == "sqlite":
        from langgraph.store.sqlite import SqliteStore

        path = tmp_path / "shapes.sqlite"
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        store = SqliteStore(conn)
        store.setup()
        _write(store)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        db = str(path)
    else:
        from langgraph.store.postgres import PostgresStore
        from psycopg import Connection
        from psycopg.rows import dict_row

        db = request.getfixturevalue("pg_empty")
        with Connection.connect(db, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
            store = PostgresStore(conn)  # type: ignore[arg-type]
            store.setup()
            _write(store)
    with open_memory(db) as memory:
        yield memory


def _unnarrowed(memory: MemorySource, filters: dict[str, Any], prefix: tuple = ()) -> list[tuple]:
    """What the predicate keeps of every item, read without narrowing."""
    return sorted(
        (i.namespace, i.key)
        for i in memory.scan(prefix)
        if i.error is None and matches_filter(i.value, filters, memory.sql_filters)
    )


@pytest.mark.parametrize("filters", FILTERS, ids=[repr(f) for f in FILTERS])
def test_grep_filter_narrowed_in_sql_keeps_every_match_of_the_predicate(shapes, filters):
    """The SQL narrowing never drops an item the predicate keeps (it only spares decoding)."""
    got = sorted((i.namespace, i.key) for i in grep(shapes, None, filters))
    assert got == _unnarrowed(shapes, filters)
    under = sorted((i.namespace, i.key) for i in grep(shapes, None, filters, ("t", "ns0")))
    assert under == _unnarrowed(shapes, filters, ("t", "ns0"))


def test_the_filters_cover_a_match_and_a_miss_for_every_kind(shapes):
    """(The cases above are not vacuous: most filters match some items and miss others.)"""
    counts = [len(_unnarrowed(shapes, f)) for f in FILTERS]
    assert sum(1 for c in counts if 0 < c < 2 * len(VALUES)) >= len(FILTERS) - 4


@pytest.mark.parametrize("filters", [{"kind": "a"}, {"n": {"$gt": 4}}, {"flag": True}, {"flag": {"$ne": None}}])
def test_grep_filter_decodes_only_the_candidates_sql_keeps(shapes, filters, monkeypatch):
    """Counting, not timing: the values decoded in Python are the SQL's candidates, not the store."""
    import statectl.sources.memory.postgres as pg_module
    import statectl.sources.memory.sqlite as sqlite_module

    module = sqlite_module if shapes.kind == "sqlite" else pg_module
    decoded: list[int] = []
    real = module.decode_json

    def counted(raw: Any) -> Any:
        decoded.append(1)
        return real(raw)

    monkeypatch.setattr(module, "decode_json", counted)
    found = grep(shapes, None, filters)
    assert found
    assert len(decoded) < len(VALUES)  # (the store holds 2 * len(VALUES) + 1 items)
    assert len(decoded) <= 2 * len(found)


def test_a_value_that_is_not_json_does_not_stop_a_narrowed_grep(tmp_path, run):
    """A hostile row (hand-written): SQLite's JSON functions fail on it; grep checks each value
    first from there on, and the row is skipped as the predicate skips it."""
    from langgraph.store.sqlite import SqliteStore

    path = tmp_path / "broken.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn)
    store.setup()
    _write(store)
    conn.execute("INSERT INTO store (prefix, key, value) VALUES ('t.ns1', 'broken', '{\"kind\": \"a\", ')")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with open_memory(str(path)) as memory:
        for filters in FILTERS:
            assert sorted((i.namespace, i.key) for i in grep(memory, None, filters)) == _unnarrowed(memory, filters)
    result = run("store", "grep", "--filter", "kind=a", "--json", "--db", str(path))
    assert result.code == 0, result.err
    assert "broken" not in result.out


def _statements(memory: Any) -> list[str]:
    seen: list[str] = []
    memory.conn.set_trace_callback(seen.append)
    return seen


def _every_name(statements: list[str]) -> list[str]:
    """The statements that read every namespace's name (a DISTINCT without a small LIMIT)."""
    return [s for s in statements if "DISTINCT" in s and not s.rstrip().endswith(("LIMIT 1", "LIMIT 2"))]


def test_a_whole_namespace_is_resolved_without_reading_every_namespace(shapes):
    """Typing a namespace whole reads an item of it and a name under it (index seeks), never the
    list of every namespace; a beginning reads only the names it begins."""
    if shapes.kind != "sqlite":
        return
    seen = _statements(shapes)
    resolved = resolve_namespace(shapes, "t.ns1")
    assert resolved.namespace == ("t", "ns1")
    assert resolved.children == []
    assert not _every_name(seen)
    seen.clear()
    resolved = resolve_namespace(shapes, "t.ns0")
    assert (resolved.namespace, [c.namespace for c in resolved.children]) == (("t", "ns0"), [("t", "ns0", "deeper")])
    assert not _every_name(seen)
    seen.clear()
    resolved = resolve_namespace(shapes, "t")
    assert resolved.namespace is None
    children = [("t", "ns0"), ("t", "ns0-x"), ("t", "ns0", "deeper"), ("t", "ns1"), ("t", "ns2")]
    assert [c.namespace for c in resolved.children] == children
    assert not _every_name(seen)


def _deep_store(tmp_path: Path) -> Path:
    """VALUES written by SqliteStore, and a hostile hand-written row: text 300 levels down (deeper
    than orjson writes, which SqliteStore's put would refuse)."""
    from langgraph.store.sqlite import SqliteStore

    path = tmp_path / "deep.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn)
    store.setup()
    _write(store)
    deep = '{"a": [' * 300 + '"the Needle"' + "]}" * 300
    conn.execute("INSERT INTO store (prefix, key, value) VALUES ('t.deep', 'bottom', ?)", (deep,))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


def test_grep_text_searches_a_value_at_any_depth(run, tmp_path):
    db = str(_deep_store(tmp_path))
    result = run("store", "grep", "needle", "--db", db)
    assert result.code == 0, result.err
    assert "t.deep" in result.out
    assert "bottom" in result.out
    assert "too large" not in result.out
    for extra in ([], ["--limit", "5"]):
        result = run("store", "grep", "NEEDLE", "--json", *extra, "--db", db)
        assert result.code == 0, result.err
        assert [(i["namespace"], i["key"]) for i in json.loads(result.out)] == [(["t", "deep"], "bottom")]
        assert result.err == ""


def test_grep_text_says_in_one_line_how_many_values_were_too_large_to_search_whole(run, tmp_path, monkeypatch):
    import statectl.core.memory as core

    db = str(_deep_store(tmp_path))
    monkeypatch.setattr(core, "SEARCH_NODES", 100)  # (the deep value has 601 nodes; the others < 10)
    result = run("store", "grep", "needle", "--db", db)
    assert result.code == 0, result.err
    assert "no item" in result.out or "0 items" in result.out
    assert result.out.count("too large to search whole") == 1
    assert "1 value too large to search whole for TEXT (more than 100 nodes)" in result.out
    result = run("store", "grep", "needle", "--json", "--db", db)
    assert (result.code, json.loads(result.out)) == (0, [])
    assert result.err.count("\n") == 1
    assert result.err.startswith("statectl: note: 1 value too large")
    result = run("store", "grep", "needle", "-n", "t.ns1", "--json", "--db", db)  # (no value too large there)
    assert result.err == ""


SPACES = 1_234
"""Namespaces of the wide store: more than a scan batch (500) and than the tree holds (500)."""


@pytest.fixture(scope="module")
def wide(tmp_path_factory) -> Path:
    """SPACES namespaces written by SqliteStore (one item each, a few with two), 3 levels deep."""
    from langgraph.store.base import PutOp
    from langgraph.store.sqlite import SqliteStore

    path = tmp_path_factory.mktemp("wide") / "wide.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn)
    store.setup()
    ops = [PutOp(("org", f"team{i % 7}", f"user{i:05d}"), "profile", {"n": i}, index=False) for i in range(SPACES)]
    ops += [PutOp(("org", "team0", f"user{i:05d}"), "extra", {"n": i}, index=False) for i in range(0, SPACES, 7)]
    store.batch(ops)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


def test_store_json_streams_every_namespace_equal_to_list_namespaces(run, wide):
    from langgraph.store.sqlite import SqliteStore

    result = run("store", "--json", "--db", str(wide))
    assert result.code == 0, result.err
    got = json.loads(result.out)
    with sqlite3.connect(f"file:{wide}?mode=ro", uri=True, check_same_thread=False) as conn:
        want = SqliteStore(conn).list_namespaces(limit=10_000)
    assert [tuple(i["namespace"]) for i in got] == sorted(want, key=".".join)
    assert sum(i["items"] for i in got) == SPACES + len(range(0, SPACES, 7))
    with open_memory(str(wide)) as memory:
        seen = _statements(memory)
        assert list(memory.each_namespace()) == memory.namespaces()
        batches = [s for s in seen if "GROUP BY prefix" in s and "LIMIT" in s]
        assert len(batches) == 3  # (500 namespaces a query)


def test_the_tree_holds_a_bounded_number_of_labels_and_counts_the_rest(run, wide):
    result = run("store", "--db", str(wide))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    total = SPACES + len(range(0, SPACES, 7))
    assert lines[0] == f"{total:,} items in {SPACES:,} namespaces in {wide}"
    more = [line for line in lines if "more namespace" in line]
    assert more
    assert all("(statectl store ls org" in line for line in more)
    hidden = sum(int(line.split("…")[1].split()[0].replace(",", "")) for line in more)
    shown = [line for line in lines[2:] if ".user" in line]
    assert len(shown) + hidden == SPACES
    assert len(lines) < 520  # (TREE_NODES labels, not a row a namespace)


def test_tree_holds_at_most_tree_nodes_labels_however_many_namespaces():
    """Counting: the tree of 200,000 namespaces holds TREE_NODES labels, its totals still whole."""
    from statectl.core.memory import TREE_NODES, Node, tree
    from statectl.sources.memory.base import NamespaceInfo

    def infos() -> Iterator[NamespaceInfo]:
        for i in range(200_000):
            yield NamespaceInfo(("a", f"b{i % 1000:04d}", f"c{i:06d}", "d"), 2, 10, "2026-01-01", i % 2)

    root = tree(infos())

    def held(node: Node) -> int:
        return 1 + sum(held(c) for c in node.children.values())

    def hidden(node: Node) -> int:
        return node.hidden + sum(hidden(c) for c in node.children.values())

    assert held(root) <= TREE_NODES
    assert (root.items, root.namespaces, root.expiring) == (400_000, 200_000, 100_000)
    assert hidden(root) + sum(1 for _ in _owned(root)) == 200_000


def _owned(node: Any) -> Iterator[Any]:
    if node.own is not None:
        yield node
    for child in node.children.values():
        yield from _owned(child)


def test_ls_of_a_prefix_holds_the_first_namespaces_under_it_and_counts_the_rest(run, wide):
    from langgraph.store.sqlite import SqliteStore

    from statectl.core.memory import CHILDREN_SHOWN

    result = run("store", "ls", "org", "--json", "--db", str(wide))
    assert result.code == 0, result.err
    got = json.loads(result.out)
    with sqlite3.connect(f"file:{wide}?mode=ro", uri=True, check_same_thread=False) as conn:
        want = sorted(SqliteStore(conn).list_namespaces(prefix=("org",), limit=10_000), key=".".join)
    assert [tuple(i["namespace"]) for i in got["namespaces_under"]] == want[:CHILDREN_SHOWN]
    assert got["namespaces_more"] == SPACES - CHILDREN_SHOWN
    result = run("store", "ls", "org", "--db", str(wide))
    assert result.code == 0, result.err
    assert result.out.splitlines()[0] == f"{SPACES:,} namespaces under org"
    assert f"… {SPACES - CHILDREN_SHOWN:,} more (statectl store --json lists every one)" in result.out
    assert len(result.out.splitlines()) == CHILDREN_SHOWN + 3


def test_each_namespace_equals_namespaces_on_every_prefix(shapes):
    """The streamed reading (itself, then the range under it, a batch at a time) equals the one
    query, on SQLite and Postgres, and never reaches past the prefix (`t.ns0-x` is not under
    `t.ns0`)."""
    for prefix in [(), ("t",), ("t", "ns0"), ("t", "ns0", "deeper"), ("t", "ns"), ("nothing",)]:
        assert list(shapes.each_namespace(prefix)) == shapes.namespaces(prefix), prefix
    assert [i.namespace for i in shapes.each_namespace(("t", "ns0"))] == [("t", "ns0"), ("t", "ns0", "deeper")]
