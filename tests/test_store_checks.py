"""The long-term memory store in `size` (counted apart from the checkpoints) and in `doctor`."""

from __future__ import annotations

import json
import sqlite3

import pytest
from conftest import SAMPLES
from memory_stores import folder_copy, sqlite_copy

pytestmark = pytest.mark.xdist_group("memory")


def test_size_counts_the_store_and_its_vectors_apart(run, tmp_path):
    db = sqlite_copy(tmp_path)
    r = run("size", "--db", str(db), "--json")
    assert r.code == 0, r.err
    kept = json.loads(r.out)["store"]
    assert (kept["namespaces"], kept["items"], kept["expiring"]) == (10, 17, 4)
    assert kept["vectors"] == {"count": 16, "bytes": 16 * 8 * 4, "dims": [8]}
    with sqlite3.connect(db) as conn:
        assert kept["value_bytes"] == conn.execute("SELECT sum(length(value)) FROM store").fetchone()[0]
    r = run("size", "--db", str(db))
    assert "long-term memory store  17 items in 10 namespaces" in r.out
    assert "vector index: 16 vectors, 512 B, 8 dimensions" in r.out
    r = run("size", "--db", str(folder_copy(tmp_path)), "--json")
    kept = json.loads(r.out)["store"]
    assert kept["items"] == 14
    assert set(kept["files"]) == {"store.pckl", "store.vectors.pckl"}
    r = run("size", "--db", str(SAMPLES / "agent.sqlite"), "--json")  # no store: no section
    assert r.code == 0
    assert "store" not in json.loads(r.out)


def test_doctor_finds_expired_items_never_swept(run, tmp_path):
    """The sample's `scratch` items were written with a 5-minute TTL and no sweeper ran (its
    `last` items, 24 hours, have expired too on any day after the sample was written: the
    count is the rows past their time now, as SqliteStore's sweeper would delete them)."""
    import datetime as dt

    db = sqlite_copy(tmp_path)
    with sqlite3.connect(db) as conn:
        stamps = conn.execute("SELECT prefix, key, expires_at FROM store WHERE expires_at IS NOT NULL").fetchall()
    report = json.loads(run("doctor", "--db", str(db), "--json").out)
    now = dt.datetime.now(dt.UTC)
    past = {f"{p} {k}" for p, k, at in stamps if dt.datetime.fromisoformat(at) < now}
    assert {"users.alice.sessions scratch", "users.bob.sessions scratch"} <= past
    found = {f["kind"]: f for f in report["findings"] if f["check"] == "memory"}
    assert set(found) == {"expired-unswept"}
    assert found["expired-unswept"]["count"] == len(past)
    assert "users.alice.sessions scratch" in found["expired-unswept"]["message"]


def test_doctor_finds_orphan_vectors_mixed_dimensions_and_broken_values(run, tmp_path):
    db = sqlite_copy(tmp_path)
    with sqlite3.connect(db) as conn:  # (deliberately broken rows)
        conn.execute("DELETE FROM store WHERE prefix = 'users.bob.facts'")  # (foreign keys are off: vectors stay)
        conn.execute("UPDATE store_vectors SET embedding = substr(embedding, 1, 16) WHERE key = 'theme' OR key = 'rye'")
        conn.execute("UPDATE store SET value = ? WHERE key = 'brioche'", (b'{"text": "cut',))
    r = run("doctor", "--db", str(db), "--json")
    assert r.code == 1  # (errors, at the default --fail-on error)
    found = {f["kind"]: f for f in json.loads(r.out)["findings"] if f["check"] == "memory"}
    assert set(found) == {"expired-unswept", "vector-orphaned", "vector-dims", "value-undecodable"}
    assert "users.bob.facts fact-0" in found["vector-orphaned"]["message"]
    assert "4, 8 dimensions" in found["vector-dims"]["message"]
    assert found["value-undecodable"]["severity"] == "error"
    assert "app.kb.bakery.recipes brioche" in found["value-undecodable"]["message"]
    r = run("doctor", "--db", str(db))
    assert "indexed item(s) have vectors but no item" in r.out


def test_doctor_without_a_store_checks_no_store(run, dbs):
    report = json.loads(run("doctor", "--db", str(dbs["agent"]), "--json").out)
    assert not [f for f in report["findings"] if f["check"] == "memory"]


