"""`statectl doctor`: each fault planted on a copy of a real LangGraph store is found, with the
thread, the checkpoint and what to do; the clean samples have none; nothing the data names is
imported; the exit code follows --fail-on."""

from __future__ import annotations

import json
import operator
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Annotated, TypedDict

import ormsgpack
import pytest
from conftest import corrupt_latest, digest
from parity import DBS, SAMPLES

STATECTL = [sys.executable, "-m", "statectl"]
sys.path.insert(0, str(SAMPLES))


def _doctor(run, db: Path | str, *args: str) -> tuple[int, dict]:
    r = run("doctor", "--json", "--db", str(db), *args)
    assert r.code in (0, 1), r.err
    return r.code, json.loads(r.out)


def _kinds(report: dict, severity: str | None = None) -> set[str]:
    return {f["kind"] for f in report["findings"] if severity is None or f["severity"] == severity}


def _in_samples(*args: str) -> subprocess.CompletedProcess:
    """statectl run from sample_threads/, where the apps' modules import (as a project's folder)."""
    return subprocess.run([*STATECTL, *args], capture_output=True, text=True, cwd=SAMPLES, timeout=300)


@pytest.mark.parametrize("db", DBS)
def test_the_clean_samples_have_no_warning_or_error(db, tmp_path):
    copy = tmp_path / f"{db}.sqlite"
    shutil.copy(SAMPLES / f"{db}.sqlite", copy)
    before = digest(copy)
    r = _in_samples("doctor", "--json", "--fail-on", "warning", "--db", str(copy))
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["counts"]["error"] == report["counts"]["warning"] == 0, report["findings"]
    assert report["threads"] > 0
    assert report["not_checked"] == []
    assert digest(copy) == before  # read-only, nothing beside it


def test_the_summary_counts_one_thread_as_one(run, dbs):
    r = run("doctor", "--no-plan", "--db", str(dbs["deep"]))
    n = json.loads(run("threads", "--db", str(dbs["deep"]), "--json").out)[0]["checkpoints"]
    last = r.out.strip().splitlines()[-1]
    assert last.startswith(f"1 thread, {n} checkpoints of {dbs['deep']}: "), last


def test_the_sample_postgres_has_no_warning_or_error(run, pg_samples):
    url = pg_samples
    r = _in_samples("doctor", "--json", "--fail-on", "warning", "--db", url)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["counts"]["error"] == report["counts"]["warning"] == 0, report["findings"]
    assert report["checkpoints"] > 100


def _ids(db: Path, thread: str) -> list[tuple[str, str | None]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
            "ORDER BY checkpoint_id",
            (thread,),
        ).fetchall()


def test_integrity_faults_are_found_where_they_are(run, dbs):
    db = dbs["custom"]
    # a checkpoint deleted in the middle of a history, its writes left behind
    ids = _ids(db, "notes-edits")
    gone = ids[2][0]
    # a loop: the oldest checkpoint of a thread made the child of its newest
    loop = _ids(db, "fanout")
    # a row that does not decode, and one LangGraph's loader would reject
    bad = corrupt_latest(db, "many-types")
    rejected = _ids(db, "parse-fails")[-1][0]
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM checkpoints WHERE thread_id = 'notes-edits' AND checkpoint_id = ?", (gone,))
        writes = conn.execute("SELECT count(*) FROM writes WHERE checkpoint_id = ?", (gone,)).fetchone()[0]
        conn.execute(
            "UPDATE checkpoints SET parent_checkpoint_id = ? WHERE thread_id = 'fanout' AND checkpoint_id = ?",
            (loop[-1][0], loop[0][0]),
        )
        conn.execute(
            "UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
            (
                ormsgpack.packb({"v": 4, "id": rejected, "ts": "2026-11-22T00:00:00+00:00", "channel_values": {}}),
                rejected,
            ),
        )
    assert writes > 0
    code, report = _doctor(run, db)
    assert code == 1  # errors, and --fail-on error is the default
    found = {(f["kind"], f.get("thread_id"), f.get("checkpoint_id")) for f in report["findings"]}
    assert ("undecodable", "many-types", bad) in found
    assert ("rejected", "parse-fails", rejected) in found
    assert any(k == "loop" and t == "fanout" for k, t, _ in found)
    assert any(k == "gap" and t == "notes-edits" for k, t, _ in found)
    orphans = next(f for f in report["findings"] if f["kind"] == "orphan-writes")
    assert (orphans["thread_id"], orphans["checkpoint_id"]) == ("notes-edits", gone)
    assert orphans["count"] == writes
    assert all(f.get("fix") for f in report["findings"] if f["severity"] != "info")
    human = run("doctor", "--db", str(db))
    assert human.code == 1
    assert "→ " in human.out  # what to do, under each finding
    assert "findings at error or worse" in " ".join(human.out.split())


