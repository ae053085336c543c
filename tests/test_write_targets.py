"""One contract every store kind statectl writes passes, duty by duty (`project.write_targets`):
a real SQLite file and a real Postgres database, each written with threads LangGraph ran, and
read back by LangGraph's own savers. A duty declared on `WriteTarget` that no test here names
fails the first test."""

from __future__ import annotations

import json
import shutil
import sqlite3
import typing
from contextlib import contextmanager
from pathlib import Path

import orjson
import pytest
from parity import SAMPLES

import statectl
from statectl.core.copy import thread_rows
from statectl.errors import StatectlError
from statectl.project.migrate import InPlace, Migration
from statectl.project.prune import Applier
from statectl.project.write_targets import TARGETS, PostgresTarget, SqliteTarget, WriteTarget, write_target
from statectl.project.writer import Copier, Destination
from statectl.project.writer_base import WriteError

KINDS = ("sqlite", "postgres")
DUTIES = {
    "kind": "test_the_registry",
    "blob_per_version": "test_written_rows_read_back_by_langgraph",
    "backs_up": "test_backup",
    "backup_hint": "test_backup",
    "dest_row": "test_written_rows_read_back_by_langgraph",
    "refuse_backup": "test_backup",
    "pruner": "test_pruner_deletes",
    "migrator": "test_migrator_rewrites",
    "open": "test_written_rows_read_back_by_langgraph",
    "has_thread": "test_written_rows_read_back_by_langgraph",
    "commit": "test_written_rows_read_back_by_langgraph",
    "rollback": "test_rollback_keeps_nothing",
}
"""Every duty a writable store kind has, and the test that holds each kind to it."""


def test_every_declared_duty_is_tested():
    declared = set(WriteTarget.__abstractmethods__) | set(typing.get_type_hints(WriteTarget)) - {
        "conn",
        "saver",
        "atomic",
    }
    declared |= {n for n, v in vars(WriteTarget).items() if isinstance(v, classmethod)}
    assert declared == set(DUTIES)
    for test in DUTIES.values():
        assert callable(globals()[test]), test


def test_the_registry():
    """Each kind's class declares every duty (nothing abstract left), under the sources' kind;
    the kinds statectl reads but does not write have none."""
    assert set(TARGETS) == set(KINDS)
    assert TARGETS["sqlite"] is SqliteTarget
    assert TARGETS["postgres"] is PostgresTarget
    for kind, cls in TARGETS.items():
        assert cls.kind == kind
        assert not cls.__abstractmethods__
        assert isinstance(write_target(kind), cls)
        assert write_target(kind) is not write_target(kind)  # (a fresh one: it holds a connection)
    for kind in ("folder", "export", "server", "", "SQLITE"):
        assert write_target(kind) is None
        with pytest.raises(WriteError, match="does not write a store of kind"):
            Destination({"kind": kind, "path": "x", "url": "x"})


# -- a writable store of each kind, and a sample store of each kind to copy from ------------------
@pytest.fixture(params=KINDS)
def kind(request):
    return request.param


@pytest.fixture
def empty(kind, tmp_path, request) -> str:
    """Where a write goes: a new SQLite file, or an empty Postgres database."""
    if kind == "sqlite":
        return str(tmp_path / "dest.sqlite")
    return request.getfixturevalue("pg_empty")


@pytest.fixture(params=KINDS)
def sample(request, tmp_path) -> str:
    """Threads LangGraph ran, in a SQLite file or PostgresSaver's tables."""
    if request.param == "postgres":
        return request.getfixturevalue("pg_samples")
    shutil.copy(SAMPLES / "custom.sqlite", tmp_path / "custom.sqlite")
    return str(tmp_path / "custom.sqlite")


@contextmanager
def saver_of(where: str):
    if where.startswith("postgresql:"):
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(where) as saver:
            yield saver
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(where, check_same_thread=False)
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()


