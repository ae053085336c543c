"""Issue 36, what can be checked without a clock: one step of a long thread reads that step (not
the thread), every per-thread query is an index search, `log -p` prints before it has read the
oldest steps, and a store's prune plan waits on disk, not in memory. (The times and the memory
are bench/scale.py's.)"""

from __future__ import annotations

import sqlite3

import pytest

import statectl
from statectl.core.diff import diff


def _snapshot_json(view, rec) -> dict:
    return view.snapshot(rec.checkpoint_id).to_json()


@pytest.mark.parametrize(("name", "thread"), [("agent", "bakery-plan"), ("deep", "deep-research")])
def test_one_step_reads_a_few_checkpoints_metadata(dbs, name, thread):
    """`show` and `diff` of the newest step read the metadata of a few checkpoints, not every
    one's (SQLite keeps it after the blob: a long thread's whole size), and compute the same as
    a view that read all of it first (deep-research: deepagents' delta channels, named by every
    checkpoint's metadata)."""
    with statectl.open(str(dbs[name])) as store:
        view = store.view(thread)
        newest = view.records[0]
        lazy = (_snapshot_json(view, newest), diff(view, view.parent(newest), newest).to_json())
        loaded = sum(r.loaded for r in view.records)
        assert len(view.records) >= 24
        assert loaded <= 8, f"{loaded} of {len(view.records)} checkpoints' metadata read for one step"
    with statectl.open(str(dbs[name])) as store:
        view = store.view(thread)
        for r in view.records:
            view.widen_delta(r)  # (every checkpoint's metadata read, as before)
        assert all(r.loaded for r in view.records)
        newest = view.records[0]
        assert lazy == (_snapshot_json(view, newest), diff(view, view.parent(newest), newest).to_json())


def test_every_step_of_a_delta_thread_equals_the_full_read(dbs):
    """Walking a deepagents thread from its head (delta channels read at the head, widened as
    checkpoints are read) gives each step what reading every checkpoint's metadata first gives."""
    with statectl.open(str(dbs["deep"])) as store:
        lazy = store.view("deep-research")
        walked = [_snapshot_json(lazy, r) for r in lazy.records]
    with statectl.open(str(dbs["deep"])) as store:
        full = store.view("deep-research")
        for r in full.records:
            full.widen_delta(r)
        assert walked == [_snapshot_json(full, r) for r in full.records]


def _traced(monkeypatch) -> list[str]:
    """Every statement statectl's SQLite connections run, with their parameters bound."""
    from statectl.sources import sqlite as source

    seen: list[str] = []
    opened = source._open

    def traced_open(uri: str) -> sqlite3.Connection:
        conn = opened(uri)
        conn.set_trace_callback(seen.append)
        return conn

    monkeypatch.setattr(source, "_open", traced_open)
    return seen


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "bakery-plan"],
        ["show", "bakery-plan", "5"],
        ["diff", "bakery-plan"],
        ["log", "bakery-plan"],
        ["log", "-p", "bakery-plan", "-n", "3"],
        ["show", "deep-research", "--json"],
    ],
)
def test_per_thread_queries_search_the_primary_key(run, dbs, monkeypatch, argv):
    """Every query of a per-thread command finds its rows through the tables' primary keys
    (`EXPLAIN QUERY PLAN`: a SEARCH, never a SCAN of checkpoints or writes): its cost does not
    grow with the store."""
    seen = _traced(monkeypatch)
    db = str(dbs["deep" if "deep-research" in argv else "agent"])
    assert run(*argv, "--db", db).code == 0
    queries = [q for q in seen if q.lstrip().upper().startswith("SELECT") and "sqlite_master" not in q]
    assert len(queries) >= 3
    conn = sqlite3.connect(db)
    for q in queries:
        steps = [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + q)]
        # a SCAN reads a whole table or index; only a VALUES list of keys (`p`) or a sort may be one
        scans = [s for s in steps if s.startswith("SCAN ") and not s.startswith(("SCAN p", "SCAN CONSTANT ROW"))]
        assert not scans, f"{argv}: {q}\n-> {steps}"
        assert any(s.startswith("SEARCH ") for s in steps), f"{argv}: {q}\n-> {steps}"
    conn.close()