def test_a_delta_channel_whose_ancestor_is_gone_is_an_error(run, tmp_path):
    """deepagents' messages are replayed from ancestors: delete one between the newest checkpoint
    and its snapshot and the newest state cannot be rebuilt."""
    from deep_app import make_deep_agent
    from langgraph.checkpoint.sqlite import SqliteSaver
    from scripted import say

    db = tmp_path / "deep.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    for i in range(3):
        make_deep_agent([say(f"answer {i}")], SqliteSaver(conn)).invoke(
            {"messages": [("user", f"question {i}")]}, {"configurable": {"thread_id": "d"}}
        )
    conn.close()
    assert _kinds(_doctor(run, db)[1], "error") == set()
    ids = _ids(db, "d")
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM checkpoints WHERE checkpoint_id = ?", (ids[-3][0],))
    code, report = _doctor(run, db)
    assert code == 1
    broken = [f for f in report["findings"] if f["kind"] == "delta-ancestor-missing"]
    assert [f["checkpoint_id"] for f in broken] == [ids[-2][0]]
    assert "messages" in broken[0]["message"]


def test_postgres_orphan_and_missing_blobs(run, pg_scratch):
    import psycopg

    with psycopg.connect(pg_scratch) as conn:
        # a checkpoint row deleted (its writes and its own blob versions stay)
        t, _ns, cid = conn.execute(
            "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints c WHERE thread_id = 'notes-edits' "
            "AND checkpoint_ns = '' ORDER BY checkpoint_id LIMIT 1 OFFSET 3"
        ).fetchone()
        conn.execute("DELETE FROM checkpoints WHERE thread_id = %s AND checkpoint_id = %s", (t, cid))
        # a blob a checkpoint names, deleted (a channel that had a value before)
        victim = conn.execute(
            "SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, b.channel, b.version FROM checkpoints c "
            "JOIN checkpoint_blobs b ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns AND "
            "c.checkpoint->'channel_versions'->>b.channel = b.version WHERE c.thread_id = 'bakery-plan' AND "
            "b.channel = 'messages' AND b.version > (SELECT min(version) FROM checkpoint_blobs WHERE "
            "thread_id = 'bakery-plan' AND channel = 'messages') ORDER BY c.checkpoint_id DESC LIMIT 1"
        ).fetchone()
        conn.execute(
            "DELETE FROM checkpoint_blobs WHERE thread_id = %s AND checkpoint_ns = %s AND channel = %s "
            "AND version = %s",
            (victim[0], victim[1], victim[3], victim[4]),
        )
    code, report = _doctor(run, pg_scratch)
    assert code == 1
    kinds = {(f["kind"], f.get("thread_id")) for f in report["findings"]}
    assert ("orphan-writes", "notes-edits") in kinds
    assert ("orphan-blobs", "notes-edits") in kinds
    missing = [f for f in report["findings"] if f["kind"] == "missing-blob"]
    assert {(f["thread_id"], f["checkpoint_id"]) for f in missing} >= {(victim[0], victim[2])}
    assert all("'messages'" in f["message"] for f in missing)


