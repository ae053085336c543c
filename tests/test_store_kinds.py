"""One contract every store kind statectl writes passes, duty by duty (`core.store_kinds`): the
SQL `prune --sql` prints for it and what a `--to` destination of its kind must hold, held against
a real SQLite file and a real Postgres database that LangGraph's savers wrote. A duty declared
on `StoreKind` that no test here names fails the first test."""

from __future__ import annotations

import json
import operator
import sqlite3
import subprocess
import typing
from typing import Annotated, TypedDict

import pytest

from statectl.core.destination import destination
from statectl.core.store_kinds import STORE_KINDS, PostgresKind, SqliteKind, StoreKind, store_kind
from statectl.errors import StatectlError
from statectl.project.write_targets import TARGETS
from statectl.sources import open_source

KINDS = ("sqlite", "postgres")
DUTIES = {
    "kind": "test_the_registry",
    "tables": "test_tables_are_what_langgraph_creates",
    "writes_table": "test_prune_sql_runs_on_the_store",
    "blob_per_version": "test_blob_per_version_is_the_savers_layout",
    "js_bytes_as_text": "test_js_bytes_as_text_is_how_langgraph_js_reads_them",
    "claims": "test_claims",
    "destination": "test_destination",
    "literal": "test_literal_reads_back_exactly",
    "sql_begin": "test_prune_sql_runs_on_the_store",
    "delete_checkpoints": "test_prune_sql_runs_on_the_store",
    "sql_end": "test_prune_sql_runs_on_the_store",
}
"""Every duty a writable store kind declares, and the test that holds each kind to it."""

HOSTILE = (
    "evil [red]x[/] \x1b[2J\x1b]0;pwn\x07 \u202e",
    "it's a \\' OR true -- back\\slash",
    "tab\there\nnewline",
    "plain-thread",
)
"""Thread ids a store may hold: escapes, markup, a bidi override, quotes and backslashes."""


def test_every_declared_duty_is_tested():
    declared = set(StoreKind.__abstractmethods__) | set(typing.get_type_hints(StoreKind))
    assert declared == set(DUTIES)
    for test in DUTIES.values():
        assert callable(globals()[test]), test


def test_the_registry():
    """Each kind's class declares every duty under the sources' kind; the kinds statectl writes
    are the kinds it has a declaration of; the kinds it reads but does not write have none."""
    assert set(STORE_KINDS) == set(KINDS) == set(TARGETS)
    assert STORE_KINDS["sqlite"] is SqliteKind
    assert STORE_KINDS["postgres"] is PostgresKind
    for kind, cls in STORE_KINDS.items():
        assert cls.kind == kind == TARGETS[kind].kind
        assert not cls.__abstractmethods__
        assert store_kind(kind) is cls
    for kind in ("folder", "export", "server", "", "SQLITE"):
        assert store_kind(kind) is None


# -- a store of each kind, written by LangGraph ---------------------------------------------------
class Counter(TypedDict):
    n: Annotated[int, operator.add]


@pytest.fixture(params=KINDS)
def kind(request):
    return request.param


@pytest.fixture
def empty(kind, tmp_path, request) -> str:
    """Where a store of `kind` goes: a new SQLite file, or an empty Postgres database."""
    if kind == "sqlite":
        return str(tmp_path / "dest.sqlite")
    return request.getfixturevalue("pg_empty")


def _saver(where: str):
    if where.startswith("postgresql:"):
        from langgraph.checkpoint.postgres import PostgresSaver

        return PostgresSaver.from_conn_string(where)
    from contextlib import contextmanager

    from langgraph.checkpoint.sqlite import SqliteSaver

    @contextmanager
    def opened():
        conn = sqlite3.connect(where, check_same_thread=False)
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()

    return opened()


@pytest.fixture
def written(empty) -> str:
    """A store of `kind` holding real runs of a one-node graph, one thread a hostile id."""
    return _write(empty)


def _write(empty: str) -> str:
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(Counter)
    g.add_node("step", lambda s: {"n": 1})
    g.add_edge(START, "step")
    g.add_edge("step", END)
    with _saver(empty) as saver:
        saver.setup()
        graph = g.compile(checkpointer=saver)
        for thread in HOSTILE:
            for _ in range(4):
                graph.invoke({"n": 1}, {"configurable": {"thread_id": thread}})
    return empty