def test_log_p_prints_the_newest_steps_before_reading_the_oldest(run, dbs, monkeypatch, capsysbinary):
    """`log -p` streams: when it reads the second chunk of steps' writes, the first chunk's
    steps are already out."""
    from statectl.core import history, timeline

    monkeypatch.setattr(timeline, "CHUNK", 5)
    printed_before: list[str] = []
    prefetch = history.ThreadHistory.prefetch_writes

    def watched(self, checkpoint_ids):
        ids = list(checkpoint_ids)
        out = capsysbinary.readouterr().out.decode()
        printed_before.append(out)
        capsysbinary.readouterr()
        print(out, end="")  # (back where the test reads it whole)
        return prefetch(self, ids)

    monkeypatch.setattr(history.ThreadHistory, "prefetch_writes", watched)
    r = run("log", "-p", "bakery-plan", "--db", str(dbs["agent"]))
    assert r.code == 0
    assert len(printed_before) >= 7  # 36 steps, 5 a chunk
    assert printed_before[0].strip() == "thread bakery-plan  (36 checkpoints)"  # (the title alone)
    assert printed_before[1].count("\n") > 10  # the newest five steps, printed before the next five are read
    with statectl.open(str(dbs["agent"])) as store:
        ids = [r.checkpoint_id[-12:] for r in store.view("bakery-plan").records]
    assert ids[0] in printed_before[1]
    assert ids[5] not in printed_before[1]
    assert ids[-1] in r.out


def test_log_p_stopped_by_a_damaged_row_says_its_output_is_partial(run, dbs):
    """`log -p` prints each step as it is ready; a row that does not decode further back stops
    it with one line that says what is above is partial and how many steps it holds."""
    import re

    db = dbs["agent"]
    with sqlite3.connect(db) as conn:  # (a deliberately broken row: the third oldest step)
        (cid,) = conn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'bakery-plan' AND checkpoint_ns = '' "
            "ORDER BY checkpoint_id LIMIT 1 OFFSET 2"
        ).fetchone()
        conn.execute("UPDATE checkpoints SET checkpoint = x'c1c1c1' WHERE checkpoint_id = ?", (cid,))
    r = run("log", "-p", "bakery-plan", "--db", str(db), "--no-pager")
    assert r.code == 4, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert cid in lines[0], r.err
    steps = int(re.search(r"the output stopped after (\d+) steps: what is above is partial", lines[0])[1])
    assert steps > 10
    assert len(re.findall(r"^ *step ", r.out, re.M)) == steps


def test_a_plan_waits_on_disk_and_reads_back_whole(dbs):
    """`prune`'s plans keep what they drop in a temporary file (a line per thread in memory),
    and read it back as it was planned: the SQL, the JSON and what --apply is given are the
    same as from the plans in memory."""
    from statectl.core import prune as core

    with statectl.open(str(dbs["agent"])) as store:
        ids = store.every_thread_id()
        plans = [core.plan_thread(store, t, 1, None) for t in ids]
        planned = [(p.thread_id, list(p.drop), p.to_json()) for p in plans]
        sql = core.sql([p for p in plans if p.drop], "sqlite")
        spool = core.Spool()
        kept = [spool.keep(core.plan_thread(store, t, 1, None)) for t in ids]
        assert any(isinstance(p.drop, core.Spooled) for p in kept)
        assert sum(len(p.drop) for p in kept) == sum(len(d) for _, d, _ in planned) > 20
        assert [(p.thread_id, list(p.drop), p.to_json()) for p in kept] == planned
        assert core.sql([p for p in kept if p.drop], "sqlite") == sql
        assert all(p.drop == d for p, (_, d, _) in zip(kept, planned, strict=True))
        assert not any(p.drop != d for p, (_, d, _) in zip(kept, planned, strict=True))  # (as replan asks)
        spool.close()


def _queries(monkeypatch) -> list[str]:
    """Every SQL statement the Postgres source runs from here on, in order."""
    from statectl.sources import postgres

    asked: list[str] = []
    query = postgres.PostgresSource._query

    def counted(self, sql, *args):
        asked.append(sql)
        return query(self, sql, *args)

    monkeypatch.setattr(postgres.PostgresSource, "_query", counted)
    return asked