def test_postgres_rows_are_checked_as_decoding_them_would(pg_scratch):
    """`doctor` checks a Postgres row by parsing each blob once for the thread (`parse_pg_export`),
    not by decoding the checkpoint whole for every row that names it: every row passes or fails
    as decoding it does, with the same line, and names the same classes; a corrupt blob version
    is said at every checkpoint that names it."""
    import psycopg

    import statectl
    from statectl.codec.classes import named, parse_pg_export
    from statectl.codec.formats import PG_TYPE, checked_checkpoint
    from statectl.errors import DecodeError

    with psycopg.connect(pg_scratch) as conn:  # (a messages version several checkpoints name, cut short)
        t, ver = conn.execute(
            "SELECT c.thread_id, c.checkpoint->'channel_versions'->>'messages' FROM checkpoints c "
            "WHERE c.checkpoint_ns = '' AND c.checkpoint ? 'channel_versions' GROUP BY 1, 2 HAVING count(*) > 1 "
            "ORDER BY 1, 2 LIMIT 1"
        ).fetchone()
        conn.execute(
            "UPDATE checkpoint_blobs SET blob = substring(blob from 1 for 9) WHERE thread_id = %s AND "
            "checkpoint_ns = '' AND channel = 'messages' AND version = %s",
            (t, ver),
        )
    failed: list[tuple[str, str]] = []
    rows = 0
    with statectl.open(pg_scratch) as store:
        for thread in store.every_thread_id():
            memo: dict = {}
            for (_ns, cid), (type_, blob) in sorted(store.source.raw_checkpoints(thread).items()):
                assert type_ == PG_TYPE
                rows += 1
                try:
                    whole = checked_checkpoint(thread, cid, type_, blob)
                except DecodeError as exc:
                    with pytest.raises(DecodeError) as parsed:
                        parse_pg_export(blob, memo)
                    assert DecodeError.corrupt(thread, cid, parsed.value.message).message == exc.message
                    failed.append((thread, cid))
                    continue
                ck, found = parse_pg_export(blob, memo)
                assert found == named(type_, blob)
                assert set(ck) == set(whole)
                assert set(ck["channel_values"]) == set(whole["channel_values"])
                inline = [k for k, v in ck["channel_values"].items() if v is not None]
                assert {k: ck["channel_values"][k] for k in inline} == {k: whole["channel_values"][k] for k in inline}
    assert rows > 100
    assert len(failed) > 1, failed
    assert {f[0] for f in failed} == {t}, failed


def test_a_postgres_blob_is_remembered_by_its_type_and_text():
    """`parse_pg_export` remembers a blob's answer for the thread's other rows, by its type and
    its text: a NULL msgpack blob (deliberately broken rows) fails as decoding it fails, even
    after an empty channel's NULL was read; the same bytes under another type are read again."""
    import orjson

    from statectl.codec.classes import parse_pg_export
    from statectl.codec.formats import PG_TYPE, checked_checkpoint
    from statectl.errors import DecodeError

    ck = {"channel_values": {}, "channel_versions": {"a": "1", "b": "1"}, "versions_seen": {}}
    empty = orjson.dumps({"checkpoint": ck, "blobs": [["a", "1", "empty", None]]})
    null = orjson.dumps({"checkpoint": ck, "blobs": [["b", "1", "msgpack", None]]})
    packed = orjson.dumps({"checkpoint": ck, "blobs": [["b", "1", "msgpack", "gA=="]]})  # an empty map
    as_json = orjson.dumps({"checkpoint": ck, "blobs": [["b", "1", "json", "gA=="]]})  # the same bytes: not JSON
    memo: dict = {}
    assert parse_pg_export(empty, memo)[0]["channel_values"] == {}
    with pytest.raises(DecodeError) as whole:
        checked_checkpoint("t", "c", PG_TYPE, null)
    with pytest.raises(DecodeError) as parsed:
        parse_pg_export(null, memo)
    assert DecodeError.corrupt("t", "c", parsed.value.message).message == whole.value.message
    for _ in range(2):  # (the second time from the memo)
        assert checked_checkpoint("t", "c", PG_TYPE, packed)["channel_values"] == {"b": {}}
        assert parse_pg_export(packed, memo)[0]["channel_values"] == {"b": None}
        with pytest.raises(DecodeError) as whole:
            checked_checkpoint("t", "c", PG_TYPE, as_json)
        with pytest.raises(DecodeError) as parsed:
            parse_pg_export(as_json, memo)
        assert DecodeError.corrupt("t", "c", parsed.value.message).message == whole.value.message


