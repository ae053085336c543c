"""PostgresSaver databases: parity with LangGraph, same answers as SQLite, read-only, bad input.

The database is the sample threads as PostgresSaver wrote them (sample_threads/postgres.sql,
made by `generate.py --postgres`), restored into a real server that conftest starts.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys

import orjson
import psycopg
import pytest
from conftest import check_status_filter, thread_pages
from parity import DBS, SAMPLES, check, check_keyed, expected, knowable, normal, snapshot_json, with_graphs

import statectl
from statectl.sources.export import export_threads

PG_THREADS = len({e["thread_id"] for db in DBS for e in expected(db, ".postgres")})
"""Threads in sample_threads/postgres.sql: the ones LangGraph's recorded history names."""


def _check(store: statectl.Store, db: str) -> int:
    return check(store, expected(db, ".postgres"))


@pytest.mark.parametrize("db", DBS)
def test_postgres_matches_langgraph(pg_samples, db):
    with statectl.open(pg_samples) as store:
        assert _check(store, db) > 0


@pytest.mark.parametrize("db", DBS)
def test_postgres_export_matches_langgraph(pg_samples, db, tmp_path):
    threads = sorted({e["thread_id"] for e in expected(db, ".postgres")})
    with statectl.open(pg_samples) as store:
        doc = export_threads(store.source, threads)
    path = tmp_path / f"{db}.json"
    path.write_bytes(orjson.dumps(doc))
    with statectl.open(str(path)) as store:
        assert _check(store, db) > 0


@pytest.mark.parametrize("db", DBS)
def test_postgres_with_the_graph_is_exact(pg_samples, db):
    """`--graph`: every recorded checkpoint of the Postgres samples, the UNPROVABLE keys and
    the graph's order of pull tasks due together included."""
    held, records = 0, expected(db, ".postgres")
    for graph, mine in with_graphs(records, db):
        with statectl.open(pg_samples) as store:
            store.graph = graph
            held += check(store, mine, exact=True)
    assert held == len(records)


@pytest.mark.parametrize("db", DBS)
def test_one_key_matches_langgraph(pg_samples, db):
    with statectl.open(pg_samples) as store:
        assert check_keyed(store, expected(db, ".postgres")) > 0


def test_writes_without_task_path(pg_scratch):
    """A database from before migration 9 (no `checkpoint_writes.task_path`) gives LangGraph's
    view of every sample checkpoint, but for one thing it cannot know: with no task paths and
    JSONB's own key order in `versions_seen`, the order in which nodes first ran is lost, so two
    pull tasks due in the same step may be listed the other way round (pinned: one checkpoint)."""
    with psycopg.connect(pg_scratch, autocommit=True) as conn:
        conn.execute("ALTER TABLE checkpoint_writes DROP COLUMN task_path")
        conn.execute("DELETE FROM checkpoint_migrations WHERE v >= 9")
    reordered = []
    with statectl.open(pg_scratch) as store:
        assert store.source._task_path == "''"
        for db in DBS:
            for exp in expected(db, ".postgres"):
                got, want = normal(snapshot_json(store, exp)), normal(knowable(exp))
                if got != want:
                    assert _unordered(got) == _unordered(want), (exp["thread_id"], exp["checkpoint_id"])
                    reordered.append((exp["thread_id"], exp["metadata"]["step"], want["next"]))
    assert reordered == [("parent-jump", 2, ["finish", "other"])]
    held = 0  # with the graph (`--graph`), its node order: every checkpoint exact
    for db in DBS:
        for graph, mine in with_graphs(expected(db, ".postgres"), db):
            with statectl.open(pg_scratch) as store:
                store.graph = graph
                held += check(store, mine, exact=True)
    assert held == sum(len(expected(db, ".postgres")) for db in DBS)


def _unordered(snapshot: dict) -> dict:
    return {**snapshot, "next": sorted(snapshot["next"]), "tasks": sorted(snapshot["tasks"], key=lambda t: t["id"])}


def test_one_key_fetches_only_its_blobs(run, pg_samples, pg_scratch):
    """`show --key K` reads K's blob and the bookkeeping channels', no other: with the newest
    `messages` blob made garbage, the whole state fails naming the checkpoint, `todos` still
    shows exactly what it shows on the intact database."""
    with psycopg.connect(pg_scratch, autocommit=True) as conn:
        cid, version = conn.execute(
            "SELECT checkpoint_id, checkpoint->'channel_versions'->>'messages' FROM checkpoints "
            "WHERE thread_id = 'bakery-plan' AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        broken = conn.execute(
            "UPDATE checkpoint_blobs SET blob = '\\xc1'::bytea WHERE thread_id = 'bakery-plan' "
            "AND checkpoint_ns = '' AND channel = 'messages' AND version = %s",
            (version,),
        )
        assert broken.rowcount == 1
    r = run("show", "bakery-plan", "--db", pg_scratch)
    assert r.code != 0, r.err
    assert cid in r.err, r.err
    assert r.err.count("\n") == 1, r.err
    for key in ("todos", "business_idea_complete", "skills_metadata"):
        intact = run("show", "bakery-plan", "--key", key, "--json", "--db", pg_samples)
        got = run("show", "bakery-plan", "--key", key, "--json", "--db", pg_scratch)
        assert got.code == 0, got.err
        assert got.out == intact.out, got.err
        assert list(json.loads(got.out)["values"]) == [key], got.err
    assert run("diff", "bakery-plan", "--db", pg_scratch).code != 0
    intact = run("diff", "bakery-plan", "--key", "todos", "--json", "--db", pg_samples)
    got = run("diff", "bakery-plan", "--key", "todos", "--json", "--db", pg_scratch)
    assert got.code == 0, got.err
    assert got.out == intact.out, got.err
    r = run("show", "bakery-plan", "--key", "nope", "--db", pg_samples)
    assert r.code != 0
    assert "no state key 'nope'" in r.err
    assert "messages" in r.err


