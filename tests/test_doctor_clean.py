"""`doctor` on clean stores says nothing at warning or above (every saver, every channel kind),
and on each planted fault says what it is, where, and the repair (issue 52: every finding true)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import TypedDict

import pytest
from channel_kinds import THREADS, build, run_turns
from conftest import digest
from parity import SAMPLES

STATECTL = [sys.executable, "-m", "statectl"]


def _doctor(run, db: Path | str, *args: str) -> tuple[int, dict]:
    r = run("doctor", "--json", "--no-plan", "--db", str(db), *args)
    assert r.code in (0, 1), r.err
    return r.code, json.loads(r.out)


def _serious(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["severity"] != "info"]


def _sqlite_kinds(db: Path) -> Path:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        run_turns(build(SqliteSaver(conn)))
    finally:
        conn.close()
    return db


def _pg_kinds(url: str, shallow: bool = False) -> str:
    import warnings

    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.postgres.shallow import ShallowPostgresSaver
    from psycopg.rows import dict_row

    with (
        psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", DeprecationWarning)  # (ShallowPostgresSaver's)
        saver = (ShallowPostgresSaver if shallow else PostgresSaver)(conn)
        saver.setup()
        run_turns(build(saver))
    return url


def _delta_reads(url: str) -> int:
    """LangGraph's own reading of the kinds threads: the delta channel rebuilt at every checkpoint
    (its length at the newest), so the store is healthy as LangGraph sees it."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    with psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
        graph = build(PostgresSaver(conn))
        config = {"configurable": {"thread_id": THREADS[0]}}
        for snapshot in graph.get_state_history(config):
            assert isinstance(snapshot.values.get("log", []), list)
        return len(graph.get_state(config).values["log"])


@pytest.mark.parametrize("saver", ["sqlite", "postgres", "shallow"])
def test_every_channel_kind_on_every_saver_is_healthy(run, saver, tmp_path, pg_empty):
    """A DeltaChannel past its snapshot interval, BinaryOperator, Topics, EphemeralValues (a dict
    one is stored as a blob, then emptied), a subgraph, Sends and interrupts: zero findings at
    warning or above, with --fail-on warning. Before, every Postgres checkpoint between two
    snapshots of the delta channel, and every one where an EphemeralValue or a non-accumulating
    Topic had been emptied, was an `error integrity` finding ("restore the store from a backup")."""
    target = (
        str(_sqlite_kinds(tmp_path / "kinds.sqlite")) if saver == "sqlite" else _pg_kinds(pg_empty, saver == "shallow")
    )
    code, report = _doctor(run, target, "--fail-on", "warning")
    assert _serious(report) == [], report["findings"]
    assert code == 0
    assert report["threads"] == len(THREADS)
    if saver == "postgres":
        import psycopg

        with psycopg.connect(pg_empty) as conn:
            # the delta channel passed its snapshot interval: snapshots, and checkpoints between them
            snapshots, between = conn.execute(
                "SELECT count(*) FILTER (WHERE checkpoint->'channel_values'->'log' = 'true'), count(*) FILTER "
                "(WHERE metadata->'counters_since_delta_snapshot' ? 'log') FROM checkpoints"
            ).fetchone()
            emptied = conn.execute(
                "SELECT count(*) FROM checkpoints c WHERE c.checkpoint->'channel_versions' ? 'note' AND NOT "
                "(c.checkpoint->'channel_values' ? 'note') AND NOT EXISTS (SELECT 1 FROM checkpoint_blobs b "
                "WHERE b.thread_id = c.thread_id AND b.channel = 'note' AND b.version = "
                "c.checkpoint->'channel_versions'->>'note')"
            ).fetchone()[0]
        assert snapshots > 2
        assert between > 10
        assert emptied > 2
        assert _delta_reads(pg_empty) > 20


@pytest.mark.parametrize("store", ["js.sqlite", ".langgraph_api"])
def test_the_js_and_dev_server_samples_are_healthy(run, store, tmp_path):
    copy = tmp_path / "store"
    if store.endswith(".sqlite"):
        copy = tmp_path / store
        shutil.copy(SAMPLES / store, copy)
    else:
        shutil.copytree(SAMPLES / store, copy / store)
    before = digest(copy) if copy.is_file() else None
    code, report = _doctor(run, copy, "--fail-on", "warning")
    assert _serious(report) == [], report["findings"]
    assert code == 0
    assert report["threads"] > 5
    if before is not None:
        assert digest(copy) == before


