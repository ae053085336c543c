"""`langgraph dev` folders (`.langgraph_api`): the sample folder was written by a real
`langgraph dev` server (sample_threads/serve.py); LangGraph's own history of it, read from the
same files, is in expected/langgraph_api.jsonl."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import orjson
import pytest
from parity import SAMPLES, check, check_keyed, expected

import statectl
from statectl.sources.export import export_threads

NAMES = {
    "email-approved": "87bda699-fb7b-509e-b8fe-beccfe70b457",
    "email-waiting": "cbe0ab8a-8f6c-57c8-8172-587bc705e2cc",
    "subgraph-waiting": "e9412084-5c6c-5829-8394-6548acca26fe",
    "parse-fails": "5d2385cb-7271-5a05-a939-8d8f155957d8",
    "reducers-unwritten": "f23721b5-3a94-55d3-a88a-b69a532ee22c",
}
THREADS = {r["thread_id"] for r in expected("langgraph_api")}
"""Every thread `sample_threads/serve.py` ran (each has a history LangGraph recorded)."""


@pytest.fixture
def app(tmp_path) -> Path:
    """A copy of the sample app folder: langgraph.json beside the .langgraph_api folder."""
    dest = tmp_path / "app"
    dest.mkdir()
    shutil.copytree(SAMPLES / ".langgraph_api", dest / ".langgraph_api")
    shutil.copy(SAMPLES / "langgraph.json", dest / "langgraph.json")
    return dest


def tree_digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_folder_matches_langgraph(app):
    with statectl.open(str(app)) as store:
        assert check(store, expected("langgraph_api")) == len(expected("langgraph_api"))


def test_folder_with_the_graph_is_exact(app):
    """`--graph`: each thread read with the graph langgraph.json names for its graph id; every
    recorded checkpoint equals LangGraph's, the keys parity.UNPROVABLE lists included."""
    from statectl.project.introspect import graph_spec

    graphs = json.loads((SAMPLES / "langgraph.json").read_text())["graphs"]
    records = expected("langgraph_api")
    held = 0
    with statectl.open(str(app)) as store:
        of = {t.thread_id: t.graph_id for t in store.threads()}
        for graph_id, path in graphs.items():
            mine = [r for r in records if of[r["thread_id"]] == graph_id]
            if mine:
                store.graph = graph_spec(str(SAMPLES / path.removeprefix("./")))
                store._views.clear()
                held += check(store, mine, exact=True)
    assert held == len(records)


def test_reducer_channels_never_written_read_as_langgraph_reads_them(run, app):
    """`log` and `total` are reducer channels no step wrote: LangGraph reads them as `[]` and `0`
    (their type's empty value, known from the graph's code). The folder's ops record holds the
    server's last view of the thread, which proves it; statectl shows them at every checkpoint."""
    tid = NAMES["reducers-unwritten"]
    history = [r for r in expected("langgraph_api") if r["thread_id"] == tid]
    assert len(history) == 3
    assert all(r["values"]["log"] == [] and r["values"]["total"] == 0 for r in history)
    for rec in history:
        shown = json.loads(run("show", tid, rec["checkpoint_id"], "--json", "--db", str(app)).out)
        assert shown["values"] == rec["values"]


def test_folder_one_key_matches_langgraph(app):
    with statectl.open(str(app)) as store:
        assert check_keyed(store, expected("langgraph_api")) > 100


def test_folder_export_matches_langgraph(app, tmp_path):
    with statectl.open(str(app)) as store:
        doc = export_threads(store.source, [t.thread_id for t in store.threads()])
    path = tmp_path / "export.json"
    path.write_bytes(orjson.dumps(doc))
    with statectl.open(str(path)) as store:
        assert check(store, expected("langgraph_api")) == len(expected("langgraph_api"))


@pytest.mark.parametrize(
    "where",
    [".", ".langgraph_api", ".langgraph_api/.langgraph_checkpoint.1.pckl", ".langgraph_api/.langgraph_ops.pckl"],
)
def test_db_accepts_app_folder_folder_and_files(run, app, where):
    r = run("threads", "--db", str(app / where), "--json")
    assert r.code == 0, r.err
    rows = {t["thread_id"]: t for t in json.loads(r.out)}
    assert set(rows) == THREADS
    assert rows[NAMES["email-waiting"]]["status"] == "interrupted"
    assert rows[NAMES["email-waiting"]]["server_status"] == "interrupted"
    assert rows[NAMES["email-waiting"]]["graph_id"] == "agent"
    assert rows[NAMES["parse-fails"]]["server_status"] == "error"
    assert rows[NAMES["email-approved"]]["server_status"] == "idle"


