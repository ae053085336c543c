"""Shared fixtures: the sample databases (copied, so a test can never touch the originals)."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

import ormsgpack
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


from memory_stores import memory_server, pg_memory  # noqa: F401 - fixtures: the memory stores
from parity import DBS, SAMPLES

from statectl.cli import main


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def run(capsysbinary, monkeypatch):
    """Run the statectl CLI in-process, like the console script: exit code, stdout, stderr."""
    monkeypatch.setenv("COLUMNS", "200")  # a wide terminal, so table cells are not wrapped

    def _run(*args: str) -> Result:
        code = 0
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        cap = capsysbinary.readouterr()
        return Result(code, cap.out.decode(), cap.err.decode())

    return _run


@pytest.fixture
def dbs(tmp_path) -> dict[str, Path]:
    """Fresh copies of the sample SQLite files."""
    out = {}
    for name in DBS:
        out[name] = tmp_path / f"{name}.sqlite"
        shutil.copy(SAMPLES / f"{name}.sqlite", out[name])
    return out


def corrupt_latest(db: Path, thread: str) -> str:
    """Overwrite the newest checkpoint blob of `thread` with bytes that are not msgpack; its id."""
    conn = sqlite3.connect(db)
    (cid,) = conn.execute(
        "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_id DESC LIMIT 1", (thread,)
    ).fetchone()
    conn.execute("UPDATE checkpoints SET checkpoint = x'c1c1c1' WHERE checkpoint_id = ?", (cid,))
    conn.commit()
    conn.close()
    return cid


def thread_pages(run, db: str, size: int, *extra: str) -> list[list[str]]:
    """Every page of `threads --json --limit size [extra]`, following `--after` to the end."""
    import json

    pages, after = [], None
    while True:
        args = ["threads", "--db", db, "--json", "--limit", str(size), *extra] + (["--after", after] if after else [])
        page = [t["thread_id"] for t in json.loads(run(*args).out)]
        if not page:
            return pages
        pages.append(page)
        after = page[-1]


def check_status_filter(run, db: str, *extra: str) -> int:
    """`threads --status` lists exactly the threads with those statuses, in the unfiltered
    order, and its pages (`--limit`, `--after`) join up to the same list; returns how many
    (status set, thread) pairs were checked."""
    import json

    everything = json.loads(run("threads", "--db", db, "--json", *extra).out)
    checked = 0
    for wanted in (["done"], ["interrupted"], ["error"], ["pending"], ["error", "interrupted"]):
        r = run("threads", "--db", db, "--json", "--status", ",".join(wanted), *extra)
        assert r.code == 0, r.err
        want = [t for t in everything if t["status"] in wanted]
        assert json.loads(r.out) == want, wanted
        pages = thread_pages(run, db, 2, "--status", ",".join(wanted), *extra)
        assert [t for p in pages for t in p] == [t["thread_id"] for t in want], wanted
        assert all(len(p) <= 2 for p in pages), pages
        checked += len(want)
    return checked


def digest(path: Path) -> dict[str, str]:
    """Hashes of a database file and of any companion files beside it."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.parent.glob(path.name + "*"))}


# -- Postgres: a real server, started here if it is not running --------------------------------
PG_DUMP = SAMPLES / "postgres.sql"


def _pg_ready() -> bool:
    import psycopg

    try:
        psycopg.connect("postgresql:///postgres", connect_timeout=3).close()
        return True
    except psycopg.Error:
        return False


def _start_postgres() -> None:
    """Start the machine's cluster and give the current user a superuser role (CI machines)."""
    import getpass
    import subprocess

    clusters = subprocess.run(["pg_lsclusters", "-h"], capture_output=True, text=True)
    for line in clusters.stdout.splitlines():
        version, name = line.split()[:2]
        subprocess.run(["pg_ctlcluster", version, name, "start"], capture_output=True)
    user = getpass.getuser()
    subprocess.run(["su", "postgres", "-c", f"createuser -s {user}"], capture_output=True)


