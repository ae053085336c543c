"""`statectl migrate`: stored threads rewritten so the current code loads them.

Real runs: the sample app's threads (its pydantic models, dataclasses, enums, namedtuples) and
an app written here whose state schema changes. A module moves: `--rename-class` in a copy, and
LangGraph loads every value under the new classes, its history equal to the original's apart
from the module names. A key renamed and one dropped: the histories equal under the new schema,
and a thread waiting on an interrupt resumes after the migration to the same result. In place
with a concurrent writer (SQLite and Postgres). Bad input: one line, exit 2, nothing written."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SAMPLES, digest

STATECTL = [sys.executable, "-m", "statectl"]
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}

HISTORY = """
import json, sqlite3, sys
sys.path.insert(0, sys.argv[1])
from importlib import import_module
from record import snapshot_record, tagged
store, module, builder, threads = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
if store.startswith("postgresql:"):
    from langgraph.checkpoint.postgres import PostgresSaver
    cm = PostgresSaver.from_conn_string(store)
    saver = cm.__enter__()
else:
    from langgraph.checkpoint.sqlite import SqliteSaver
    saver = SqliteSaver(sqlite3.connect(store, check_same_thread=False))
graph = getattr(import_module(module), builder).compile(checkpointer=saver)
out = {}
for t in threads:
    config = {"configurable": {"thread_id": t}}
    out[t] = {
        "history": [snapshot_record(s) for s in graph.get_state_history(config)],
        "pending": [[c.config["configurable"]["checkpoint_id"], [[w[0], w[1], tagged(w[2])] for w in c.pending_writes]]
                    for c in saver.list(config)],
        "versions": [{k: c.checkpoint.get(k) for k in ("channel_versions", "versions_seen", "updated_channels")}
                     for c in saver.list(config)],
    }
