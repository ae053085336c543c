"""`statectl size`: where a checkpoint store's bytes go, on SQLite, Postgres and exports, held to
what the rows themselves measure (SQL lengths, and the msgpack of each checkpoint re-packed)."""

from __future__ import annotations

import json
import sqlite3

import ormsgpack
from conftest import digest


def _sql(db, query, *args):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute(query, args).fetchall()


def test_a_sqlite_file_by_part_and_thread(run, dbs):
    db = dbs["agent"]
    before = digest(db)
    r = run("size", "--json", "--db", str(db))
    assert r.code == 0, r.err
    data = json.loads(r.out)
    parts = {p["name"]: p["bytes"] for p in data["parts"]}
    assert parts["checkpoints"] > parts["writes"] > 0
    assert "free pages" in parts
    assert data["total"] == db.stat().st_size
    assert data["threads"] == 4
    rows = {
        t: (n, b)
        for t, n, b in _sql(
            db,
            "SELECT thread_id, COUNT(*), SUM(length(checkpoint) + length(metadata)) "
            "FROM checkpoints GROUP BY thread_id",
        )
    }
    writes = dict(_sql(db, "SELECT thread_id, SUM(length(value)) FROM writes GROUP BY thread_id"))
    largest = data["largest"]
    assert [t["bytes"] for t in largest] == sorted((t["bytes"] for t in largest), reverse=True)
    for t in largest:
        n, b = rows[t["thread_id"]]
        assert t["checkpoints"] == n
        assert t["bytes"] == b + writes.get(t["thread_id"], 0)
    first, last = [
        x
        for (x,) in _sql(
            db,
            "SELECT length(checkpoint) FROM checkpoints WHERE thread_id = 'bakery-plan' "
            "AND checkpoint_ns = '' ORDER BY checkpoint_id",
        )
    ][::35]
    bakery = next(t for t in largest if t["thread_id"] == "bakery-plan")
    assert (bakery["first"], bakery["last"]) == (first, last)
    assert first < last
    human = run("size", "--db", str(db)).out
    assert "free pages (what VACUUM gives back)" in human
    assert "bakery-plan" in human
    assert "█" in human
    assert len(json.loads(run("size", "--json", "--limit", "2", "--db", str(db)).out)["largest"]) == 2
    assert digest(db) == before  # read-only, nothing beside the file


def test_a_threads_channels_are_the_bytes_langgraph_stored(run, dbs, tmp_path):
    """Each channel's bytes are the length of its value's msgpack as stored (re-packed from the
    parsed checkpoint to check), summed over the history; the rest is bookkeeping; the same from
    an export of the file."""
    db = dbs["agent"]
    want: dict[str, int] = {}
    total = 0
    blobs = [
        b
        for (b,) in _sql(
            db,
            "SELECT checkpoint FROM checkpoints WHERE thread_id = 'bakery-plan' AND "
            "checkpoint_ns = '' ORDER BY checkpoint_id",
        )
    ]
    for blob in blobs:
        total += len(blob)
        values = ormsgpack.unpackb(blob, ext_hook=lambda code, data: ormsgpack.Ext(code, data))["channel_values"]
        for k, v in values.items():
            want[k] = want.get(k, 0) + len(ormsgpack.packb(v))
    got = json.loads(run("size", "bakery-plan", "--json", "--db", str(db)).out)
    assert {c["channel"]: c["history"] for c in got["channels"] if c["history"]} == want
    assert got["channels"][0]["channel"] == "messages"
    assert got["checkpoints"] == len(blobs)
    assert sum(want.values()) + got["bookkeeping"] == total
    assert [s["bytes"] for s in got["steps"]] == [len(b) for b in blobs]
    exported = tmp_path / "all.json"
    assert run("export", "--all", "-o", str(exported), "--db", str(db)).code == 0
    assert json.loads(run("size", "bakery-plan", "--json", "--db", str(exported)).out) == got
    human = run("size", "bakery", "--db", str(db)).out  # (a unique prefix)
    assert human.startswith("thread bakery-plan")
    assert "checkpoint size per step" in human
    assert "(LangGraph's own:" in human
    assert "(versions, versions seen, ids)" in human


