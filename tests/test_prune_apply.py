"""`statectl prune --apply`: the plan carried out on copies of real LangGraph databases. After it,
LangGraph's own `get_state` of every remaining checkpoint of every thread and namespace is what it
was, every waiting thread resumes to the same result, a run writing meanwhile loses nothing, and
Ctrl+C, a lock, a full disk or a read-only store leave the store consistent (or untouched)."""

from __future__ import annotations

import copy
import importlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from conftest import digest
from parity import DBS, GRAPHS, SAMPLES

sys.path.insert(0, str(SAMPLES))
HERE = Path(__file__).resolve().parent
STATECTL = [sys.executable, "-m", "statectl"]


def _graph(thread: str, saver: Any) -> Any:
    """The sample app's graph that wrote `thread`, compiled onto `saver`."""
    target = next(t for t, (_db, threads) in GRAPHS.items() if thread in threads)
    module, attr = target.split(":")
    mod = importlib.import_module(module.removesuffix(".py"))
    if attr == "agent":
        from scripted import say

        return mod.make_agent([say("Done.")], saver)
    if attr == "deep_agent":
        return mod.make_deep_agent([], saver)
    if attr == "essay_workflow":
        return mod.make_essay_workflow(saver)
    if attr == "orchestrator":
        graph = copy.copy(mod.orchestrator)
        graph.checkpointer = saver
        return graph
    return getattr(mod, attr).compile(checkpointer=saver)


def _threads(db: str) -> list[str]:
    return [t for _target, (where, threads) in GRAPHS.items() if where == db for t in threads]


def _states(saver: Any, conn: Any, thread: str, placeholder: str = "?") -> dict[tuple[str, str], dict]:
    """LangGraph's own `get_state` of every checkpoint the store holds for `thread`, every namespace."""
    from record import snapshot_record

    graph = _graph(thread, saver)
    rows = conn.execute(
        f"SELECT checkpoint_ns, checkpoint_id FROM checkpoints WHERE thread_id = {placeholder}", (thread,)
    ).fetchall()
    out = {}
    for ns, cid in rows:
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": cid}}
        out[(ns, cid)] = json.loads(json.dumps(snapshot_record(graph.get_state(config)), default=str))
    return out


def _resume(saver: Any, thread: str) -> Any:
    """Resume a waiting thread: its interrupts answered by id, or a breakpoint run on."""
    from langgraph.types import Command

    graph = _graph(thread, saver)
    config = {"configurable": {"thread_id": thread}}
    pending = graph.get_state(config).interrupts
    out = graph.invoke(Command(resume={i.id: _answer(i.value) for i in pending}) if pending else None, config)
    return json.loads(json.dumps(_without_ids(out), default=str))


def _answer(question: Any) -> Any:
    """An answer to an interrupt: approve a human-in-the-loop middleware's request, else "yes"."""
    if isinstance(question, dict) and "action_requests" in question:
        return {"decisions": [{"type": "approve"} for _ in question["action_requests"]]}
    return "yes"


def _without_ids(value: Any) -> Any:
    """A result without the ids a run makes up (message ids, tool call ids: fresh on each run)."""
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items() if k not in ("id", "tool_call_id")}
    if isinstance(value, list | tuple):
        return [_without_ids(v) for v in value]
    if hasattr(value, "model_dump"):
        return _without_ids(value.model_dump())
    return value


