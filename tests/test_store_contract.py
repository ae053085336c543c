"""Every memory source against every duty `statectl/sources/memory/base.py` declares, each held
to what LangGraph's own reader of the same data returns (`list_namespaces`, `search`, `get`)."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "sample_threads"))
from memory_stores import (
    SdkOracle,
    folder_copy,
    folder_oracle,
    postgres_oracle,
    sqlite_copy,
    sqlite_oracle,
)

from statectl.core.memory import grep
from statectl.sources.memory import MemorySource, open_memory
from statectl.sources.memory.base import iso

pytestmark = pytest.mark.xdist_group("memory")  # (one worker: one memory server, one Postgres store)

KINDS = ["sqlite", "postgres", "folder", "server", "export-sqlite", "export-postgres", "export-folder"]
"""`export-X`: the export file `statectl export --store` wrote from X, read back, held to LangGraph
reading X."""
FILTERS = [
    {"kind": "recipe"},
    {"score": {"$gt": 4}},
    {"kind": "fact", "score": 0},
    {"plan": "team"},
    {"score": {"$gte": 1, "$lt": 3}},
    {"kind": {"$ne": "fact"}},
    {"contrast": "high"},
]


@pytest.fixture(params=KINDS)
def pair(request, tmp_path) -> Iterator[tuple[MemorySource, Any, str]]:
    """(statectl's reader, LangGraph's reader, what --db names) of one source kind."""
    kind = request.param
    exported = kind.startswith("export-")
    kind = kind.removeprefix("export-")
    with ExitStack() as stack:
        if kind == "sqlite":
            db = str(sqlite_copy(tmp_path))
            oracle = stack.enter_context(sqlite_oracle(tmp_path / "memory.sqlite"))
        elif kind == "postgres":
            db = request.getfixturevalue("pg_memory")
            oracle = stack.enter_context(postgres_oracle(db))
        elif kind == "folder":
            db = str(folder_copy(tmp_path))
            oracle = stack.enter_context(folder_oracle(tmp_path / "memory_api"))
        else:
            db = request.getfixturevalue("memory_server").url
            oracle = SdkOracle(db)
        if exported:
            db = _export(db, tmp_path / "export.json")
        memory = stack.enter_context(open_memory(db))
        yield memory, oracle, db


def _export(db: str, out: Path) -> str:
    """`statectl export --store --all` of `db` into `out` (the real command, in a subprocess)."""
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = subprocess.run(
        [sys.executable, "-m", "statectl", "export", "--store", "--all", "--db", db, "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return str(out)


def _when(value: Any) -> str | None:
    return iso(value if not isinstance(value, str) else dt.datetime.fromisoformat(value.replace("Z", "+00:00")))


def _all(oracle: Any, prefix: tuple = (), **kw: Any) -> list[Any]:
    return sorted(oracle.search(prefix, limit=10_000, **kw), key=lambda i: (i.namespace, i.key))


def test_namespaces_equal_list_namespaces(pair):
    memory, oracle, _ = pair
    infos = memory.namespaces()
    assert sorted(i.namespace for i in infos) == sorted(oracle.list_namespaces(limit=1000))
    items = _all(oracle)
    for info in infos:
        mine = [i for i in items if i.namespace == info.namespace]
        assert info.items == len(mine), info
        assert info.newest == max(_when(i.updated_at) for i in mine)
        assert info.bytes > 0
    assert len(infos) >= 8
    assert max(len(i.namespace) for i in infos) == 4


def test_items_equal_search_and_page_by_key(pair):
    memory, oracle, _ = pair
    for info in memory.namespaces():
        want = [i for i in _all(oracle, info.namespace) if i.namespace == info.namespace]
        got = memory.items(info.namespace)
        assert [i.key for i in got] == sorted(i.key for i in want)
        by_key = {i.key: i for i in want}
        for item in got:
            assert item.value is None
            assert item.preview
            assert item.created_at == _when(by_key[item.key].created_at)
            assert item.updated_at == _when(by_key[item.key].updated_at)
        pages, after = [], None
        while page := memory.items(info.namespace, 1, after):
            pages.append(page)
            after = page[-1].key
        assert [p[0].key for p in pages] == [i.key for i in got]


def test_item_equals_get(pair):
    memory, oracle, _ = pair
    for want in _all(oracle):
        got = memory.item(want.namespace, want.key)
        assert got is not None
        assert got.error is None
        assert got.value == want.value
        assert (got.created_at, got.updated_at) == (_when(want.created_at), _when(want.updated_at))
        assert oracle.get(want.namespace, want.key).value == got.value
    assert memory.item(("settings",), "no-such-key") is None
    assert memory.item(("no", "such"), "theme") is None


def test_scan_equals_search_under_a_prefix(pair):
    memory, oracle, _ = pair
    for prefix in [(), ("users",), ("users", "alice"), ("app", "kb"), ("use",), ("settings",)]:
        want = [(i.namespace, i.key, i.value) for i in _all(oracle, prefix)]
        got = [(i.namespace, i.key, i.value) for i in memory.scan(prefix)]
        assert sorted(got) == sorted(want), prefix


def _langgraphs(exc: Exception) -> None:
    """`exc` is LangGraph's answer (its store raising on the filter), not the network failing
    (a transport error, already asked twice by the oracle): that one is raised."""
    import httpx

    if isinstance(exc, httpx.TransportError):
        raise exc


@pytest.mark.parametrize("filters", FILTERS, ids=[str(f) for f in FILTERS])
def test_grep_filter_equals_search_filter(pair, filters):
    memory, oracle, _ = pair
    got = sorted((i.namespace, i.key) for i in grep(memory, None, filters))
    try:
        want = sorted((i.namespace, i.key) for i in _all(oracle, filter=filters))
    except Exception as exc:  # InMemoryStore raises on `$gt` over an item without the key (float(None))
        _langgraphs(exc)
        assert not memory.sql_filters  # (folder, server, and their exports)
        want = []
        for info in memory.namespaces():  # where LangGraph answers: namespaces whose items all have it
            try:
                want += [
                    (i.namespace, i.key)
                    for i in _all(oracle, info.namespace, filter=filters)
                    if i.namespace == info.namespace
                ]
            except Exception as exc:
                _langgraphs(exc)
                assert not [g for g in got if g[0] == info.namespace]  # (statectl: no match, no failure)
        want.sort()
    assert got == want
    assert want


def test_ttl_and_vectors_as_the_store_keeps_them(pair):
    memory, _, _ = pair
    sessions = memory.items(("users", "alice", "sessions"))
    if memory.has_ttl:  # SqliteStore, PostgresStore: expires_at = updated + ttl
        ttl = {i.key: i.ttl_minutes for i in sessions}
        assert ttl == {"last": 1440, "scratch": 5}
        assert all(i.expires_at and i.expires_at > (i.updated_at or "") for i in sessions)
        assert memory.namespaces()[-1].expiring == 2  # users.bob.sessions
    else:
        assert all(i.expires_at is None for i in sessions)
    info = memory.vectors()
    if memory.kind == "export" and memory.origin == "sqlite":  # (the indexed fields, not the index)
        assert memory.item(("settings",), "theme").vectors == ()
        assert memory.item(("settings",), "banner").vectors == (("$", 8),)
    if memory.kind == "sqlite":
        assert memory.has_vectors
        assert info is not None
        assert info.dims == (8,)
        assert info.orphans == ()
        assert info.count == 16  # every item but the one put with index=False
        assert memory.item(("settings",), "theme").vectors == ()
        assert memory.item(("settings",), "banner").vectors == (("$", 8),)
    elif memory.kind in ("postgres", "server"):
        assert info is None


def test_reading_leaves_files_byte_identical(pair):
    memory, _, db = pair
    from conftest import digest

    if memory.kind not in ("sqlite", "folder", "export"):
        return
    path = Path(db) / ".langgraph_api" / "store.pckl" if memory.kind == "folder" else Path(db)

    before = (
        digest(path) if memory.kind in ("sqlite", "export") else {p.name: p.read_bytes() for p in path.parent.iterdir()}
    )
    list(memory.scan())
    memory.namespaces()
    memory.item(("settings",), "banner")
    memory.vectors()
    after = (
        digest(path) if memory.kind in ("sqlite", "export") else {p.name: p.read_bytes() for p in path.parent.iterdir()}
    )
    assert after == before


def test_optional_duties_agree_with_the_required_ones(pair):
    """namespace_names, namespaces(prefix), keys, search(limit), table_bytes: each implementation's
    own body or the contract's default, equal to what the required duties give."""
    memory, _, _ = pair
    infos = memory.namespaces()
    assert memory.namespace_names() == [i.namespace for i in infos]
    assert memory.namespaces(("users",)) == [i for i in infos if i.namespace[0] == "users"]
    assert memory.namespaces(("use",)) == []
    assert memory.keys(("users", "alice", "facts"), "fact-") == ["fact-0", "fact-1", "fact-2"]
    assert memory.keys(("users", "alice", "facts"), "fact-1") == ["fact-1"]
    assert memory.keys(("users", "alice", "facts"), "", limit=2) == ["fact-0", "fact-1"]
    everything = memory.search(lambda i: True)
    assert [(i.namespace, i.key) for i in everything] == sorted((i.namespace, i.key) for i in memory.scan())
    assert len(memory.search(lambda i: True, limit=3)) == 3
    assert all(i.namespace[0] == "users" for i in memory.search(lambda i: True, ("users",)))
    sizes = memory.table_bytes()
    assert set(sizes) == ({"store.pckl", "store.vectors.pckl"} if memory.kind == "folder" else set())