def test_a_refactor_that_moves_a_class_is_found_without_importing_it(tmp_path):
    """The app renamed `Customer`: its stored values would silently load as a plain dict. The
    project's copy of the module writes a file if anything imports it: nothing does."""
    project = tmp_path / "project"
    project.mkdir()
    source = (SAMPLES / "custom_app.py").read_text()
    assert "class Customer(BaseModel):" in source
    imported = tmp_path / "IMPORTED"
    (project / "custom_app.py").write_text(
        f"open({str(imported)!r}, 'w').close()\n"
        + source.replace("class Customer(BaseModel):", "class Client(BaseModel):")
    )
    db = tmp_path / "custom.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", db)
    r = subprocess.run(
        [*STATECTL, "doctor", "--json", "--no-plan", "--db", str(db)], capture_output=True, text=True, cwd=project
    )
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    missing = [f for f in report["findings"] if f["kind"] == "class-missing"]
    assert [f["message"].split(":")[0] for f in missing] == ["custom_app.Customer"]
    assert "silently loads as a plain dict" in missing[0]["message"]
    assert "no Customer in" in missing[0]["message"]
    assert missing[0]["threads"] == ["many-types"]
    assert not imported.exists()
    # from a folder without the app at all: every class it defined is missing
    r = subprocess.run(
        [*STATECTL, "doctor", "--json", "--no-plan", "--db", str(db)], capture_output=True, text=True, cwd=tmp_path
    )
    names = {f["message"].split(":")[0] for f in json.loads(r.stdout)["findings"] if f["kind"] == "class-missing"}
    assert names == {
        "custom_app.Colour",
        "custom_app.Customer",
        "custom_app.Level",
        "custom_app.Point",
        "custom_app.Receipt",
    }


def test_a_class_recorded_as_main_is_a_warning(run, tmp_path):
    """A state class defined in a script run as the program is stored as `__main__.X`."""
    db = tmp_path / "main.sqlite"
    script = tmp_path / "app.py"
    script.write_text(
        "import sqlite3, sys\n"
        "from typing import TypedDict\n"
        "from pydantic import BaseModel\n"
        "from langgraph.checkpoint.sqlite import SqliteSaver\n"
        "from langgraph.graph import StateGraph, START, END\n"
        "class Note(BaseModel):\n    text: str\n"
        "class S(TypedDict):\n    note: Note\n"
        "g = StateGraph(S)\n"
        "g.add_node('w', lambda s: {'note': Note(text='hi')})\n"
        "g.add_edge(START, 'w'); g.add_edge('w', END)\n"
        "conn = sqlite3.connect(sys.argv[1], check_same_thread=False)\n"
        "g.compile(checkpointer=SqliteSaver(conn)).invoke(\n"
        "    {'note': Note(text='x')}, {'configurable': {'thread_id': 'm'}})\n"
    )
    subprocess.run([sys.executable, str(script), str(db)], check=True, capture_output=True)
    code, report = _doctor(run, db, "--fail-on", "warning")
    assert code == 1
    main = next(f for f in report["findings"] if f["kind"] == "main-module")
    assert main["message"].startswith("__main__.Note was defined in a script run as the program")
    assert main["threads"] == ["m"]


def test_schema_check_joins_with_graph(tmp_path):
    db = tmp_path / "custom.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", db)
    r = _in_samples("doctor", "--json", "--no-plan", "--graph", "custom_app.py:notes_builder", "--db", str(db))
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    schema = [f for f in report["findings"] if f["check"] == "schema"]
    assert {f["thread_id"] for f in schema} >= {"approval-waiting", "many-types"}
    assert all(f["thread_id"] != "notes-edits" for f in schema)  # its own graph fits
    waiting = next(f for f in schema if f["thread_id"] == "approval-waiting")
    assert waiting["severity"] == "error"  # it waits and would resume on the wrong schema


class Counter(TypedDict):
    n: Annotated[int, operator.add]
    blob: str