def test_the_js_postgres_sample_is_healthy(run, pg_empty):
    subprocess.run(
        ["psql", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(SAMPLES / "js_postgres.sql"), pg_empty],
        check=True,
        capture_output=True,
    )
    code, report = _doctor(run, pg_empty, "--fail-on", "warning")
    assert _serious(report) == [], report["findings"]
    assert code == 0
    assert report["checkpoints"] > 50


def test_postgres_faults_are_named_by_thread_checkpoint_channel_and_version(run, pg_empty):
    """Planted on a clean PostgresSaver store: a blob version a task wrote, deleted (an error at
    each checkpoint that names it); a blob version no checkpoint names (its channel, version and
    bytes); a checkpoint deleted with its writes left (the checkpoint id and tasks they point to)."""
    import psycopg

    url = _pg_kinds(pg_empty)
    t = THREADS[1]
    with psycopg.connect(url, autocommit=True) as conn:
        # a version of `note` (an EphemeralValue dict: stored, then emptied by the next step) and
        # of `kept` (a Topic), each written by a task
        gone = {}
        for channel in ("note", "kept"):
            version = conn.execute(
                "SELECT version FROM checkpoint_blobs WHERE thread_id = %s AND checkpoint_ns = '' AND channel = %s "
                "ORDER BY version LIMIT 1 OFFSET 1",
                (t, channel),
            ).fetchone()[0]
            conn.execute(
                "DELETE FROM checkpoint_blobs WHERE thread_id = %s AND checkpoint_ns = '' AND channel = %s "
                "AND version = %s",
                (t, channel, version),
            )
            gone[channel] = {
                cid
                for (cid,) in conn.execute(
                    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = '' AND "
                    "checkpoint->'channel_versions'->>%s = %s",
                    (t, channel, version),
                )
            }
        stray = "00000000000000000000000000000099.0.5"
        conn.execute(
            "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
            "VALUES (%s, '', 'kept', %s, 'msgpack', '\\x91a178'::bytea)",
            (t, stray),
        )
        deleted, task = conn.execute(
            "SELECT c.checkpoint_id, min(w.task_id) FROM checkpoints c JOIN checkpoint_writes w USING "
            "(thread_id, checkpoint_ns, checkpoint_id) WHERE c.thread_id = %s AND c.checkpoint_ns = '' "
            "GROUP BY 1 ORDER BY 1 LIMIT 1 OFFSET 3",
            (THREADS[0],),
        ).fetchone()
        conn.execute("DELETE FROM checkpoints WHERE thread_id = %s AND checkpoint_id = %s", (THREADS[0], deleted))
    code, report = _doctor(run, url)
    assert code == 1
    by = {}
    for f in report["findings"]:
        by.setdefault(f["kind"], []).append(f)
    for channel, cids in gone.items():
        missing = [f for f in by["missing-blob"] if f"'{channel}'" in f["message"]]
        assert {f["checkpoint_id"] for f in missing} == cids, channel
        assert all(f["severity"] == "error" and f["thread_id"] == t and "backup" in f["fix"] for f in missing)
    assert len(by["missing-blob"]) == sum(len(c) for c in gone.values())
    (orphan,) = [f for f in by["orphan-blobs"] if f["thread_id"] == t]  # (the deleted checkpoint left some too)
    assert (orphan["severity"], orphan["thread_id"], orphan["count"]) == ("warning", t, 1)
    assert f"of 'kept', 3 B, no checkpoint names: {stray} (3 B)" in orphan["message"]
    (writes,) = by["orphan-writes"]
    assert (writes["severity"], writes["thread_id"], writes["checkpoint_id"]) == ("warning", THREADS[0], deleted)
    assert task in writes["message"]
    assert {f["thread_id"] for f in by["orphan-blobs"]} == {t, THREADS[0]}


