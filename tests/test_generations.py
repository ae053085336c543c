"""Older generations of SqliteSaver's tables, read from files written by the old LangGraph itself
(sample_threads/thread_ts_app.py in venvs with langgraph 0.0.69 and 0.1.19; legacy_app.py with
0.2.62), held against that LangGraph's own `get_state_history` of every thread."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from conftest import SAMPLES, digest
from parity import normal


def _expected(name: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for line in (SAMPLES / "expected" / f"{name}.jsonl").read_text().splitlines():
        rec = json.loads(line)
        out.setdefault(rec["thread_id"], []).append(rec)
    return out


@pytest.mark.parametrize("gen", ["00", "01"])
def test_thread_ts_databases_are_langgraphs_own_history(run, tmp_path, gen):
    db = tmp_path / f"thread_ts_{gen}.sqlite"
    shutil.copy(SAMPLES / db.name, db)
    before = digest(db)
    want = _expected(f"thread_ts_{gen}")
    r = run("threads", "--json", "--db", str(db))
    assert r.code == 0, r.err
    assert sorted(t["thread_id"] for t in json.loads(r.out)) == sorted(want)
    held = 0
    for thread, records in want.items():
        r = run("log", thread, "--json", "--unpickle-inert", "--db", str(db))
        assert r.code == 0, r.err
        got = [json.loads(line) for line in r.out.splitlines()]
        assert [g["checkpoint_id"] for g in got] == [w["checkpoint_id"] for w in records]
        for g, w in zip(got, records, strict=True):
            for key in ("values", "next", "parent_checkpoint_id"):
                assert normal(g[key]) == normal(w[key]), (thread, w["checkpoint_id"], key)
            if thread != "ts-pickled":  # (a pickle names AddableUpdatesDict, LangGraph's dict type)
                assert normal(g["metadata"]) == normal(w["metadata"]), (thread, w["checkpoint_id"])
            held += 1
    assert held == sum(map(len, want.values()))
    r = run("log", "ts-done", "--db", str(db))
    assert "thread_ts" in r.out
    assert "agent" in r.out
    assert "tools" in r.out
    assert digest(db) == before


def test_without_a_writes_table_ran_and_changed_come_from_metadata(run, tmp_path):
    """langgraph 0.0.x kept no writes: what each step ran and changed is in `metadata.writes`.
    On the 0.2 sample (which has both), that reading equals the one from the writes table on
    every checkpoint of every thread and namespace."""
    import statectl
    from statectl.core.timeline import entries

    with statectl.open(str(SAMPLES / "legacy.sqlite")) as full, statectl.open(str(SAMPLES / "legacy.sqlite")) as bare:
        bare.source.has_writes = False  # as if the writes table were missing
        compared = 0
        for t in full.threads():
            for ns in full.namespaces(t.thread_id):
                a = [(e.ran, e.changed) for e in entries(full.view(t.thread_id, ns))]
                b = [(e.ran, e.changed) for e in entries(bare.view(t.thread_id, ns))]
                assert a == b, (t.thread_id, ns)
                compared += sum(1 for ran, _ in a if ran)
        assert compared > 20


def test_a_foreign_checkpoints_table_is_named_as_such(run, tmp_path):
    """Another program's table named `checkpoints` (hand-made: a deliberately foreign input)."""
    db = tmp_path / "other.sqlite"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE checkpoints (id INTEGER PRIMARY KEY, path TEXT, saved_at TEXT)")
    before = digest(db)
    r = run("threads", "--db", str(db))
    assert r.code == 2, r.err
    assert len(r.err.strip().splitlines()) <= 2, r.err
    assert "LangGraph did not write" in r.err
    assert "internal error" not in r.err
    assert digest(db) == before


def test_a_database_without_a_root_namespace_lists_its_threads(run, tmp_path):
    """A checkpointer used by hand with only a subgraph namespace: the thread is still listed and
    its namespace readable (rows of a real run, moved under a namespace: a deliberately odd input)."""
    db = tmp_path / "ns.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", db)
    with sqlite3.connect(db) as c:
        c.execute("UPDATE checkpoints SET checkpoint_ns = 'worker:1' WHERE thread_id = 'notes-edits'")
        c.execute("UPDATE writes SET checkpoint_ns = 'worker:1' WHERE thread_id = 'notes-edits'")
        c.execute("PRAGMA journal_mode=DELETE")
    r = run("threads", "--json", "--db", str(db))
    assert r.code == 0, r.err
    assert "notes-edits" in r.out, r.err
    r = run("log", "notes-edits", "--ns", "worker:1", "--db", str(db))
    assert r.code == 0, r.err
    assert "worker:1" in r.out, r.err
    r = run("log", "notes-edits", "--db", str(db))
    assert r.code != 0, r.err
    assert "worker:1" in r.err, r.err  # the root has none: the namespace is named


def test_json_typed_rows_are_langgraphs_own_history(run, tmp_path):
    """langgraph-checkpoint 1.0.1 stored every checkpoint and write as a `json` typed row, messages
    in LangChain's `lc: 1` form (sample_threads/legacy_app.py run with it): statectl's history is
    LangGraph 0.2.0's own, messages read as messages."""
    db = tmp_path / "json_rows.sqlite"
    shutil.copy(SAMPLES / db.name, db)
    with sqlite3.connect(f"file:{db}?immutable=1", uri=True) as c:
        assert {t for (t,) in c.execute("SELECT DISTINCT type FROM checkpoints")} == {"json"}
    before = digest(db)
    want = _expected("json_rows")
    held = 0
    for thread, records in want.items():
        r = run("log", thread, "--json", "--db", str(db))
        assert r.code == 0, r.err
        got = [json.loads(line) for line in r.out.splitlines() if json.loads(line)["checkpoint_ns"] == ""]
        assert [g["checkpoint_id"] for g in got] == [w["checkpoint_id"] for w in records if w["checkpoint_ns"] == ""]
        for g, w in zip(got, [w for w in records if w["checkpoint_ns"] == ""], strict=True):
            for key in ("values", "next", "parent_checkpoint_id", "metadata"):
                assert normal(g[key]) == normal(w[key]), (thread, w["checkpoint_id"], key)
            held += 1
    assert held == 21
    r = run("show", "legacy-done", "--db", str(db))
    assert "assistant" in r.out
    assert "lc" not in r.out.split()
    assert digest(db) == before