def _history(where: str, thread_id: str) -> list:
    """LangGraph's own reading of a thread: each checkpoint's id, parent, values and pending writes."""
    with saver_of(where) as saver:
        return [
            (t.config["configurable"]["checkpoint_id"], t.checkpoint["channel_values"], t.pending_writes)
            for t in saver.list({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        ]


def _visible(where: str, thread_id: str) -> int:
    """Checkpoints of `thread_id` another connection sees (0 where the tables are not there)."""
    if where.startswith("postgresql:"):
        import psycopg

        with psycopg.connect(where) as conn:
            if conn.execute("SELECT to_regclass('checkpoints')").fetchone()[0] is None:
                return 0
            return conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s", (thread_id,)).fetchone()[0]
    if not Path(where).exists():
        return 0
    with sqlite3.connect(where) as conn:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'checkpoints'").fetchone():
            return 0
        return conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = ?", (thread_id,)).fetchone()[0]


def _blobs(where: str) -> int:
    """Rows of a blob table beside the checkpoints (PostgresSaver's layout)."""
    if not where.startswith("postgresql:"):
        with sqlite3.connect(where) as conn:
            return len(conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'checkpoint_blobs'").fetchall())
    import psycopg

    with psycopg.connect(where) as conn:
        return conn.execute("SELECT count(*) FROM checkpoint_blobs").fetchone()[0]


def _a_thread(where: str) -> str:
    with statectl.open(where) as store:
        return max(store.threads(), key=lambda t: (t.checkpoints, t.thread_id)).thread_id


def _copy_into(dest: Destination, source_at: str, thread_id: str) -> Copier:
    """A thread's rows as the CLI sends them (JSON lines) written through `dest`."""
    with statectl.open(source_at) as store:
        rows = [json.loads(orjson.dumps(r)) for r in thread_rows(store.source, thread_id, thread_id)]
    copier = Copier(dest, thread_id)
    for row in rows:
        op = row.pop("op")
        if op == "checkpoint":
            copier.checkpoint(row)
        elif op == "writes":
            copier.write(row)
    return copier


# -- the duties -----------------------------------------------------------------------------------
def test_written_rows_read_back_by_langgraph(kind, empty, sample):
    """`dest_row` opens a saver (`open`, atomic: one transaction another connection does not see
    until `commit`); `has_thread` sees what it wrote; LangGraph's saver reads the committed
    thread as it reads the sample's, across layouts; the layout is the kind's `blob_per_version`."""
    target_cls = TARGETS[kind]
    tid = _a_thread(sample)
    dest = Destination(target_cls.dest_row(empty, 5.0))
    assert isinstance(dest.target, target_cls)
    assert not dest.has_thread(tid)
    copier = _copy_into(dest, sample, tid)
    assert copier.checkpoints > 1
    assert dest.has_thread(tid)
    assert _visible(empty, tid) == 0  # (held in the write's transaction)
    dest.commit()
    assert _visible(empty, tid) == copier.checkpoints
    want = _history(sample, tid)
    assert want
    assert _history(empty, tid) == want
    assert bool(_blobs(empty)) == target_cls.blob_per_version
    again = Destination(target_cls.dest_row(empty, 5.0))
    try:
        assert again.has_thread(tid)
        assert not again.has_thread(tid + "-not-there")
    finally:
        again.rollback()


def test_rollback_keeps_nothing(kind, empty, sample):
    tid = _a_thread(sample)
    dest = Destination(TARGETS[kind].dest_row(empty, 5.0))
    _copy_into(dest, sample, tid)
    dest.rollback()
    dest.rollback()  # (never raises, closed or not)
    assert _visible(empty, tid) == 0
    # replay's destination (not atomic): each checkpoint is kept as the saver commits it
    dest = Destination(TARGETS[kind].dest_row(empty, 5.0), atomic=False)
    copier = _copy_into(dest, sample, tid)
    assert _visible(empty, tid) == copier.checkpoints
    dest.rollback()
    assert _visible(empty, tid) == copier.checkpoints


def test_backup(kind):
    target = TARGETS[kind]
    if target.backs_up:
        assert target.backup_hint is None
        target.refuse_backup("x")  # (allowed: nothing raised)
        return
    with pytest.raises(StatectlError) as refused:
        target.refuse_backup("the label")
    assert refused.value.message == "the label: --backup copies SQLite files"
    assert refused.value.hint == target.backup_hint
    assert target.backup_hint


@pytest.fixture
def writable(kind, tmp_path, request) -> str:
    """A store of `kind` holding the sample threads, that a test may change."""
    if kind == "postgres":
        return request.getfixturevalue("pg_scratch")
    shutil.copy(SAMPLES / "custom.sqlite", tmp_path / "custom.sqlite")
    return str(tmp_path / "custom.sqlite")


def test_pruner_deletes(kind, writable):
    from statectl.core.prune import plan_threads

    tid = _a_thread(writable)
    before = _visible(writable, tid)
    with statectl.open(writable) as store:
        applier = TARGETS[kind].pruner(store, 1, None, 500)
        try:
            assert isinstance(applier, Applier)
            assert applier.kind == kind
            [plan] = plan_threads(store, [tid], 1, None)
            assert plan.drop
            out = applier.apply(plan)
        finally:
            store.close()
            applier.close()
    assert out.status == "pruned"
    assert 0 < _visible(writable, tid) < before


def test_migrator_rewrites(kind, writable):
    from statectl.project.migrate import migrate_all, plan

    tid = _a_thread(writable)
    key = sorted(k for k in _history(writable, tid)[0][1] if not k.startswith(("__", "branch:")))[0]
    with statectl.open(writable) as store:
        migration = Migration(keys={key: key + "_renamed"})
        planned = list(plan(store.source, migration, [tid]))
        writer = TARGETS[kind].migrator(store, migration)
        try:
            assert isinstance(writer, InPlace)
            outcomes = migrate_all(writer, planned)
        finally:
            writer.close()
    assert [o.thread_id for o in outcomes] == [tid]
    values = _history(writable, tid)[0][1]
    assert key not in values
    assert key + "_renamed" in values