def _shape(rows: list[dict]) -> dict:
    return {r["thread_id"]: (r["checkpoints"], r["namespaces"], r["status"]) for r in rows}


def test_same_answers_as_sqlite(run, pg_samples, dbs):
    """Threads, and every step's changed keys, are what the SQLite run of the same graphs gives."""
    pg = json.loads(run("threads", "--db", pg_samples, "--json").out)
    lite = [t for name in DBS for t in json.loads(run("threads", "--db", str(dbs[name]), "--json").out)]
    assert _shape(pg) == _shape(lite)
    assert len(pg) == PG_THREADS
    for thread, name in [
        ("bakery-plan", "agent"),
        ("deep-research", "deep"),
        ("notes-edits", "custom"),
        ("orchestrate-bakery", "orchestrator"),
    ]:
        a = [json.loads(x) for x in run("log", thread, "-p", "--json", "--db", pg_samples).out.splitlines()]
        b = [json.loads(x) for x in run("log", thread, "-p", "--json", "--db", str(dbs[name])).out.splitlines()]
        assert [sorted({c["key"] for c in d["changes"]}) for d in a] == [
            sorted({c["key"] for c in d["changes"]}) for d in b
        ], thread
        assert [d["ran"] for d in a] == [d["ran"] for d in b]


def test_every_command_on_postgres(run, pg_samples):
    for argv in (
        ["log", "bakery-plan"],
        ["show", "investor-email"],
        ["show", "deep-research", "--key", "files"],
        ["diff", "bakery-plan", "12"],
        ["log", "nested", "--json"],
        ["threads", "--sort", "recent"],
        ["schema", "bakery-plan"],
        ["schema", f"{SAMPLES}/agent_app.py:agent", "bakery-plan"],
        ["graph", "--thread", "bakery-plan"],
        ["graph", f"{SAMPLES}/agent_app.py:agent", "--thread", "bakery-plan"],
    ):
        r = run(*argv, "--db", pg_samples)
        assert r.code == 0, (argv, r.err)
        assert r.err == "", (argv, r.err)
    assert "interrupt" in run("show", "investor-email", "--db", pg_samples).out
    r = run("diff", "bakery-plan", "12", "--db", pg_samples)
    assert "~ business_idea_complete: false → true   by tools" in r.out


def test_schema_and_graph_same_as_sqlite(run, pg_samples, dbs):
    """Drift, the inferred graph and the path overlay of a thread: the same on both backends."""
    target = f"{SAMPLES}/agent_app.py:agent"
    for argv in (
        ["schema", target, "bakery-plan", "--json"],
        ["schema", "bakery-plan", "--json"],
        ["graph", "--thread", "bakery-plan"],
        ["graph", target, "--thread", "bakery-plan"],
    ):
        pg, lite = run(*argv, "--db", pg_samples), run(*argv, "--db", str(dbs["agent"]))
        assert pg.code == 0, argv
        assert pg.out == lite.out, argv
        assert pg.out, argv


def test_threads_match(run, pg_samples):
    def ids(db: str, *a: str) -> list[str]:
        return [t["thread_id"] for t in json.loads(run("threads", "--db", db, "--json", *a).out)]

    assert ids(pg_samples, "-m", "APPROVAL") == ["approval-resumed", "approval-waiting"]  # id order
    assert ids(pg_samples, "-m", "es", "--sort", "recent") == [
        t for t in ids(pg_samples, "--sort", "recent") if "es" in t
    ]
    assert ids(pg_samples, "-m", "%") == []
    assert ids(pg_samples, "-m", "_") == []
    page1 = ids(pg_samples, "-m", "e", "--limit", "3")
    page2 = ids(pg_samples, "-m", "e", "--limit", "3", "--after", page1[-1])
    assert page1 + page2 == [t for t in ids(pg_samples) if "e" in t][:6]