@pytest.fixture(scope="session")
def pg_server() -> str:
    """A URL prefix of a running Postgres server; the tests fail (never skip) without one."""
    if not _pg_ready():
        _start_postgres()
    if not _pg_ready():
        pytest.fail(
            "no Postgres server: install PostgreSQL (apt-get install postgresql) or start "
            "one that `psql postgresql:///postgres` reaches"
        )
    return "postgresql:///"


def _restore(name: str) -> str:
    import subprocess

    import psycopg

    with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = f"postgresql:///{name}"
    subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(PG_DUMP), url], check=True, capture_output=True)
    return url


@pytest.fixture(scope="session")
def pg_samples(pg_server):
    """The sample threads as PostgresSaver wrote them (sample_threads/postgres.sql), restored
    into a fresh database; tests must not change it (test_postgres checks that they do not)."""
    import psycopg

    name = f"statectl_samples_{os.getpid()}"
    yield _restore(name)
    with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_scratch(pg_server):
    """A fresh restore of the sample threads that a test may deliberately break; dropped after."""
    import psycopg

    name = f"statectl_scratch_{os.getpid()}"  # (one per process: tests run in parallel)
    yield _restore(name)
    with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_empty(pg_server):
    """A fresh empty database; dropped after."""
    import psycopg

    name = f"statectl_empty_{os.getpid()}"
    with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield f"postgresql:///{name}"
    with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- a real `langgraph dev` -----------------------------------------------------------------------
@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """A real `langgraph dev` on a free port in a copy of the sample app, loaded with the sample
    `.langgraph_api` threads (sample_threads/serve.py). Tests that use it are in the xdist group
    "server", so the suite starts one, in one process."""
    sys.path.insert(0, str(SAMPLES))
    import serve

    app = serve.copy_app(tmp_path_factory.mktemp("server") / "app")
    shutil.copytree(SAMPLES / ".langgraph_api", app / ".langgraph_api")
    with serve.start(app) as srv:
        yield srv


# -- Mermaid: its own parser, under Node ---------------------------------------------------------
MERMAID = Path(__file__).resolve().parent / "mermaid"


@pytest.fixture(scope="session")
def mermaid_parse():
    """Parse Mermaid texts with Mermaid's parser: a list of {ok, vertices, edges} or {ok, error}.
    Installs the npm packages (tests/mermaid/package-lock.json) on first use; fails, never skips,
    when Node is missing."""
    import json
    import subprocess

    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.fail("Node and npm are needed to check Mermaid output (.ci/run installs them)")
    import fcntl
    import tempfile

    with open(Path(tempfile.gettempdir()) / "mermaid-install.statectl-tests.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # (one install when the tests run in several processes)
        if not (MERMAID / "node_modules" / "mermaid").is_dir():
            proc = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"], cwd=MERMAID, capture_output=True, text=True, timeout=600
            )
            assert proc.returncode == 0, proc.stderr[-2000:]

    def parse(texts: list[str]) -> list[dict]:
        proc = subprocess.run(
            [node, "parse.mjs"], cwd=MERMAID, input=json.dumps(texts), capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout)

    return parse


@pytest.fixture
def markup_db(tmp_path) -> tuple[Path, str, str]:
    """A real LangGraph run whose thread id, state key and value look like Rich markup and emoji
    codes: (database, thread id, state key). They must be shown as written, never interpreted."""
    from typing import TypedDict

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    key, thread = "[red]note[/red]", "run [/x] :smile:"
    State = TypedDict("State", {key: str, "n": int})
    graph = StateGraph(State)
    graph.add_node("write", lambda s: {key: "closing [/b] tag :thumbs_up:", "n": s["n"] + 1})
    graph.add_edge(START, "write")
    graph.add_edge("write", END)
    db = tmp_path / "markup.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    graph.compile(checkpointer=SqliteSaver(conn)).invoke({"n": 0}, {"configurable": {"thread_id": thread}})
    conn.close()
    return db, thread, key