def test_default_search_finds_langgraph_api(run, app, monkeypatch):
    monkeypatch.chdir(app)
    monkeypatch.delenv("STATECTL_DB", raising=False)
    monkeypatch.delenv("DATABASE_URI", raising=False)
    r = run("threads")
    assert r.code == 0, r.err
    assert r.out.startswith(f"{len(THREADS)} threads in .langgraph_api")


def test_every_command_leaves_the_folder_byte_identical(run, app):
    before = tree_digest(app)
    tid = NAMES["subgraph-waiting"]
    for args in (
        ["threads"],
        ["log", tid],
        ["log", tid, "-p"],
        ["show", tid],
        ["show", tid, "--json"],
        ["diff", tid],
        ["export", tid, "-o", str(app.parent / "x.json")],
        ["graph", "--thread", tid],
        ["schema", "--db", str(app), tid],
    ):
        if args[0] != "schema":
            args = [*args, "--db", str(app)]
        r = run(*args)
        assert r.code == 0, (args, r.err)
    assert tree_digest(app) == before


def test_threads_shows_server_status_and_graph(run, app):
    r = run("threads", "--db", str(app))
    assert r.code == 0, r.err
    header = r.out.splitlines()[1]
    assert "SERVER" in header
    assert "GRAPH" in header
    line = next(ln for ln in r.out.splitlines() if ln.startswith(NAMES["parse-fails"]))
    assert "error" in line
    assert "failing" in line


def test_show_and_log_name_the_writer_versions(run, app):
    r = run("show", NAMES["email-approved"], "--db", str(app))
    assert r.code == 0, r.err
    assert "langgraph 1.2.22" in r.out
    assert "langgraph-api 0.16.7" in r.out
    r = run("log", NAMES["email-approved"], "--db", str(app))
    assert "langgraph 1.2.22" in r.out
    assert "langgraph-api 0.16.7" in r.out


# -- a hostile folder under an address-space limit (`ulimit -v`, as constrained containers) ----
_PEAK = (
    "import atexit, os, sys\n"
    "def peak():\n"
    "    with open('/proc/self/status') as fh:\n"
    "        kb = next(ln.split()[1] for ln in fh if ln.startswith('VmPeak:'))\n"
    "    with open(os.environ['PEAK_FILE'], 'w') as out:\n"
    "        out.write(kb)\n"
    "atexit.register(peak)\n"
    "from statectl.cli import main\n"
    "main(sys.argv[1:])\n"
)


def _limited(folder: Path, limit: int | None, peak_file: Path):
    """`statectl threads --db folder` in a process whose address space is at most `limit` bytes."""
    import resource
    import subprocess
    import sys

    def cap() -> None:
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run(
        [sys.executable, "-c", _PEAK, "threads", "--db", str(folder), "--json"],
        capture_output=True,
        text=True,
        timeout=60,  # (a hang is a failure, never a stuck suite)
        preexec_fn=cap,
        env={**__import__("os").environ, "PEAK_FILE": str(peak_file)},
    )


def _spoil(target: Path, how: str) -> None:
    import os

    data = target.read_bytes()
    target.unlink()
    if how == "truncated":
        target.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        target.write_bytes(b"")
    elif how == "fifo":
        os.mkfifo(target)
    elif how == "dev-zero":
        target.symlink_to("/dev/zero")
    elif how == "folder":
        target.mkdir()
    elif how == "link-loop":
        target.symlink_to(target.name)
    elif how == "sparse-10g":  # past the 4 GiB limit: refused by its size
        with target.open("wb") as fh:
            fh.truncate(10 << 30)
    elif how == "sparse-3g":  # within the limit, zeros: refused by its first bytes
        with target.open("wb") as fh:
            fh.truncate(3 << 30)
    elif how == "pickle-then-holes":  # begins like a pickle, then 1 GiB of holes: more than memory
        with target.open("wb") as fh:
            fh.write(data[:64])
            fh.truncate(1 << 30)