def test_postgres_plans_a_batch_of_threads_as_each_alone(pg_samples, monkeypatch):
    """On Postgres `prune` plans threads a batch at a time (their checkpoints listed in one
    query, their bytes counted in one): each plan, bytes included, is the one planned alone,
    with a few queries a batch instead of a few a thread."""
    from statectl.core import prune as core

    monkeypatch.setattr(core, "BATCH", 4)
    asked = _queries(monkeypatch)
    with statectl.open(pg_samples) as store:
        ids = store.every_thread_id()
        assert len(ids) >= 9
        for keep in (1, 2):
            alone = [core.plan_thread(store, t, keep, None).to_json() for t in ids]
            asked.clear()
            batched = [p.to_json() for p in core.plan_threads(store, ids, keep, None)]
            assert batched == alone
            assert sum(p["drop"] for p in alone) > 0
            assert sum(p["bytes"] for p in alone) > 0
            listings = [q for q in asked if q.lstrip().startswith("SELECT checkpoint_ns, checkpoint_id, parent")]
            assert len(listings) < len(ids) / 2, listings  # (the batch's listing serves each thread's)


def test_postgres_plans_ask_the_store_on_a_second_connection_while_python_plans(pg_samples, monkeypatch):
    """On Postgres the store's own plans (the next chunk's, ahead) and a batch's bytes are asked on
    a second read-only connection in a thread of its own, while this thread plans the rest: the
    plans are those of one connection, in order. Where no second connection opens (the server's
    limit), one does it all, the same plans. A plan stopped part-way closes its second connection."""
    import threading

    from statectl.core import prune as core
    from statectl.errors import SourceError
    from statectl.sources.postgres import PostgresSource

    monkeypatch.setattr(core, "SQL_BATCH", 4)
    monkeypatch.setattr(core, "BATCH", 2)
    asked: list[tuple[str, str, int]] = []
    real = {name: getattr(PostgresSource, name) for name in ("simple_plans_of", "drop_bytes_of")}
    for name in real:

        def spy(self, *args, _name=name):
            asked.append((_name, threading.current_thread().name, id(self.conn)))
            return real[_name](self, *args)

        monkeypatch.setattr(PostgresSource, name, spy)
    opened: list = []
    real_beside = PostgresSource.beside

    def beside(self):
        opened.append(real_beside(self))
        return opened[-1]

    monkeypatch.setattr(PostgresSource, "beside", beside)
    with statectl.open(pg_samples) as store:
        ids = store.every_thread_id()
        alone = [core.plan_thread(store, t, 1, None).to_json() for t in ids]
        asked.clear()
        assert [p.to_json() for p in core.plan_threads(store, ids, 1, None)] == alone
        assert {n for n, _, _ in asked} == {"simple_plans_of", "drop_bytes_of"}
        assert {(w.startswith("statectl-plan"), conn) for _, w, conn in asked} == {(True, id(opened[0].conn))}
        assert opened[0].conn is not store.source.conn
        assert opened[0].conn.closed
        assert not store.source.conn.closed

        def refused(self):
            raise SourceError("cannot connect: sorry, too many clients already")

        monkeypatch.setattr(PostgresSource, "beside", refused)
        asked.clear()
        assert [p.to_json() for p in core.plan_threads(store, ids, 1, None)] == alone
        assert {(w, conn) for _, w, conn in asked} == {(threading.current_thread().name, id(store.source.conn))}

        monkeypatch.setattr(PostgresSource, "beside", beside)
        plans = core.plan_threads(store, ids, 1, None)
        assert next(plans).to_json() == alone[0]
        plans.close()
        assert len(opened) == 2
        assert opened[1].conn.closed