def one_node_runs(db: Path, state: type, node, runs, ignore: tuple = ()) -> Path:
    """Write real LangGraph runs of a one-node graph (START -> node -> END) to a SqliteSaver file:
    `runs` are (input, config) pairs; exceptions of the `ignore` types end a run as LangGraph
    leaves it (the error recorded)."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(state)
    g.add_node(node.__name__, node)
    g.add_edge(START, node.__name__)
    g.add_edge(node.__name__, END)
    conn = sqlite3.connect(db, check_same_thread=False)
    graph = g.compile(checkpointer=SqliteSaver(conn))
    for given, config in runs:
        try:
            graph.invoke(given, config)
        except ignore:
            pass
    conn.close()
    return db


# -- hostile data: payloads that name callables and modules (test_safety, test_mcp) ------------
def _ext(code: int, *payload) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, ormsgpack.packb(list(payload)))


@pytest.fixture
def hostile_db(tmp_path) -> tuple[Path, Path]:
    """A hand-written DB whose payloads name callables and modules that must never run."""
    marker = tmp_path / "pwned"
    db = tmp_path / "hostile.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript("""
        CREATE TABLE checkpoints (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '',
          checkpoint_id TEXT NOT NULL, parent_checkpoint_id TEXT, type TEXT, checkpoint BLOB,
          metadata BLOB, PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id));
        CREATE TABLE writes (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '',
          checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, task_path TEXT NOT NULL DEFAULT '',
          idx INTEGER NOT NULL, channel TEXT NOT NULL, type TEXT, value BLOB,
          PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx));""")
    values = {
        "system": _ext(0, "os", "system", f"touch {marker}"),
        "run": _ext(1, "subprocess", "run", [["touch", str(marker)]]),
        "kw": _ext(2, "subprocess", "Popen", {"args": ["touch", str(marker)]}),
        "zen": _ext(0, "this", "s", "x"),
        "antigravity": _ext(5, "antigravity", "Anything", {"a": 1}, "model_validate_json"),
        "method": _ext(3, "os", "system", f"touch {marker}", "__call__"),
        "numpy": _ext(6, "<f8", [1], "C", b"\x00" * 8),
        "unknown_ext": ormsgpack.Ext(42, b"\x01\x02"),
    }
    cid = "1f000000-0000-6000-8000-000000000001"
    ck = {
        "v": 4,
        "ts": "2026-01-01T00:00:00+00:00",
        "id": cid,
        "channel_values": values,
        "channel_versions": {k: "1" for k in values},
        "versions_seen": {},
        "updated_channels": None,
    }
    rows = [("evil", cid, None, "msgpack", ormsgpack.packb(ck), b'{"source": "loop", "step": 0}')]
    cid2 = "1f000000-0000-6000-8001-000000000002"
    rows.append(("evil", cid2, cid, "pickle", pickle.dumps({"x": 1}), b'{"source": "loop", "step": 1}'))
    for thread, c, parent, type_, blob, md in rows:
        conn.execute("INSERT INTO checkpoints VALUES (?, '', ?, ?, ?, ?, ?)", (thread, c, parent, type_, blob, md))
    lc = json.dumps({"lc": 1, "type": "constructor", "id": ["os", "system"], "kwargs": {"command": f"touch {marker}"}})
    conn.execute(
        "INSERT INTO writes VALUES ('evil', '', ?, 'task-1', '~__pregel_pull, x', 0, 'lc', 'json', ?)",
        (cid, lc.encode()),
    )
    conn.execute(
        "INSERT INTO writes VALUES ('evil', '', ?, 'task-1', '~__pregel_pull, x', 1, 'p', 'pickle', ?)",
        (cid, pickle.dumps(("os", "system"))),
    )
    conn.commit()
    conn.close()
    return db, marker
