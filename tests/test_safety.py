"""Bad input, hostile data, read-only access, and what each command imports."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import corrupt_latest, digest

import statectl

COMMANDS = [
    ["threads"],
    ["threads", "--json"],
    ["log", "T"],
    ["log", "T", "--json"],
    ["show", "T"],
    ["show", "T", "--json"],
    ["export", "--all", "-o", "-"],
    ["diff", "T"],
    ["diff", "T", "--json"],
    ["diff", "T", "--format", "patch"],
    ["log", "T", "-p"],
    ["schema", "T"],
    ["schema", "T", "--json"],
    ["graph", "--thread", "T"],
    ["size"],
    ["size", "--json"],
    ["size", "T"],
    ["size", "T", "--json"],
    ["prune", "--keep-last", "1"],
    ["prune", "--keep-last", "1", "--sql"],
]


def _cmd(args: list[str], thread: str) -> list[str]:
    return [thread if a == "T" else a for a in args]


# -- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kind,message",
    [
        ("missing", "no such file"),
        ("folder", "is a folder"),
        ("text", "is neither a SQLite database nor a statectl export file"),
        ("random", "is neither a SQLite database nor a statectl export file"),
        ("empty", "is empty"),
        ("no_tables", "has no LangGraph checkpoint tables"),
        ("json", "is JSON but not a statectl export file"),
        ("bad_json", "is not a valid statectl export file"),
        ("truncated_sqlite", "cannot read"),
    ],
)
@pytest.mark.parametrize("command", [["threads"], ["log", "t"], ["show", "t"]])
def test_bad_database_one_line(run, tmp_path, kind, message, command):
    path = tmp_path / "db"
    if kind == "folder":
        path.mkdir()
    elif kind == "text":
        path.write_text("hello, I am a text file\n")
    elif kind == "random":
        path.write_bytes(b"\x00" + os.urandom(4095))  # (random bytes may start with "{")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "no_tables":
        sqlite3.connect(path).execute("CREATE TABLE notes (x)").connection.commit()
    elif kind == "json":
        path.write_text('{"hello": 1}')
    elif kind == "bad_json":
        path.write_text('{"format": "statectl-export", ')
    elif kind == "truncated_sqlite":
        path.write_bytes(b"SQLite format 3\x00" + os.urandom(2000))
    before = sorted(p.name for p in tmp_path.iterdir())
    r = run(*command, "--db", str(path))
    assert r.code != 0
    assert message in r.err, r.err
    assert r.err.count("\n") == 1
    assert "internal error" not in r.err
    assert r.out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing created (not even the missing path)


def test_unknown_thread_and_checkpoint(run, dbs):
    db = str(dbs["agent"])
    r = run("log", "no-such-thread", "--db", db)
    assert (r.code, r.err) == (
        3,
        f"statectl: no thread 'no-such-thread' in {db} (run `statectl threads` to list the threads)\n",
    )
    r = run("show", "bakery-plan", "zzzz", "--db", db)
    assert r.code == 3
    assert r.err.startswith("statectl: no checkpoint 'zzzz' in thread 'bakery-plan'")
    r = run("show", "bakery-plan", "999", "--db", db)
    assert r.code == 3
    assert "no checkpoint at step 999" in r.err
    assert "steps run from -1 to 34" in r.err
    r = run("show", "bakery-plan", "1f1e", "--db", db)
    assert r.code == 3
    assert "is ambiguous" in r.err
    r = run("log", "bakery-plan", "--ns", "nope", "--db", db)
    assert r.code == 3
    assert "no checkpoints in namespace 'nope'" in r.err
    r = run("export", "nope", "-o", "-", "--db", db)
    assert r.code == 3
    assert r.err.count("\n") == 1


def test_usage_errors_are_one_line(run, dbs):
    r = run("show", "--db", str(dbs["agent"]))
    assert r.code == 2
    assert r.err.count("\n") == 1
    assert "Missing argument" in r.err
    r = run("threads", "--bogus")
    assert r.code == 2
    assert r.err.count("\n") == 1


def test_corrupt_checkpoint_blob(run, dbs):
    db = dbs["agent"]
    cid = corrupt_latest(db, "hola-panaderia")
    r = run("show", "hola-panaderia", "--db", str(db))
    assert r.code == 4
    assert r.err.count("\n") == 1
    assert f"checkpoint {cid} of thread 'hola-panaderia' is corrupt" in r.err
    assert run("threads", "--db", str(db)).code == 0
    r = run("log", "hola-panaderia", "--db", str(db))
    assert r.code == 0
    assert cid[-12:] in r.out
    older = run("show", "hola-panaderia", "2", "--db", str(db), "--json")
    assert older.code == 0
    assert json.loads(older.out)["metadata"]["step"] == 2


# -- hostile data (the hostile_db fixture: conftest.py) ------------------------------------------
def test_hostile_db_runs_nothing(hostile_db, tmp_path):
    db, marker = hostile_db
    for args in COMMANDS:
        for target in ("latest", "0"):
            # (`--db` before `--`: after it, it would be an argument and nothing would be opened)
            argv = _cmd(args, "evil") + ["--db", str(db)] + (["--", target] if args[0] == "show" else [])
            proc = subprocess.run(
                [sys.executable, "-m", "statectl", *argv], capture_output=True, text=True, cwd=tmp_path, timeout=60
            )
            assert proc.returncode == 0, (argv, proc.stderr)  # the hostile rows were read and shown
            assert "Beautiful is better than ugly" not in proc.stdout + proc.stderr  # `this` not imported
            assert not marker.exists(), argv
            if args[:1] == ["show"] and target == "0":  # the payload is shown as the data it is
                shown = '"$type":"os.system"' if "--json" in args else "system('touch"
                assert shown in proc.stdout, argv
            if args[:1] == ["show"] and target == "latest":  # a pickle, not unpickled: said so
                assert "$undecoded" in proc.stdout, argv
                assert "pickle" in proc.stdout, argv
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, statectl\n"
            f"s = statectl.open({str(db)!r}).snapshot('evil', '0')\n"
            "print(sorted(m for m in ('this', 'antigravity', 'subprocess', 'numpy') "
            "if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.stdout.strip() == "[]", proc.stderr


def test_hostile_values_are_shown_as_data(hostile_db):

    db, _ = hostile_db
    snap = statectl.open(str(db)).snapshot("evil", "0")
    assert snap.values["system"] == {"$type": "os.system", "arg": snap.values["system"]["arg"]}
    assert snap.values["run"]["$type"] == "subprocess.run"
    assert snap.values["zen"] == {"$type": "this.s", "arg": "x"}
    assert snap.values["method"]["method"] == "__call__"
    assert snap.values["unknown_ext"] == {"$ext": 42, "data": "AQI="}
    assert snap.values["numpy"]["$ndarray"]["dtype"] == "<f8"
    from statectl.codec.decode import decode_typed
    from statectl.core.state import decode_write

    writes = statectl.open(str(db)).view("evil").writes(snap.checkpoint_id)
    by_channel = {w.channel: decode_write(w) for w in writes}
    assert by_channel["lc"] == {"$type": "os.system", "data": {"command": by_channel["lc"]["data"]["command"]}}
    assert by_channel["p"]["$undecoded"]["type"] == "pickle"  # never unpickled unless asked
    assert by_channel["p"]["$undecoded"]["size"] == len(pickle.dumps(("os", "system")))
    assert decode_typed("msgpack+aes", b"x" * 40)["$undecoded"]["type"] == "msgpack+aes"  # no key
    pickled = statectl.open(str(db)).snapshot("evil", "1")  # a pickled checkpoint: said, not raised
    assert pickled.values["$undecoded"]["type"] == "pickle"
    assert "cannot be read" in pickled.notes[0]


# -- read-only -----------------------------------------------------------------------------------
def _all_commands(db: Path, thread: str) -> list[list[str]]:
    return [[*_cmd(a, thread), "--db", str(db)] for a in COMMANDS] + [
        ["show", thread, "0", "--db", str(db)],
        ["log", thread, "--ns", "", "--db", str(db)],
    ]


@pytest.mark.parametrize(
    "name,thread", [("agent", "bakery-plan"), ("deep", "deep-research"), ("custom", "notes-edits")]
)
def test_every_command_leaves_db_byte_identical(run, dbs, name, thread):
    db = dbs[name]
    before = digest(db)
    for argv in _all_commands(db, thread):
        assert run(*argv).code == 0, argv
    assert digest(db) == before
    assert sorted(p.name for p in db.parent.glob(db.name + "*")) == [db.name]  # no -wal/-shm/-journal


def test_connection_is_read_only(dbs):
    """statectl's connection refuses writes (mode=ro), whatever the file's permissions."""
    from statectl.sources.sqlite import SqliteSource

    src = SqliteSource(dbs["agent"])
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        src.conn.execute("CREATE TABLE x (y)")
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        src.conn.execute("DELETE FROM checkpoints")


def test_wal_rows_are_seen_and_wal_file_is_untouched(run, tmp_path):
    """A live writer's rows still in the -wal file are visible; the file set is unchanged."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "sample_threads"))
    from custom_app import notes_builder
    from langgraph.checkpoint.sqlite import SqliteSaver

    db = tmp_path / "live.sqlite"
    writer = sqlite3.connect(db, check_same_thread=False)
    graph = notes_builder.compile(checkpointer=SqliteSaver(writer))
    graph.invoke({"topic": "wal", "count": 0}, {"configurable": {"thread_id": "live"}})
    assert (tmp_path / "live.sqlite-wal").stat().st_size > 0  # the writer keeps rows in the WAL

    def files() -> dict[str, str]:  # the -shm index is shared memory that every WAL reader updates
        return {k: v for k, v in digest(db).items() if not k.endswith("-shm")}

    before = files()
    r = run("log", "live", "--json", "--db", str(db))
    assert r.code == 0, r.err
    assert len(r.out.splitlines()) == 4
    assert json.loads(r.out.splitlines()[0])["values"]["log"] == ["drafted wal", "reviewed"]
    assert files() == before
    assert set(before) == {"live.sqlite", "live.sqlite-wal"}
    writer.close()