def test_sqlite_orphan_writes_name_the_checkpoint_and_task(run, tmp_path):
    db = _sqlite_kinds(tmp_path / "kinds.sqlite")
    with sqlite3.connect(db) as conn:
        deleted, task, n = conn.execute(
            "SELECT checkpoint_id, min(task_id), count(*) FROM writes WHERE thread_id = ? AND checkpoint_ns = '' "
            "GROUP BY 1 ORDER BY 1 LIMIT 1 OFFSET 3",
            (THREADS[0],),
        ).fetchone()
        conn.execute("DELETE FROM checkpoints WHERE checkpoint_id = ?", (deleted,))
    _code, report = _doctor(run, db)
    (writes,) = [f for f in report["findings"] if f["kind"] == "orphan-writes"]
    assert (writes["thread_id"], writes["checkpoint_ns"], writes["checkpoint_id"]) == (THREADS[0], "", deleted)
    assert writes["count"] == n
    assert task in writes["message"]


def _line(db: Path, thread: str) -> list[tuple[str, str | None]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
            "ORDER BY checkpoint_id",
            (thread,),
        ).fetchall()


def test_a_gap_in_the_middle_is_a_warning_naming_both_ends(run, dbs, tmp_path):
    """Rows deleted in the middle of a history with older ones (back to the first) kept: a warning
    at the checkpoint after the gap naming the one before it. The oldest rows deleted (a prune),
    and statectl's own prune of threads with forks (it keeps fork points and branch heads, whose
    history then begins at a missing parent): info, how a pruned history begins."""
    db, t = dbs["agent"], "bakery-plan"
    line = _line(db, t)
    assert [p for _c, p in line[1:]] == [c for c, _p in line[:-1]]  # (one line: each the next one's parent)
    middle = len(line) // 2
    pruned = tmp_path / "pruned.sqlite"
    shutil.copy(db, pruned)
    with sqlite3.connect(db) as conn:
        gone = [(c,) for c, _p in line[middle : middle + 2]]
        conn.executemany("DELETE FROM checkpoints WHERE checkpoint_id = ?", gone)
    code, report = _doctor(run, db, "--fail-on", "warning")
    assert code == 1
    (gap,) = [f for f in report["findings"] if f["kind"] == "gap"]
    assert (gap["severity"], gap["thread_id"], gap["checkpoint_id"]) == ("warning", t, line[middle + 2][0])
    assert f"rows between {line[middle - 1][0]} and here were deleted" in gap["message"]
    assert "backup" in gap["fix"]
    assert not [f for f in report["findings"] if f["kind"] == "history-begins" and f["thread_id"] == t]
    with sqlite3.connect(pruned) as conn:
        for table in ("checkpoints", "writes"):  # (as a prune deletes them)
            conn.executemany(f"DELETE FROM {table} WHERE checkpoint_id = ?", [(c,) for c, _p in line[:3]])
    code, report = _doctor(run, pruned, "--fail-on", "warning")
    assert code == 0
    begins = [f for f in report["findings"] if f["kind"] == "history-begins"]
    assert [(f["severity"], f["thread_id"], f["checkpoint_id"]) for f in begins] == [("info", t, line[3][0])]
    forked = dbs["custom"]
    assert run("prune", "--keep-last", "2", "--apply", "--yes", "--db", str(forked)).code == 0
    _code, report = _doctor(run, forked)
    assert not [f for f in report["findings"] if f["check"] == "integrity" and f["severity"] != "info"]
    assert "notes-edits" in {f["thread_id"] for f in report["findings"] if f["kind"] == "history-begins"}


