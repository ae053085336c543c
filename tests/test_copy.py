"""`statectl copy`: LangGraph's own savers read the copy as they read the source.

For every sample database and every store kind statectl writes (SQLite, Postgres), the history
LangGraph's `get_state_history` gives of every thread and namespace of the copy equals the
source's; a copied waiting interrupt resumes to the same state; the source is never changed;
refusals write nothing."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from contextlib import contextmanager
from typing import Any

import pytest
from conftest import digest
from parity import GRAPHS, SAMPLES

import statectl

sys.path.insert(0, str(SAMPLES))

from record import snapshot_record


def _graphs(db: str) -> dict[str, Any]:
    """thread id -> its compiled sample graph (without a checkpointer)."""
    from statectl.project import target

    out = {}
    for spec, (name, threads) in GRAPHS.items():
        if name == db:
            graph = target.compiled(target.load(str(SAMPLES / spec)))
            out.update(dict.fromkeys(threads, graph))
    return out


@contextmanager
def saver_of(store: str):
    """LangGraph's own saver for a SQLite path or a Postgres URL."""
    if store.startswith("postgresql:"):
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(store) as saver:
            yield saver
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(store, check_same_thread=False)
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()


def _pairs(saver: Any) -> list[tuple[str, str]]:
    rows = saver.conn.execute("SELECT DISTINCT thread_id, checkpoint_ns FROM checkpoints").fetchall()
    return sorted(tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in rows)


def history(store: str, graphs: dict[str, Any], rename: dict[str, str] | None = None) -> dict:
    """LangGraph's `get_state_history` of every (thread, namespace) of `store` whose graph is known."""
    out = {}
    with saver_of(store) as saver:
        for thread_id, ns in _pairs(saver):
            source_id = {v: k for k, v in (rename or {}).items()}.get(thread_id, thread_id)
            if source_id not in graphs:
                continue
            graph = graphs[source_id].copy(update={"checkpointer": saver})
            config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
            records = [snapshot_record(s) for s in graph.get_state_history(config)]
            for r in records:
                r["thread_id"] = source_id
            out[(source_id, ns)] = records
    return out


SQLITE_DBS = ("agent", "deep", "orchestrator", "custom", "interrupts", "flow")


@pytest.mark.parametrize("db", SQLITE_DBS)
def test_sqlite_to_sqlite_is_langgraphs_history(run, tmp_path, db):
    src = tmp_path / f"{db}.sqlite"
    shutil.copy(SAMPLES / f"{db}.sqlite", src)
    before = digest(src)
    dest = tmp_path / "copy.sqlite"
    r = run("copy", "--all", "--db", str(src), "--to", str(dest))
    assert r.code == 0, r.err
    assert "copied" in r.err
    assert digest(src) == before  # the source is only read
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([src.name, dest.name])
    graphs = _graphs(db)
    want = history(str(src), graphs)  # (SqliteSaver itself turns the file to WAL: after the check)
    assert want  # (every sample database has threads with a known graph)
    assert history(str(dest), graphs) == want
    # byte for byte: the rows LangGraph's SqliteSaver wrote are the source's
    query = "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint FROM checkpoints"
    with sqlite3.connect(src) as a, sqlite3.connect(dest) as b:
        assert sorted(b.execute(query).fetchall()) == sorted(a.execute(query).fetchall())
        wq = "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value FROM writes"
        assert sorted(b.execute(wq).fetchall()) == sorted(a.execute(wq).fetchall())


@pytest.mark.parametrize("db", SQLITE_DBS)
def test_sqlite_to_postgres_and_back(run, tmp_path, pg_empty, db):
    """Across layouts (one blob per checkpoint against JSONB and a blob per channel version):
    LangGraph's PostgresSaver reads the copy as SqliteSaver reads the source, and a copy back
    to SQLite again."""
    src = str(tmp_path / f"{db}.sqlite")
    shutil.copy(SAMPLES / f"{db}.sqlite", src)
    r = run("copy", "--all", "--db", src, "--to", pg_empty)
    assert r.code == 0, r.err
    graphs = _graphs(db)
    want = history(src, graphs)
    assert history(pg_empty, graphs) == want
    back = tmp_path / "back.sqlite"
    r = run("copy", "--all", "--db", pg_empty, "--to", str(back))
    assert r.code == 0, r.err
    assert history(str(back), graphs) == want