def test_operations_findings(run, tmp_path):
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    db = tmp_path / "ops.sqlite"
    g = StateGraph(Counter)
    g.add_node("step", lambda s: {"n": 1})
    g.add_node("big", lambda s: {"blob": "x" * 1_200_000})
    g.add_edge(START, "step")
    g.add_edge("step", END)
    conn = sqlite3.connect(db, check_same_thread=False)
    graph = g.compile(checkpointer=SqliteSaver(conn))
    for _ in range(200):  # many small steps: versions and ids outweigh a one-number state
        graph.invoke({"n": 1, "blob": ""}, {"configurable": {"thread_id": "tiny"}})
    graph.invoke({"n": 1, "blob": ""}, {"configurable": {"thread_id": "grows"}})
    graph.update_state({"configurable": {"thread_id": "grows"}}, {"blob": "x" * 1_200_000})
    conn.close()
    code, report = _doctor(run, db, "--older-than", "1s")
    assert code == 0  # warnings and notes only
    by = {(f["kind"], f.get("thread_id")) for f in report["findings"]}
    assert ("large-channel", "grows") in by
    assert ("size-jump", "grows") in by
    assert ("bookkeeping", "tiny") in by
    assert ("prunable", None) in by
    large = next(f for f in report["findings"] if f["kind"] == "large-channel")
    assert "'blob'" in large["message"]
    assert _doctor(run, db, "--fail-on", "warning")[0] == 1


def test_stale_interrupts_and_errors(run, dbs, monkeypatch):
    """With --older-than, the threshold the user set: threads waiting or failed longer are warnings
    (exit 1 under --fail-on warning); without it, notes past the default 7d."""
    from datetime import UTC, datetime

    import statectl
    from statectl.core.doctor import Options, diagnose

    db = dbs["custom"]
    code, report = _doctor(run, db, "--older-than", "1s", "--no-plan", "--fail-on", "warning")
    stale = {(f["kind"], f["thread_id"], f["severity"]) for f in report["findings"] if f["kind"].startswith("stale-")}
    assert stale == {("stale-interrupted", "approval-waiting", "warning"), ("stale-error", "parse-fails", "warning")}
    assert code == 1
    with statectl.open(str(db)) as store:  # (the CLI's options without --older-than, its cutoff now)
        found = diagnose(store, Options(older_than=datetime.now(UTC), plan=False)).findings
    stale = {(f.kind, f.thread_id, f.severity) for f in found if f.kind.startswith("stale-")}
    assert stale == {("stale-interrupted", "approval-waiting", "info"), ("stale-error", "parse-fails", "info")}
    from statectl.cli import doctor as cli

    monkeypatch.setattr(cli, "STALE", "1s")  # (the default threshold, 7d, made one the samples pass)
    _code, report = _doctor(run, db, "--no-plan")
    stale = {(f["kind"], f["thread_id"], f["severity"]) for f in report["findings"] if f["kind"].startswith("stale-")}
    assert stale == {("stale-interrupted", "approval-waiting", "info"), ("stale-error", "parse-fails", "info")}
    _, report = _doctor(run, db, "--older-than", "3650d")
    assert not [f for f in report["findings"] if f["kind"].startswith("stale-")]


def test_folders_and_exports_are_checked(run, dbs, tmp_path):
    exported = tmp_path / "all.json"
    assert run("export", "--all", "-o", str(exported), "--db", str(dbs["custom"])).code == 0
    _, report = _doctor(run, exported, "--no-plan")
    assert report["threads"] == 8
    assert _kinds(report, "error") <= {"class-missing"}  # (custom_app is not importable from here)
    assert any("no checkpoint holds" in n for n in report["not_checked"])
    folder = tmp_path / "app"
    shutil.copytree(SAMPLES / ".langgraph_api", folder / ".langgraph_api")
    _, report = _doctor(run, folder)
    assert report["threads"] > 0
    assert _kinds(report, "error") <= {"class-missing"}


@pytest.mark.parametrize("args", [["--fail-on", "never"], ["--older-than", "soon"]])
def test_usage_errors(run, dbs, args):
    r = run("doctor", *args, "--db", str(dbs["custom"]))
    assert r.code == 2
    assert len(r.err.splitlines()) == 1


