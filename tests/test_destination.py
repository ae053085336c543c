"""`copy`, `fork --to` and `replay --to` never write into another application's database.

A destination that exists and is not a LangGraph checkpoint store is refused before anything is
written: one line, exit 2, and every file byte for byte as it was (journal mode included). The
foreign databases are built here by hand: they are the other application's. The store being read
is refused as a destination however it is spelled (links, `./`, `~`; a Postgres database through
any URL that reaches it)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import warnings
from pathlib import Path

import pytest
from conftest import digest
from parity import SAMPLES

SRC = SAMPLES / "custom.sqlite"
NOTES = f"{SAMPLES}/custom_app.py:notes_builder"


def _app_db(path: Path, sql: str, wal: bool = False) -> Path:
    """Another application's SQLite file (rollback journal unless `wal`), closed."""
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(sql)
    conn.commit()
    conn.close()
    return path


def _langgraph_db(run, path: Path) -> Path:
    """A checkpoint file LangGraph's SqliteSaver wrote (through a copy of one sample thread)."""
    assert run("copy", "nested", "--db", str(SRC), "--to", str(path)).code == 0
    return path


def _journal(path: Path) -> str:
    """What the file's header says: wal (format 2) or rollback (format 1)."""
    header = path.read_bytes()[:20]
    return "wal" if header[18:20] == b"\x02\x02" else "rollback"


def _folder(path: Path) -> dict[str, dict[str, str]]:
    return {p.name: digest(p) for p in sorted(path.iterdir()) if p.is_file() and not p.is_symlink()}


USERS = "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada');"
FOREIGN = {
    "users": (USERS, "holds table users: not a LangGraph checkpoint store"),
    "users-wal": (USERS, "holds table users: not a LangGraph checkpoint store"),
    "two-apps": (USERS + "CREATE TABLE orders (id INTEGER);", "holds tables orders, users: not a LangGraph"),
    "checkpoints": (
        "CREATE TABLE checkpoints (id INTEGER PRIMARY KEY, saved_at TEXT, data BLOB);",
        "has a `checkpoints` table that LangGraph did not write (its columns: data, id, saved_at)",
    ),
    "writes-only": (
        "CREATE TABLE writes (id INTEGER PRIMARY KEY, author TEXT, body TEXT);",
        "has a `writes` table that LangGraph did not write (its columns: author, body, id)",
    ),
    "hostile-names": (
        'CREATE TABLE "evil\x1b]52;c;cHduZWQ=\x07\nsecond line" (a);'
        + "".join(f"CREATE TABLE t{n} (a);" for n in range(9))
        + f'CREATE TABLE "{"x" * 5000}" (a);',
        "holds tables evil\\x1b]52;c;cHduZWQ=\\x07\\nsecond line, t0, t1, t2, t3, t4 and 5 more: not a",
    ),
    "thousands": (
        "".join(f"CREATE TABLE t{n:05d} (a);" for n in range(3000)),
        "holds tables t00000, t00001, t00002, t00003, t00004, t00005 and at least 994 more: not a",
    ),
    "view": ("CREATE VIEW recent AS SELECT 1 AS one;", "holds view recent: not a LangGraph"),
    "thread_ts": (
        "CREATE TABLE checkpoints (thread_id TEXT, thread_ts TEXT, parent_ts TEXT, checkpoint BLOB, metadata BLOB);",
        "was written by langgraph 0.0.x/0.1.x",
    ),
}


@pytest.mark.parametrize("case", sorted(FOREIGN))
def test_another_applications_sqlite_file_is_refused_untouched(run, tmp_path, case):
    sql, message = FOREIGN[case]
    dest = _app_db(tmp_path / "app.db", sql, wal=case.endswith("-wal"))
    mode = _journal(dest)
    before = _folder(tmp_path)
    r = run("copy", "fanout", "--db", str(SRC), "--to", str(dest))
    assert r.code == 2, r.err
    assert r.err.startswith(f"statectl: {dest} "), r.err
    assert message in r.err
    assert len(r.err.splitlines()) == 1
    assert _folder(tmp_path) == before  # byte for byte, and no -wal, -shm or -journal made
    assert _journal(dest) == mode


def test_langgraphs_tables_beside_an_applications_are_refused(run, tmp_path):
    """A checkpoint file that also keeps an application's table (or trigger) is the application's."""
    for extra, what in (
        ("CREATE TABLE users (id INTEGER);", "holds table users"),
        ("CREATE TRIGGER audit AFTER INSERT ON checkpoints BEGIN SELECT 1; END;", "holds trigger audit"),
    ):
        dest = _langgraph_db(run, tmp_path / f"shared-{len(extra)}.sqlite")
        _app_db(dest, extra)
        before = digest(dest)
        r = run("copy", "fanout", "--db", str(SRC), "--to", str(dest))
        assert r.code == 2, r.err
        assert f"{dest} {what}: not a LangGraph checkpoint store" in r.err
        assert digest(dest) == before