def test_a_wal_database_no_writer_has_open_gets_no_files_beside_it(run, tmp_path):
    """SqliteSaver puts its file in WAL mode; once the application has closed it, the -wal and
    -shm files are gone. A plain read-only open would create both again (it did, in every
    command); statectl leaves the folder as it found it. When a writer then opens the database,
    its new rows (in the WAL) are seen by the same open store, as the TUI's live view needs."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "sample_threads"))
    from custom_app import notes_builder
    from langgraph.checkpoint.sqlite import SqliteSaver

    db = tmp_path / "app.sqlite"
    writer = sqlite3.connect(db, check_same_thread=False)
    notes_builder.compile(checkpointer=SqliteSaver(writer)).invoke(
        {"topic": "wal", "count": 0}, {"configurable": {"thread_id": "first"}}
    )
    writer.close()
    assert db.read_bytes()[18:20] == b"\x02\x02"  # WAL mode, as SqliteSaver left it
    before = digest(db)
    assert set(before) == {"app.sqlite"}
    for argv in _all_commands(db, "first"):
        assert run(*argv).code == 0, argv
        assert digest(db) == before, argv  # no -wal, no -shm, the file byte-identical

    with statectl.open(str(db)) as store:
        assert [t.thread_id for t in store.threads()] == ["first"]
        writer = sqlite3.connect(db, check_same_thread=False)
        notes_builder.compile(checkpointer=SqliteSaver(writer)).invoke(
            {"topic": "later", "count": 0}, {"configurable": {"thread_id": "second"}}
        )
        assert (tmp_path / "app.sqlite-wal").exists()  # the writer is still open
        assert sorted(t.thread_id for t in store.threads()) == ["first", "second"]
        assert store.snapshot("second").values["topic"] == "later"
        writer.close()


def _notes_writer(db: Path):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "sample_threads"))
    from custom_app import notes_builder
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(db, check_same_thread=False)
    conn.execute("PRAGMA wal_autocheckpoint=0")  # rows stay in the WAL, as in committed copies
    return conn, notes_builder.compile(checkpointer=SqliteSaver(conn))


def _committed(src: Path, dst: Path, suffixes: tuple[str, ...]) -> Path:
    """The files as a `git add` of a running app's folder takes them (copied while it writes)."""
    dst.mkdir()
    for suffix in suffixes:
        shutil.copyfile(f"{src}{suffix}", dst / f"{src.name}{suffix}")
    return dst / src.name