def _sqlite_saver(path: Path) -> tuple[Any, Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    return SqliteSaver(conn), conn


@pytest.mark.parametrize("db", DBS)
def test_apply_keeps_every_state_langgraph_reads_and_every_resume(run, db, tmp_path):
    original, pruned = tmp_path / "original.sqlite", tmp_path / "pruned.sqlite"
    shutil.copy(SAMPLES / f"{db}.sqlite", original)
    shutil.copy(SAMPLES / f"{db}.sqlite", pruned)
    plan = json.loads(run("prune", "--keep-last", "1", "--json", "--db", str(pruned)).out)
    r = run("prune", "--keep-last", "1", "--apply", "--yes", "--json", "--db", str(pruned))
    assert r.code == 0, r.err
    done = json.loads(r.out)
    assert done["applied"] is True
    assert done["dropped"] == plan["drop"]
    assert {t["thread_id"]: t["dropped"] for t in done["threads"]} == {
        t["thread_id"]: t["drop"] for t in plan["threads"] if t["drop"]
    }
    assert all(t["status"] == "pruned" for t in done["threads"])
    with sqlite3.connect(pruned) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        left = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
    with sqlite3.connect(original) as conn:
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == left + plan["drop"]
    waiting = {
        t["thread_id"]
        for t in json.loads(run("threads", "-s", "interrupted", "--json", "--db", str(original)).out or "[]")
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (a, a_conn), (b, b_conn) = _sqlite_saver(original), _sqlite_saver(pruned)
        for thread in _threads(db):
            before, after = _states(a, a_conn, thread), _states(b, b_conn, thread)
            assert set(after) <= set(before), thread
            assert {k: before[k] for k in after} == after, thread  # every kept checkpoint reads the same
            # the newest checkpoint stays (a subgraph's go with the parent checkpoint that ran it)
            assert ("", max(cid for ns, cid in before if ns == "")) in after, thread
        for thread in sorted(waiting):
            assert _resume(a, thread) == _resume(b, thread), thread
        a_conn.close()
        b_conn.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_apply_keeps_a_deepagents_thread_files_and_messages(run, kind, tmp_path, request):
    """A thread with delta channels whose snapshots let older checkpoints go: LangGraph rebuilds
    the same files and messages at every checkpoint left."""
    from contextlib import contextmanager

    from deep_app import make_deep_agent
    from scripted import say

    @contextmanager
    def saver(db: str):
        if kind == "postgres":
            from langgraph.checkpoint.postgres import PostgresSaver

            with PostgresSaver.from_conn_string(db) as s:
                s.setup()
                yield s
        else:
            from langgraph.checkpoint.sqlite import SqliteSaver

            conn = sqlite3.connect(db, check_same_thread=False)
            yield SqliteSaver(conn)
            conn.close()

    db = request.getfixturevalue("pg_empty") if kind == "postgres" else str(tmp_path / "deep.sqlite")
    config = {"configurable": {"thread_id": "long-deep"}}
    with warnings.catch_warnings(), saver(db) as s:
        warnings.simplefilter("ignore")
        for i in range(30):
            make_deep_agent([say(f"answer {i}")], s).invoke({"messages": [("user", f"question {i}")]}, config)
        before = {
            h.config["configurable"]["checkpoint_id"]: h.values
            for h in make_deep_agent([], s).get_state_history(config)
        }
    plan = json.loads(run("prune", "--keep-last", "3", "--json", "--db", db).out)
    assert plan["drop"] > 0
    assert plan["threads"][0]["kept_because"].get("delta-channel ancestor", 0) > 0
    assert run("prune", "--keep-last", "3", "--apply", "--yes", "--db", db).code == 0
    with warnings.catch_warnings(), saver(db) as s:
        warnings.simplefilter("ignore")
        after = {
            h.config["configurable"]["checkpoint_id"]: h.values
            for h in make_deep_agent([], s).get_state_history(config)
        }
    assert len(after) == len(before) - plan["drop"]
    assert len(after[max(after)]["messages"]) == 60
    for cid, values in after.items():
        assert values == before[cid], cid


def test_postgres_apply(run, pg_scratch):
    """PostgresSaver's tables: the blob versions only dropped checkpoints named go too; LangGraph
    reads every remaining checkpoint as before and the waiting threads resume the same."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    orphans = (
        "SELECT count(*) FROM checkpoint_blobs b WHERE NOT EXISTS (SELECT 1 FROM checkpoints c WHERE "
        "c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns AND "
        "c.checkpoint->'channel_versions'->>b.channel = b.version)"
    )
    threads = [t for db in ("custom", "interrupts", "flow", "deep", "agent") for t in _threads(db)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with PostgresSaver.from_conn_string(pg_scratch) as saver, psycopg.connect(pg_scratch) as conn:
            before = {t: _states(saver, conn, t, "%s") for t in threads}
            blobs, orphaned = (
                conn.execute(q).fetchone()[0] for q in ("SELECT count(*) FROM checkpoint_blobs", orphans)
            )
    plan = json.loads(run("prune", "--keep-last", "1", "--json", "--db", pg_scratch).out)
    r = run("prune", "--keep-last", "1", "--apply", "--yes", "--vacuum", "--json", "--db", pg_scratch)
    assert r.code == 0, r.err
    done = json.loads(r.out)
    assert done["dropped"] == plan["drop"] > 0
    assert sum(t.get("blob_versions", 0) for t in done["threads"]) > 0
    assert done["vacuum"]["bytes_before"] > 0
    with psycopg.connect(pg_scratch) as conn:
        assert conn.execute("SELECT count(*) FROM checkpoint_blobs").fetchone()[0] < blobs
        assert conn.execute(orphans).fetchone()[0] == orphaned  # none left behind, none made
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with PostgresSaver.from_conn_string(pg_scratch) as saver, psycopg.connect(pg_scratch) as conn:
            for t in threads:
                after = _states(saver, conn, t, "%s")
                assert after, t
                assert set(after) <= set(before[t]), t
                assert {k: before[t][k] for k in after} == after, t
            out = _resume(saver, "approval-waiting")
    assert out["decision"] == "yes"


# -- a run writing meanwhile ---------------------------------------------------------------------
def _prune_loop(db: str, until: subprocess.Popen) -> list[dict]:
    """`prune --apply` again and again while the writer runs; the reports."""
    reports = []
    while until.poll() is None or not reports:
        r = subprocess.run(
            [*STATECTL, "prune", "--keep-last", "2", "--apply", "--yes", "--json", "--db", db],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode in (0, 1), r.stderr  # (1: a thread skipped, locked by the writer)
        if r.stdout.strip():
            reports.append(json.loads(r.stdout))
    return reports


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_run_writing_meanwhile_loses_nothing(kind, tmp_path, request):
    """A real LangGraph run appends to a list at every step, turn after turn, while `prune
    --apply` runs over and over: the final state holds every entry of every turn (a pruned
    checkpoint the run built on would lose some), the history that is left is one unbroken
    chain from the newest checkpoint, and the prunes did delete checkpoints."""
    turns = 25
    if kind == "sqlite":
        db = str(tmp_path / "live.sqlite")
        shutil.copy(SAMPLES / "custom.sqlite", db)
    else:
        db = request.getfixturevalue("pg_empty")
    writer = subprocess.Popen(
        [sys.executable, str(HERE / "live_writer.py"), db, str(turns)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout.readline().strip() == "ready"
        reports = _prune_loop(db, writer)
        assert writer.wait(timeout=300) == 0
    finally:
        writer.kill()
    final = subprocess.run(
        [sys.executable, str(HERE / "live_writer.py"), db, "check"], capture_output=True, text=True, timeout=120
    )
    assert final.returncode == 0, final.stderr
    state = json.loads(final.stdout)
    assert state["log"] == [x for i in range(turns) for x in (f"turn {i}", f"a {i}", f"b {i}")]
    assert state["chain_unbroken"]
    assert sum(r["dropped"] for r in reports) > 0


# -- Ctrl+C, locks, full disks, read-only stores -------------------------------------------------
def test_ctrl_c_rolls_the_current_thread_back_and_keeps_the_rest(run, dbs, monkeypatch):
    from statectl.project import prune as applying

    db = dbs["custom"]
    with sqlite3.connect(db) as conn:
        counts = dict(conn.execute("SELECT thread_id, count(*) FROM checkpoints GROUP BY thread_id").fetchall())
    real, calls = applying.SqliteApplier._delete, []

    def delete_then_ctrl_c(self: Any, thread_id: str, drop: list) -> None:
        real(self, thread_id, drop)  # the deletes ran inside the transaction...
        calls.append(thread_id)
        if len(calls) == 3:
            raise KeyboardInterrupt  # ...and Ctrl+C comes before its COMMIT

    monkeypatch.setattr(applying.SqliteApplier, "_delete", delete_then_ctrl_c)
    r = run("prune", "--keep-last", "1", "--apply", "--yes", "--json", "--db", str(db))
    assert r.code == 130
    report = json.loads(r.out)
    assert report["interrupted"] is True
    statuses = {t["thread_id"]: t["status"] for t in report["threads"]}
    assert statuses[calls[2]] == "rolled back (interrupted)"
    assert [s for s in statuses.values() if s == "pruned"] == ["pruned", "pruned"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        now = dict(conn.execute("SELECT thread_id, count(*) FROM checkpoints GROUP BY thread_id").fetchall())
    for t in report["threads"]:
        assert now[t["thread_id"]] == counts[t["thread_id"]] - t["dropped"]
    assert now[calls[2]] == counts[calls[2]]  # the interrupted thread is whole
    # and what is left is a store a second run finishes
    again = json.loads(run("prune", "--keep-last", "1", "--apply", "--yes", "--json", "--db", str(db)).out)
    assert calls[2] in {t["thread_id"] for t in again["threads"]}


def test_a_store_locked_past_the_timeout_skips_every_thread_and_changes_nothing(run, dbs):
    db = dbs["custom"]
    before = digest(db)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
    try:
        r = run("--timeout", "0.3", "prune", "--keep-last", "1", "--apply", "--yes", "--json", "--db", str(db))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert r.code == 1
    report = json.loads(r.out)
    assert report["dropped"] == 0
    assert {t["status"] for t in report["threads"]} == {"skipped: locked"}
    assert digest(db) == before


def test_no_terminal_and_no_yes_refuses_and_writes_nothing(dbs):
    db = dbs["custom"]
    before = digest(db)
    r = subprocess.run(
        [*STATECTL, "prune", "--keep-last", "1", "--apply", "--db", str(db)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 2
    assert r.stderr.startswith("statectl: Delete ")
    assert "confirm with --yes" in r.stderr
    assert len(r.stderr.splitlines()) == 1
    assert digest(db) == before


def test_backup_is_made_first_and_a_full_disk_stops_before_any_delete(run, dbs, tmp_path):
    import resource
    import signal

    db = dbs["custom"]
    before = digest(db)
    target = tmp_path / "backup.sqlite"

    def small_disk() -> None:  # writes past 16 kB fail as on a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (16_384, 16_384))

    r = subprocess.run(
        [*STATECTL, "prune", "--keep-last", "1", "--apply", "--yes", "--backup", str(target), "--db", str(db)],
        capture_output=True,
        text=True,
        preexec_fn=small_disk,
    )
    assert r.returncode == 2, r.stderr
    assert "nothing was deleted" in r.stderr
    assert len(r.stderr.splitlines()) == 1
    assert not target.exists()
    assert digest(db) == before
    # with room: the backup holds the store as it was, and the store is pruned after it
    original = json.loads(run("threads", "--json", "--db", str(db)).out)
    r = run("prune", "--keep-last", "1", "--apply", "--yes", "--backup", str(target), "--vacuum", "--db", str(db))
    assert r.code == 0, r.err
    assert json.loads(run("threads", "--json", "--db", str(target)).out) == original
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    assert "given back" in r.out
    assert db.stat().st_size < target.stat().st_size
    # an existing file is never replaced
    r = run("prune", "--keep-last", "1", "--apply", "--yes", "--backup", str(target), "--db", str(db))
    assert r.code == 2
    assert "exists: not replaced" in r.err


def _as(uid: int) -> Any:
    """A preexec_fn that runs the child as `uid` (as root, tests of permissions need another user)."""

    def become() -> None:
        os.setgid(uid)
        os.setuid(uid)

    return become if os.geteuid() == 0 else None


def test_a_read_only_file_is_said_before_planning(tmp_path):
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="statectl-ro-"))  # (a folder every user may enter)
    try:
        os.chmod(base, 0o755)
        db = base / "custom.sqlite"
        shutil.copy(SAMPLES / "custom.sqlite", db)
        os.chmod(db, 0o444)
        before = digest(db)
        argv = [*STATECTL, "prune", "--keep-last", "1", "--apply", "--yes", "--db"]
        env = {**os.environ, "HOME": str(base)}
        r = subprocess.run([*argv, str(db)], capture_output=True, text=True, preexec_fn=_as(65534), env=env)
        assert r.returncode == 2, r.stderr
        assert "is read-only" in r.stderr
        assert len(r.stderr.splitlines()) == 1
        assert digest(db) == before
        if os.geteuid() == 0:  # a folder on the way this user may not enter: one line, not a crash
            shutil.copy(SAMPLES / "custom.sqlite", tmp_path / "x.sqlite")
            os.chmod(tmp_path, 0o700)
            r = subprocess.run(
                [*argv, str(tmp_path / "x.sqlite")], capture_output=True, text=True, preexec_fn=_as(65534), env=env
            )
            assert r.returncode == 2, r.stderr
            assert r.stderr.strip().endswith("Permission denied")
    finally:
        shutil.rmtree(base)


def test_a_read_only_postgres_role_is_said_before_planning(run, pg_scratch):
    import psycopg

    role = f"statectl_reader_{os.getpid()}"
    with psycopg.connect(pg_scratch, autocommit=True) as conn:
        name = conn.execute("SELECT current_database()").fetchone()[0]
        conn.execute(f"DROP ROLE IF EXISTS {role}")
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw-Secret-1'")
        conn.execute(
            f"GRANT SELECT ON checkpoints, checkpoint_blobs, checkpoint_writes, checkpoint_migrations TO {role}"
        )
        count = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
    try:
        r = run(
            "prune", "--keep-last", "1", "--apply", "--yes", "--db", f"postgresql://{role}:pw-Secret-1@127.0.0.1/{name}"
        )
        assert r.code == 2
        assert "may not DELETE" in r.err
        assert "pw-Secret-1" not in r.err
        assert len(r.err.splitlines()) == 1
        with psycopg.connect(pg_scratch, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
        r = run("prune", "--keep-last", "1", "--apply", "--yes", "--db", pg_scratch)
        assert r.code == 2
        assert "is read-only" in r.err
    finally:
        with psycopg.connect(pg_scratch, autocommit=True) as conn:
            conn.execute("SET default_transaction_read_only = off")
            conn.execute(f'ALTER DATABASE "{name}" RESET default_transaction_read_only')
            assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == count
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


@pytest.mark.parametrize(
    "args, says",
    [
        (["--keep-last", "1", "--apply", "--sql"], "choose one"),
        (["--keep-last", "1", "--backup", "x.sqlite"], "--backup go with --apply"),
        (["--keep-last", "1", "--vacuum"], "--vacuum go with --apply"),
        (["--older-than", "0s", "--apply", "--yes"], "keeps no history"),
        (["--older-than", "2999-01-01", "--apply", "--yes"], "keeps no history"),
    ],
)
def test_usage_errors_change_nothing(run, dbs, args, says):
    db = dbs["custom"]
    before = digest(db)
    r = run("prune", *args, "--db", str(db))
    assert r.code == 2
    assert says in r.err
    assert len(r.err.splitlines()) == 1
    assert digest(db) == before


def test_folders_and_exports_are_refused_with_what_to_do_instead(run, dbs, tmp_path):
    folder = tmp_path / "app"
    shutil.copytree(SAMPLES / ".langgraph_api", folder / ".langgraph_api")
    before = {p: p.read_bytes() for p in (folder / ".langgraph_api").iterdir()}
    r = run("prune", "--keep-last", "1", "--apply", "--yes", "--db", str(folder))
    assert r.code == 2
    assert "DELETE /threads/" in r.err
    assert before == {p: p.read_bytes() for p in (folder / ".langgraph_api").iterdir()}
    exported = tmp_path / "all.json"
    assert run("export", "--all", "-o", str(exported), "--db", str(dbs["agent"])).code == 0
    r = run("prune", "--keep-last", "1", "--apply", "--yes", "--db", str(exported))
    assert r.code == 2
    assert "statectl's own file" in r.err


def test_ctrl_c_right_after_a_commit_reports_the_thread_pruned(run, dbs, monkeypatch):
    from statectl.project import prune as applying

    db = dbs["custom"]
    real, done = applying.Applier._done, []

    def commit_then_ctrl_c(self: Any, out: Any, fresh: Any, changed: bool, began: float) -> Any:
        real(self, out, fresh, changed, began)
        done.append(out.thread_id)
        if len(done) == 2:
            raise KeyboardInterrupt
        return out

    monkeypatch.setattr(applying.Applier, "_done", commit_then_ctrl_c)
    r = run("prune", "--keep-last", "1", "--apply", "--yes", "--json", "--db", str(db))
    assert r.code == 130
    report = json.loads(r.out)
    assert [t["status"] for t in report["threads"]] == ["pruned", "pruned"]
    assert report["dropped"] == sum(t["dropped"] for t in report["threads"]) > 0


def _limited(size: int) -> Any:
    """A preexec_fn: files may not grow past `size` bytes, as on a full disk."""
    import resource
    import signal

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


def test_a_write_that_fails_midway_reports_what_was_done_and_leaves_a_consistent_store(dbs):
    db = dbs["custom"]
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
    r = subprocess.run(
        [*STATECTL, "prune", "--keep-last", "1", "--apply", "--yes", "--json", "--db", str(db)],
        capture_output=True,
        text=True,
        preexec_fn=_limited(40_000),
    )
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.splitlines()) == 1
    assert "cannot write" in r.stderr
    assert "the one in progress was rolled back" in r.stderr
    report = json.loads(r.stdout)  # what was done before it stopped
    assert report["threads"][-1]["status"] == "skipped: error"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        left = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
    assert left == before - report["dropped"]


def test_a_vacuum_that_fails_keeps_the_pruning_and_says_so(run, dbs, monkeypatch):
    from statectl.project import prune as applying

    class FullDisk:
        """The connection, except that VACUUM finds the disk full (as SQLite says it)."""

        def __init__(self, conn: sqlite3.Connection) -> None:
            self._conn = conn

        def __getattr__(self, name: str) -> Any:
            return getattr(self._conn, name)

        def execute(self, sql: str, *args: Any) -> Any:
            if sql == "VACUUM":
                raise sqlite3.OperationalError("database or disk is full")
            return self._conn.execute(sql, *args)

    real = applying.sqlite3.connect
    monkeypatch.setattr(applying.sqlite3, "connect", lambda *a, **k: FullDisk(real(*a, **k)))
    db = dbs["custom"]
    r = run("prune", "--keep-last", "1", "--apply", "--yes", "--vacuum", "--json", "--db", str(db))
    assert r.code == 1
    report = json.loads(r.out)
    assert report["dropped"] > 0
    assert "disk is full" in report["vacuum"]["error"]
    assert "the pruning is done and kept" in report["vacuum"]["error"]
    monkeypatch.undo()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_wal_database_is_left_whole_in_its_own_file(run, dbs):
    """On a WAL database nobody else has open, --apply leaves no -wal or -shm file beside it (the
    writing connection closes last, so SQLite moves the log into the file and removes both; before,
    the reading connection closed last, read-only, and left 250 kB of the pruning in the -wal)."""
    db = dbs["agent"]
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode = wal").fetchone()[0] == "wal"
    before = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
    conn.close()
    assert not Path(f"{db}-wal").exists()
    r = run("prune", "--keep-last", "2", "--apply", "--yes", "--json", "--db", str(db))
    assert r.code == 0, r.err
    dropped = json.loads(r.out)["dropped"]
    assert dropped > 0
    assert sorted(p.name for p in db.parent.iterdir() if p.name.startswith(db.name)) == [db.name]
    alone = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)  # (the file alone, no log)
    assert alone.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0] == before - dropped
    alone.close()


@pytest.mark.parametrize("name", ["agent", "custom", "deep"])
def test_threads_keep_a_preview_after_prune(run, dbs, name):
    """After prune a done thread's PREVIEW was empty: its first human message was in a pruned
    checkpoint. The preview comes from what is left: the newest state's first human message (an
    error and an interrupt's question are on the newest checkpoint, which stays)."""
    db = str(dbs[name])
    before = {t["thread_id"]: t for t in json.loads(run("threads", "--db", db, "--json").out)}
    applied = run("prune", "--keep-last", "1", "--apply", "--yes", "--db", db)
    assert applied.code == 0, applied.err
    after = {t["thread_id"]: t for t in json.loads(run("threads", "--db", db, "--json").out)}
    kept = 0
    for tid, t in before.items():
        if t["checkpoints"] == after[tid]["checkpoints"]:
            continue  # (nothing of this thread went)
        if t.get("error") or t.get("interrupt"):
            assert after[tid]["preview"] == t["preview"], tid
            continue
        said = [
            m["data"]["content"]
            for m in json.loads(run("show", tid, "--db", db, "--json").out)["values"].get("messages", [])
            if isinstance(m, dict) and m.get("data", {}).get("type") == "human"
        ]
        if said:  # the newest state's first human message (the input's, where it is still there)
            assert after[tid]["preview"] == (t["preview"] if t["preview"] in said else said[0]), tid
            kept += 1
    assert kept >= (1 if name != "deep" else 0)