def test_a_symlink_to_another_applications_file_is_refused(run, tmp_path):
    app = _app_db(tmp_path / "app.db", USERS)
    link = tmp_path / "link.sqlite"
    link.symlink_to(app)
    before = _folder(tmp_path)
    r = run("copy", "fanout", "--db", str(SRC), "--to", str(link))
    assert r.code == 2
    assert r.err == f"statectl: --to {link} is a symlink: not followed (name the file it points to, or a new file)\n"
    assert _folder(tmp_path) == before
    dangling = tmp_path / "dangling.sqlite"
    dangling.symlink_to(tmp_path / "nowhere.sqlite")
    r = run("copy", "fanout", "--db", str(SRC), "--to", str(dangling))
    assert r.code == 2
    assert r.err.startswith(f"statectl: --to {dangling} is a symlink: not followed")
    assert not (tmp_path / "nowhere.sqlite").exists()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_text("name,age\nada,36\n"), "is not a SQLite database"),
        (lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200), "as SQLite: file is not a database"),
        (lambda p: p.mkdir(), "is a folder"),
        (lambda p: os.mkfifo(p), "is not a regular file"),
    ],
    ids=["text", "corrupt", "folder", "fifo"],
)
def test_what_is_not_a_database_is_refused(run, tmp_path, make, message):
    dest = tmp_path / "dest.sqlite"
    make(dest)
    before = _folder(tmp_path)
    r = run("copy", "fanout", "--db", str(SRC), "--to", str(dest))
    assert r.code == 2, r.err
    assert message in r.err
    assert len(r.err.splitlines()) == 1, r.err
    assert _folder(tmp_path) == before


@pytest.mark.parametrize("to", ["/sys/statectl-x.sqlite", "/proc/statectl-x.sqlite", "/sys/kernel/statectl-x.sqlite"])
def test_a_place_the_file_system_refuses_is_one_line(run, to):
    """The folder's permissions allow it (root), the file system does not."""
    r = run("copy", "fanout", "--db", str(SRC), "--to", to)
    assert r.code == 2, r.err
    assert r.err.startswith(f"statectl: cannot create {to}: ")
    assert len(r.err.splitlines()) == 1
    assert not Path(to).exists()


def test_sqlites_own_files_beside_a_database_are_refused(run, tmp_path):
    dest = _langgraph_db(run, tmp_path / "lg.sqlite")
    for suffix in ("-wal", "-journal", "-shm"):
        side = Path(f"{dest}{suffix}")
        side.write_bytes(b"")
        r = run("copy", "fanout", "--db", str(SRC), "--to", str(side))
        assert r.code == 2
        assert r.err.startswith(f"statectl: {side} is SQLite's own file beside {dest}")
        assert side.read_bytes() == b""
        side.unlink()


@pytest.mark.parametrize("kind", ["empty-file", "empty-database", "with-a-store"])
def test_an_empty_file_or_langgraphs_own_tables_are_written(run, tmp_path, kind):
    """An empty file, a SQLite database with no tables, and a checkpoint file that keeps
    LangGraph's SqliteStore beside the checkpoints are LangGraph's to write."""
    from langgraph.store.sqlite import SqliteStore

    dest = tmp_path / "dest.sqlite"
    if kind == "empty-file":
        dest.write_bytes(b"")
    elif kind == "empty-database":
        _app_db(dest, "CREATE TABLE t (x); DROP TABLE t;")
        assert dest.read_bytes()[:16] == b"SQLite format 3\x00"
    else:
        _langgraph_db(run, dest)
        conn = sqlite3.connect(dest, check_same_thread=False, isolation_level=None)
        store = SqliteStore(conn)
        store.setup()
        store.put(("notes",), "a", {"text": "kept"})
        conn.close()
    r = run("copy", "fanout", "--db", str(SRC), "--to", str(dest))
    assert r.code == 0, r.err
    ids = {t["thread_id"] for t in json.loads(run("threads", "--db", str(dest), "--json").out)}
    assert ids == ({"fanout", "nested"} if kind == "with-a-store" else {"fanout"})
    if kind == "with-a-store":
        conn = sqlite3.connect(dest, check_same_thread=False, isolation_level=None)
        assert SqliteStore(conn).get(("notes",), "a").value == {"text": "kept"}
        conn.close()