def test_postgres_to_postgres_and_sqlite(run, tmp_path, pg_samples, pg_empty):
    """The sample threads PostgresSaver wrote (delta channels, subgraphs, forks, waiting
    interrupts) copied to another Postgres database (blobs byte for byte) and to SQLite."""
    graphs = {}
    for db in SQLITE_DBS:
        graphs.update(_graphs(db))
    want = history(pg_samples, graphs)
    assert len(want) > 20
    r = run("copy", "--all", "--db", pg_samples, "--to", pg_empty, "--json")
    assert r.code == 0, r.err
    done = json.loads(r.out)
    assert done["threads"] >= 20
    assert history(pg_empty, graphs) == want
    import psycopg

    q = "SELECT thread_id, checkpoint_ns, channel, version, type, blob FROM checkpoint_blobs"
    with psycopg.connect(pg_samples) as a, psycopg.connect(pg_empty) as b:
        assert sorted(b.execute(q).fetchall()) == sorted(a.execute(q).fetchall())
    dest = tmp_path / "from-pg.sqlite"
    r = run("copy", "--all", "--db", pg_samples, "--to", str(dest))
    assert r.code == 0, r.err
    assert history(str(dest), graphs) == want


@pytest.mark.parametrize(
    ("db", "thread", "answer"),
    [
        ("custom", "approval-waiting", "yes"),
        ("interrupts", "subgraph-waiting", "approved"),
        ("interrupts", "parallel-waiting", None),
    ],
)
def test_a_copied_interrupt_resumes_as_the_original(run, tmp_path, db, thread, answer):
    from langgraph.types import Command

    original = tmp_path / "original.sqlite"
    shutil.copy(SAMPLES / f"{db}.sqlite", original)
    dest = tmp_path / "copy.sqlite"
    r = run("copy", thread, "--db", str(SAMPLES / f"{db}.sqlite"), "--to", str(dest))
    assert r.code == 0, r.err
    graph = _graphs(db)[thread]
    results = []
    for store in (original, dest):
        with saver_of(str(store)) as saver:
            g = graph.copy(update={"checkpointer": saver})
            config = {"configurable": {"thread_id": thread}}
            if answer is None:  # two interrupts waiting: each answered by its id
                ids = [i.id for i in g.get_state(config).interrupts]
                g.invoke(Command(resume={i: f"answer {n}" for n, i in enumerate(sorted(ids))}), config)
            else:
                g.invoke(Command(resume=answer), config)
            snap = g.get_state(config)
            results.append((snapshot_record(snap)["values"], list(snap.next)))
    assert results[0] == results[1]


def test_as_renames_and_the_copy_reads_the_same(run, tmp_path):
    src = str(tmp_path / "custom.sqlite")
    shutil.copy(SAMPLES / "custom.sqlite", src)
    dest = tmp_path / "copy.sqlite"
    r = run("copy", "notes-edits", "--db", src, "--to", str(dest), "--as", "mine")
    assert r.code == 0, r.err
    graphs = _graphs("custom")
    want = {k: v for k, v in history(src, graphs).items() if k[0] == "notes-edits"}
    assert history(str(dest), graphs, rename={"notes-edits": "mine"}) == want
    assert json.loads(run("threads", "--db", str(dest), "--json").out)[0]["thread_id"] == "mine"