def test_a_committed_wal_is_read_and_nothing_is_created_beside_it(run, tmp_path, monkeypatch):
    """A database committed with its -wal (no -shm, no writer): SQLite would create a -shm beside
    it to read the WAL (it did, in 11 of 51 real-world databases). Every row in the WAL is read,
    and the folder stays as it was."""
    private = tmp_path / "tmp"  # (this test's own temporary folder: others run in parallel)
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    writer, graph = _notes_writer(tmp_path / "app.sqlite")
    graph.invoke({"topic": "wal", "count": 0}, {"configurable": {"thread_id": "in-wal"}})
    db = _committed(tmp_path / "app.sqlite", tmp_path / "repo", ("", "-wal"))
    writer.close()
    main_only = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    assert main_only.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0  # all in the WAL
    main_only.close()
    before = digest(db)
    assert set(before) == {"app.sqlite", "app.sqlite-wal"}
    for argv in _all_commands(db, "in-wal"):
        assert run(*argv).code == 0, argv
        assert digest(db) == before, argv
    r = run("show", "in-wal", "--json", "--db", str(db))
    assert json.loads(r.out)["values"]["log"] == ["drafted wal", "reviewed"]
    assert not list(private.iterdir())  # the private folder is gone


def test_a_wal_that_deletes_every_row_of_the_main_file_is_applied(run, tmp_path):
    """The main file holds a thread that the committed -wal deletes: reading the main file alone
    (`immutable`) would show a thread LangGraph no longer has."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    writer, graph = _notes_writer(tmp_path / "app.sqlite")
    graph.invoke({"topic": "gone", "count": 0}, {"configurable": {"thread_id": "deleted"}})
    writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the thread is in the main file now
    SqliteSaver(writer).delete_thread("deleted")  # and deleted in the WAL
    graph.invoke({"topic": "kept", "count": 0}, {"configurable": {"thread_id": "kept"}})
    db = _committed(tmp_path / "app.sqlite", tmp_path / "repo", ("", "-wal"))
    writer.close()
    before = digest(db)
    r = run("threads", "--json", "--db", str(db))
    assert r.code == 0, r.err
    assert [t["thread_id"] for t in json.loads(r.out)] == ["kept"]
    assert digest(db) == before


def test_a_hot_journal_is_rolled_back_privately(run, tmp_path):
    """A rollback-journal database copied in the middle of a write (its -journal is "hot"): SQLite
    must roll it back before reading, which a read-only open cannot ("attempt to write a readonly
    database"). statectl rolls it back on a private copy and reads the last commit; the user's
    files stay as they were. (The half-written state is made by hand: a deliberately broken input.)"""
    src = tmp_path / "app.sqlite"
    writer, graph = _notes_writer(src)
    graph.invoke({"topic": "journal", "count": 0}, {"configurable": {"thread_id": "t"}})
    writer.execute("PRAGMA journal_mode=DELETE")
    writer.execute("PRAGMA cache_size=1")  # spill changed pages to the file before commit
    writer.execute("BEGIN")
    writer.execute("DELETE FROM checkpoints")
    writer.execute("DELETE FROM writes")
    db = _committed(src, tmp_path / "repo", ("", "-journal"))
    writer.rollback()
    writer.close()
    assert db.read_bytes() != src.read_bytes()  # the copy holds uncommitted pages
    before = digest(db)
    r = run("show", "t", "--json", "--db", str(db))
    assert r.code == 0, r.err
    assert json.loads(r.out)["values"]["topic"] == "journal"
    assert digest(db) == before


def test_a_live_writer_is_read_through_its_own_wal_index(run, tmp_path):
    """While the application has the database open, statectl reads as any SQLite reader does
    (the writer's -shm shows it is there), sees its newest rows and creates nothing."""
    writer, graph = _notes_writer(tmp_path / "app.sqlite")
    graph.invoke({"topic": "live", "count": 0}, {"configurable": {"thread_id": "live"}})
    from statectl.sources.sqlite import SqliteSource, _locked

    assert _locked(tmp_path / "app.sqlite") is True
    src = SqliteSource(tmp_path / "app.sqlite")
    assert src._how == "shared"
    src.close()
    graph.invoke({"topic": "more", "count": 0}, {"configurable": {"thread_id": "more"}})
    r = run("threads", "--json", "--db", str(tmp_path / "app.sqlite"))
    assert sorted(t["thread_id"] for t in json.loads(r.out)) == ["live", "more"]
    writer.close()
    assert _locked(tmp_path / "app.sqlite") is False


# -- start-up cost (the layers: tests/test_layers.py) ------------------------------------------------------------------
HEAVY = ("textual", "langgraph", "psycopg", "langchain_core", "langchain", "pydantic")
"""(pydantic: Typer 0.2x imports it to parse values; statectl parses its plain values itself)"""


@pytest.mark.parametrize(
    "args",
    [
        ["threads"],
        ["log", "bakery-plan"],
        ["show", "bakery-plan"],
        ["show", "bakery-plan", "--json"],
        ["diff", "bakery-plan"],
        ["log", "bakery-plan", "-p"],
        ["schema", "bakery-plan"],
        ["graph", "--thread", "bakery-plan"],
        ["size"],
        ["size", "bakery-plan"],
        ["prune", "--keep-last", "1"],
        ["prune", "--keep-last", "1", "--sql"],
        ["doctor", "--types"],
        ["doctor", "--types", "--format", "python"],
    ],
)
def test_commands_do_not_import_heavy_packages(dbs, args):
    code = (
        "import sys\nfrom statectl.cli import main\n"
        f"try:\n    main({[*args, '--db', str(dbs['agent'])]!r})\nexcept SystemExit:\n    pass\n"
        f"print('HEAVY', sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip().splitlines()[-1] == "HEAVY []", proc.stdout[-500:] + proc.stderr


def test_a_looping_parent_chain_ends_every_command(dbs, tmp_path):
    """A parent_checkpoint_id chain that comes back to itself (a copied or hand-edited database;
    rows of a real run, edited: a deliberately broken input) ran `log` and `log -p` forever and
    grew `diff`'s memory without bound. Every command ends, names the loop in one line, and shows
    the checkpoints."""
    db = dbs["custom"]
    with sqlite3.connect(db) as c:
        rows = c.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'notes-edits' "
            "AND checkpoint_ns = '' ORDER BY checkpoint_id"
        ).fetchall()
        oldest, newest = rows[0][0], rows[-1][0]
        c.execute("UPDATE checkpoints SET parent_checkpoint_id = ? WHERE checkpoint_id = ?", (newest, oldest))
        c.execute("PRAGMA journal_mode=DELETE")
    for args in (
        ["log"],
        ["log", "-p"],
        ["show"],
        ["diff"],
        ["graph", "--thread"],
        ["show", "--json"],
        ["log", "--json"],
        ["diff", "--json"],
    ):
        argv = (
            [args[0], "notes-edits", *args[1:], "--db", str(db)]
            if args[0] != "graph"
            else ["graph", "--thread", "notes-edits", "--db", str(db)]
        )
        proc = subprocess.run([sys.executable, "-m", "statectl", *argv], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, (argv, proc.stderr[-500:])
        if args in (["log"], ["show"]):
            assert "the parent chain loops" in proc.stdout, proc.stdout[-800:]
            assert newest[-12:] in proc.stdout, proc.stdout[-800:]


def test_a_live_writer_never_makes_a_false_error(run, tmp_path):
    """An application writes turn after turn, reconnecting per request (the -wal and -shm files
    come and go), while statectl reads in a loop: no read reports an error (a page that changed
    under a lock-free connection read as "database disk image is malformed" in 3-6% of reads),
    and statectl leaves nothing of its own beside the file."""
    db = tmp_path / "app.sqlite"
    writer = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).resolve().parent.parent / "sample_threads" / "busy_writer.py"),
            str(db),
            "150",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout.readline().strip() == "ready", writer.stderr.read()
        reads = errors = 0
        while writer.poll() is None and reads < 400:
            for args in (["threads", "--json"], ["log", "busy-0", "--json"], ["show", "busy-1"]):
                r = run(*args, "--db", str(db))
                reads += 1
                if r.code != 0:
                    errors += 1
                    raise AssertionError((args, r.code, r.err))
        assert reads >= 20, reads  # the writer was still writing while statectl read
        assert errors == 0
    finally:
        writer.wait(timeout=300)
    assert writer.returncode == 0, writer.stderr.read()[-600:]
    # A writer whose last close overlaps a read leaves its -wal and -shm for its next connection
    # (SQLite's rule, as with any reader); the app's next request tidies them, as here:
    assert {p.name for p in tmp_path.iterdir()} <= {"app.sqlite", "app.sqlite-wal", "app.sqlite-shm"}
    app = sqlite3.connect(db)
    app.execute("SELECT COUNT(*) FROM checkpoints").fetchall()
    app.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.sqlite"]


# -- files statectl writes: never over an input, never a device replaced, secrets kept private ----
@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
def test_export_never_writes_over_the_database_it_reads(run, dbs, tmp_path, how):
    db = dbs["custom"]
    before = digest(db)
    target = {"same": db, "symlink": tmp_path / "link.sqlite", "hardlink": tmp_path / "hard.sqlite"}[how]
    if how == "symlink":
        target.symlink_to(db)
    if how == "hardlink":
        os.link(db, target)
    r = run("export", "--all", "--db", str(db), "-o", str(target))
    assert r.code == 2
    assert r.err.startswith(f"statectl: {target} is ")
    assert "which this command reads" in r.err
    assert digest(db) == before


def test_export_keeps_the_mode_of_a_file_it_replaces_and_makes_new_files_private(run, dbs, tmp_path):
    old = tmp_path / "old.json"
    old.write_text("{}")
    os.chmod(old, 0o640)
    r = run("export", "fanout", "--db", str(dbs["custom"]), "-o", str(old))
    assert r.code == 0, r.err
    assert r.err.endswith(f"to {old} (it replaced the file that was there)\n")
    assert old.stat().st_mode & 0o777 == 0o640
    assert json.loads(old.read_text())["threads"][0]["thread_id"] == "fanout"
    new = tmp_path / "new.json"
    assert run("export", "fanout", "--db", str(dbs["custom"]), "-o", str(new)).code == 0
    assert new.stat().st_mode & 0o777 == 0o600
    # a symlink is never written through: the link is replaced by a new (private) file, the file
    # it named is left as it was (tests/test_output_files.py: every kind of link)
    link = tmp_path / "link.json"
    link.symlink_to(old)
    before = old.read_bytes()
    assert run("export", "nested", "--db", str(dbs["custom"]), "-o", str(link)).code == 0
    assert not link.is_symlink()
    assert link.stat().st_mode & 0o777 == 0o600
    assert json.loads(link.read_text())["threads"][0]["thread_id"] == "nested"
    assert old.read_bytes() == before


def test_export_streams_into_a_fifo_and_a_device_without_replacing_them(run, dbs, tmp_path):
    import stat
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    r = run("export", "fanout", "--db", str(dbs["custom"]), "-o", str(fifo))
    reader.join(timeout=30)
    assert r.code == 0, r.err
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert json.loads(got[0])["threads"][0]["thread_id"] == "fanout"
    if os.geteuid() == 0:  # a null device of our own (mknod needs root, as CI and this machine have)
        null = tmp_path / "null"
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        assert run("export", "fanout", "--db", str(dbs["custom"]), "-o", str(null)).code == 0
        assert stat.S_ISCHR(null.stat().st_mode)
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")]  # nothing written beside


@pytest.mark.parametrize(("depth", "code"), [(900, 0), (3000, 4)])
def test_deeply_nested_values_end_in_one_line_or_show(run, dbs, depth, code):
    """A checkpoint whose value is nested 900 deep (within what JSON reads) is shown, diffed,
    logged and exported (the depth beyond what orjson writes said in the value, never a
    RecursionError or an internal error); 3000 deep is one line, exit 4. (Hand-written rows: a
    deliberately hostile input; LangGraph itself refuses to write such a value.)"""
    db = dbs["custom"]
    with sqlite3.connect(db) as conn:
        (cid,) = conn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'fanout' AND checkpoint_ns = '' "
            "ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        deep = "[" * depth + '"leaf"' + "]" * depth
        checkpoint = {
            "v": 1,
            "id": cid,
            "ts": "2026-01-01T00:00:00+00:00",
            "channel_values": {"items": "DEEP"},
            "channel_versions": {"items": "9"},
            "versions_seen": {},
        }
        blob = json.dumps(checkpoint).replace('"DEEP"', deep).encode()
        conn.execute("UPDATE checkpoints SET type = 'json', checkpoint = ? WHERE checkpoint_id = ?", (blob, cid))
    for args in (["show"], ["show", "--json"], ["log", "-p"], ["log", "--json"], ["diff"], ["diff", "--json"]):
        r = run(args[0], "fanout", *args[1:], "--db", str(db))
        assert r.code == code, (args, r.err)
        if code:
            assert r.err.startswith(f"statectl: checkpoint {cid} of thread 'fanout' is corrupt: JSON data nested")
            assert len(r.err.splitlines()) == 1


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "too-large"])
def test_a_folder_file_that_is_not_a_regular_file_is_one_line(run, tmp_path, monkeypatch, kind):
    """A `.langgraph_api` file that is a FIFO (it hung `threads`), a link to /dev/zero (it ate
    memory) or larger than the limit: one line, exit 2, at once."""
    import shutil

    folder = tmp_path / ".langgraph_api"
    shutil.copytree(Path(__file__).resolve().parent.parent / "sample_threads" / ".langgraph_api", folder)
    target = folder / ".langgraph_checkpoint.1.pckl"
    if kind == "fifo":
        target.unlink()
        os.mkfifo(target)
    elif kind == "dev-zero":
        target.unlink()
        target.symlink_to("/dev/zero")
    else:
        monkeypatch.setenv("STATECTL_MAX_FILE_BYTES", "1000")
    r = run("threads", "--db", str(folder))
    assert r.code == 2, r.err
    assert str(target) in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert ("more than statectl reads whole" in r.err) == (kind == "too-large")