def _cutoffs(store, ids, simple: set[str]) -> list:
    """Moments that cut the sample threads' histories: none, one before and one after them all,
    two between checkpoints, and last one at a checkpoint's own time (of a thread in `simple`)."""
    from datetime import timedelta

    from statectl.core.prune import _time

    times = sorted(t for i in ids for r in store.source.checkpoints(i, None) if (t := _time(r)) is not None)
    mine = sorted(t for i in simple for r in store.source.checkpoints(i, None) if (t := _time(r)) is not None)
    return [
        None,
        times[0] - timedelta(days=1),
        times[-1] + timedelta(days=1),
        times[len(times) // 2] + timedelta(milliseconds=1),
        times[len(times) // 3] - timedelta(milliseconds=1),
        mine[len(mine) // 2],
    ]


@pytest.mark.parametrize("keep", [0, 1, 2, 5])
def test_postgres_plans_simple_threads_in_sql_as_core_does(pg_samples, keep):
    """On Postgres the threads a plan needs only ids and parents for (one namespace, no delta
    channel) are planned in SQL (`simple_plans_of`); each plan, reasons, order and bytes
    included, is the one `plan_thread` makes, at every cutoff, one at a checkpoint's own time
    too (that thread: too close to tell in SQL, planned by core)."""
    from statectl.core import prune as core
    from statectl.sources.status import id_at

    def in_sql(ids, cutoff) -> set[str]:
        newer = None if cutoff is None else (id_at(cutoff, -core.MARGIN), id_at(cutoff, core.MARGIN))
        return {t for t, p in store.source.simple_plans_of(ids, keep, newer).items() if p is not None}

    with statectl.open(pg_samples) as store:
        ids = store.every_thread_id()
        simple = in_sql(ids, None)
        assert len(ids) / 2 < len(simple) < len(ids), simple  # (subgraphs and delta channels: core)
        seen: set[str] = set()
        cutoffs = _cutoffs(store, ids, simple)
        for cutoff in cutoffs:
            if not keep and cutoff is None:
                continue  # (keeps no history: refused before planning)
            alone = [core.plan_thread(store, t, keep, cutoff).to_json() for t in ids]
            together = [p.to_json() for p in core.plan_threads(store, ids, keep, cutoff)]
            assert together == alone, cutoff
            seen |= {why for p in alone if p["thread_id"] in simple for why in p["kept_because"]}
            assert sum(p["drop"] for p in alone) > 0 or cutoff == cutoffs[1]
        assert in_sql(ids, cutoffs[-1]) < simple  # (the thread with a checkpoint at that time)
    wanted = {"newest", "branch head", "fork point", "newer than --older-than"}
    assert seen >= wanted | ({"--keep-last"} if keep > 1 else set()), seen


class _OneAtATime:
    """A Postgres source as a source that reads one thread at a time (no `checkpoints_of`)."""

    def __init__(self, source):
        self._source = source

    def __getattr__(self, name):
        if name.endswith("_of") and name != "writes_of":
            raise AttributeError(name)
        return getattr(self._source, name)


def _report(store) -> dict:
    from datetime import UTC, datetime, timedelta

    from statectl.core.doctor import diagnose
    from statectl.core.findings import Options

    report = diagnose(store, Options(older_than=datetime.now(UTC) + timedelta(days=1), plan=False))
    return {
        "threads": report.threads,
        "checkpoints": report.checkpoints,
        "findings": sorted(repr(f) for f in report.findings),
    }


def test_postgres_doctor_reads_a_batch_of_threads_as_each_alone(pg_scratch, monkeypatch):
    """On Postgres `doctor` reads threads a batch at a time (`sources.ahead`): the same report
    as reading each thread alone, in a few queries a batch instead of a dozen a thread."""
    import psycopg

    from statectl.core import doctor

    with psycopg.connect(pg_scratch, autocommit=True) as conn:  # (faults for it to find)
        conn.execute(
            "DELETE FROM checkpoints WHERE (thread_id, checkpoint_id) = (SELECT thread_id, checkpoint_id FROM "
            "checkpoints WHERE thread_id = 'notes-edits' AND checkpoint_ns = '' ORDER BY checkpoint_id "
            "LIMIT 1 OFFSET 2)"
        )
        conn.execute(
            "UPDATE checkpoints SET checkpoint = checkpoint - 'versions_seen' WHERE (thread_id, checkpoint_id) = "
            "(SELECT thread_id, max(checkpoint_id) FROM checkpoints WHERE thread_id = 'fanout' GROUP BY thread_id)"
        )
    monkeypatch.setattr(doctor, "BATCH", 4)
    asked = _queries(monkeypatch)
    with statectl.open(pg_scratch) as store:
        asked.clear()
        alone = _report(statectl.Store(_OneAtATime(store.source)))
        one_at_a_time = len(asked)
        asked.clear()
        batched = _report(store)
    assert batched == alone
    assert alone["threads"] >= 9
    found = "".join(alone["findings"])
    assert all(kind in found for kind in ("gap", "rejected", "stale-interrupted", "stale-error")), found
    assert len(asked) * 2 < one_at_a_time, (len(asked), one_at_a_time)  # (batches of 4 threads here)


def test_postgres_channel_sizes_of_a_batch_are_each_threads(pg_samples):
    """`channel_storage_of` many threads gives each thread what it gives that thread alone."""
    with statectl.open(pg_samples) as store:
        source = store.source
        ids = store.every_thread_id()
        together = source.channel_storage_of(ids)
        assert set(together) == set(ids)
        for t in ids:
            assert together[t] == source.channel_storage_of([t])[t] == source.channel_storage(t)
        assert source.raw_checkpoints_of(ids) == {t: source.raw_checkpoints(t) for t in ids}
        # (`doctor` reads both in three queries: the same answers)
        assert source.rows_and_channels_of(ids) == {
            "raw_checkpoints": source.raw_checkpoints_of(ids),
            "channel_storage": together,
        }
        every = source.thread_writes_of(ids)
        keys = [(t, r.checkpoint_ns, r.checkpoint_id) for t in ids for r in source.checkpoints(t, None)]
        assert {k: every.get(k, []) for k in keys} == source.writes_of(keys)


def test_postgres_sessions_plan_each_query_for_its_values_and_do_not_jit_compile(pg_samples):
    """statectl's queries read few rows, some for a batch of threads: compiling one (Postgres'
    JIT, which a batch's cost estimate triggers) took longer than running it, and a generic
    plan kept for a prepared batch query scanned 8x longer. Both off for the session, a failed
    query (rolled back) too, and for the connection that writes."""
    with statectl.open(pg_samples) as store:
        source = store.source
        if source.conn.info.server_version < 120000:
            pytest.fail("this test needs Postgres 12 or newer (plan_cache_mode)")
        settings = "SELECT current_setting('jit'), current_setting('plan_cache_mode')"
        assert source._query(settings) == [("off", "force_custom_plan")]
        with pytest.raises(statectl.StatectlError):
            source._query("SELECT * FROM no_such_table")  # (rolled back)
        assert source._query(settings) == [("off", "force_custom_plan")]
        writable = source.connect_writable()
        try:
            assert writable.execute(settings).fetchone() == ("off", "force_custom_plan")
        finally:
            writable.close()


@pytest.mark.parametrize("columns", [None, "100"])
def test_the_prune_table_is_printed_a_chunk_of_rows_at_a_time(run, dbs, monkeypatch, columns):
    """`prune`'s table is laid out and printed a chunk of rows at a time (its rows made from the
    plans as they are printed): the same text as laid out whole, into a pipe and at a width."""
    from statectl.render import columns as table

    if columns:
        monkeypatch.setenv("COLUMNS", columns)
    else:
        monkeypatch.delenv("COLUMNS", raising=False)
    db = str(dbs["agent"])
    monkeypatch.setattr(table.PlainTable, "CHUNK", 10**6)
    whole = run("prune", "--keep-last", "1", "--db", db)
    monkeypatch.setattr(table.PlainTable, "CHUNK", 1)
    printed = []
    stream = table.PlainTable.stream
    monkeypatch.setattr(table.PlainTable, "stream", lambda self, c: (printed.append(p) or p for p in stream(self, c)))
    chunked = run("prune", "--keep-last", "1", "--db", db)
    assert whole.code == chunked.code == 0
    assert chunked.out == whole.out
    threads = len(statectl.open(db).every_thread_id())
    assert whole.out.count("\n") >= threads + 2  # the header, a row a thread, the total (wrapped at 100)
    assert len(printed) == threads  # each row printed on its own (the first with the header)


@pytest.mark.parametrize("columns", [None, "100"])
def test_the_apply_report_is_printed_a_chunk_of_rows_at_a_time(run, dbs, tmp_path, monkeypatch, columns):
    """`prune --apply`'s report holds each thread's outcome, not a dict or a laid-out row of each
    as well: the table's rows are made as they are printed, a chunk at a time (the same text as
    laid out whole), and the JSON is written an outcome at a time (the same document, byte for
    byte, as one `json_bytes` of it)."""
    import shutil

    import orjson

    from statectl.codec.jsonout import json_bytes
    from statectl.render import columns as table

    if columns:
        monkeypatch.setenv("COLUMNS", columns)
    else:
        monkeypatch.delenv("COLUMNS", raising=False)
    copies = [tmp_path / f"{i}.sqlite" for i in range(3)]
    for c in copies:
        shutil.copy(dbs["custom"], c)
    apply = ("prune", "--keep-last", "1", "--apply", "--yes")
    monkeypatch.setattr(table.PlainTable, "CHUNK", 10**6)
    whole = run(*apply, "--db", str(copies[0]))
    monkeypatch.setattr(table.PlainTable, "CHUNK", 1)
    printed = []
    stream = table.PlainTable.stream
    monkeypatch.setattr(table.PlainTable, "stream", lambda self, c: (printed.append(p) or p for p in stream(self, c)))
    chunked = run(*apply, "--db", str(copies[1]))
    assert whole.code == chunked.code == 0
    assert chunked.out == whole.out.replace(str(copies[0]), str(copies[1]))
    pruned = whole.out.count("  pruned")
    assert pruned >= 3
    assert len(printed) == pruned  # each row printed on its own (the first with the header)

    r = run(*apply, "--json", "--db", str(copies[2]))
    assert r.code == 0
    report = orjson.loads(r.out)
    assert list(report) == [
        "db",
        "applied",
        "threads",
        "drop",
        "dropped",
        "bytes",
        "interrupted",
        "longest_transaction_s",
    ]
    assert len(report["threads"]) == pruned
    assert r.out.encode() == json_bytes(report) + b"\n"


def test_every_thread_id_a_page_at_a_time(dbs, pg_samples, monkeypatch):
    """`prune` of a whole store reads the thread ids a page at a time (a million threads are
    never a list in memory): the pages join up to every thread id, in the index's order, and
    the plan is the same as planned from the whole list."""
    from statectl.core import prune as core

    for db in (str(dbs["agent"]), str(dbs["custom"]), pg_samples):
        with statectl.open(db) as store:
            every = store.every_thread_id()
            assert len(every) >= 3
            assert list(store.iter_thread_ids(page=2)) == every
            assert store.count_threads() == len(every)
            monkeypatch.setattr(core, "SQL_BATCH", 2)  # (Postgres: several batches of ids)
            paged = [p.to_json() for p in core.plan_threads(store, store.iter_thread_ids(page=2), 1)]
            assert paged == [p.to_json() for p in core.plan_threads(store, every, 1)]


def test_the_scale_bench_runs_at_a_small_size(tmp_path, pg_server):
    """bench/scale.py made small, as CI can run it: it makes its stores from real LangGraph runs
    (two SQLite stores, the long thread, a Postgres database), every command it times works on
    them, and each figure is printed with its floor and ratio. (Its times are not asserted.)"""
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

    import psycopg

    root = Path(__file__).resolve().parent.parent
    prefix = f"statectl_scale_test_{os.getpid()}"
    argv = ["--sizes", "30,60", "--turns", "1", "--runs", "1", "--long-turns", "4", "--pg-rows", "3000"]
    try:
        r = subprocess.run(
            [sys.executable, "bench/scale.py", *argv, "--data", str(tmp_path), "--pg-prefix", prefix],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=1200,
        )
    finally:
        with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{prefix}_3000" WITH (FORCE)')
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = r.stdout
    assert re.search(r"Postgres: 3,000 checkpoint rows, [\d,]+ threads", out), out
    pg = out[out.index("Postgres:") : out.index("long thread:")]
    goals = re.findall(r"^(.+?)\s+([\d.]+) s\s+(\d+) MB\s+floor ([\d.]+) s\s+([\d.]+)x \(goal 2x\)$", pg, re.M)
    assert [g[0].strip() for g in goals] == [
        "threads (first page)",
        "threads -s interrupted --older-than 1d",
        "size",
        "prune --keep-last 5 --json (plan)",
        "doctor --json --no-plan",
    ], out
    assert all(float(g[3]) > 0 and int(g[2]) > 0 for g in goals)
    assert re.search(r"^long thread: 12 checkpoints", out, re.M), out
    for name in ("show (newest)", "diff (newest)", "log", "export"):
        assert re.search(rf"^{re.escape(name)}\s+[\d.]+ s\s+\d+ MB\s+floor [\d.]+ s\s+[\d.]+x \(goal", out, re.M), name
    assert re.search(r"^log -p\s+[\d.]+ s\s+[\d.]+x log \(goal 5x\); first step [\d.]+ s$", out, re.M), out
    for name in ("threads --json (all, streamed)", "prune --keep-last 2 (the table)", "export --all -o FILE"):
        assert re.search(rf"^time / floor, {re.escape(name)}: [\d.]+x, [\d.]+x$", out, re.M), name
    assert not list(tmp_path.glob("scale-export*"))  # (the export it times is deleted)
    assert not list(tmp_path.glob("long-export*"))


@pytest.mark.parametrize(
    "extra",
    [
        ["--older-than", "1h"],
        ["-s", "interrupted", "--older-than", "1h"],
        ["--since", "3650d", "-s", "error,done"],
        ["--meta", "source=loop"],
    ],
)
def test_filtered_threads_json_streams_the_same_list(run, dbs, pg_samples, monkeypatch, extra):
    """`threads --json` with a last-update or metadata filter is written a chunk at a time as
    the store is read (it was gathered whole: 215 MB for 64,000 threads of 133,675), the same
    list as one page holding them all, on SQLite and Postgres."""
    import json

    monkeypatch.setattr(statectl, "STREAM_CHUNK", 2)
    listed = 0
    for db in (str(dbs["agent"]), str(dbs["interrupts"]), pg_samples):
        streamed = run("threads", "--json", *extra, "--db", db)
        whole = run("threads", "--json", "--limit", "100000", *extra, "--db", db)
        assert streamed.code == whole.code == 0, streamed.err + whole.err
        assert json.loads(streamed.out) == json.loads(whole.out)
        listed += len(json.loads(streamed.out))
    assert listed > 4  # (several chunks of 2)


def test_a_whole_listing_after_an_empty_thread_id_still_pages(run, dbs):
    """`--after ''` names the thread '' (a real id): it pages after it, it is not read as no
    `--after` and streamed whole."""
    r = run("threads", "--json", "--after", "", "--limit", "0", "--db", str(dbs["agent"]))
    assert r.code == 3, r.out[:200]
    assert "no thread '' to page after" in r.err


def test_sqlite_reads_its_thread_groups_many_to_a_row_off_the_main_thread(dbs, monkeypatch):
    """Off the main thread (the TUI's first page, read while Textual starts; its next pages),
    SQLite's listing reads the primary key's (thread, namespace) groups GROUPS_PART to a row (as
    JSON), not a row each: read row by row beside another busy thread, the reading thread waited
    for Python's lock at every row. On the main thread (the CLI, alone) row by row. Both give the
    plain query's groups, a thread id that is not text (a deliberately broken row: a BLOB)
    included as not text, and the same listing."""
    from concurrent.futures import ThreadPoolExecutor

    from statectl.sources.sqlite import SqliteSource

    db = dbs["custom"]
    with sqlite3.connect(db) as c:
        c.execute(
            "INSERT INTO checkpoints SELECT x'6869', checkpoint_ns, checkpoint_id || 'b', "
            "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints WHERE thread_id = 'nested' LIMIT 1"
        )
        plain = c.execute(
            "SELECT thread_id, checkpoint_ns, COUNT(*), MAX(checkpoint_id) FROM checkpoints GROUP BY 1, 2"
        ).fetchall()
    assert len(plain) > 7
    want = sorted(
        ((t, ns, n, cid) if isinstance(t, str) else (None, None, n, None) for t, ns, n, cid in plain), key=repr
    )
    monkeypatch.setattr(SqliteSource, "GROUPS_PART", 3)
    rows: list[int] = []
    query = SqliteSource._query

    def counted(self, sql, args=()):
        found = query(self, sql, args)
        if "json_group_array" in sql:
            rows.append(len(found))
        return found

    monkeypatch.setattr(SqliteSource, "_query", counted)
    with statectl.open(str(db)) as store, ThreadPoolExecutor(1) as beside:
        on_main = [t.to_json() for t in store.threads(None)]
        assert rows == []
        assert (
            sorted(
                (
                    (t, ns, n, cid) if isinstance(t, str) else (None, None, n, None)
                    for t, ns, n, cid in store.source._groups(None)
                ),
                key=repr,
            )
            == want
        )

        def groups():
            return sorted((tuple(g) for g in store.source._groups(None)), key=repr)

        assert beside.submit(groups).result() == want
        assert rows == [len(plain) // 3 + 1]
        assert beside.submit(lambda: [t.to_json() for t in store.threads(None)]).result() == on_main