def test_a_thread_the_destination_holds_is_refused_unless_replace(run, tmp_path):
    src = str(SAMPLES / "custom.sqlite")
    dest = tmp_path / "copy.sqlite"
    assert run("copy", "fanout", "--db", src, "--to", str(dest)).code == 0
    before = digest(dest)
    r = run("copy", "fanout", "nested", "--db", src, "--to", str(dest))
    assert r.code == 2
    assert r.err == (
        "statectl: the destination already holds thread 'fanout' "
        "(--replace replaces it, --as NEW_ID copies under another id)\n"
    )
    assert digest(dest) == before  # all or nothing: `nested` was not written either
    r = run("copy", "fanout", "nested", "--db", src, "--to", str(dest), "--replace")
    assert r.code == 0, r.err
    ids = sorted(t["thread_id"] for t in json.loads(run("threads", "--db", str(dest), "--json").out))
    assert ids == ["fanout", "nested"]


@pytest.mark.parametrize(
    ("to", "message"),
    [
        ("{src}", "--to names the database being read"),
        ("{tmp}", "is a folder"),
        ("{tmp}/export.json/x.sqlite", "export.json is not a folder"),
        ("http://127.0.0.1:9/", "not a LangGraph server"),
        ("{tmp}/export.json", "is not a SQLite database"),
    ],
)
def test_bad_destinations_write_nothing(run, tmp_path, to, message):
    src = tmp_path / "custom.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", src)
    (tmp_path / "export.json").write_text("{}")
    before = {p.name: digest(p) for p in tmp_path.iterdir() if p.is_file()}
    r = run("copy", "fanout", "--db", str(src), "--to", to.format(src=src, tmp=tmp_path))
    assert r.code == 2
    assert message in r.err
    assert len(r.err.splitlines()) <= 2
    assert {p.name: digest(p) for p in tmp_path.iterdir() if p.is_file()} == before


def test_a_failed_copy_leaves_no_new_file(run, tmp_path):
    """A writer that cannot write (an interpreter without LangGraph) ends the copy with one line:
    the new file is not created, and nothing is left beside it."""
    out = tmp_path / "out"
    out.mkdir()
    r = run(
        "copy",
        "fanout",
        "--db",
        str(SAMPLES / "custom.sqlite"),
        "--to",
        str(out / "new.sqlite"),
        "--python",
        "/usr/bin/python3",
    )
    assert r.code == 2, r.err
    assert r.err.startswith("statectl: /usr/bin/python3 cannot import langgraph")
    assert list(out.iterdir()) == []


def test_a_row_that_fails_rolls_the_whole_copy_back(run, tmp_path, pg_empty):
    """Across layouts a checkpoint whose bytes are not msgpack cannot be split: the copy stops
    on it with one line naming it, and the Postgres database holds nothing of the copy (the
    thread before it, written in the same transaction, is gone too)."""
    src = tmp_path / "custom.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", src)
    with sqlite3.connect(src) as c:
        (cid,) = c.execute("SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = 'nested'").fetchone()
        c.execute("UPDATE checkpoints SET checkpoint = x'c1c1' WHERE checkpoint_id = ?", (cid,))
    r = run("copy", "fanout", "nested", "--db", str(src), "--to", pg_empty)
    assert r.code == 2, r.err
    assert (
        r.err == f"statectl: checkpoint {cid} is corrupt (unpack failed: type: 0xc1 is reserved)\n"
        or f"checkpoint {cid} is corrupt" in r.err
    )
    import psycopg

    with psycopg.connect(pg_empty) as conn:
        assert conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM checkpoint_writes").fetchone()[0] == 0


def test_a_new_file_is_private(run, tmp_path):
    dest = tmp_path / "new.sqlite"
    assert run("copy", "fanout", "--db", str(SAMPLES / "custom.sqlite"), "--to", str(dest)).code == 0
    assert dest.stat().st_mode & 0o777 == 0o600