def test_threads_keyset_pages(run, pg_samples):
    everything = [t["thread_id"] for t in json.loads(run("threads", "--db", pg_samples, "--json").out)]
    assert everything == sorted(everything)  # Postgres' default order: thread id, index-only paging
    pages = thread_pages(run, pg_samples, 4)
    assert [len(p) for p in pages] == [4] * (PG_THREADS // 4) + [PG_THREADS % 4] * (PG_THREADS % 4 > 0)
    assert [t for p in pages for t in p] == everything
    r = run("threads", "--db", pg_samples, "--limit", "4")
    assert f"next page: --after {everything[3]}" in r.out
    assert r.out.startswith(f"threads in {pg_samples} (4 shown;")  # (counting would read the whole index)
    # a first page that holds every thread counts them (id order, as newest first does)
    assert run("threads", "--db", pg_samples, "--limit", "0").out.startswith(f"{len(everything)} threads in ")
    assert run("threads", "--db", pg_samples, "-m", "approval-w").out.startswith("1 thread matching 'approval-w' in ")
    recent = json.loads(run("threads", "--db", pg_samples, "--json", "--sort", "recent").out)
    ids = [t["latest_checkpoint_id"] for t in recent]
    assert ids == sorted(ids, reverse=True)
    assert len(recent) == len(everything)
    r = run("threads", "--db", pg_samples, "--after", "no-such-thread")
    assert r.code == 3
    assert "no thread 'no-such-thread' to page after" in r.err


@pytest.mark.parametrize("extra", [[], ["-m", "e"]])
def test_newest_first_is_ordered_and_cut_by_postgres(run, pg_samples, monkeypatch, extra):
    """Newest first (`--sort recent`), a page is ordered and cut by Postgres, going on after the
    `--after` thread's newest checkpoint, and every thread is read from a cursor a chunk at a
    time: no list of every thread is held. The pages join up to the whole order (ties by id),
    the chunks too, and the title says how many threads there are."""
    from statectl.sources.postgres import PostgresSource

    with statectl.open(pg_samples) as store:
        rows = store.source._query(
            "SELECT thread_id, max(checkpoint_id) FROM checkpoints GROUP BY 1 ORDER BY 2 DESC, 1 DESC"
        )
        want = [t for t, _ in rows if not extra or "e" in t.lower()]
        monkeypatch.setattr(PostgresSource, "STATUS_BATCH", 3)
        chunks = list(store.source._recent("%e%" if extra else None))
        assert [len(c) for c in chunks[:-1]] == [3] * (len(chunks) - 1)
        assert [t for c in chunks for t in c] == want
    assert [t for p in thread_pages(run, pg_samples, 4, "--sort", "recent", *extra) for t in p] == want
    r = run("threads", "--sort", "recent", "--limit", "2", *extra, "--db", pg_samples)
    assert f"{len(want)} threads " in r.out
    assert f"next page: --after {want[1]}" in r.out
    r = run("threads", "--sort", "recent", "--limit", "2", "-m", "zzz", "--after", want[0], "--db", pg_samples)
    assert r.code == 3
    assert f"no thread {want[0]!r} to page after" in r.err


def _digest(url: str) -> dict:
    with psycopg.connect(url) as conn:
        out = {}
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations"):
            out[table] = conn.execute(
                f"SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {table} t"
            ).fetchone()
        out["tables"] = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
        return out


def test_postgres_is_left_unchanged(run, pg_samples):
    before = _digest(pg_samples)
    for argv in (
        ["threads"],
        ["threads", "--json"],
        ["log", "bakery-plan"],
        ["log", "bakery-plan", "-p"],
        ["show", "bakery-plan"],
        ["diff", "notes-edits", "0", "latest", "--json"],
        ["export", "--all", "-o", "-"],
    ):
        assert run(*argv, "--db", pg_samples).code == 0, argv
    assert _digest(pg_samples) == before


def test_connection_is_read_only(pg_samples):
    from statectl.sources.postgres import PostgresSource

    src = PostgresSource(pg_samples)
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        src.conn.execute("DELETE FROM checkpoint_writes")
    src.conn.rollback()
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        src.conn.execute("CREATE TABLE statectl_probe (x int)")
    src.close()


def test_postgres_scheme_and_libpq_variables(run, pg_samples, monkeypatch):
    """`postgres://` is accepted as LangGraph's docs spell it, and libpq's PG* variables fill
    what the URL leaves out."""
    name = pg_samples.rsplit("/", 1)[1]
    expected_threads = json.loads(run("threads", "--json", "--db", pg_samples).out)
    assert json.loads(run("threads", "--json", "--db", f"postgres:///{name}").out) == expected_threads
    monkeypatch.setenv("PGDATABASE", name)
    assert json.loads(run("threads", "--json", "--db", "postgresql://").out) == expected_threads
    monkeypatch.setenv("PGDATABASE", "statectl_no_such_database")
    _one_line(run("threads", "--db", "postgresql://"), 2, 'database "statectl_no_such_database" does not exist')


def test_pgpass_file(run, password_role, pg_samples, tmp_path, monkeypatch):
    """A password from .pgpass (here via PGPASSFILE) logs in; none in the URL, none printed."""
    name = pg_samples.rsplit("/", 1)[1]
    with psycopg.connect(pg_samples, autocommit=True) as conn:
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {password_role}")
    url = f"postgresql://{password_role}@127.0.0.1/{name}"
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
    _one_line(run("threads", "--db", url), 2, "password")
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:*:{name}:{password_role}:{PASSWORD}\n")
    pgpass.chmod(0o600)  # libpq ignores a file others can read
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    r = run("threads", "--json", "--db", url)
    assert r.code == 0
    assert len(json.loads(r.out)) == PG_THREADS
    assert PASSWORD not in r.out + r.err


def test_database_uri_variable(run, pg_samples, monkeypatch):
    monkeypatch.delenv("STATECTL_DB", raising=False)
    monkeypatch.setenv("DATABASE_URI", pg_samples)
    r = run("threads", "--json")
    assert r.code == 0
    assert len(json.loads(r.out)) == PG_THREADS


# -- bad input ---------------------------------------------------------------------------------
PASSWORD = "s3cret-Pa55word"


@pytest.fixture(scope="module")
def password_role(pg_server):
    with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
        # (another process running the tests does the same: one at a time, or Postgres may say
        # "tuple concurrently updated" to the second ALTER ROLE)
        conn.execute("SELECT pg_advisory_lock(hashtext('statectl_pw'))")
        try:
            conn.execute("CREATE ROLE statectl_pw LOGIN")
        except (psycopg.errors.DuplicateObject, psycopg.errors.UniqueViolation):
            pass
        conn.execute(f"ALTER ROLE statectl_pw LOGIN PASSWORD '{PASSWORD}'")
        conn.execute("SELECT pg_advisory_unlock(hashtext('statectl_pw'))")
    yield "statectl_pw"


def _one_line(r, code: int, *needles: str) -> None:
    assert r.code == code, (r.code, r.err)
    assert r.err.count("\n") == 1, r.err
    assert "internal error" not in r.err, r.err
    assert r.out == "", r.err
    for needle in needles:
        assert needle in r.err, r.err
    assert PASSWORD not in r.err + r.out


def test_unreachable_server(run):
    _one_line(
        run("threads", "--db", f"postgresql://me:{PASSWORD}@127.0.0.1:1/db"),
        2,
        "cannot connect to postgresql://me:***@127.0.0.1:1/db",
    )


def test_malformed_url_hides_password(run):
    """libpq quotes a URL it cannot parse in full; the password must not come with it."""
    for url in (f"postgresql://me:{PASSWORD}@[::1/db", f"postgresql://me@[::1/db?password={PASSWORD}"):
        _one_line(run("threads", "--db", url), 2, "cannot connect to")
        proc = subprocess.run(
            [sys.executable, "-m", "statectl", "threads", "--db", url, "--debug"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode != 0
        assert PASSWORD not in proc.stdout + proc.stderr


def test_wrong_password_is_never_printed(run, password_role, pg_samples):
    name = pg_samples.rsplit("/", 1)[1]
    url = f"postgresql://{password_role}:wrong-{PASSWORD}@127.0.0.1/{name}"
    r = run("threads", "--db", url)
    _one_line(r, 2, "password authentication failed", "***")
    assert f"wrong-{PASSWORD}" not in r.err
    proc = subprocess.run(
        [sys.executable, "-m", "statectl", "threads", "--db", url, "--debug"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert PASSWORD not in proc.stdout + proc.stderr
    r = run("threads", "--db", f"postgresql://{password_role}@127.0.0.1/{name}?password=wrong-{PASSWORD}")
    _one_line(r, 2, "password authentication failed")


def test_right_password_works(run, password_role, pg_samples):
    name = pg_samples.rsplit("/", 1)[1]
    with psycopg.connect(pg_samples, autocommit=True) as conn:
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {password_role}")
    r = run("threads", "--json", "--db", f"postgresql://{password_role}:{PASSWORD}@127.0.0.1/{name}")
    assert r.code == 0
    assert len(json.loads(r.out)) == PG_THREADS


def test_database_without_checkpoint_tables(run, pg_empty):
    for argv in (["threads"], ["log", "t"], ["show", "t"], ["diff", "t"]):
        _one_line(run(*argv, "--db", pg_empty), 2, "has no LangGraph checkpoint tables")
    with psycopg.connect(pg_empty) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0


def test_older_schema_version(run, pg_empty):
    with psycopg.connect(pg_empty, autocommit=True) as conn:
        conn.execute("CREATE TABLE checkpoint_migrations (v INTEGER PRIMARY KEY)")
        conn.execute("INSERT INTO checkpoint_migrations VALUES (0), (1), (2)")
        conn.execute(
            "CREATE TABLE checkpoints (thread_id TEXT, checkpoint_ns TEXT, checkpoint_id TEXT, "
            "parent_checkpoint_id TEXT, type TEXT, checkpoint JSONB, metadata JSONB)"
        )
        conn.execute("CREATE TABLE checkpoint_blobs (thread_id TEXT)")
    _one_line(run("threads", "--db", pg_empty), 2, "checkpoint schema version 2, older than statectl reads")


def test_without_psycopg(pg_samples):
    code = (
        "import sys; sys.modules['psycopg'] = None\nfrom statectl.cli import main\n"
        f"main(['threads', '--db', {pg_samples!r}])"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    # (statectl is not on PyPI: the hint names the folder it was installed from)
    assert re.fullmatch(r"statectl: Postgres support needs psycopg \(pip install '[^']*\[postgres\]'\)\n", proc.stderr)


def test_sqlite_paths_do_not_import_psycopg(dbs):
    code = (
        "import sys\nfrom statectl.cli import main\n"
        f"try:\n    main(['log', 'bakery-plan', '--db', {str(dbs['agent'])!r}])\nexcept SystemExit:\n    pass\n"
        "print('psycopg' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env={**os.environ})
    assert proc.stdout.strip().splitlines()[-1] == "False"


def test_shallow_postgres_saver(run, pg_empty, tmp_path):
    """ShallowPostgresSaver keeps one checkpoint per thread and namespace (its id inside the
    JSONB, blobs keyed by channel alone, no parent): real runs of the sample graphs on it read as
    LangGraph reads them, every command works, and the database is left unchanged."""
    import warnings

    sys.path.insert(0, str(SAMPLES))
    import custom_app
    import interrupts_app
    from langgraph.checkpoint.postgres import ShallowPostgresSaver
    from langgraph.types import Command
    from record import snapshot_record

    records = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # deprecated, still shipped and used
        with ShallowPostgresSaver.from_conn_string(pg_empty) as saver:
            saver.setup()
            runs = [
                (
                    custom_app.notes_builder,
                    "notes",
                    [{"topic": "pricing", "count": 0}, {"topic": "second run", "count": 10}],
                ),
                (custom_app.fanout_builder, "fanout", [{"items": ["alpha", "beta", "gamma"]}]),
                (custom_app.nested_builder, "nested", [{"question": "why is sourdough sour?"}]),
                (interrupts_app.subgraph_builder, "in-subgraph", [{"draft": "menu"}]),
                (interrupts_app.subgraph_builder, "in-subgraph-resumed", [{"draft": "sign"}, Command(resume="ok")]),
                (interrupts_app.parallel_builder, "two-at-once", [{"questions": ["price?", "name?"]}]),
            ]
            for builder, thread, inputs in runs:
                graph = builder.compile(checkpointer=saver)
                for value in inputs:
                    graph.invoke(value, {"configurable": {"thread_id": thread}})
                for row in saver.conn.execute(
                    "SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE thread_id = %s", (thread,)
                ).fetchall():
                    ns = row["checkpoint_ns"]  # the saver's connection returns dict rows
                    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
                    records += [orjson.loads(json.dumps(snapshot_record(s))) for s in graph.get_state_history(config)]
    assert len({r["thread_id"] for r in records}) == len(runs)
    assert any(r["checkpoint_ns"] for r in records)
    assert any(r["interrupts"] for r in records)
    before = _digest(pg_empty)
    with statectl.open(pg_empty) as store:
        assert check(store, records) == len(records)
        assert {t.thread_id: t.status for t in store.threads()} == {
            "notes": "done",
            "fanout": "done",
            "nested": "done",
            "in-subgraph": "interrupted",
            "in-subgraph-resumed": "done",
            "two-at-once": "interrupted",
        }
    for argv in (
        ["threads"],
        ["log", "notes"],
        ["show", "in-subgraph"],
        ["diff", "notes"],
        ["log", "two-at-once", "--json"],
    ):
        r = run(*argv, "--db", pg_empty)
        assert r.code == 0, (argv, r.err)
        assert r.err == "", (argv, r.err)
    exported = tmp_path / "shallow.json"  # and an export of it reads the same
    assert run("export", "--all", "-o", str(exported), "--db", pg_empty).code == 0
    with statectl.open(str(exported)) as store:
        assert check(store, records) == len(records)
    assert _digest(pg_empty) == before


@pytest.mark.parametrize("sort", ["id", "recent"])
def test_threads_status_filter(run, pg_samples, sort, monkeypatch):
    from statectl.sources.postgres import PostgresSource

    monkeypatch.setattr(PostgresSource, "STATUS_BATCH", 3)  # several rounds of queries
    assert check_status_filter(run, pg_samples, "--sort", sort) > 0


def test_a_locked_table_ends_the_wait_with_one_line(run, pg_scratch):
    """Another session holds ACCESS EXCLUSIVE on `checkpoints` (a migration, VACUUM FULL): the
    command waited forever. It now ends after --timeout (or STATECTL_TIMEOUT) with one line
    naming what it waited for, exit 2 (the source cannot be read)."""
    import time

    import psycopg

    holder = psycopg.connect(pg_scratch)
    holder.execute("BEGIN")
    holder.execute("LOCK TABLE checkpoints IN ACCESS EXCLUSIVE MODE")
    try:
        start = time.monotonic()
        r = run("threads", "--db", pg_scratch, "--timeout", "1")
        assert r.code == 2, (r.code, r.err)
        assert "locked by another session" in r.err
        assert "waited 1 s" in r.err
        assert len(r.err.strip().splitlines()) <= 2
        assert "internal error" not in r.err
        assert time.monotonic() - start < 30  # (not a timing assertion: it ends at all)
    finally:
        holder.rollback()
        holder.close()
    assert run("threads", "--db", pg_scratch).code == 0  # and reads again once the lock is gone


def _locked_after_first(monkeypatch, url: str, cls, method: str, holder: list) -> None:
    """From the second call of `cls.method` on, another session holds ACCESS EXCLUSIVE on every
    checkpoint table (a migration starting while a long command streams its output)."""
    import psycopg

    real = getattr(cls, method)
    calls = []

    def locking(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            conn = psycopg.connect(url)
            conn.execute("BEGIN")
            conn.execute("SET LOCAL lock_timeout = '5s'")  # (statectl holds no lock between queries)
            conn.execute("LOCK TABLE checkpoints, checkpoint_blobs, checkpoint_writes IN ACCESS EXCLUSIVE MODE")
            holder.append(conn)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cls, method, locking)


@pytest.mark.parametrize(
    "argv, what",
    [
        (["threads", "--json"], "threads"),
        (["threads", "--json", "--older-than", "1h"], "threads"),  # (a filtered listing: streamed too)
        (["prune", "--keep-last", "1", "--json"], "threads' plans"),
    ],
)
def test_a_stream_stopped_part_way_says_its_output_is_partial(run, pg_scratch, monkeypatch, argv, what):
    """A command that writes as it reads (`threads --json`, `prune --json` of a whole store) and
    is stopped part-way (here: a lock past --timeout) says in its one line that what it wrote is
    partial and how much: never a cut left silent. Between its queries it holds no lock: the
    migration that stops it takes its lock at once (statectl's reading transaction used to stay
    open, and the migration waited on it until Postgres ended the idle session)."""
    import re

    from statectl.core import prune
    from statectl.sources.postgres import PostgresSource

    monkeypatch.setattr(PostgresSource, "STATUS_BATCH", 4)
    monkeypatch.setattr(statectl, "STREAM_CHUNK", 4)
    monkeypatch.setattr(prune, "SQL_BATCH", 4)
    holder: list = []
    method = "_summaries" if argv[0] == "threads" else "simple_plans_of"
    _locked_after_first(monkeypatch, pg_scratch, PostgresSource, method, holder)
    try:
        r = run(*argv, "--db", pg_scratch, "--timeout", "1")
    finally:
        for conn in holder:
            conn.rollback()
            conn.close()
    assert holder, "the lock was never taken: the output was not streamed in batches"
    assert r.code == 2, (r.code, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) <= 2, r.err
    assert "locked by another session" in lines[0], r.err
    written = int(re.search(rf"the output stopped after (\d+) {re.escape(what)}: what is above is partial", r.err)[1])
    assert 0 < written <= 4
    assert r.out.count('"thread_id"') == written  # (what it says is what is above)


def test_timeout_values_are_checked(run, pg_scratch, monkeypatch):
    r = run("threads", "--db", pg_scratch, "--timeout", "soon")
    assert r.code == 2
    assert "--timeout takes seconds" in r.err
    assert "internal error" not in r.err
    monkeypatch.setenv("STATECTL_TIMEOUT", "-3")
    r = run("threads", "--db", pg_scratch)
    assert r.code == 2
    assert "STATECTL_TIMEOUT must be more than 0" in r.err


def test_inline_jsonb_values_that_look_tagged_stay_dicts(run, pg_scratch):
    """A JSONB row edited by hand (a deliberately broken input) holding a user's dict shaped like
    statectl's tagged form: shown as the dict it is, never as a typed object, never an internal
    error."""
    import json

    import psycopg

    with psycopg.connect(pg_scratch, autocommit=True) as conn:
        (cid,) = conn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'bakery-plan' "
            "AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        conn.execute(
            "UPDATE checkpoints SET checkpoint = jsonb_set(jsonb_set(checkpoint, "
            '\'{channel_values,spoof}\', \'{"$type": "os.system", "arg": "rm -rf /"}\'), '
            "'{channel_values,weird}', '{\"$set\": 5}') WHERE checkpoint_id = %s",
            (cid,),
        )
    r = run("show", "bakery-plan", "--json", "--db", pg_scratch)
    assert r.code == 0, r.err
    values = json.loads(r.out)["values"]
    assert sorted(values["spoof"]["$dict"]) == [["$type", "os.system"], ["arg", "rm -rf /"]]  # (JSONB orders keys)
    assert values["weird"] == {"$dict": [["$set", 5]]}
    r = run("show", "bakery-plan", "--db", pg_scratch)
    assert r.code == 0, r.err
    assert "system(" not in r.out, r.err


def test_q_quits_the_tui_while_a_read_waits_on_a_lock(pg_scratch, tmp_path):
    """In a real terminal (tmux): the threads screen's read waits on a table another session has
    locked (up to --timeout 60); `q` ends the process while the lock is still held: it does not
    wait for the read."""
    import shutil
    import subprocess
    import sys
    import time

    import psycopg

    if shutil.which("tmux") is None:
        pytest.fail("tmux is needed for this test (.ci/run installs it)")
    done = tmp_path / "exit"
    holder = psycopg.connect(pg_scratch)
    holder.execute("BEGIN")
    holder.execute("LOCK TABLE checkpoints IN ACCESS EXCLUSIVE MODE")
    session = f"statectl-q-{os.getpid()}-{tmp_path.name}"  # (two runs at once share tmux's server)
    cmd = f"{sys.executable} -m statectl tui --db {pg_scratch} --timeout 60; echo $? > {done}"
    try:
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "100", "-y", "30", cmd], check=True)
        time.sleep(3)  # the app is up and its first read is waiting on the lock
        assert not done.exists()
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
        for _ in range(200):  # while the lock is still held
            if done.exists() and done.read_text().strip():
                break
            time.sleep(0.1)
        assert done.exists(), "q did not end the TUI while its read waited on the lock"
        assert done.read_text().strip() == "0"
    finally:
        holder.rollback()
        holder.close()
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def test_thread_prefix_and_suggestion_on_postgres(run, pg_samples):
    r = run("log", "bakery-p", "--db", pg_samples)
    assert r.code == 0, r.err
    assert r.out.startswith("thread bakery-plan"), r.err
    r = run("show", "bakery-plna", "--db", pg_samples)
    assert r.code == 3
    assert "did you mean bakery-plan?" in r.err


def test_threads_preview_on_postgres(run, pg_samples):
    r = run("threads", "--limit", "0", "--db", pg_samples)
    lines = {line.split()[0]: line.rstrip() for line in r.out.splitlines()[2:] if line.strip()}
    assert lines["bakery-plan"].endswith("  I want to open a bakery in Lisbon. Help me shape the idea.")
    assert lines["approval-waiting"].endswith("  ⏸ Publish this draft?")


def test_threads_operational_filters_on_postgres(run, pg_samples):
    def ids(*args):
        r = run("threads", "--json", *args, "--db", pg_samples)
        return r.code, sorted(t["thread_id"] for t in json.loads(r.out))

    code, failed = ids("--failed-node", "tools", "--exit-code")
    assert code == 1
    assert failed == ["market-lookup-fails"]
    assert ids("--since", "1h") == (0, [])
    code, old = ids("--older-than", "1h", "-s", "interrupted")
    assert "investor-email" in old
    assert "approval-waiting" in old


def test_thread_ids_for_completion_on_postgres(pg_samples):
    with statectl.open(pg_samples) as store:
        assert store.source.thread_ids("approval", 10) == ["approval-resumed", "approval-waiting"]
        assert store.source.thread_ids("zzz", 10) == []


def test_export_redact_on_postgres(run, pg_samples, tmp_path):
    out = tmp_path / "r.json"
    r = run("export", "bakery-plan", "--redact", "--redact-pattern", "(?i)lisbon", "-o", str(out), "--db", pg_samples)
    assert r.code == 0, r.err
    assert "match" in r.err, r.err
    before = run("log", "bakery-plan", "-p", "--json", "--full", "--db", pg_samples).out
    after = run("log", "bakery-plan", "-p", "--json", "--full", "--db", str(out)).out
    assert "Lisbon" in before
    assert "lisbon" not in after.lower()
    assert "[REDACTED]" in after
    assert len(after.splitlines()) == len(before.splitlines())


def test_threads_filters_narrow_in_sql_and_keep_every_match(run, pg_samples, tmp_path, monkeypatch):
    """--since/--until/--meta/--failed-node are answered in SQL first (only the threads that can
    match are summarised: what a production-size table needs), and the answer is exactly the
    one of the same rows filtered one by one (an export of the database: no SQL)."""
    from statectl.sources.postgres import PostgresSource

    exported = tmp_path / "all.json"
    assert run("export", "--all", "-o", str(exported), "--db", pg_samples).code == 0
    every = json.loads(run("threads", "--json", "--db", pg_samples).out)
    summarised: list[str] = []
    real = PostgresSource._summaries

    def counting(self, ids):
        summarised.extend(ids)
        return real(self, ids)

    monkeypatch.setattr(PostgresSource, "_summaries", counting)

    def ids(db, *args):
        r = run("threads", "--json", "--sort", "id", *args, "--db", db)
        assert r.code == 0, (args, r.err)
        return [t["thread_id"] for t in json.loads(r.out)]

    filters = [
        ("--since", "1h"),
        ("--older-than", "1h"),
        ("--meta", "user_id=nobody"),
        ("--failed-node", "nothing"),
        ("--failed-node", "parse"),
        ("--failed-node", "tools"),
        ("--meta", "step=1"),
        ("--meta", "source=loop"),
        ("--meta", "source=loop", "-s", "done"),
    ]
    for t in every:  # a thread updated exactly then is kept by both bounds
        filters += [("--since", t["updated_at"]), ("--until", t["updated_at"])]
    for args in filters:
        summarised.clear()
        found = ids(pg_samples, *args)
        assert found == ids(str(exported), *args), args
    for args, most in ((("--since", "1h"), 0), (("--meta", "user_id=nobody"), 0), (("--failed-node", "nothing"), 1)):
        summarised.clear()
        assert ids(pg_samples, *args) == [], (args, summarised)
        assert len(summarised) <= most, (args, summarised)
    for t in every:
        assert t["thread_id"] in ids(pg_samples, "--since", t["updated_at"])
        assert t["thread_id"] in ids(pg_samples, "--until", t["updated_at"])


@pytest.mark.parametrize("sort", ["id", "recent"])
def test_store_wide_filters_read_a_range_of_threads_a_statement(run, pg_samples, monkeypatch, sort):
    """A filter over the whole store is read a range of thread ids per statement (so that no
    statement of a 10M-row store outlasts the statement limit): the ranges cover every thread
    once, in the index's order, and a filter read in many ranges answers as read in one."""
    import statectl
    from statectl.sources.postgres import PostgresSource

    source = statectl.open(pg_samples).source
    monkeypatch.setattr(PostgresSource, "RANGE_ROWS", 5)
    ranges = list(source._id_ranges())
    ids = [t for (t,) in source._query("SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id")]
    assert len(ranges) > 5
    assert ranges[0][0] is None
    assert ranges[-1][1] is None
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))  # (consecutive)
    inside = [[t for t in ids if (lo is None or t > lo) and (hi is None or t <= hi)] for lo, hi in ranges]
    assert [t for part in inside for t in part] == ids  # (each thread in one range, in order)
    assert all(inside[:-1])
    source.close()

    filters = [
        ("--older-than", "1h"),
        ("--since", "3650d"),
        ("--meta", "source=loop"),
        ("--failed-node", "tools"),
        ("-s", "interrupted", "--older-than", "1h"),
        ("-m", "a", "--older-than", "1h"),
        ("-s", "interrupted"),
        ("-s", "error,interrupted", "-m", "i"),
    ]
    for args in filters:
        argv = ("threads", "--json", "--sort", sort, *args, "--db", pg_samples)
        many = run(*argv)
        monkeypatch.setattr(PostgresSource, "RANGE_ROWS", 10**9)
        one = run(*argv)
        monkeypatch.setattr(PostgresSource, "RANGE_ROWS", 5)
        assert many.code == one.code == 0, (args, many.err, one.err)
        assert many.out == one.out, args
        assert json.loads(one.out), args
    # pages after a thread (--after) in many ranges join up to the whole list
    whole = [
        t["thread_id"]
        for t in json.loads(run("threads", "--json", "--sort", sort, "-s", "interrupted", "--db", pg_samples).out)
    ]
    paged: list[str] = []
    for _ in range(len(whole)):  # (bounded: a page that ignored --after would repeat forever)
        after = ["--after", paged[-1]] if paged else []
        page = json.loads(
            run(
                "threads", "--json", "--limit", "2", "--sort", sort, "-s", "interrupted", *after, "--db", pg_samples
            ).out
        )
        if not page:
            break
        paged += [t["thread_id"] for t in page]
    assert paged == whole


def test_thread_status_is_langgraphs_on_postgres(run, pg_samples):
    """STATUS on Postgres says what LangGraph's snapshots say (a static breakpoint waits), through
    `threads` and through `threads -s interrupted` (narrowed in SQL before statuses are computed)."""
    from test_cli import _langgraph_status

    want: dict[str, str] = {}
    for name in ("agent", "custom", "deep", "flow", "interrupts", "orchestrator"):
        want.update(_langgraph_status(expected(name, ".postgres")))
    got = {t["thread_id"]: t["status"] for t in json.loads(run("threads", "--json", "--db", pg_samples).out)}
    assert got == want
    for sort in ("id", "recent"):
        waiting = json.loads(run("threads", "-s", "interrupted", "--sort", sort, "--json", "--db", pg_samples).out)
        assert sorted(t["thread_id"] for t in waiting) == sorted(t for t, s in want.items() if s == "interrupted")
    assert {"breakpoint-before", "breakpoint-after"} <= {t for t, s in want.items() if s == "interrupted"}
    since = json.loads(run("threads", "-s", "interrupted", "--older-than", "1h", "--json", "--db", pg_samples).out)
    assert sorted(t["thread_id"] for t in since) == sorted(t for t, s in want.items() if s == "interrupted")


@pytest.mark.parametrize("extra", [[], ["-s", "interrupted,error"], ["-s", "done"], ["--sort", "recent"], ["-m", "e"]])
def test_threads_json_of_a_whole_store_is_streamed_in_batches_as_one_array(run, pg_samples, monkeypatch, extra):
    """As on SQLite (test_cli): every thread's summary, two threads a batch, byte for byte the
    array of the paged listing."""
    from statectl.sources.postgres import PostgresSource

    whole = run("threads", "--json", "--limit", "100000", "--db", pg_samples, *extra)
    assert whole.code == 0, whole.err
    monkeypatch.setattr(PostgresSource, "STATUS_BATCH", 2)
    streamed = run("threads", "--json", "--db", pg_samples, *extra)
    assert streamed.code == 0, streamed.err
    assert streamed.out == whole.out
    assert json.loads(streamed.out)


def test_lists_of_strings_reach_postgres_as_written(pg_samples):
    """Lists of ids are sent as one text[] literal (`Texts`: psycopg's dumper was a quarter of
    `threads --json`); every string arrives as it was, whatever it holds, and None as NULL."""
    from statectl.sources.postgres import Texts

    hostile = ["a", "", "NULL", "null", "x,y", "{b}", 'q"uote', "back\\slash", "end\\", " sp ", "ünï", "tab\there"]
    with statectl.open(pg_samples) as store:
        query = store.source._query
        for values in (hostile, [*hostile, None], [], ["", ""]):
            assert query("SELECT %s::text[]", (values,))[0][0] == values
            assert query("SELECT %(v)s::text[]", {"v": values})[0][0] == values
            assert query("SELECT %s::text[]", (Texts(values),))[0][0] == values
        assert query("SELECT 'b' = ANY(%s), 'c' = ANY(%s)", (["a", "b"], ["a", "b"]))[0] == (True, False)


def test_postgres_narrows_waiting_threads_to_those_with_a_trigger_to_run(pg_samples):
    """`-s interrupted` is narrowed in SQL to the threads whose newest checkpoint may plan a task
    (a breakpoint): a trigger channel its node has not seen that still holds a value. LangGraph
    empties a trigger channel under a new version as its node reads it, so an unseen version
    alone named every thread (the narrowing narrowed nothing). Every waiting thread stays."""
    with statectl.open(pg_samples) as store:
        may = store.source._may_plan_tasks([], {})
        status = {t.thread_id: t.status for t in store.threads(None)}
    done = [t for t, s in status.items() if s == "done"]
    assert {t for t, s in status.items() if s == "interrupted"} <= may
    assert len(done) >= 10
    assert len(may & set(done)) < len(done) / 2, sorted(may)


@pytest.mark.parametrize("kind", ["list", "dict"])
def test_metadata_nested_900_deep_is_cut_at_the_bound(run, pg_scratch, kind):
    """A JSONB metadata value 900 levels deep (planted: a hostile row; Postgres keeps it): every
    command shows it cut at 200 levels with a marker (`export` was internal error: TypeError)."""
    import psycopg

    opens, closes = ("[" * 900, "]" * 900) if kind == "list" else ('{"k":' * 900, "}" * 900)
    with psycopg.connect(pg_scratch, autocommit=True) as conn:
        (tid, cid) = conn.execute(
            "SELECT thread_id, checkpoint_id FROM checkpoints WHERE checkpoint_ns = '' "
            "ORDER BY thread_id, checkpoint_id DESC LIMIT 1"
        ).fetchone()
        conn.execute(
            "UPDATE checkpoints SET metadata = metadata || jsonb_build_object('deep', %s::jsonb) "
            "WHERE thread_id = %s AND checkpoint_id = %s",
            (opens + '"leaf"' + closes, tid, cid),
        )
    for args in (["threads"], ["log", tid], ["log", tid, "--json"], ["show", tid, "--json"], ["diff", tid]):
        r = run(*args, "--db", pg_scratch)
        assert r.code == 0, (args, r.err)
    r = run("export", tid, "-o", "-", "--db", pg_scratch)
    assert r.code == 0, r.err
    (mine,) = [c for c in json.loads(r.out)["threads"][0]["checkpoints"] if c["checkpoint_id"] == cid]
    assert "nested deeper than 200 levels" in json.dumps(mine["metadata"])