def _query(where: str, sql: str, args: tuple = ()) -> list[tuple]:
    if where.startswith("postgresql:"):
        import psycopg

        with psycopg.connect(where) as conn:
            return conn.execute(sql.replace("?", "%s"), args).fetchall()
    with sqlite3.connect(where) as conn:
        return conn.execute(sql, args).fetchall()


def _exec(where: str, sql: str) -> None:
    """One statement, committed."""
    if where.startswith("postgresql:"):
        import psycopg

        with psycopg.connect(where, autocommit=True) as conn:
            conn.execute(sql)
        return
    conn = sqlite3.connect(where)
    try:
        with conn:
            conn.execute(sql)
    finally:
        conn.close()


def _ids(where: str, thread_id: str) -> list[str]:
    """LangGraph's own reading of a thread's checkpoint ids, newest first."""
    with _saver(where) as saver:
        return [
            t.config["configurable"]["checkpoint_id"]
            for t in saver.list({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        ]


def _values(where: str, thread_id: str) -> dict:
    with _saver(where) as saver:
        return saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}).checkpoint[
            "channel_values"
        ]


def _run_script(where: str, script: str) -> None:
    """The script as a user runs it: sqlite3's shell, or psql stopping at the first error."""
    if where.startswith("postgresql:"):
        cmd = ["psql", "-q", "-X", "-v", "ON_ERROR_STOP=1", where]
    else:
        cmd = ["sqlite3", "-bail", where]
    done = subprocess.run(cmd, input=script.encode(), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not done.stderr, done.stderr


# -- the duties -----------------------------------------------------------------------------------
def test_prune_sql_runs_on_the_store(run, kind, written):
    """`prune --sql` in the kind's dialect (`sql_begin`, the deletes from `writes_table` and
    `delete_checkpoints`, `sql_end`), run by the kind's own shell: exactly the planned checkpoints
    of each hostile thread go, with their writes (and, Postgres, the blob versions only they
    named); LangGraph reads every thread's latest state as before; nothing raw reaches the
    terminal. A second plan is empty, and its script runs and changes nothing."""
    plan = json.loads(run("prune", "--keep-last", "2", "--json", "--db", written).out)
    dropped = {p["thread_id"]: {d["checkpoint_id"] for d in p["dropped"]} for p in plan["threads"]}
    assert set(dropped) == set(HOSTILE)
    assert all(dropped.values())
    before = {t: (_ids(written, t), _values(written, t)) for t in HOSTILE}
    held = STORE_KINDS[kind].writes_table
    writes = {(t, c) for t, c in _query(written, f"SELECT thread_id, checkpoint_id FROM {held}")}
    assert {(t, c) for t in dropped for c in dropped[t]} & writes  # (the plan drops checkpoints with writes)
    script = run("prune", "--keep-last", "2", "--sql", "--db", written).out
    assert script.isascii()
    assert all(line.isprintable() for line in script.splitlines())
    assert script.splitlines()[-1] == "COMMIT;"
    _run_script(written, script)
    for t, (ids, values) in before.items():
        assert _ids(written, t) == [c for c in ids if c not in dropped[t]]
        assert len(_ids(written, t)) == 2
        assert _values(written, t) == values
    remaining = {(t, c) for t, c in _query(written, f"SELECT thread_id, checkpoint_id FROM {held}")}
    assert remaining == {(t, c) for t, c in writes if c not in dropped[t]}
    if kind == "postgres":  # every blob version left is one a remaining checkpoint names
        unnamed = _query(
            written,
            "SELECT count(*) FROM checkpoint_blobs b WHERE NOT EXISTS (SELECT 1 FROM checkpoints c WHERE "
            "c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns AND "
            "c.checkpoint->'channel_versions'->>b.channel = b.version)",
        )
        assert unnamed == [(0,)]
    again = run("prune", "--keep-last", "2", "--sql", "--db", written).out
    assert "DELETE" not in again
    assert again.splitlines()[-1] == "COMMIT;"
    _run_script(written, again)
    assert {t: _ids(written, t) for t in HOSTILE} == {
        t: [c for c in before[t][0] if c not in dropped[t]] for t in HOSTILE
    }


def test_literal_reads_back_exactly(kind, written):
    """A literal names its text exactly in the kind's database, printable or not (Postgres:
    whether the server reads strings the standard way or the old one), and is itself printable:
    printing it sends nothing raw to the terminal."""
    literal = STORE_KINDS[kind].literal
    texts = (*HOSTILE, "", "'", "\\", "''\\\\", "ünïcødé ✓", "\u200b", "\U0001f600", "\x7f\x9b")
    for text in texts:
        assert literal(text).isprintable(), text
    if kind == "sqlite":
        with sqlite3.connect(written) as conn:
            for text in texts:
                assert conn.execute(f"SELECT {literal(text)}").fetchone()[0] == text
        return
    import psycopg

    with psycopg.connect(written, autocommit=True) as conn:
        conn.execute("SET escape_string_warning = off")
        for setting in ("on", "off"):
            conn.execute(f"SET standard_conforming_strings = {setting}")
            for text in texts:
                assert conn.execute(f"SELECT {literal(text)}").fetchone()[0] == text, (setting, text)


def test_tables_are_what_langgraph_creates(kind, empty):
    """Every table LangGraph's savers create in a store of the kind (SQLite: SqliteSaver's, and
    SqliteStore's beside them) is declared, with at least the columns declared."""
    tables = STORE_KINDS[kind].tables
    with _saver(empty) as saver:
        saver.setup()
    if kind == "sqlite":
        from langgraph.store.sqlite import SqliteStore

        conn = sqlite3.connect(empty, check_same_thread=False)
        SqliteStore(conn).setup()
        conn.close()
        made = [n for (n,) in _query(empty, "SELECT name FROM sqlite_master WHERE type = 'table'")]
        columns = {n: {c for (c,) in _query(empty, "SELECT name FROM pragma_table_info(?)", (n,))} for n in made}
    else:
        rows = _query(
            empty,
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()",
        )
        columns = {}
        for table, column in rows:
            columns.setdefault(table, set()).add(column)
    assert {"checkpoints", STORE_KINDS[kind].writes_table} <= set(columns)
    assert set(columns) <= set(tables)
    for name, cols in columns.items():
        assert tables[name] <= cols, name


def test_blob_per_version_is_the_savers_layout(kind, written):
    """The layout LangGraph's saver of the kind writes: a blob a channel version beside the
    checkpoints (in a table the kind declares), or none."""
    blobs = "checkpoint_blobs"
    assert (blobs in STORE_KINDS[kind].tables) == STORE_KINDS[kind].blob_per_version
    if STORE_KINDS[kind].blob_per_version:
        assert _query(written, f"SELECT count(*) FROM {blobs}")[0][0] > 0
    else:
        assert not _query(written, "SELECT name FROM sqlite_master WHERE name LIKE '%blob%'")


JS = {"sqlite": ("js.sqlite", "js.jsonl"), "postgres": ("js_postgres.sql", "js_pg.jsonl")}
"""A store LangGraph.js's saver of each kind wrote, and what LangGraph.js read back from it."""


def test_js_bytes_as_text_is_how_langgraph_js_reads_them(kind, empty, tmp_path):
    """A task that returned raw bytes, in a store LangGraph.js's saver of the kind wrote: its
    result as LangGraph.js itself reported it (the bytes, or their text with U+FFFD where they are
    not UTF-8), which differs from the stored bytes exactly where the kind says so. Also, a fork
    of that store loses a branch's value only where the kind stores a blob a channel version."""
    import base64
    import shutil

    from parity import SAMPLES

    import statectl

    dump, expected = JS[kind]
    if kind == "sqlite":
        shutil.copy(SAMPLES / dump, tmp_path / dump)
        where = str(tmp_path / dump)
    else:
        cmd = ["psql", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(SAMPLES / dump), empty]
        subprocess.run(cmd, check=True, capture_output=True, timeout=120)
        where = empty
    records = [json.loads(line) for line in (SAMPLES / "expected" / expected).read_text().splitlines()]
    [(cid, want)] = [
        (r["checkpoint_id"], t["result"]["raw"])
        for r in records
        if r["thread_id"] == "js-values"
        for t in r.get("tasks", [])
        if isinstance(t.get("result"), dict) and "raw" in t["result"]
    ]
    with statectl.open(where) as store:
        [task] = [t for t in store.snapshot("js-values", cid).to_json()["tasks"] if t.get("result")]
        stored = base64.b64decode(store.snapshot("js-values").to_json()["values"]["raw"]["$bytes"])
        lost = any(
            "written on two branches" in n for t in store.threads() for s in store.history(t.thread_id) for n in s.notes
        )
    assert task["result"]["raw"] == want
    assert (base64.b64decode(want["$bytes"]) != stored) == STORE_KINDS[kind].js_bytes_as_text
    assert lost == STORE_KINDS[kind].blob_per_version


def test_claims(kind, tmp_path):
    """`--to` goes to the first kind in `STORE_KINDS` that claims it: each kind's spellings go to
    it; a server's URL to none."""
    specs = {
        "sqlite": ["x.sqlite", str(tmp_path / "a b.db"), "~/x.db", "./rel/x", "file.sqlite?mode=ro"],
        "postgres": ["postgresql:///db", "postgres://u@h:5/db", "dbname=x host=y", "host=/tmp dbname=x"],
    }

    def first(spec: str) -> str | None:
        return next((k.kind for k in STORE_KINDS.values() if k.claims(spec)), None)

    for spec in specs[kind]:
        assert first(spec) == kind, spec
    for spec in ("http://localhost:2024", "https://x.example/threads"):
        assert first(spec) is None


def test_destination(kind, empty, tmp_path):
    """A store of the kind checked as `--to`: a new or empty one, or one LangGraph wrote, is
    taken, as the kind; the store being read is refused; one holding a table under LangGraph's
    name that LangGraph did not write is refused, and left as it was."""
    import shutil

    from parity import SAMPLES

    declared = STORE_KINDS[kind]
    shutil.copy(SAMPLES / "custom.sqlite", tmp_path / "read.sqlite")
    elsewhere = open_source(str(tmp_path / "read.sqlite"))
    try:
        got = declared.destination(empty, elsewhere, None)
        assert (got.kind, got.spec, got.new) == (kind, empty, kind == "sqlite")
        written = _write(empty)
        got = destination(written, elsewhere, None)  # (one LangGraph wrote)
        assert (got.kind, got.spec, got.new) == (kind, written, False)
        reading = open_source(written)
        try:
            with pytest.raises(StatectlError, match="--to names the database being read"):
                declared.destination(written, reading, written)
        finally:
            reading.close()
        _exec(written, f"DROP TABLE {declared.writes_table}")
        _exec(written, f"CREATE TABLE {declared.writes_table} (id INTEGER, note TEXT)")
        before = _query(written, f"SELECT count(*) FROM {declared.writes_table}")
        with pytest.raises(StatectlError, match="not a LangGraph checkpoint store"):
            destination(written, elsewhere, None)
        assert _query(written, f"SELECT count(*) FROM {declared.writes_table}") == before
    finally:
        elsewhere.close()


# -- the kinds statectl reads but does not write --------------------------------------------------
def _source_kinds() -> set[str]:
    """The `kind` of every checkpoint source class statectl has."""
    import importlib
    import pkgutil

    import statectl.sources
    from statectl.sources.base import Source

    for info in pkgutil.walk_packages(statectl.sources.__path__, "statectl.sources."):
        if ".memory" not in info.name:
            importlib.import_module(info.name)
    found, todo = set(), list(Source.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        found.add(cls.kind)
    return found


def test_every_kind_read_is_written_or_refused():
    """A kind a source reads is a kind statectl writes, or `prune --apply` and `migrate` each
    say in one line why they do not write it, and what to do instead."""
    from statectl.cli import migrate, storage

    kinds = _source_kinds()
    assert set(STORE_KINDS) < kinds
    assert {"export", "folder", "server"} <= kinds
    for kind in kinds - set(STORE_KINDS):
        for refused in (storage.REFUSED, migrate.REFUSED):
            line, hint = refused[kind]
            assert line
            assert hint


@pytest.mark.parametrize("command", ["prune", "migrate"])
def test_a_kind_neither_written_nor_refused_is_one_line(run, tmp_path, monkeypatch, command):
    """A source of a kind no class here declares (a new store type, before its writer): the
    writing commands say so in one line, exit 2, and leave the store as it was."""
    import shutil

    from conftest import digest
    from parity import SAMPLES

    from statectl.sources.sqlite import SqliteSource

    db = tmp_path / "custom.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", db)
    before = digest(db)
    monkeypatch.setattr(SqliteSource, "kind", "newkind")
    args = ("--keep-last", "1", "--apply") if command == "prune" else ("--all", "--rename-key", "a=b", "--in-place")
    got = run(command, *args, "--yes", "--db", str(db))
    assert got.code == 2, got.err
    assert got.err == f"statectl: {db}: statectl does not write a store of kind 'newkind'\n"
    assert digest(db) == before