def test_a_langgraph_dev_folder_copies_to_sqlite(run, tmp_path):
    """A `langgraph dev` folder's threads (InMemorySaver's checkpoints and blobs) written with
    SqliteSaver: statectl reads the copy as it reads the folder."""
    dest = tmp_path / "dev.sqlite"
    r = run("copy", "--all", "--db", str(SAMPLES / ".langgraph_api"), "--to", str(dest), "--json")
    assert r.code == 0, r.err
    folder = json.loads(run("threads", "--db", str(SAMPLES / ".langgraph_api"), "--json").out)
    stored = [t["thread_id"] for t in folder if t.get("checkpoints")]
    copied = json.loads(run("threads", "--db", str(dest), "--json").out)
    assert sorted(t["thread_id"] for t in copied) == sorted(stored)
    for t in stored:
        a = [json.loads(x) for x in run("log", t, "--db", str(SAMPLES / ".langgraph_api"), "--json").out.splitlines()]
        b = [json.loads(x) for x in run("log", t, "--db", str(dest), "--json").out.splitlines()]
        # the folder's server record proves some reducers' empty values (statectl reads them there);
        # the copy has the checkpoints alone: those keys are the only difference
        with statectl.open(str(SAMPLES / ".langgraph_api")) as store:
            proven = set(store.source.empty_channels(t) or ())
        for snap in a + b:
            snap["values"] = {k: v for k, v in snap["values"].items() if k not in proven}
        assert [(s["checkpoint_id"], s["values"], s["next"], s["tasks"]) for s in b] == [
            (s["checkpoint_id"], s["values"], s["next"], s["tasks"]) for s in a
        ]


@pytest.mark.parametrize("to", ["sqlite", "postgres"])
def test_an_export_copies_as_its_database(run, tmp_path, pg_empty, to):
    """An export (SQLite rows, and a Postgres database's rows) copied into SQLite and Postgres."""
    src = tmp_path / "custom.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", src)
    export = tmp_path / "custom.json"
    assert run("export", "--all", "--db", str(src), "-o", str(export)).code == 0
    dest = str(tmp_path / "copy.sqlite") if to == "sqlite" else pg_empty
    r = run("copy", "--all", "--db", str(export), "--to", dest)
    assert r.code == 0, r.err
    graphs = _graphs("custom")
    assert history(dest, graphs) == history(str(src), graphs)


def test_a_postgres_export_and_a_folder_copy_to_postgres(run, tmp_path, pg_samples, pg_empty):
    export = tmp_path / "pg.json"
    assert run("export", "approval-waiting", "nested", "--db", pg_samples, "-o", str(export)).code == 0
    r = run("copy", "--all", "--db", str(export), "--to", pg_empty)
    assert r.code == 0, r.err
    graphs = _graphs("custom")
    want = {k: v for k, v in history(pg_samples, graphs).items() if k[0] in ("approval-waiting", "nested")}
    assert history(pg_empty, graphs) == want
    folder = str(SAMPLES / ".langgraph_api")
    r = run("copy", "--all", "--db", folder, "--to", pg_empty, "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["threads"] >= 3
    ids = {t["thread_id"] for t in json.loads(run("threads", "--db", pg_empty, "--json").out)}
    assert {"approval-waiting", "nested"} < ids


def test_a_locked_destination_is_one_line_after_the_timeout(run, tmp_path):
    """Another writer holds the destination: the copy waits --timeout, then says so; nothing written."""
    dest = tmp_path / "busy.sqlite"
    assert run("copy", "fanout", "--db", str(SAMPLES / "custom.sqlite"), "--to", str(dest)).code == 0
    holder = sqlite3.connect(dest)
    holder.execute("BEGIN IMMEDIATE")
    try:
        r = run("copy", "nested", "--db", str(SAMPLES / "custom.sqlite"), "--to", str(dest), "--timeout", "1")
    finally:
        holder.rollback()
        holder.close()
    assert r.code == 2
    assert r.err.startswith(f"statectl: cannot write {dest}: database is locked")
    assert "another process is writing to it" in r.err
    ids = [t["thread_id"] for t in json.loads(run("threads", "--db", str(dest), "--json").out)]
    assert ids == ["fanout"]