def test_size_reads_the_namespaces_one_at_a_time(tmp_path, monkeypatch):
    """`size` of a store of many namespaces (SqliteStore) holds none of them at once: the totals and
    the ten largest equal those of the whole list, which it never asks for."""
    from langgraph.store.base import PutOp
    from langgraph.store.sqlite import SqliteStore

    from statectl.core.memory_checks import memory_size
    from statectl.sources.memory import open_memory
    from statectl.sources.memory.sqlite import SqliteMemory

    db = sqlite_copy(tmp_path)
    with sqlite3.connect(db, check_same_thread=False, isolation_level=None) as conn:
        SqliteStore(conn).batch([PutOp(("many", f"n{n:04d}"), "k", {"text": "x" * (n % 37)}) for n in range(1200)])
    with open_memory(str(db)) as memory:
        infos = memory.namespaces()
    want = sorted(infos, key=lambda i: (-i.bytes, i.namespace))[:10]
    monkeypatch.setattr(SqliteMemory, "namespaces", lambda *a, **k: pytest.fail("read every namespace at once"))
    with open_memory(str(db)) as memory:
        got = memory_size(memory)
    assert (got["namespaces"], got["items"]) == (len(infos), sum(i.items for i in infos))
    assert got["value_bytes"] == sum(i.bytes for i in infos)
    assert got["largest"] == [{"namespace": list(i.namespace), "items": i.items, "bytes": i.bytes} for i in want]


def test_show_looks_for_a_deepagents_thread_files_in_a_bounded_number_of_namespaces(tmp_path, monkeypatch):
    from statectl.core import memory as core_memory
    from statectl.sources.memory import open_memory

    asked: list[int | None] = []
    with open_memory(str(sqlite_copy(tmp_path))) as memory:
        names = type(memory).namespace_names

        def counted(self, begins="", limit=None):
            asked.append(limit)
            return names(self, begins, limit)

        monkeypatch.setattr(type(memory), "namespace_names", counted)
        routes = core_memory.store_routes(memory, ["/memories/preferences.md"], {})
    assert asked == [core_memory.NAMESPACES_CHECKED]
    assert [(r.route, r.namespace) for r in routes] == [("/memories/", ("filesystem",))]


@pytest.fixture(params=["sqlite", "postgres"])
def store_only(request, tmp_path) -> str:
    """A database holding only a long-term memory store (SqliteStore / PostgresStore, as an app
    keeps its memories in a file or database of their own): three items, one value broken by hand."""
    values = [(("users", "alice"), "fact", {"text": "likes rye"}), (("users", "bob"), "fact", {"text": "spelt"})]
    if request.param == "sqlite":
        from langgraph.store.sqlite import SqliteStore

        db = str(tmp_path / "memories.sqlite")
        with sqlite3.connect(db, check_same_thread=False, isolation_level=None) as conn:
            store = SqliteStore(conn)
            store.setup()
            for ns, key, value in values:
                store.put(ns, key, value)
            conn.execute("INSERT INTO store (prefix, key, value) VALUES ('users.bob', 'broken', '{\"cut')")
        return db
    import psycopg
    from langgraph.store.postgres import PostgresStore

    db = request.getfixturevalue("pg_empty")
    with PostgresStore.from_conn_string(db) as store:
        store.setup()
        for ns, key, value in values:
            store.put(ns, key, value)
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("INSERT INTO store (prefix, key, value) VALUES ('users.bob', 'broken', '\"cut\"'::jsonb)")
    return db


def test_a_database_holding_only_a_memory_store(run, store_only):
    """The checkpoint commands say in one line what the database holds and what reads it; `size`
    and `doctor` check the store alone; `store` reads it."""
    r = run("threads", "--db", store_only)
    assert r.code == 2
    assert r.err.count("\n") == 1
    assert "holds a LangGraph long-term memory store and no checkpoints" in r.err
    assert "statectl store" in r.err
    assert "Traceback" not in r.err
    kept = json.loads(run("size", "--db", store_only, "--json").out)["store"]
    assert (kept["namespaces"], kept["items"]) == (2, 3)
    assert "long-term memory store  3 items in 2 namespaces" in run("size", "--db", store_only).out
    r = run("doctor", "--db", store_only, "--json")
    report = json.loads(r.out)
    assert report["threads"] == 0
    assert report["not_checked"] == ["checkpoints: the database holds none, only a long-term memory store"]
    if store_only.endswith(".sqlite"):  # (Postgres' JSONB holds only JSON: nothing fails to decode)
        assert [f["kind"] for f in report["findings"]] == ["value-undecodable"]
        assert r.code == 1
    assert run("store", "--db", store_only).code == 0