print(json.dumps(out, sort_keys=True))
print(sorted(m for m in sys.modules if m in ("custom_app", "shop_models", "schema_app")), file=sys.stderr)
"""


def history(
    where: Path, store: str, module: str, builder: str, *threads: str, imported: list[str] | None = None
) -> dict:
    """LangGraph's history (and every checkpoint's pending writes) of `threads`, in a process
    whose path holds only `where` (the app's module) and the recording helper."""
    script = where / "_history.py"
    script.write_text(HISTORY)
    shutil.copy(SAMPLES / "record.py", where / "record.py")
    r = subprocess.run(
        [sys.executable, str(script), str(where), store, module, builder, *threads],
        capture_output=True,
        text=True,
        cwd=where,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    # (only the app's own modules: the old one is nowhere on the path of a run of the moved app)
    assert r.stderr.strip().splitlines()[-1] == repr(imported or [module]), r.stderr[-500:]
    return json.loads(r.stdout)


def statectl(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*STATECTL, *args], capture_output=True, text=True, cwd=cwd, env=ENV, timeout=300)


@pytest.fixture
def moved(tmp_path) -> Path:
    """The sample app after a refactor: its module is now `shop_models` (nothing else changed)."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(SAMPLES / "custom_app.py", project / "shop_models.py")
    old = tmp_path / "old"
    old.mkdir()
    shutil.copy(SAMPLES / "custom_app.py", old / "custom_app.py")
    return project


def _stored_rows(db: Path, thread: str) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        cps = conn.execute(
            "SELECT checkpoint_id, checkpoint FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_id", (thread,)
        ).fetchall()
        ws = conn.execute(
            "SELECT checkpoint_id, task_id, idx, channel, value FROM writes WHERE thread_id = ? "
            "ORDER BY checkpoint_id, task_id, idx",
            (thread,),
        ).fetchall()
    finally:
        conn.close()
    return cps + ws


# -- a module moved -------------------------------------------------------------------------------
def test_rename_class_in_a_sqlite_copy_loads_under_the_new_module(tmp_path, moved):
    db = tmp_path / "custom.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", db)
    before = digest(db)
    out = tmp_path / "migrated.sqlite"
    # a dry run first: what would change, nothing written
    r = statectl(moved, "migrate", "--all", "--db", str(db), "--rename-class", "custom_app=shop_models", "--json")
    assert r.returncode == 0, r.stderr
    plan = {t["thread_id"]: t for t in json.loads(r.stdout)["threads"]}
    assert plan["many-types"]["classes"] == {
        f"custom_app.{n} -> shop_models.{n}": 2 for n in ("Colour", "Customer", "Level", "Point", "Receipt")
    }
    assert not plan["notes-edits"]["checkpoints"]
    assert not plan["notes-edits"]["writes"]
    assert not out.exists()
    assert digest(db) == before

    r = statectl(
        moved, "migrate", "many-types", "--db", str(db), "--rename-class", "custom_app=shop_models", "--to", str(out)
    )
    assert r.returncode == 0, r.stderr
    assert digest(db) == before  # (the source is only read)
    original = history(tmp_path / "old", str(db), "custom_app", "types_builder", "many-types")
    migrated = history(moved, str(out), "shop_models", "types_builder", "many-types")
    text = json.dumps(original, sort_keys=True)
    assert "custom_app." in text  # (the values came back as the app's classes, not as dicts)
    assert json.loads(text.replace('"custom_app.', '"shop_models.')) == migrated
    # every value no rename touched is byte for byte the source's
    old_rows, new_rows = _stored_rows(db, "many-types"), _stored_rows(out, "many-types")
    assert len(old_rows) == len(new_rows)
    kept = [(a, b) for a, b in zip(old_rows, new_rows, strict=True) if b"custom_app" not in a[-1]]
    assert kept
    assert all(a == b for a, b in kept)
    assert all(b"custom_app" not in row[-1] for row in new_rows)
    # and doctor, from the moved project, finds no class missing
    r = statectl(moved, "doctor", "--json", "--no-plan", "--db", str(out))
    findings = json.loads(r.stdout)["findings"]
    assert not [f for f in findings if f["kind"] == "class-missing"], findings


def test_rename_one_class_in_postgres_to_postgres(tmp_path, moved, pg_samples, pg_empty):
    """Postgres' layout (JSONB and one blob per channel version): one class renamed by its full
    name, the module's other classes left as they were."""
    text = (moved / "shop_models.py").read_text()
    (moved / "shop_models.py").write_text(re.sub(r"\bCustomer\b", "Client", text))
    # the rest of the app still lives in custom_app: the new module imports it from there
    shutil.copy(SAMPLES / "custom_app.py", moved / "custom_app.py")
    r = statectl(
        moved,
        "migrate",
        "many-types",
        "--db",
        pg_samples,
        "--rename-class",
        "custom_app.Customer=shop_models.Client",
        "--to",
        pg_empty,
    )
    assert r.returncode == 0, r.stderr
    original = history(tmp_path / "old", pg_samples, "custom_app", "types_builder", "many-types")
    migrated_text = json.dumps(
        history(moved, pg_empty, "custom_app", "types_builder", "many-types", imported=["custom_app", "shop_models"]),
        sort_keys=True,
    )
    assert '"shop_models.Client"' in migrated_text
    expected = json.dumps(original, sort_keys=True).replace('"custom_app.Customer"', '"shop_models.Client"')
    assert json.loads(expected) == json.loads(migrated_text)


# -- a state schema changed -----------------------------------------------------------------------
APP = """
import operator, sqlite3, sys
from typing import Annotated, TypedDict
from langgraph.graph import StateGraph, START, END
from langgraph.types import Command, interrupt

NEW = sys.argv[1] == "new"
TEXT = "text" if NEW else "draft"

if NEW:
    class S(TypedDict, total=False):
        text: str
        log: Annotated[list[str], operator.add]
else:
    class S(TypedDict, total=False):
        draft: str
        log: Annotated[list[str], operator.add]
        scratch: int

def write(s):
    out = {TEXT: s[TEXT] + "!", "log": ["wrote"]}
    if not NEW:
        out["scratch"] = len(s[TEXT])
    return out

def ask(s):
    answer = interrupt({"question": "ok?", "text": s[TEXT]})
    return {TEXT: s[TEXT] + " " + answer, "log": ["asked " + answer]}

def finish(s):
    return {"log": ["done"]}

g = StateGraph(S)
g.add_node("write", write); g.add_node("ask", ask); g.add_node("finish", finish)
g.add_edge(START, "write"); g.add_edge("write", "ask"); g.add_edge("ask", "finish"); g.add_edge("finish", END)

def saver(store):
    if store.startswith("postgresql:"):
        from langgraph.checkpoint.postgres import PostgresSaver
        global HELD
        HELD = PostgresSaver.from_conn_string(store)  # (held: its connection lives as long as the run)
        s = HELD.__enter__()
        s.setup()
        return s
    from langgraph.checkpoint.sqlite import SqliteSaver
    return SqliteSaver(sqlite3.connect(store, check_same_thread=False))

builder = g
if __name__ == "__main__":
    store, op, thread = sys.argv[2], sys.argv[3], sys.argv[4]
    graph = g.compile(checkpointer=saver(store))
    config = {"configurable": {"thread_id": thread}}
    if op == "start":
        graph.invoke({TEXT: thread}, config)
    elif op == "resume":
        graph.invoke(Command(resume=sys.argv[5]), config)
    elif op == "rerun":  # from the thread's first checkpoint (its input): run again, answer, print the end
        import json
        first = list(graph.get_state_history(config))[-1]
        graph.invoke(None, first.config)
        graph.invoke(Command(resume=sys.argv[5]), config)
        print(json.dumps(graph.get_state(config).values))
    elif op == "starts":  # threads that stop at their interrupt
        for i in range(int(sys.argv[5])):
            graph.invoke({TEXT: f"{thread}-{i}"}, {"configurable": {"thread_id": f"{thread}-{i}"}})
    elif op == "many":  # a live writer: thread after thread, each run to its end
        for i in range(int(sys.argv[5])):
            t = {"configurable": {"thread_id": f"{thread}-{i}"}}
            graph.invoke({TEXT: "live"}, t)
            graph.invoke(Command(resume="yes"), t)
"""


def _schema_app(tmp_path: Path) -> Path:
    app = tmp_path / "app"
    app.mkdir(exist_ok=True)
    (app / "schema_app.py").write_text(APP)
    return app


def _app(app: Path, version: str, store: str, *args: str) -> str:
    r = subprocess.run(
        [sys.executable, str(app / "schema_app.py"), version, store, *args], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def _runs(app: Path, store: str) -> None:
    """Old code: `done` runs to its end, `waiting` stops at its interrupt."""
    for thread in ("done", "waiting"):
        _app(app, "old", store, "start", thread)
    _app(app, "old", store, "resume", "done", "yes")


def _renamed(value: object) -> object:
    """State values (and maps of them) as the new schema names them: draft -> text, no scratch."""
    if isinstance(value, dict):
        return {("text" if k == "draft" else k): _renamed(v) for k, v in value.items() if k != "scratch"}
    if isinstance(value, list):
        return [_renamed(v) for v in value]
    return value


def _under_new_schema(recorded: dict) -> dict:
    """`history`'s record of threads under the old schema, as the new one names it."""
    out = {}
    for thread, h in recorded.items():
        pending = [
            [cid, [[task, "text" if ch == "draft" else ch, v] for task, ch, v in writes if ch != "scratch"]]
            for cid, writes in h["pending"]
        ]
        versions = [
            {
                "channel_versions": _renamed(v["channel_versions"]),
                "versions_seen": _renamed(v["versions_seen"]),
                "updated_channels": [
                    "text" if c == "draft" else c for c in v["updated_channels"] or () if c != "scratch"
                ]
                if v["updated_channels"] is not None
                else None,
            }
            for v in h["versions"]
        ]
        out[thread] = {"history": _renamed(h["history"]), "pending": pending, "versions": versions}
    return out


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_rename_and_drop_keys_history_equal_and_the_interrupt_resumes(tmp_path, kind, request):
    app = _schema_app(tmp_path)
    if kind == "sqlite":
        store, copy = str(tmp_path / "app.sqlite"), str(tmp_path / "migrated.sqlite")
    else:
        store, copy = request.getfixturevalue("pg_empty"), request.getfixturevalue("pg_scratch")
        # (the scratch database holds the samples: the migrated threads go beside them)
    _runs(app, store)
    old = history(app, store, "schema_app", "builder", "done", "waiting")
    assert any(s["values"].get("scratch") for s in old["done"]["history"])  # (the dropped key was stored)
    r = statectl(
        app, "migrate", "--all", "--db", store, "--rename-key", "draft=text", "--drop-key", "scratch", "--to", copy
    )
    assert r.returncode == 0, r.stderr
    (app / "schema_app.py").write_text(APP.replace('NEW = sys.argv[1] == "new"', "NEW = True"))
    new = history(app, copy, "schema_app", "builder", "done", "waiting")
    assert _under_new_schema(old) == new
    # the waiting thread resumes, under the new code, to what the old code resumes the original to
    (app / "schema_app.py").write_text(APP)
    _app(app, "old", store, "resume", "waiting", "fine")
    _app(app, "new", copy, "resume", "waiting", "fine")
    after_old = history(app, store, "schema_app", "builder", "waiting")
    (app / "schema_app.py").write_text(APP.replace('NEW = sys.argv[1] == "new"', "NEW = True"))
    after_new = history(app, copy, "schema_app", "builder", "waiting")
    final_old, final_new = after_old["waiting"]["history"][0], after_new["waiting"]["history"][0]
    assert final_new["values"] == {"text": "waiting! fine", "log": ["wrote", "asked fine", "done"]}
    assert _renamed(final_old["values"]) == final_new["values"]
    # run again from the first checkpoint (the graph's input, held by __start__) under the new code
    (app / "schema_app.py").write_text(APP)
    again = json.loads(_app(app, "new", copy, "rerun", "done", "again"))
    assert again == {"text": "done! again", "log": ["wrote", "asked again", "done"]}
    assert _renamed(json.loads(_app(app, "old", store, "rerun", "done", "again"))) == again


# -- in place, a writer running -------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_in_place_with_a_concurrent_writer_loses_no_row(tmp_path, kind, request):
    app = _schema_app(tmp_path)
    store = str(tmp_path / "app.sqlite") if kind == "sqlite" else request.getfixturevalue("pg_empty")
    _runs(app, store)
    _app(app, "old", store, "starts", "old", "20")
    old = history(app, store, "schema_app", "builder", "done", "waiting")
    # a writer with the new code runs new threads while the old ones are migrated
    live = subprocess.Popen(
        [sys.executable, str(app / "schema_app.py"), "new", store, "many", "live", "15"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        time.sleep(0.5)
        r = statectl(
            app,
            "migrate",
            "--all",
            "--db",
            store,
            "--rename-key",
            "draft=text",
            "--drop-key",
            "scratch",
            "--in-place",
            "--yes",
            "--json",
        )
    finally:
        _, err = live.communicate(timeout=300)
    assert live.returncode == 0, err[-2000:]
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert {t["status"] for t in report["threads"]} == {"migrated"}
    (app / "schema_app.py").write_text(APP.replace('NEW = sys.argv[1] == "new"', "NEW = True"))
    assert history(app, store, "schema_app", "builder", "done", "waiting") == _under_new_schema(old)
    # every run of the live writer is whole: the checkpoints of a whole run (as `done`'s), its last state done
    lives = history(app, store, "schema_app", "builder", *[f"live-{i}" for i in range(15)])
    for t, h in lives.items():
        assert len(h["history"]) == len(old["done"]["history"]), t
        assert h["history"][0]["values"] == {"text": "live! yes", "log": ["wrote", "asked yes", "done"]}, t
    olds = history(app, store, "schema_app", "builder", *[f"old-{i}" for i in range(20)])
    assert all(h["history"][0]["values"]["text"] == f"{t}!" for t, h in olds.items())
    # migrated again: nothing left to change
    r = statectl(app, "migrate", "--all", "--db", store, "--rename-key", "draft=text")
    assert r.returncode == 2
    assert "no key 'draft'" in r.stderr


def test_in_place_sqlite_backup_and_ctrl_c_leaves_threads_whole(tmp_path):
    """--backup holds the store as it was; Ctrl+C half-way (while it waits for another writer's
    lock): the threads done are migrated, the one in progress rolled back, the rest untouched —
    every thread is whole under one schema or the other."""
    app = _schema_app(tmp_path)
    store = tmp_path / "app.sqlite"
    _app(app, "old", str(store), "starts", "t", "300")
    backup = tmp_path / "backup.sqlite"
    proc = subprocess.Popen(
        [
            *STATECTL,
            "migrate",
            "--all",
            "--db",
            str(store),
            "--rename-key",
            "draft=text",
            "--in-place",
            "--yes",
            "--backup",
            str(backup),
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=app,
        env=ENV,
        start_new_session=True,
    )
    os.killpg(proc.pid, signal.SIGSTOP)
    blocker = sqlite3.connect(store, timeout=0, isolation_level=None)

    def migrated() -> bool:  # (a thread migrated)
        return blocker.execute("SELECT 1 FROM writes WHERE channel = 'text' LIMIT 1").fetchone() is not None

    def locked() -> bool:  # (between two of its threads: a waiting busy handler would be starved
        blocker.execute("BEGIN IMMEDIATE")  # by the migration's next BEGIN, so try without waiting)
        return True

    try:
        deadline = time.monotonic() + 120
        assert _stepped(proc, migrated, deadline), "no thread was migrated"
        assert _stepped(proc, locked, deadline), "the migration ended before another writer could take the lock"
        os.killpg(proc.pid, signal.SIGCONT)
        assert proc.poll() is None, "the migration ended before another writer could take the lock"
        _idle(proc.pid, deadline)  # (the migration now waits for this writer)
        proc.send_signal(2)
        time.sleep(0.3)
        blocker.execute("COMMIT")
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)  # (not left stopped)
        raise
    finally:
        blocker.close()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    report = json.loads(out)
    statuses = [t["status"] for t in report["threads"]]
    assert statuses[:-1] == ["migrated"] * (len(statuses) - 1)
    assert statuses[-1] == "rolled back (interrupted)"
    assert 1 < len(statuses) < 300
    done = {t["thread_id"] for t in report["threads"] if t["status"] == "migrated"}
    conn = sqlite3.connect(store)
    try:
        channels = dict(conn.execute("SELECT thread_id, group_concat(DISTINCT channel) FROM writes GROUP BY thread_id"))
        keys = dict(conn.execute("SELECT thread_id, group_concat(hex(checkpoint)) FROM checkpoints GROUP BY thread_id"))
    finally:
        conn.close()
    assert len(channels) == 300
    for thread, names in channels.items():
        assert ("text" in names.split(",")) == (thread in done), (thread, names)
        assert ("draft" in names.split(",")) != (thread in done), (thread, names)
        assert (b"\xa5draft".hex().upper() in keys[thread]) != (thread in done)  # ("draft", packed)
    conn = sqlite3.connect(backup)
    assert conn.execute("SELECT count(*) FROM writes WHERE channel = 'text'").fetchone() == (0,)
    conn.close()


def _stepped(proc: subprocess.Popen[str], ready, deadline: float) -> bool:
    """Run the stopped `proc` (its process group) a few milliseconds at a time until `ready()`
    holds while it is stopped: however loaded the machine, the migration cannot run past the
    moment the test waits for (it is stopped again when this returns)."""
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if ready():
                return True
        except sqlite3.OperationalError:
            pass
        os.killpg(proc.pid, signal.SIGCONT)
        time.sleep(0.002)
        os.killpg(proc.pid, signal.SIGSTOP)
    return False


def _idle(pid: int, deadline: float) -> None:
    """Until process `pid` sleeps having used no CPU for 0.2 s (as it does waiting for a lock:
    SQLite's busy handler sleeps), or the deadline: under load, a fixed sleep may end before it
    reaches the lock."""

    def used() -> tuple[str, int]:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return fields[0], int(fields[11]) + int(fields[12])  # (state, utime + stime)

    before, still = used(), 0
    while still < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
        now = used()
        still, before = (still + 1 if now == before and now[0] == "S" else 0), now


# -- refused, nothing written ---------------------------------------------------------------------
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, moved):
    db = tmp_path / "custom.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", db)
    before = digest(db)
    out = tmp_path / "out.sqlite"
    cases = [
        (["--rename-class", "custom_app=nowhere", "--to", str(out)], "does not import"),
        (["--rename-class", "custom_app.Customer=shop_models.Nobody", "--to", str(out)], "missing class"),
        (["--rename-class", "custom_ap=shop_models", "--to", str(out)], "did you mean custom_app"),
        (["--rename-key", "topik=title", "--to", str(out)], "did you mean topic"),
        (["--drop-key", "cont", "--to", str(out)], "did you mean count"),
        (["--rename-key", "topic=count", "--to", str(out)], "already have a key 'count'"),
        (["--rename-key", "topic=x", "--rename-key", "count=x", "--to", str(out)], "'count' and 'topic' both rename"),
        (["--drop-key", "__start__", "--to", str(out)], "a channel of LangGraph's own"),
        (["--rename-key", "__start__=x", "--to", str(out)], "a channel of LangGraph's own"),
        (["--rename-key", "topic=__interrupt__", "--to", str(out)], "a channel of LangGraph's own"),
        (["--drop-key", "branch:to:draft", "--to", str(out)], "a channel of LangGraph's own"),
        (["--rename-key", "topic", "--to", str(out)], "give OLD=NEW"),
        (["--rename-key", "topic=x", "--to", str(db)], "the source"),
        (["--rename-key", "topic=x", "--in-place", "--to", str(out)], "give one"),
        (["--rename-key", "topic=x", "--backup", str(tmp_path / "b.sqlite")], "--in-place"),
        ([], "say what to migrate"),
        (["--rename-key", "topic=x", "--in-place"], "--yes"),
    ]
    for extra, message in cases:
        r = statectl(moved, "migrate", "--all", "--db", str(db), *extra)
        assert r.returncode == 2, (extra, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, (extra, r.stderr)
        assert lines[0].startswith("statectl: "), lines
        assert message in lines[0], (extra, lines)
        assert "Traceback" not in r.stderr
        assert not out.exists(), extra
        assert digest(db) == before, extra


def test_a_class_rename_reads_no_key_of_a_map_holding_one_twice(tmp_path, run):
    """A hostile checkpoint whose `channel_values` names `messages` twice: a class rename (no key
    renamed) renames the messages of both and is not refused as a key collision (it was, with
    "--rename-key to 'messages'", though no key was renamed)."""
    from statectl.core.migrate import items, pack_map

    db = tmp_path / "agent.sqlite"
    shutil.copy(SAMPLES / "agent.sqlite", db)
    conn = sqlite3.connect(db)
    thread, ns, cid, parent, type_, blob, md = conn.execute(
        "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata "
        "FROM checkpoints WHERE type = 'msgpack' ORDER BY length(checkpoint) DESC LIMIT 1"
    ).fetchone()
    top, _ = items(blob)
    rebuilt = []
    for kb, key, vb in top:
        if key == "channel_values":
            values, _ = items(vb)
            messages = next(e for e in values if e[1] == "messages")
            vb = pack_map([(k, v) for k, _, v in [*values, messages]])
        rebuilt.append((kb, vb))
    conn.execute(
        "INSERT INTO checkpoints VALUES ('twice', ?, ?, ?, ?, ?, ?)", (ns, cid, parent, type_, pack_map(rebuilt), md)
    )
    conn.commit()
    conn.close()
    r = run(
        "migrate",
        "twice",
        thread,
        "--db",
        str(db),
        "--rename-class",
        "langchain_core.messages.ai.AIMessage=langchain_core.messages.AIMessage",
        "--json",
    )
    assert r.code == 0, r.err
    twice, whole = json.loads(r.out)["threads"]
    renamed = "langchain_core.messages.ai.AIMessage -> langchain_core.messages.AIMessage"
    assert twice["checkpoints"] == 1
    assert twice["classes"][renamed] > 0
    assert whole["classes"][renamed] > 0


def test_a_langgraph_dev_folder_is_refused(tmp_path, moved):
    folder = tmp_path / "dev"
    shutil.copytree(SAMPLES / ".langgraph_api", folder / ".langgraph_api")
    before = {p: p.read_bytes() for p in (folder / ".langgraph_api").iterdir()}
    for extra in ([], ["--in-place", "--yes"], ["--to", str(tmp_path / "out.sqlite")]):
        r = statectl(moved, "migrate", "--all", "--db", str(folder), "--rename-key", "a=b", *extra)
        assert r.returncode == 2, r.stderr
        assert "langgraph dev` folder" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    assert before == {p: p.read_bytes() for p in (folder / ".langgraph_api").iterdir()}
    assert not (tmp_path / "out.sqlite").exists()


def test_hostile_rows_are_never_run_and_a_corrupt_value_is_left_as_stored(tmp_path, hostile_db):
    """Values naming callables (every ext code, an `lc` constructor, pickles) are renamed or kept
    by their bytes, never built; a corrupt checkpoint is reported and kept; a thread id and a key
    with control characters and markup are shown escaped."""
    db, marker = hostile_db
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO checkpoints VALUES (?, '', 'c-bad', NULL, 'msgpack', ?, '{}')",
        ("\x1b[31m[red]x[/red]", b"\x83\xa1v\x04\xa2id\xd9"),  # (cut short inside a string)
    )
    conn.execute(
        "INSERT INTO writes VALUES ('evil', '', '1f000000-0000-6000-8000-000000000001', 't', '', 5, ?, 'msgpack', ?)",
        ("zen\x1b]0;x\x07", b"\xc0"),
    )
    conn.commit()
    conn.close()
    before = digest(db)
    out = tmp_path / "out.sqlite"
    # a key renamed: the thread's pickled checkpoint cannot be (one line, nothing written)
    r = statectl(tmp_path, "migrate", "--all", "--db", str(db), "--rename-key", "zen=calm", "--to", str(out))
    assert r.returncode == 2
    assert "is pickled" in r.stderr
    assert not out.exists()
    # the callables' module renamed to one the project has: the values are renamed, never built
    project = tmp_path / "project"
    project.mkdir()
    (project / "mig_target.py").write_text(
        "def system(*a):\n    pass\n\n\nclass Popen:\n    pass\n\n\ndef run(*a):\n    pass\n"
    )
    r = statectl(
        project,
        "migrate",
        "--all",
        "--db",
        str(db),
        "--rename-class",
        "os=mig_target",
        "--rename-class",
        "subprocess=mig_target",
        "--to",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout + r.stderr
    assert "\\x1b[31m[red]x[/red]: nothing to change — 1 unreadable value(s) left as stored" in r.stdout
    assert "os.system -> mig_target.system: 3 value(s)" in r.stdout  # (two ext values, the `lc` write)
    assert digest(db) == before
    conn = sqlite3.connect(out)
    assert conn.execute("SELECT checkpoint FROM checkpoints WHERE checkpoint_id = 'c-bad'").fetchone() == (
        b"\x83\xa1v\x04\xa2id\xd9",
    )
    first = conn.execute("SELECT checkpoint FROM checkpoints WHERE thread_id = 'evil' AND type = 'msgpack'").fetchone()
    assert b"mig_target" in first[0]
    assert b"\xa2os" not in first[0]
    assert conn.execute("SELECT count(*) FROM writes WHERE channel = 'p' AND type = 'pickle'").fetchone() == (1,)
    lc = json.loads(conn.execute("SELECT value FROM writes WHERE channel = 'lc' AND type = 'json'").fetchone()[0])
    assert lc["id"] == ["mig_target", "system"]  # (its constructor id renamed, as the JSON it is)
    conn.close()
    # a module renamed to one the project does not have: refused, nothing written
    r = statectl(
        tmp_path, "migrate", "--all", "--db", str(db), "--rename-class", "os=shop", "--to", str(tmp_path / "x")
    )
    assert r.returncode == 2
    assert "shop.system does not import" in r.stderr
    assert not (tmp_path / "x").exists()
    assert not marker.exists()


def _packed_ext(code: int, *payload: object) -> object:
    import ormsgpack

    return ormsgpack.Ext(code, ormsgpack.packb(list(payload)))


@pytest.mark.parametrize("size", [0, 1, 3, 31, 32, 255, 256, 65535, 65536])
def test_a_rewritten_value_is_the_bytes_langgraphs_packer_writes(size):
    """Every msgpack framing (each int, str, bin, array, map and ext width): walked to its end,
    and a renamed class packs as ormsgpack packs the renamed value, every other byte kept."""
    import ormsgpack

    from statectl.core.migrate import Counts, Migration, skip

    def value(module: str) -> object:
        inner = _packed_ext(0, f"{module}.sub", "Level", "x" * size)
        return {
            "ints": [0, 1, 127, 128, 255, 256, 65535, 65536, 2**32, 2**63, -1, -32, -33, -129, -32769, -(2**31) - 1],
            "floats": [0.5, 1e300],
            "text": "é" * size,
            "bin": b"\x00" * size,
            "list": list(range(size)),
            "map": {str(i): None for i in range(min(size, 70000))},
            "ext": _packed_ext(5, module, "Model", {"level": inner, "pad": "y" * size}, "model_validate_json"),
            "other": _packed_ext(2, "keep.me", "Thing", {"n": size}),
            "bools": [True, False, None],
        }

    old, new = ormsgpack.packb(value("old.mod")), ormsgpack.packb(value("new.place"))
    assert skip(old, 0) == len(old)
    counts = Counts()
    assert Migration({"old.mod": "new.place"}).value(old, counts) == new
    assert counts.classes == {"old.mod.Model -> new.place.Model": 1, "old.mod.sub.Level -> new.place.sub.Level": 1}
    assert Migration({"elsewhere": "new.place"}).value(old, Counts()) is None  # (unchanged: None, bytes kept)


BOXES = """
import sqlite3, sys
from typing import TypedDict

class Box:
    def __init__(self, v):
        self.v = v

class S(TypedDict, total=False):
    box: Box
    n: int

def grow(s):
    return {"box": Box({"n": s["n"], "inner": Box(s["n"] * 2)}), "n": s["n"] + 1}

def main():
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import StateGraph, START, END
    g = StateGraph(S)
    g.add_node("grow", grow)
    g.add_edge(START, "grow"); g.add_edge("grow", END)
    saver = SqliteSaver(sqlite3.connect(sys.argv[2], check_same_thread=False),
                        serde=JsonPlusSerializer(pickle_fallback=True))
    graph = g.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "boxes"}}
    if sys.argv[1] == "run":
        for n in range(3):
            graph.invoke({"n": n}, config)
    def shown(v):
        if isinstance(v, Box):
            return {"$" + type(v).__module__ + "." + type(v).__name__: shown(v.v)}
        if isinstance(v, dict):
            return {k: shown(x) for k, x in v.items()}
        return v
    import json
    print(json.dumps([shown(s.values) for s in graph.get_state_history(config)]))
"""


def test_pickled_values_are_renamed_by_their_opcodes(tmp_path):
    """An app with pickle_fallback stores a plain class (SQLite pickles the whole checkpoint and
    each write of it); its module moves: the pickles name the new module, and LangGraph loads
    them, every value equal. Nothing in statectl unpickles."""
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    (old / "boxes_v1.py").write_text(BOXES)
    (new / "boxes_v2.py").write_text(BOXES)
    db, out = tmp_path / "boxes.sqlite", tmp_path / "migrated.sqlite"

    def app(where: Path, module: str, op: str, store: Path) -> list:
        r = subprocess.run(
            [sys.executable, "-c", f"import {module}; {module}.main()", op, str(store)],
            capture_output=True,
            text=True,
            cwd=where,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        return json.loads(r.stdout)

    before = app(old, "boxes_v1", "run", db)
    assert '"$boxes_v1.Box"' in json.dumps(before)
    types_ = {t for (t,) in sqlite3.connect(db).execute("SELECT type FROM checkpoints UNION SELECT type FROM writes")}
    assert "pickle" in types_
    r = statectl(new, "migrate", "--all", "--db", str(db), "--rename-class", "boxes_v1=boxes_v2", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["threads"][0]["classes"]["boxes_v1.Box -> boxes_v2.Box"] > 0
    r = statectl(new, "migrate", "--all", "--db", str(db), "--rename-class", "boxes_v1=boxes_v2", "--to", str(out))
    assert r.returncode == 0, r.stderr
    after = app(new, "boxes_v2", "show", out)
    assert json.loads(json.dumps(before).replace("$boxes_v1.", "$boxes_v2.")) == after
    # a key of a pickled checkpoint cannot be renamed: refused, nothing written
    r = statectl(new, "migrate", "--all", "--db", str(db), "--rename-key", "n=count", "--to", str(tmp_path / "k"))
    assert r.returncode == 2
    assert "pickled" in r.stderr
    assert not (tmp_path / "k").exists()


@pytest.mark.parametrize("protocol", range(6))
def test_pickles_of_every_protocol_are_renamed_and_a_shared_name_is_refused(protocol, monkeypatch):
    """GLOBAL (protocols 0-3) and STACK_GLOBAL with memoized strings (4-5, framed): a module
    renamed loads under the new one; one class of two renamed where the pickle shares the module
    string between them is not rewritten (counted as left pickled), never half-renamed."""
    import pickle
    import types

    from statectl.core.migrate import Counts, Migration

    old, new = types.ModuleType("mig_old"), types.ModuleType("mig_new")
    exec("class Box:\n    pass\nclass Other:\n    pass\n", old.__dict__)
    for cls in (old.Box, old.Other):
        cls.__module__ = "mig_old"
    monkeypatch.setitem(sys.modules, "mig_old", old)
    box, other = old.Box(), old.Other()
    box.v = {"inner": old.Box(), "n": 1}
    data = pickle.dumps({"a": [box, old.Box()], "o": other}, protocol=protocol)
    counts = Counts()
    renamed = Migration({"mig_old": "mig_new"}).pickle(data, counts)
    assert renamed is not None
    assert b"mig_old" not in renamed
    assert counts.classes == {"mig_old.Box -> mig_new.Box": 1, "mig_old.Other -> mig_new.Other": 1}
    new.Box, new.Other = old.Box, old.Other
    monkeypatch.delitem(sys.modules, "mig_old")
    monkeypatch.setitem(sys.modules, "mig_new", new)
    loaded = pickle.loads(renamed)  # (the test's own objects)
    assert loaded["a"][0].v["n"] == 1
    assert isinstance(loaded["o"], old.Other)
    counts = Counts()
    one = Migration({"mig_old.Box": "mig_new.Box"}).pickle(data, counts)
    if protocol >= 4:  # (the module's string is memoized once, shared by Box and Other)
        assert one is None
        assert counts.pickled == 1
        assert not counts.classes
    else:
        assert one is not None
        assert b"mig_old\nOther" in one
        assert b"mig_new\nBox" in one


# -- long message lists (the bench's case): a rewrite reused for the items an earlier list had ----
LOAD_MESSAGES = """
import json, sqlite3, sys
from langchain_core.messages import messages_to_dict
from langgraph.checkpoint.sqlite import SqliteSaver
saver = SqliteSaver(sqlite3.connect(sys.argv[1], check_same_thread=False))
out = []
for t in sorted({r[0] for r in saver.conn.execute("SELECT thread_id FROM checkpoints")}):
    for c in saver.list({"configurable": {"thread_id": t}}):
        msgs = c.checkpoint["channel_values"].get("messages", [])
        out.append([type(m).__module__ + "." + type(m).__name__ for m in msgs])
        out.append(messages_to_dict(msgs))
        out.append([[w[1], messages_to_dict(w[2]) if isinstance(w[2], list) else repr(w[2])] for w in c.pending_writes])
print(json.dumps(out, sort_keys=True))
"""


def test_long_message_lists_renamed_load_equal(tmp_path):
    """A real chat thread of 40 turns (its message list one or two longer every checkpoint, so an
    array seen before is reused): every message class renamed, LangGraph loads every checkpoint
    and write with the same messages, and the counts are every stored message."""
    db = tmp_path / "chat.sqlite"
    root = Path(__file__).resolve().parent.parent
    r = subprocess.run(
        [
            sys.executable,
            str(root / "bench" / "make_large.py"),
            "--threads",
            "2",
            "--distinct",
            "1",
            "--turns",
            "40",
            "--text",
            "30",
            "-o",
            str(db),
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    out = tmp_path / "migrated.sqlite"
    renames = [
        "--rename-class",
        "langchain_core.messages.ai=langchain_core.messages",
        "--rename-class",
        "langchain_core.messages.human=langchain_core.messages",
    ]
    r = statectl(tmp_path, "migrate", "--all", "--db", str(db), *renames, "--to", str(out), "--json")
    assert r.returncode == 0, r.stderr
    counts = json.loads(r.stdout)["threads"]
    stored = sum(len(v) for _, v in _messages(db))
    assert sum(sum(t["classes"].values()) for t in counts) == stored
    script = tmp_path / "_load.py"
    script.write_text(LOAD_MESSAGES)

    def load(store: Path) -> list:
        done = subprocess.run([sys.executable, str(script), str(store)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout)

    assert load(out) == load(db)
    assert all(
        b"messages.ai" not in row[-1] and b"messages.human" not in row[-1] for row in _stored_rows(out, "chat-0")
    )
    # in place: the same bytes as the copy
    r = statectl(tmp_path, "migrate", "--all", "--db", str(db), *renames, "--in-place", "--yes")
    assert r.returncode == 0, r.stderr
    for thread in ("chat-0", "chat-1"):
        assert _stored_rows(db, thread) == _stored_rows(out, thread)


def _messages(db: Path) -> list[tuple[str, list]]:
    """Every stored message ext (checkpoints and writes), found by its class name's bytes."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT thread_id, checkpoint FROM checkpoints UNION ALL SELECT thread_id, value FROM writes"
        )
        return [(t, re.findall(rb"langchain_core\.messages\.(?:ai|human)", bytes(v or b""))) for t, v in rows]
    finally:
        conn.close()


def test_a_class_rename_reads_each_stored_message_once_per_walk(tmp_path, run, monkeypatch):
    """A real chat thread whose message list grows by one or two a checkpoint (shorter than 16
    items for most of it): renaming every message class reads each stored message's class ext
    once a walk, where it is new (the list that adds it, the write that brought it, the graph's
    input), not again in every later checkpoint that holds it (a list of n items was read whole
    in each checkpoint: n^2/2 reads). In place walks the thread twice (its plan, then its
    transaction). Counted, never timed; the counts still name every stored message."""
    from statectl.core.migrate import Migration

    turns = 12
    db = tmp_path / "chat.sqlite"
    root = Path(__file__).resolve().parent.parent
    make = [str(root / "bench" / "make_large.py"), "--threads", "1", "--distinct", "1", "--turns", str(turns)]
    made = subprocess.run(
        [sys.executable, *make, "--text", "30", "-o", str(db)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    messages = 2 * turns  # (a question and its answer each turn)
    stored = sum(len(v) for _, v in _messages(db))
    assert stored > 6 * messages  # (each message is stored again in every later checkpoint)
    reads: list[int] = []
    real = Migration._class_ext
    monkeypatch.setattr(Migration, "_class_ext", lambda self, *a: reads.append(1) or real(self, *a))
    renames = [
        "--rename-class",
        "langchain_core.messages.ai=langchain_core.messages",
        "--rename-class",
        "langchain_core.messages.human=langchain_core.messages",
    ]
    r = run("migrate", "--all", "--db", str(db), *renames, "--json")  # (a dry run: one walk)
    assert r.code == 0, r.err
    (thread,) = json.loads(r.out)["threads"]
    assert sum(thread["classes"].values()) == stored
    assert 0 < len(reads) <= 3 * messages
    reads.clear()
    r = run("migrate", "--all", "--db", str(db), *renames, "--in-place", "--yes", "--json")
    assert r.code == 0, r.err
    assert sum(json.loads(r.out)["threads"][0]["classes"].values()) == stored
    assert 0 < len(reads) <= 2 * 3 * messages
    assert sum(len(v) for _, v in _messages(db)) == 0


def test_arrays_reused_equal_arrays_walked():
    """Arrays that grow by one item, share a prefix only in part, nest, or match an earlier one's
    bytes at another depth: each rewritten as a fresh migration (nothing remembered) rewrites it,
    with the same counts; `skip` through remembered arrays ends where a plain one does."""
    import ormsgpack

    from statectl.core.migrate import Counts, Migration, skip

    def msg(i: int, module: str) -> object:
        return _packed_ext(5, module if i % 3 else "keep.me", "M", {"i": i, "t": "x" * (i % 40)}, "model_validate_json")

    def values(module: str) -> list[bytes]:
        base = [msg(i, module) for i in range(60)]
        out = []
        for n in range(0, 60, 7):
            out.append({"messages": base[:n], "other": list(range(n))})
            out.append({"nested": [base[: n // 2], [base[:n]]], "messages": base[:n]})
            out.append({"messages": [*base[:n], msg(999, module), *base[n:]]})  # (a prefix, then other items)
        return [ormsgpack.packb(v) for v in out]

    old, new = values("old.mod"), values("new.place")
    shared = Migration({"old.mod": "new.place"})
    for o, want in zip(old, new, strict=True):
        assert skip(o, 0, shared.arrays) == skip(o, 0) == len(o)
        got, fresh = Counts(), Counts()
        assert (shared.value(o, got) or o) == want  # (None: unchanged)
        assert (Migration({"old.mod": "new.place"}).value(o, fresh) or o) == want
        assert got.classes == fresh.classes
    assert shared.arrays  # (arrays were remembered)


LATE = """
CREATE FUNCTION late_copy() RETURNS trigger AS $$
BEGIN
  IF OLD.checkpoint_id NOT LIKE '%-late' THEN
    INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata)
    VALUES (OLD.thread_id, OLD.checkpoint_ns, OLD.checkpoint_id || '-late', OLD.parent_checkpoint_id, OLD.type,
            OLD.checkpoint, OLD.metadata)
    ON CONFLICT DO NOTHING;
    INSERT INTO checkpoint_writes
      (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob, task_path)
    SELECT thread_id, checkpoint_ns, checkpoint_id || '-late', task_id, idx, channel, type, blob, task_path
    FROM checkpoint_writes WHERE thread_id = OLD.thread_id AND checkpoint_ns = OLD.checkpoint_ns
      AND checkpoint_id = OLD.checkpoint_id
    ON CONFLICT DO NOTHING;
  END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER late_copy AFTER UPDATE ON checkpoints FOR EACH ROW EXECUTE FUNCTION late_copy();
"""


def test_postgres_rows_written_during_a_threads_transaction_are_migrated_too(tmp_path, pg_empty):
    """A run inserting rows after the thread's REPEATABLE READ snapshot was taken: its rows are
    invisible to that transaction and do not conflict with its updates. Made deterministic by a
    trigger that, as each checkpoint is rewritten, inserts a copy of the row as it was stored
    (LangGraph's bytes, old names) with its pending writes, under a new checkpoint id, in the same
    instant. They are migrated by another transaction and counted; nothing keeps the old names."""
    import psycopg

    app = _schema_app(tmp_path)
    _runs(app, pg_empty)
    with psycopg.connect(pg_empty, autocommit=True) as conn:
        conn.execute(LATE)
        before = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
    r = statectl(
        app, "migrate", "--all", "--db", pg_empty, "--rename-key", "draft=text", "--in-place", "--yes", "--json"
    )
    assert r.returncode == 0, r.stderr
    threads = {t["thread_id"]: t for t in json.loads(r.stdout)["threads"]}
    with psycopg.connect(pg_empty, autocommit=True) as conn:
        conn.execute("DROP TRIGGER late_copy ON checkpoints")
        late = conn.execute("SELECT count(*) FROM checkpoints WHERE checkpoint_id LIKE '%-late'").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == before + late
        old_names = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE checkpoint->'channel_versions' ? 'draft' "
            "OR checkpoint->'channel_values' ? 'draft' OR checkpoint::text LIKE '%\"draft\"%'"
        ).fetchone()[0]
        old_writes = conn.execute("SELECT count(*) FROM checkpoint_writes WHERE channel = 'draft'").fetchone()[0]
    assert late > 0
    assert (old_names, old_writes) == (0, 0)
    assert sum(t.get("written_meanwhile", 0) for t in threads.values()) >= late
    assert all(t.get("left_unmigrated", 0) == 0 for t in threads.values())
    assert "migrated by another" in r.stderr + json.dumps(threads)


REPICKLE_APP = """
import json, sqlite3, sys
from typing import TypedDict
{box}

class Legacy:  # (no msgpack form, in either version)
    def __init__(self, n):
        self.n = n

class S(TypedDict, total=False):
    box: Box
    legacy: Legacy
    n: int

def grow(s):
    if s.get("legacy") is not None or s["n"] < 0:
        return {{"legacy": Legacy(s["n"]), "n": s["n"] + 1}}
    return {{"box": Box({{"n": s["n"], "inner": Box([s["n"], "x"])}}), "n": s["n"] + 1}}

def main():
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import StateGraph, START, END
    g = StateGraph(S)
    g.add_node("grow", grow)
    g.add_edge(START, "grow"); g.add_edge("grow", END)
    fallback = sys.argv[1] in ("run", "many")
    saver = SqliteSaver(sqlite3.connect(sys.argv[2], check_same_thread=False),
                        serde=JsonPlusSerializer(pickle_fallback=fallback))
    graph = g.compile(checkpointer=saver)
    if sys.argv[1] == "run":
        for n in range(3):
            graph.invoke({{"n": n}}, {{"configurable": {{"thread_id": "boxes"}}}})
        graph.invoke({{"n": -5}}, {{"configurable": {{"thread_id": "legacy"}}}})
    if sys.argv[1] == "many":  # (a live writer: thread after thread, as `run` writes `boxes`)
        for i in range(int(sys.argv[3])):
            for n in range(3):
                graph.invoke({{"n": n}}, {{"configurable": {{"thread_id": f"live-{{i}}"}}}})
        return
    def shown(v):
        if isinstance(v, (Box, Legacy)):
            return {{"$" + type(v).__name__: shown(vars(v))}}
        if isinstance(v, dict):
            return {{k: shown(x) for k, x in v.items()}}
        if isinstance(v, list):
            return [shown(x) for x in v]
        return v
    out = {{}}
    for thread in sys.argv[3:]:
        out[thread] = [shown(s.values) for s in graph.get_state_history({{"configurable": {{"thread_id": thread}}}})]
    print(json.dumps(out))
"""
PLAIN_BOX = "class Box:\n    def __init__(self, v):\n        self.v = v\n"
DATACLASS_BOX = "from dataclasses import dataclass\n\n@dataclass\nclass Box:\n    v: object\n"


def test_repickle_rewrites_pickle_fallback_values_in_msgpack(tmp_path):
    """An app stored a plain class under pickle_fallback (SQLite pickles the whole checkpoint, and
    each write of it); the class is now a dataclass: `migrate --repickle --to` reads each pickle
    with statectl's restricted unpickler and encodes it with LangGraph's serializer without
    pickle_fallback, and LangGraph without pickle_fallback loads the copy, every value equal. A
    class with no msgpack form stays pickled, reported; a class not allowed is refused by name."""
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    (old / "boxes.py").write_text(REPICKLE_APP.format(box=PLAIN_BOX))
    (new / "boxes.py").write_text(REPICKLE_APP.format(box=DATACLASS_BOX))
    db, out = tmp_path / "boxes.sqlite", tmp_path / "msgpack.sqlite"

    def app(where: Path, op: str, store: Path, *threads: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", "import boxes; boxes.main()", op, str(store), *threads],
            capture_output=True,
            text=True,
            cwd=where,
            timeout=300,
        )

    r = app(old, "run", db, "boxes", "legacy")
    assert r.returncode == 0, r.stderr[-2000:]
    before = json.loads(r.stdout)
    assert '"$Box"' in r.stdout
    assert '"$Legacy"' in r.stdout
    conn = sqlite3.connect(db)
    pickled = conn.execute("SELECT count(*) FROM checkpoints WHERE type = 'pickle' AND thread_id = 'boxes'").fetchone()
    assert pickled[0] > 0
    conn.close()
    # today's app, without pickle_fallback, cannot load the stored thread
    assert app(new, "show", db, "boxes").returncode != 0
    stored = digest(db)

    # a class the pickles name but nothing allows: refused by name, nothing written
    r = statectl(new, "migrate", "--all", "--db", str(db), "--repickle", "--to", str(out))
    assert r.returncode == 2, r.stderr
    assert "boxes.Box" in r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 2
    assert not out.exists()

    allow = ["--allow-type", "boxes.Box", "--allow-type", "boxes.Legacy"]
    r = statectl(new, "migrate", "--all", "--db", str(db), "--repickle", *allow, "--json")
    assert r.returncode == 0, r.stderr
    dry = {t["thread_id"]: t for t in json.loads(r.stdout)["threads"]}
    assert dry["boxes"]["repickled"] > 0
    assert dry["boxes"]["left_pickled"] == {}
    assert dry["boxes"]["status"] == "would change"
    assert dry["legacy"]["repickled"] == 0
    assert dry["legacy"]["left_pickled"]["boxes.Legacy"] > 0
    assert not out.exists()

    r = statectl(new, "migrate", "--all", "--db", str(db), "--repickle", *allow, "--to", str(out))
    assert r.returncode == 0, r.stderr
    assert "left pickled (boxes.Legacy has no msgpack form)" in r.stdout
    assert digest(db) == stored  # (the source is only read)
    conn = sqlite3.connect(out)
    types_ = {t for (t,) in conn.execute("SELECT type FROM checkpoints WHERE thread_id = 'boxes'")}
    types_ |= {t for (t,) in conn.execute("SELECT type FROM writes WHERE thread_id = 'boxes'")}
    legacy = {t for (t,) in conn.execute("SELECT type FROM checkpoints WHERE thread_id = 'legacy'")}
    conn.close()
    assert "pickle" not in types_
    assert "msgpack" in types_
    assert "pickle" in legacy  # (left as stored)
    r = app(new, "show", out, "boxes")
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["boxes"] == before["boxes"]


def test_repickle_refuses_a_hostile_pickle_by_name(tmp_path):
    """A pickle that names a callable (os.system): refused by name before anything is imported,
    nothing written, whatever --allow-type allows besides."""
    import pickle

    db, out = tmp_path / "hostile.sqlite", tmp_path / "out.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", db)

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'PWNED'}",))

    conn = sqlite3.connect(db)
    thread, cid = conn.execute("SELECT thread_id, checkpoint_id FROM checkpoints LIMIT 1").fetchone()
    with conn:
        conn.execute(
            "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value)"
            " VALUES (?, '', ?, 'evil-task', 0, 'messages', 'pickle', ?)",
            (thread, cid, pickle.dumps(Evil())),
        )
    conn.close()
    stored = digest(db)
    for extra in ([], ["--allow-type", "shop.Item"]):
        r = statectl(tmp_path, "migrate", thread, "--db", str(db), "--repickle", *extra, "--to", str(out))
        assert r.returncode == 2, r.stderr
        assert re.search(r"names (posix|nt|os)\.system", r.stderr), r.stderr
        assert "Traceback" not in r.stderr
        assert not out.exists()
        assert not (tmp_path / "PWNED").exists()
    r = statectl(tmp_path, "migrate", thread, "--db", str(db), "--repickle", "--in-place", "--yes")
    assert r.returncode == 2, r.stderr
    assert re.search(r"names (posix|nt|os)\.system", r.stderr), r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "PWNED").exists()
    assert digest(db) == stored


def _on_postgres(app: str) -> str:
    """REPICKLE_APP with LangGraph's PostgresSaver (the store a URL)."""
    return (
        app.replace(
            "from langgraph.checkpoint.sqlite import SqliteSaver",
            "from langgraph.checkpoint.postgres import PostgresSaver\n    import psycopg, psycopg.rows",
        )
        .replace(
            "saver = SqliteSaver(sqlite3.connect(sys.argv[2], check_same_thread=False),",
            "conn = psycopg.connect(sys.argv[2], autocommit=True, prepare_threshold=0, "
            "row_factory=psycopg.rows.dict_row)\n    saver = PostgresSaver(conn,",
        )
        .replace("graph = g.compile", "saver.setup()\n    graph = g.compile")
    )


def test_repickle_on_postgres_converts_each_pickled_blob(tmp_path, pg_empty):
    """Postgres keeps one blob a channel version (and each write): every pickled one is read and
    encoded again; the dry run reports the same counts as the copy; the copy loads without
    pickle_fallback, every value equal."""
    import psycopg

    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    (old / "boxes.py").write_text(_on_postgres(REPICKLE_APP).format(box=PLAIN_BOX))
    (new / "boxes.py").write_text(_on_postgres(REPICKLE_APP).format(box=DATACLASS_BOX))

    def app(where: Path, *args: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-c", "import boxes; boxes.main()", *args]
        return subprocess.run(cmd, capture_output=True, text=True, cwd=where, timeout=300)

    r = app(old, "run", pg_empty, "boxes")
    assert r.returncode == 0, r.stderr[-2000:]
    before = json.loads(r.stdout)
    dest = f"statectl_repickle_{os.getpid()}"
    with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{dest}"')
        conn.execute(f'CREATE DATABASE "{dest}"')
    try:
        allow = ["--allow-type", "boxes.Box", "--allow-type", "boxes.Legacy"]
        r = statectl(new, "migrate", "--all", "--db", pg_empty, "--repickle", *allow, "--json")
        assert r.returncode == 0, r.stderr
        dry = {t["thread_id"]: t for t in json.loads(r.stdout)["threads"]}
        r = statectl(new, "migrate", "boxes", "--db", pg_empty, "--repickle", *allow, "--to", f"postgresql:///{dest}")
        assert r.returncode == 0, r.stderr
        assert f"boxes: migrated — {dry['boxes']['repickled']} pickled value(s) converted" in r.stdout
        assert dry["legacy"]["left_pickled"]["boxes.Legacy"] > 0
        with psycopg.connect(f"postgresql:///{dest}") as conn:
            types_ = {
                t for (t,) in conn.execute("SELECT type FROM checkpoint_blobs UNION SELECT type FROM checkpoint_writes")
            }
        assert "pickle" not in types_
        r = app(new, "show", f"postgresql:///{dest}", "boxes")
        assert r.returncode == 0, r.stderr[-2000:]
        assert json.loads(r.stdout)["boxes"] == before["boxes"]
    finally:
        with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dest}" WITH (FORCE)')


def _pickled_rows(store: str) -> dict[str, int]:
    """How many stored values of each thread are pickled (SQLite checkpoints and writes;
    Postgres blobs and writes)."""
    if store.startswith("postgresql:"):
        import psycopg

        sql = (
            "SELECT thread_id, count(*) FROM (SELECT thread_id, type FROM checkpoint_blobs UNION ALL "
            "SELECT thread_id, type FROM checkpoint_writes) v WHERE type = 'pickle' GROUP BY thread_id"
        )
        with psycopg.connect(store) as conn:
            return dict(conn.execute(sql).fetchall())
    conn = sqlite3.connect(store)
    try:
        sql = (
            "SELECT thread_id, count(*) FROM (SELECT thread_id, type FROM checkpoints UNION ALL "
            "SELECT thread_id, type FROM writes) WHERE type = 'pickle' GROUP BY thread_id"
        )
        return dict(conn.execute(sql).fetchall())
    finally:
        conn.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_repickle_in_place_with_a_live_writer(tmp_path, kind, request):
    """`--repickle --in-place`: every pickled value of the store (SQLite's whole checkpoints and
    writes, Postgres' blobs and writes) encoded again in msgpack in each thread's transaction,
    while the old app keeps writing pickled threads: no row of the live writer is lost, a second
    run converts what it wrote, and today's app (no pickle_fallback) loads every thread equal to
    what the old one wrote. A value with no msgpack form stays pickled, reported; --backup (SQLite)
    holds the store as it was."""
    app_text = REPICKLE_APP if kind == "sqlite" else _on_postgres(REPICKLE_APP)
    old, new, ref = tmp_path / "old", tmp_path / "new", tmp_path / "ref.sqlite"
    old.mkdir()
    new.mkdir()
    (old / "boxes.py").write_text(app_text.format(box=PLAIN_BOX))
    (new / "boxes.py").write_text(app_text.format(box=DATACLASS_BOX))
    (tmp_path / "ref").mkdir()
    (tmp_path / "ref" / "boxes.py").write_text(REPICKLE_APP.format(box=PLAIN_BOX))
    store = str(tmp_path / "boxes.sqlite") if kind == "sqlite" else request.getfixturevalue("pg_empty")

    def app(where: Path, *args: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-c", "import boxes; boxes.main()", *args]
        return subprocess.run(cmd, capture_output=True, text=True, cwd=where, timeout=300)

    r = app(old, "run", store, "boxes", "legacy")
    assert r.returncode == 0, r.stderr[-2000:]
    before = json.loads(r.stdout)
    # what each live thread holds when written alone (a reference store, SQLite)
    r = app(tmp_path / "ref", "many", str(ref), "1")
    assert r.returncode == 0, r.stderr[-2000:]
    r = app(tmp_path / "ref", "run", str(ref), "live-0")
    live_expected = json.loads(r.stdout)["live-0"]
    pickled = _pickled_rows(store)
    assert pickled["boxes"] > 0
    allow = ["--allow-type", "boxes.Box", "--allow-type", "boxes.Legacy"]
    backup = ["--backup", str(tmp_path / "backup.sqlite")] if kind == "sqlite" else []
    live = subprocess.Popen(
        [sys.executable, "-c", "import boxes; boxes.main()", "many", store, "12"],
        cwd=old,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(0.5)
        r = statectl(new, "migrate", "--all", "--db", store, "--repickle", *allow, "--in-place", "--yes", *backup)
    finally:
        _, err = live.communicate(timeout=300)
    assert live.returncode == 0, err[-2000:]
    assert r.returncode == 0, r.stderr
    assert re.search(r"^boxes: migrated — \d+ pickled value\(s\) converted to msgpack$", r.stdout, re.M), r.stdout
    assert "legacy: nothing to change — " in r.stdout
    assert "value(s) left pickled (boxes.Legacy has no msgpack form)" in r.stdout
    assert "boxes" not in _pickled_rows(store)
    assert _pickled_rows(store)["legacy"] == pickled["legacy"]  # (left as stored)
    if kind == "sqlite":
        held = _pickled_rows(str(tmp_path / "backup.sqlite"))  # (and the live threads written before it)
        assert {t: n for t, n in held.items() if not t.startswith("live-")} == pickled
    # the live writer's threads: migrated as they were when their turn came, or not yet: again
    r = statectl(new, "migrate", "--all", "--db", store, "--repickle", *allow, "--in-place", "--yes", "--json")
    assert r.returncode == 0, r.stderr
    assert set(_pickled_rows(store)) == {"legacy"}
    threads = ["boxes", *[f"live-{i}" for i in range(12)]]
    r = app(new, "show", store, *threads)
    assert r.returncode == 0, r.stderr[-2000:]
    shown = json.loads(r.stdout)
    assert shown["boxes"] == before["boxes"]
    for t in threads[1:]:
        assert shown[t] == live_expected, t
    # nothing pickled is left to convert: the next run changes nothing and says so
    r = statectl(new, "migrate", "boxes", "--db", store, "--repickle", *allow, "--in-place", "--yes")
    assert r.returncode == 0, r.stderr
    assert "migrated 0 threads" in r.stderr


# -- where LangGraph carries a state key besides the channels -----------------------------------
SEND_APP = """
import json, operator, sqlite3, sys
from typing import Annotated, TypedDict
from langgraph.graph import StateGraph, START, END
from langgraph.types import Command, Send, interrupt

TOPIC = "subject" if sys.argv[1] == "new" else "topic"
S = TypedDict("S", {TOPIC: str, "n": int, "results": Annotated[list, operator.add]}, total=False)

def plan(s):
    return {"n": 3}

def fan_out(s):  # (map-reduce: one worker a part, each given its own state)
    return [Send("work", {TOPIC: f"{s[TOPIC]} #{i}", "n": i}) for i in range(s["n"])]

def work(s):
    answer = interrupt({"part": s[TOPIC]}) if s["n"] == 1 else "auto"
    return {"results": [f"{s[TOPIC]}={answer}"]}

def reduce(s):
    return {"results": ["done: " + ", ".join(sorted(s["results"]))]}

g = StateGraph(S)
g.add_node("plan", plan); g.add_node("work", work); g.add_node("reduce", reduce)
g.add_edge(START, "plan"); g.add_conditional_edges("plan", fan_out, ["work"])
g.add_edge("work", "reduce"); g.add_edge("reduce", END)

store, op, thread = sys.argv[2], sys.argv[3], sys.argv[4]
if store.startswith("postgresql:"):
    from langgraph.checkpoint.postgres import PostgresSaver
    held = PostgresSaver.from_conn_string(store)
    saver = held.__enter__()
    saver.setup()
else:
    from langgraph.checkpoint.sqlite import SqliteSaver
    saver = SqliteSaver(sqlite3.connect(store, check_same_thread=False))
graph = g.compile(checkpointer=saver)
config = {"configurable": {"thread_id": thread}}
if op == "start":
    graph.invoke({TOPIC: thread}, config)
else:
    graph.invoke(Command(resume=sys.argv[5]), config)
state = graph.get_state(config)
print(json.dumps({"values": state.values, "next": list(state.next)}, sort_keys=True))
"""


@pytest.mark.parametrize(("kind", "how"), [("sqlite", "to"), ("sqlite", "in place"), ("postgres", "in place")])
def test_a_send_fan_out_interrupted_midway_resumes_after_a_key_rename(tmp_path, kind, how, request):
    """Map-reduce: `plan` sends each part to a `work` node with its own state (a Send's argument
    is the state the node gets), one worker waits on an interrupt while the others finished. The
    Sends are stored in the `__pregel_tasks` channel and in `plan`'s pending writes: the key is
    renamed there too, so today's code (which reads `subject`) resumes the thread to what the old
    code resumes the original to, under the new name."""
    app = tmp_path / "send_app.py"
    app.write_text(SEND_APP)

    def run(version: str, store: str, *args: str) -> dict:
        r = subprocess.run(
            [sys.executable, str(app), version, store, *args], capture_output=True, text=True, timeout=300
        )
        assert r.returncode == 0, r.stderr[-2000:]
        return json.loads(r.stdout)

    if kind == "sqlite":
        store = str(tmp_path / "fan.sqlite")
    else:
        store = request.getfixturevalue("pg_empty")
    waiting = run("old", store, "start", "fan")
    assert waiting["next"] == ["work"]  # (one worker still to run: interrupted mid-fan-out)
    assert sorted(waiting["values"]["results"]) == ["fan #0=auto", "fan #2=auto"]  # (the others' pending writes)
    if how == "to":
        target = str(tmp_path / "migrated.sqlite")
        r = statectl(tmp_path, "migrate", "--all", "--db", store, "--rename-key", "topic=subject", "--to", target)
        assert r.returncode == 0, r.stderr
        old = run("old", store, "resume", "fan", "yes")
    else:
        if kind == "sqlite":
            original = str(tmp_path / "original.sqlite")
            shutil.copy(store, original)
        else:
            import psycopg

            original = f"{store}_original"
            with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{original.rpartition("/")[2]}"')
                conn.execute(f'CREATE DATABASE "{original.rpartition("/")[2]}" TEMPLATE "{store.rpartition("/")[2]}"')
            request.addfinalizer(lambda: _drop(original))
        r = statectl(
            tmp_path, "migrate", "--all", "--db", store, "--rename-key", "topic=subject", "--in-place", "--yes"
        )
        assert r.returncode == 0, r.stderr
        target = store
        old = run("old", original, "resume", "fan", "yes")
    new = run("new", target, "resume", "fan", "yes")
    assert old["values"]["results"][-1] == "done: fan #0=auto, fan #1=yes, fan #2=auto"
    assert new == json.loads(json.dumps(old).replace('"topic"', '"subject"'))
    # (and the stored Sends name only the new key)
    if kind == "sqlite":
        conn = sqlite3.connect(target)
        try:
            sends = conn.execute("SELECT count(*) FROM writes WHERE channel = '__pregel_tasks'").fetchone()[0]
            stale = conn.execute(
                "SELECT count(*) FROM writes WHERE channel = '__pregel_tasks' AND instr(value, ?) > 0", (b"\xa5topic",)
            ).fetchone()[0]
        finally:
            conn.close()
        assert sends > 0
        assert stale == 0


def _drop(url: str) -> None:
    import psycopg

    with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{url.rpartition("/")[2]}" WITH (FORCE)')


LISTING = """
import json, sqlite3, sys
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Send

def shown(v):
    if isinstance(v, Send):
        return {"$Send": [v.node, shown(v.arg)]}
    if hasattr(v, "model_dump"):
        return {"$" + type(v).__name__: shown(v.model_dump())}
    if isinstance(v, dict):
        return {k: shown(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [shown(x) for x in v]
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return {"$repr": type(v).__module__ + "." + type(v).__name__}

saver = SqliteSaver(sqlite3.connect(sys.argv[1], check_same_thread=False))
threads = sorted({t for (t,) in saver.conn.execute("SELECT thread_id FROM checkpoints")})
out = {}
for t in threads:
    out[t] = [
        {"values": shown(c.checkpoint["channel_values"]), "versions": c.checkpoint["channel_versions"],
         "seen": c.checkpoint["versions_seen"], "metadata": shown(c.metadata),
         "pending": [[w[0], w[1], shown(w[2])] for w in c.pending_writes]}
        for c in saver.list({"configurable": {"thread_id": t}})
    ]
print(json.dumps(out, sort_keys=True))
"""


def _listing(tmp_path: Path, db: Path) -> dict:
    """Every checkpoint of every thread as today's LangGraph reads it (values, versions, metadata
    with its `writes`, pending writes), Sends and messages as what they are."""
    script = tmp_path / "_listing.py"
    script.write_text(LISTING)
    r = subprocess.run([sys.executable, str(script), str(db)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


def _keys_renamed(value: object, old: str, new: str) -> object:
    if isinstance(value, dict):
        return {(new if k == old else k): _keys_renamed(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_keys_renamed(v, old, new) for v in value]
    return value


def _lc_sends(value: object) -> object:
    """An `lc: 2` Send dict (what today's LangGraph gives for `langgraph.constants.Send`, which
    it no longer loads) as the Send it is once renamed to `langgraph.types.Send`."""
    if isinstance(value, dict):
        if value.get("id") == ["langgraph", "constants", "Send"]:
            return {"$Send": [value["kwargs"]["node"], _lc_sends(value["kwargs"]["arg"])]}
        return {k: _lc_sends(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_lc_sends(v) for v in value]
    return value


@pytest.mark.parametrize("sample", ["legacy", "json_rows"])
def test_older_langgraph_stores_keys_renamed_in_metadata_writes_sends_and_json_rows(tmp_path, sample):
    """Stores written by LangGraph 0.2 (`legacy`: msgpack, its Sends' arguments and the `writes`
    of every checkpoint's metadata name the state keys) and by langgraph-checkpoint 1.0
    (`json_rows`: whole checkpoints and writes as `json` rows, messages and Sends as LangChain
    `lc` constructors): a key renamed in place, and in `json_rows` the Send class that moved
    (`langgraph.constants.Send`, which today's LangGraph gives back as a dict) renamed: today's
    LangGraph reads every checkpoint, metadata and pending write as before under the new names,
    the Sends as Sends."""
    db = tmp_path / f"{sample}.sqlite"
    shutil.copy(SAMPLES / f"{sample}.sqlite", db)
    before = _listing(tmp_path, db)
    assert any(c["metadata"].get("writes") for cs in before.values() for c in cs)
    assert "topic" in json.dumps(before)
    classes = ["--rename-class", "langgraph.constants.Send=langgraph.types.Send"] if sample == "json_rows" else []
    r = statectl(
        tmp_path, "migrate", "--all", "--db", str(db), "--rename-key", "topic=subject", *classes, "--in-place", "--yes"
    )
    assert r.returncode == 0, r.stderr
    after = _listing(tmp_path, db)
    expected = _keys_renamed(_lc_sends(before), "topic", "subject")
    for checkpoints in expected.values():  # type: ignore[union-attr]
        for c in checkpoints:
            c["pending"] = [[task, "subject" if ch == "topic" else ch, v] for task, ch, v in c["pending"]]
    assert after == expected
    assert '"topic"' not in json.dumps(after)
    assert '"$Send"' in json.dumps(after)


def test_a_copy_to_a_new_file_walks_each_value_once(tmp_path, moved, run, monkeypatch):
    """`--to` a new file: each checkpoint is migrated once, on its way to the writer (no plan pass
    before it); the options are still checked before the commit: a key no thread has is refused,
    nothing created."""
    from statectl.core.migrate import Migration

    db = tmp_path / "custom.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", db)
    conn = sqlite3.connect(db)
    stored = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
    conn.close()
    walked: list[int] = []
    real = Migration.checkpoint_row
    monkeypatch.setattr(Migration, "checkpoint_row", lambda self, *a: walked.append(1) or real(self, *a))
    monkeypatch.chdir(moved)
    out = tmp_path / "migrated.sqlite"
    r = run("migrate", "--all", "--db", str(db), "--rename-class", "custom_app=shop_models", "--to", str(out))
    assert r.code == 0, r.err
    assert "many-types: migrated" in r.out
    assert len(walked) == stored
    walked.clear()
    gone = tmp_path / "refused" / "out.sqlite"
    r = run("migrate", "--all", "--db", str(db), "--rename-key", "nosuchkey=x", "--to", str(gone))
    assert r.code == 2
    assert r.err.startswith("statectl: --rename-key nosuchkey=x: no key 'nosuchkey' in these threads")
    assert len(r.err.strip().splitlines()) <= 2
    assert not gone.parent.exists()
    assert len(walked) == stored