@pytest.mark.parametrize(
    ("store", "thread", "bad"), [("custom", "many-types", b"\xc1\xc1\xc1"), ("json_rows", None, b"{")]
)
def test_a_damaged_row_is_said_once_and_its_thread_still_checked(run, tmp_path, store, thread, bad):
    """A row that does not decode (msgpack, JSON) is one `undecodable` error at its checkpoint; the
    thread's other rows are still checked and counted. Before, the thread was also reported
    `unreadable` (the newest row's sizes read again) and the rest of it was not checked."""
    db = tmp_path / f"{store}.sqlite"
    shutil.copy(SAMPLES / f"{store}.sqlite", db)
    with sqlite3.connect(db) as conn:
        t = thread or conn.execute("SELECT min(thread_id) FROM checkpoints").fetchone()[0]
        cid = conn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_id DESC LIMIT 1", (t,)
        ).fetchone()[0]
        conn.execute("UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?", (bad, cid))
        total = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
    _code, report = _doctor(run, db)
    damaged = [f for f in report["findings"] if f["kind"] in ("undecodable", "unreadable")]
    assert [(f["kind"], f["thread_id"], f.get("checkpoint_id")) for f in damaged] == [("undecodable", t, cid)]
    assert report["checkpoints"] == total


class _Failing(TypedDict):
    n: int


def _fail(state: _Failing) -> dict:
    raise ValueError("no")


def test_data_in_the_human_output_cannot_forge_a_finding(run, tmp_path, monkeypatch):
    """A thread id holding a newline, an escape sequence and Rich markup (a real LangGraph run that
    failed): the human output shows them escaped and literal, each finding one block whose every
    further line is indented under it; at a narrow width its ids are folded, never cut."""
    from conftest import one_node_runs

    forged = "t\nerror   integrity  thread all: healthy\x1b[2J [bold red]x[/bold red]\t"
    config = {"configurable": {"thread_id": forged}}
    db = one_node_runs(tmp_path / "f.sqlite", _Failing, _fail, [({"n": 1}, config)], ignore=(ValueError,))
    for width in ("200", "40"):
        monkeypatch.setenv("COLUMNS", width)
        r = run("doctor", "--no-plan", "--older-than", "2100-01-01", "--db", str(db))
        assert r.code == 0, r.err
        lines = r.out.splitlines()
        summary = next(i for i, ln in enumerate(lines) if ln.startswith("1 thread, "))
        assert lines[0].startswith("warning operations ")
        assert all(ln.startswith(" ") for ln in lines[1:summary]), lines  # (one block: no line it did not start)
        assert "\x1b" not in r.out
        assert "…" not in r.out
        if width == "200":
            shown = "t\\nerror   integrity  thread all: healthy\\x1b[2J [bold red]x[/bold red]\\t"
            assert f"warning operations thread {shown}: failed since " in lines[0]
        else:
            assert "\\x1b[2J" in "".join(ln.strip() for ln in lines)


def test_a_postgres_delta_snapshot_whose_blob_is_gone_is_an_error(run, pg_empty):
    """A DeltaChannel's snapshot is the JSONB `true` marker and a blob row: with the blob deleted
    LangGraph reads the channel as `True` (checked here), an error at that checkpoint; a bool
    channel's inline `true` is no snapshot and says nothing (the clean test)."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    url = _pg_kinds(pg_empty)
    t = THREADS[0]
    with psycopg.connect(url, autocommit=True) as conn:
        (cid,) = conn.execute(
            "DELETE FROM checkpoint_blobs b USING checkpoints c WHERE c.thread_id = %s AND c.checkpoint_ns = '' AND "
            "c.checkpoint_id = (SELECT max(checkpoint_id) FROM checkpoints x WHERE x.thread_id = %s AND "
            "x.checkpoint_ns = '' AND x.checkpoint->'channel_values'->'log' = 'true'::jsonb) AND "
            "b.thread_id = c.thread_id AND b.checkpoint_ns = '' AND b.channel = 'log' AND "
            "b.version = c.checkpoint->'channel_versions'->>'log' RETURNING c.checkpoint_id",
            (t, t),
        ).fetchall()
    with psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
        config = {"configurable": {"thread_id": t, "checkpoint_ns": "", "checkpoint_id": cid[0]}}
        assert PostgresSaver(conn).get_tuple(config).checkpoint["channel_values"]["log"] is True
    code, report = _doctor(run, url)
    assert code == 1
    (missing,) = [f for f in report["findings"] if f["severity"] != "info"]
    assert (missing["kind"], missing["thread_id"], missing["checkpoint_id"]) == ("missing-blob", t, cid[0])
    assert (
        "snapshot of the delta channel 'log' is not stored: LangGraph reads the channel as `True`"
        in (missing["message"])
    )