def test_a_sidecar_that_is_a_link_is_never_followed(run, dbs, tmp_path):
    """A -journal beside the database that links elsewhere (a 20 GB file, another database) is
    not copied into the private folder: one line, and nothing was copied."""
    db = dbs["custom"]
    elsewhere = tmp_path / "big.bin"
    elsewhere.write_bytes(b"\x00" * 4096)
    journal = Path(f"{db}-journal")
    journal.symlink_to(elsewhere)
    r = run("threads", "--db", str(db))
    assert r.code == 2, r.err
    assert r.err.startswith(f"statectl: {journal} is not a regular file (a link, a pipe or a device): not read")


@pytest.mark.parametrize("depth", [300, 900, 2000])
@pytest.mark.parametrize("kind", ["list", "dict"])
def test_metadata_nested_deep_is_cut_at_the_bound_in_every_command(run, dbs, tmp_path, depth, kind):
    """A checkpoint's metadata holding a value nested 300, 900 (within what JSON reads) or 2,000
    levels deep (planted: a deliberately hostile row): every command shows it cut at 200 levels
    with a marker (`export` ended in `internal error: TypeError`, orjson writing 254 at most), or
    says the metadata is nested too deeply to read; the export reads back the same way."""
    db = dbs["custom"]
    with sqlite3.connect(db) as conn:
        (cid, raw) = conn.execute(
            "SELECT checkpoint_id, metadata FROM checkpoints WHERE thread_id = 'fanout' AND checkpoint_ns = '' "
            "ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        opens, closes = ("[" * depth, "]" * depth) if kind == "list" else ('{"k":' * depth, "}" * depth)
        meta = json.dumps({**json.loads(raw), "deep": "DEEP"}).replace('"DEEP"', opens + '"leaf"' + closes)
        conn.execute("UPDATE checkpoints SET metadata = ? WHERE checkpoint_id = ?", (meta.encode(), cid))
    out = tmp_path / "export.json"
    for store in (str(db), str(out)):
        for args in (
            ["threads"],
            ["threads", "--json"],
            ["log", "fanout"],
            ["log", "fanout", "--json"],
            ["show", "fanout"],
            ["show", "fanout", "--json"],
            ["diff", "fanout"],
            ["diff", "fanout", "--json"],
            ["export", "fanout", "-o", "-"],
        ):
            r = run(*args, "--db", store)
            assert r.code == 0, (store, args, r.err)
            assert r.err == "", (store, args, r.err)
            if args[0] == "export":
                doc = json.loads(r.out)
                (mine,) = [c for c in doc["threads"][0]["checkpoints"] if c["checkpoint_id"] == cid]
                text = json.dumps(mine["metadata"])
                if depth > 1000:
                    assert "nested too deeply to read" in text
                elif depth > 200:
                    assert "nested deeper than 200 levels" in text
        if store == str(db):
            assert run("export", "fanout", "--db", store, "-o", str(out)).code == 0


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "dev-null"])
def test_a_db_that_is_a_pipe_or_a_device_is_one_line(tmp_path, kind):
    """`--db` naming a FIFO (opening it blocked forever: no writer) or a device: one line,
    exit 2, at once (in a subprocess, so that a hang fails the test instead of the suite)."""
    if kind == "fifo":
        path = tmp_path / "checkpoints.sqlite"
        os.mkfifo(path)
    else:
        path = Path("/dev/zero" if kind == "dev-zero" else "/dev/null")
    proc = subprocess.run(
        [sys.executable, "-m", "statectl", "threads", "--db", str(path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"statectl: {path} is a "), proc.stderr
    assert "not a regular file: not read" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