def test_the_source_is_refused_however_it_is_named(run, tmp_path, monkeypatch):
    src = tmp_path / "src.sqlite"
    shutil.copy(SRC, src)
    (tmp_path / "sym.sqlite").symlink_to(src)
    os.link(src, tmp_path / "hard.sqlite")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    before = _folder(tmp_path)
    for db, to in (
        ("src.sqlite", "./src.sqlite"),
        ("sym.sqlite", "hard.sqlite"),
        ("~/src.sqlite", str(src)),
        (str(src), "~/hard.sqlite"),
    ):
        r = run("copy", "fanout", "--db", db, "--to", to)
        assert r.code == 2, (db, to, r.err)
        assert r.err.startswith(f"statectl: --to names the database being read ({to})"), (db, to, r.err)
    r = run("copy", "fanout", "--db", "src.sqlite", "--to", "sym.sqlite")  # (a link is never followed)
    assert r.err.startswith("statectl: --to sym.sqlite is a symlink: not followed"), r.err
    assert _folder(tmp_path) == before


@pytest.mark.parametrize("command", ["fork", "replay"])
def test_fork_and_replay_to_another_applications_file_write_nothing(run, tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    shutil.copy(SRC, tmp_path / "custom.sqlite")
    dest = _app_db(tmp_path / "app.db", USERS)
    before = _folder(tmp_path)
    extra = ["--set", "count=1"] if command == "fork" else []
    r = run(command, "notes-edits", "1", "--db", "custom.sqlite", "--graph", NOTES, "--to", str(dest), *extra)
    assert r.code == 2, r.err
    assert r.err == (
        f"statectl: {dest} holds table users: not a LangGraph checkpoint store "
        "(copy into a new file, or a store LangGraph's saver writes)\n"
    )
    assert _folder(tmp_path) == before


# -- Postgres ---------------------------------------------------------------------------------------
def _pg(url: str, *sql: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows: list[tuple] = []
        for statement in sql:
            cur = conn.execute(statement)
            rows = cur.fetchall() if cur.description else []
        return rows


def _pg_objects(url: str) -> list[tuple]:
    """Every relation of the database outside the catalogs, with its columns and rows (tables)."""
    rels = _pg(
        url,
        "SELECT n.nspname, c.relname, c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') ORDER BY 1, 2",
    )
    out = []
    for schema, name, kind in rels:
        rows = _pg(url, f'SELECT * FROM "{schema}"."{name}" ORDER BY 1') if kind in ("r", "v") else []
        out.append((schema, name, kind, rows))
    return out


PG_FOREIGN = {
    "checkpoints": (
        ["CREATE TABLE checkpoints (id serial PRIMARY KEY, saved_at timestamptz, data bytea)"],
        "the table public.checkpoints is not LangGraph's (its columns: data, id, saved_at)",
    ),
    "checkpoint_writes": (
        ["CREATE TABLE checkpoint_writes (id int, author text)", "INSERT INTO checkpoint_writes VALUES (1, 'ada')"],
        "the table public.checkpoint_writes is not LangGraph's (its columns: author, id)",
    ),
    "a-view": (
        ["CREATE VIEW checkpoints AS SELECT 1 AS thread_id"],
        "public.checkpoints is not a table (a view)",
    ),
    "shallow": ([], "holds ShallowPostgresSaver's tables"),
}


@pytest.mark.parametrize("case", sorted(PG_FOREIGN))
def test_a_foreign_table_under_langgraphs_name_in_postgres_is_refused(run, pg_empty, case):
    sql, message = PG_FOREIGN[case]
    _pg(pg_empty, "CREATE TABLE users (id int, name text)", "INSERT INTO users VALUES (1, 'ada')", *sql)
    if case == "shallow":
        from langgraph.checkpoint.postgres.shallow import ShallowPostgresSaver

        with warnings.catch_warnings():  # (deprecated, still in use)
            warnings.simplefilter("ignore", DeprecationWarning)
            with ShallowPostgresSaver.from_conn_string(pg_empty) as saver:
                saver.setup()
    before = _pg_objects(pg_empty)
    r = run("copy", "fanout", "--db", str(SRC), "--to", pg_empty)
    assert r.code == 2, r.err
    assert r.err.startswith(f"statectl: {pg_empty}"), r.err
    assert message in r.err
    assert len(r.err.splitlines()) == 1
    assert _pg_objects(pg_empty) == before  # no table, index or migration row added


def test_postgres_writes_in_the_schema_its_search_path_names(run, pg_empty):
    """A foreign `checkpoints` in the schema the URL's search_path names is refused; with the
    search path on an empty schema, the copy goes there and the foreign table is left alone. An
    application's tables beside LangGraph's are its neighbours: allowed."""
    from urllib.parse import quote

    _pg(
        pg_empty,
        "CREATE SCHEMA app",
        "CREATE SCHEMA lg",
        "CREATE TABLE app.checkpoints (id int, data text)",
        "CREATE TABLE app.users (id int)",
    )
    in_app = f"{pg_empty}?options={quote('-csearch_path=app')}"
    in_lg = f"{pg_empty}?options={quote('-csearch_path=lg,app')}"
    before = _pg_objects(pg_empty)
    r = run("copy", "fanout", "--db", str(SRC), "--to", in_app)
    assert r.code == 2, r.err
    assert "the table app.checkpoints is not LangGraph's (its columns: data, id)" in r.err
    assert _pg_objects(pg_empty) == before
    r = run("copy", "fanout", "--db", str(SRC), "--to", in_lg)
    assert r.code == 0, r.err
    _pg(pg_empty, "CREATE TABLE lg.users (id int)")  # (an application's table beside LangGraph's)
    assert run("copy", "nested", "--db", str(SRC), "--to", in_lg).code == 0
    assert _pg(pg_empty, "SELECT DISTINCT thread_id FROM lg.checkpoints ORDER BY 1") == [("fanout",), ("nested",)]
    assert _pg(pg_empty, "SELECT count(*) FROM app.checkpoints") == [(0,)]
    assert _pg(pg_empty, "SELECT to_regclass('public.checkpoints')") == [(None,)]
    # a store in a schema of its own is read where its URL says (statectl's session options
    # replaced the URL's: it read `public`, which holds no checkpoints)
    ids = {t["thread_id"] for t in json.loads(run("threads", "--db", in_lg, "--json").out)}
    assert ids == {"fanout", "nested"}


@pytest.fixture
def pg_password_role(pg_server):
    """A role that logs in over TCP with a password (this server trusts the socket only)."""
    name, password = f"statectl_probe_{os.getpid()}", "s3cret"
    _pg("postgresql:///postgres", f"DROP ROLE IF EXISTS {name}", f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")
    yield name, password
    _pg("postgresql:///postgres", f"DROP OWNED BY {name}", f"DROP ROLE IF EXISTS {name}")


def test_the_same_postgres_database_through_another_url_is_refused(run, pg_scratch, pg_password_role):
    """The server says which database a URL reaches: four spellings of the one being read."""
    from urllib.parse import quote

    role, password = pg_password_role
    name = pg_scratch.rsplit("/", 1)[1]
    _pg(pg_scratch, f'GRANT CONNECT ON DATABASE "{name}" TO {role}')
    before = _pg_objects(pg_scratch)
    for to in (
        f"postgresql://{quote('/var/run/postgresql', safe='')}/{name}?application_name=other",
        f"host=/var/run/postgresql dbname={name}",
        f"postgresql://{role}:{password}@127.0.0.1:5432/{name}?sslmode=disable",
        f"postgresql:///{name}?options={quote('-csearch_path=public')}",
    ):
        r = run("copy", "--all", "--db", pg_scratch, "--to", to, "--replace")
        assert r.code == 2, (to, r.err)
        assert r.err.startswith("statectl: --to names the database being read"), (to, r.err)
        assert password not in r.err
    assert _pg_objects(pg_scratch) == before
    # the same database, another schema: another store
    _pg(pg_scratch, "CREATE SCHEMA other")
    r = run("copy", "fanout", "--db", pg_scratch, "--to", f"{pg_scratch}?options={quote('-csearch_path=other')}")
    assert r.code == 0, r.err
    assert _pg(pg_scratch, "SELECT DISTINCT thread_id FROM other.checkpoints") == [("fanout",)]


def test_a_saver_that_fails_on_a_changed_langgraph_table_is_one_line(run, pg_empty):
    """LangGraph's tables with a column an application added (NOT NULL, no default): the check
    lets them through (LangGraph adds columns too); the saver's failure is one line, without
    Postgres' DETAIL (it quotes the failing row: the thread's data), and nothing is written."""
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(pg_empty) as saver:
        saver.setup()
    _pg(pg_empty, "ALTER TABLE checkpoints ADD COLUMN owner text NOT NULL")
    r = run("copy", "fanout", "--db", str(SRC), "--to", pg_empty)
    assert r.code == 2, r.err
    assert r.err == (
        'statectl: writing failed: NotNullViolation: null value in column "owner" of relation '
        '"checkpoints" violates not-null constraint\n'
    )
    assert _pg(pg_empty, "SELECT count(*) FROM checkpoints") == [(0,)]