def test_pickled_and_lc_values_naming_gone_classes(run, dbs):
    """Hand-written rows (deliberately broken input): a pickled write whose class's module is gone
    fails to load; a LangChain `lc` constructor of the app's own class loads as a plain dict. Read
    without unpickling or importing: the pickle would call `os.system` if it ran."""
    db = dbs["custom"]
    evil = b"cgone_module\nThing\n(tRcos\nsystem\n(S'touch /tmp/statectl-doctor-pwned'\ntR."
    lc = json.dumps({"lc": 1, "type": "constructor", "id": ["myapp", "models", "Plan"], "kwargs": {"x": 1}})
    with sqlite3.connect(db) as conn:
        (cid,) = conn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'fanout' ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        for idx, (channel, type_, value) in enumerate([("pickled", "pickle", evil), ("plan", "json", lc.encode())]):
            conn.execute(
                "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) "
                "VALUES ('fanout', '', ?, 't', ?, ?, ?, ?)",
                (cid, 100 + idx, channel, type_, value),
            )
    code, report = _doctor(run, db, "--no-plan")
    assert code == 1
    missing = {f["message"].split(":")[0]: f for f in report["findings"] if f["kind"] == "class-missing"}
    assert "fails to load" in missing["gone_module.Thing"]["message"]
    assert missing["gone_module.Thing"]["threads"] == ["fanout"]
    assert "loads as a plain dict" in missing["myapp.models.Plan"]["message"]
    assert "os.system" not in missing  # (the standard library's: found, not reported)
    assert any(f["kind"] == "pickled" and f["thread_id"] == "fanout" for f in report["findings"])
    assert not Path("/tmp/statectl-doctor-pwned").exists()


def _bounded_reads(monkeypatch) -> list[tuple[str, str, int]]:
    """RAW_BYTES and the blob memo's limit at 0 (no thread read whole, the memo emptied at every
    answer); each whole-thread read's (store kind, thread, rows held)."""
    from statectl.codec.classes import BlobMemo
    from statectl.sources import base
    from statectl.sources.postgres.upkeep import Upkeep
    from statectl.sources.sqlite import SqliteSource

    monkeypatch.setattr(base, "RAW_BYTES", 0)
    monkeypatch.setattr(BlobMemo, "LIMIT", 0)
    held: list[tuple[str, str, int]] = []
    sqlite_raws, pg_together = SqliteSource.raw_checkpoints, Upkeep.rows_and_channels_of

    def sqlite_read(self, thread_id):
        out = sqlite_raws(self, thread_id)
        held.append(("sqlite", thread_id, len(out)))
        return out

    def pg_read(self, thread_ids):
        out = pg_together(self, thread_ids)
        held.extend(("postgres", t, len(raws)) for t, raws in out["raw_checkpoints"].items())
        return out

    monkeypatch.setattr(SqliteSource, "raw_checkpoints", sqlite_read)
    monkeypatch.setattr(Upkeep, "rows_and_channels_of", pg_read)
    return held


def test_a_long_thread_is_never_held_whole_and_finds_the_same(run, dbs, pg_scratch, monkeypatch):
    """A whole-thread read holds at most RAW_BYTES (SQLite: the rows past it are left out; Postgres:
    a thread whose blobs pass it is read a checkpoint at a time), and the Postgres blob memo at
    most its LIMIT: `doctor` finds the same with no thread read whole and the memo emptied at
    every answer as with both unbounded (a damaged row planted in each store). Before, the
    10,002-checkpoint thread's doctor held its 8.5 GB at once (15.9 GB of memory)."""
    import psycopg

    corrupt_latest(dbs["agent"], "bakery-plan")
    with psycopg.connect(pg_scratch) as conn:
        conn.execute(
            "UPDATE checkpoint_blobs SET blob = '\\xc1c1'::bytea WHERE (thread_id, channel, version) IN "
            "(SELECT thread_id, channel, version FROM checkpoint_blobs WHERE channel = 'messages' LIMIT 1)"
        )
        with_blobs = {t for (t,) in conn.execute("SELECT DISTINCT thread_id FROM checkpoint_blobs")}
    stores = [str(dbs["agent"]), str(dbs["deep"]), pg_scratch]
    whole = [_doctor(run, db, "--no-plan") for db in stores]
    held = _bounded_reads(monkeypatch)
    bounded = [_doctor(run, db, "--no-plan") for db in stores]
    assert bounded == whole
    found = [f["kind"] for _code, report in whole for f in report["findings"]]
    assert found.count("undecodable") >= 2  # (the planted rows, SQLite and Postgres)
    assert {kind for kind, _t, _n in held} == {"sqlite", "postgres"}
    assert all(n <= 1 for kind, _t, n in held if kind == "sqlite")  # (one row, then past the limit)
    assert all(n == 0 for kind, t, n in held if kind == "postgres" and t in with_blobs)