HOSTILE_FILES = [
    "truncated",
    "empty",
    "fifo",
    "dev-zero",
    "folder",
    "link-loop",
    "sparse-10g",
    "sparse-3g",
    "pickle-then-holes",
]


@pytest.fixture(scope="module")
def address_limit(tmp_path_factory) -> int:
    """The address space `threads` needs on a SQLite sample (measured: the process's normal
    size, imports included), plus 100 MB; `threads` on the intact folder works within it."""
    tmp = tmp_path_factory.mktemp("peak")
    shutil.copy(SAMPLES / "agent.sqlite", tmp / "agent.sqlite")
    r = _limited(tmp / "agent.sqlite", None, tmp / "peak")
    assert r.returncode == 0, r.stderr
    limit = int((tmp / "peak").read_text()) * 1024 + (100 << 20)
    shutil.copytree(SAMPLES / ".langgraph_api", tmp / ".langgraph_api")
    r = _limited(tmp / ".langgraph_api", limit, tmp / "peak")
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)) == len(THREADS)
    return limit


@pytest.mark.parametrize("name", [".langgraph_checkpoint.1.pckl", ".langgraph_ops.pckl"])
@pytest.mark.parametrize("how", HOSTILE_FILES)
def test_a_hostile_folder_file_is_one_line_within_a_small_address_space(app, tmp_path, address_limit, how, name):
    """Every file of the folder, made hostile: one line naming it, exit 2, within the address
    space the intact folder needs plus 100 MB (reading a file reserved its 4 GiB limit up
    front: `internal error: MemoryError` on any folder), no hang, nothing changed."""
    folder = app / ".langgraph_api"
    target = folder / name
    _spoil(target, how)
    before = _fingerprint(app)
    r = _limited(folder, address_limit, tmp_path / "peak")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("statectl: "), r.stderr
    assert str(target) in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "internal error" not in r.stderr
    assert "MemoryError" not in r.stderr
    assert r.stdout == ""
    assert _fingerprint(app) == before


def _fingerprint(folder: Path) -> dict[str, object]:
    """`tree_digest`, with the huge sparse files stated instead of read (10 GiB to hash)."""
    out: dict[str, object] = {}
    for p in sorted(folder.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(folder))] = (
            hashlib.sha256(p.read_bytes()).hexdigest()
            if p.is_file() and not p.is_symlink() and st.st_size < (1 << 20)
            else (st.st_mode, st.st_size, st.st_mtime_ns)
        )
    return out


@pytest.mark.parametrize("kind", ["list", "dict"])
def test_folder_metadata_nested_900_deep_is_cut_at_the_bound(run, tmp_path, kind):
    """A folder checkpoint whose metadata pair holds a value 900 levels deep (a hostile file,
    written here): every command shows it cut at 200 levels with a marker."""
    import pickle

    import ormsgpack

    folder = tmp_path / ".langgraph_api"
    folder.mkdir()
    tid, cid = "t", "1f000000-0000-6000-8000-000000000000"
    ck = ormsgpack.packb(
        {
            "v": 4,
            "id": cid,
            "ts": "2026-01-01T00:00:00+00:00",
            "channel_values": {"n": 1},
            "channel_versions": {"n": "1"},
            "versions_seen": {},
        }
    )
    opens, closes = ("[" * 900, "]" * 900) if kind == "list" else ('{"k":' * 900, "}" * 900)
    meta = ('{"source": "loop", "step": 1, "deep": ' + opens + '"leaf"' + closes + "}").encode()
    storage = {tid: {"": {cid: (("msgpack", ck), ("json", meta), None)}}}
    (folder / ".langgraph_checkpoint.1.pckl").write_bytes(pickle.dumps(storage, 2))
    for name in (".langgraph_checkpoint.2.pckl", ".langgraph_checkpoint.3.pckl", ".langgraph_ops.pckl"):
        (folder / name).write_bytes(pickle.dumps({}, 2))
    for args in (["threads"], ["log", tid], ["log", tid, "--json"], ["show", tid], ["diff", tid]):
        r = run(*args, "--db", str(folder))
        assert r.code == 0, (args, r.err)
    r = run("export", tid, "-o", "-", "--db", str(folder))
    assert r.code == 0, r.err
    assert "nested deeper than 200 levels" in json.dumps(json.loads(r.out)["threads"][0]["checkpoints"][0]["metadata"])