def test_postgres_sizes(run, pg_samples):
    from test_postgres import PG_THREADS, _digest

    before = _digest(pg_samples)
    data = json.loads(run("size", "--json", "--limit", "0", "--db", pg_samples).out)
    parts = {p["name"] for p in data["parts"]}
    assert {"checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoints indexes"} <= parts
    assert data["threads"] == len(data["largest"]) == PG_THREADS
    assert [t["bytes"] for t in data["largest"]] == sorted((t["bytes"] for t in data["largest"]), reverse=True)
    assert data["total"] == sum(p["bytes"] for p in data["parts"] if p["name"] != "dead rows")
    got = json.loads(run("size", "bakery-plan", "--json", "--db", pg_samples).out)
    import psycopg

    with psycopg.connect(pg_samples) as conn:
        versions = conn.execute(
            "SELECT COUNT(*) FROM checkpoint_blobs WHERE thread_id = 'bakery-plan' AND "
            "checkpoint_ns = '' AND channel = 'messages'"
        ).fetchone()[0]
        steps = conn.execute(
            "SELECT COUNT(*) FROM checkpoints WHERE thread_id = 'bakery-plan' AND checkpoint_ns = ''"
        ).fetchone()[0]
    messages = next(c for c in got["channels"] if c["channel"] == "messages")
    assert messages["stored"] == versions
    assert 0 < messages["latest"] <= messages["history"]
    assert len(got["steps"]) == got["checkpoints"] == steps
    assert run("size", "--db", pg_samples).code == 0
    assert _digest(pg_samples) == before


def test_postgres_says_what_vacuum_gives_back(run, pg_scratch):
    """Rows deleted (as a prune's SQL does) stay in the tables until VACUUM: `size` estimates
    their bytes from Postgres' statistics (each table's size times its share of dead rows)."""
    import time

    import psycopg

    with psycopg.connect(pg_scratch, autocommit=True) as conn:
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
        conn.execute("DELETE FROM checkpoints WHERE thread_id = 'bakery-plan'")
        conn.execute("DELETE FROM checkpoint_blobs WHERE thread_id = 'bakery-plan'")
        conn.execute("SELECT pg_stat_force_next_flush()")
        for _ in range(100):  # (statistics arrive a moment after the transaction)
            dead = conn.execute(
                "SELECT SUM(n_dead_tup) FROM pg_stat_user_tables WHERE relname IN ('checkpoints', 'checkpoint_blobs')"
            ).fetchone()[0]
            if dead:
                break
            time.sleep(0.1)
        want = sum(
            int(size * d / (live + d))
            for live, d, size in conn.execute(
                "SELECT n_live_tup, n_dead_tup, pg_table_size(relid) FROM pg_stat_user_tables WHERE relname IN "
                "('checkpoints', 'checkpoint_blobs', 'checkpoint_writes')"
            ).fetchall()
            if live + d
        )
    assert dead
    assert want > 0
    data = json.loads(run("size", "--json", "--db", pg_scratch).out)
    part = next(p for p in data["parts"] if p["name"] == "dead rows")
    assert part["bytes"] == want
    assert any(f"dead rows: {dead:,}" in n for n in data["notes"])
    human = run("size", "--db", pg_scratch).out
    assert "dead rows" in human
    assert "VACUUM" in human


def test_a_langgraph_dev_folder(run):
    """The folder's files, its threads by the bytes the server stored (checkpoints, channel blobs,
    pending writes), and a thread's channels by blob version."""
    from parity import SAMPLES

    folder = SAMPLES / ".langgraph_api"
    data = json.loads(run("size", "--json", "--limit", "0", "--db", str(SAMPLES)).out)
    assert {p["name"] for p in data["parts"]} >= {".langgraph_checkpoint.1.pckl", ".langgraph_ops.pckl"}
    assert data["total"] == sum((folder / p["name"]).stat().st_size for p in data["parts"])
    ids = {t["thread_id"] for t in json.loads(run("threads", "--json", "--db", str(SAMPLES)).out)}
    assert {t["thread_id"] for t in data["largest"]} == ids
    assert data["threads"] == len(ids)
    biggest = data["largest"][0]
    got = json.loads(run("size", biggest["thread_id"], "--json", "--db", str(SAMPLES)).out)
    assert got["channels"]
    assert all(c["stored"] >= 1 for c in got["channels"] if c["history"])
    assert len(got["steps"]) == got["checkpoints"] > 1


def test_size_errors_are_one_line(run):
    from parity import SAMPLES

    r = run("size", "nope", "--db", str(SAMPLES / "agent.sqlite"))
    assert r.code == 3
    assert len(r.err.splitlines()) == 1
    assert r.err.startswith("statectl: ")
