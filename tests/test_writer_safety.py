"""The writer never builds what the data names (issue 50, item 1): `fork` and `replay` read the
thread back through LangGraph's saver with a serializer that builds only the types the graph's
state declares, LangGraph's safe set and `--allow-type`; a value naming anything else is one line,
exit 2, and nothing written, whichever the source (SQLite, Postgres, a `langgraph dev` folder).

The stores are written by real LangGraph runs of `APP` (below); a hostile value is then planted
into one channel of the checkpoint the fork starts from (hand-written bytes: deliberately hostile).
The app's own checkpointer is as permissive as LangGraph allows (`pickle_fallback`, every JSON
module): without statectl's guard, every payload here runs."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import sqlite3
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

import ormsgpack
import pytest
from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from pydantic import BaseModel

APP = textwrap.dedent("""
    import operator
    from dataclasses import dataclass
    from typing import Annotated, TypedDict

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.graph import END, START, StateGraph


    @dataclass
    class Note:
        text: str
        stars: int = 0


    class Gift:  # (declared nowhere in the state: only --allow-type builds it)
        def __init__(self, what):
            self.what = what

        def __eq__(self, other):
            return isinstance(other, Gift) and other.what == self.what


    class State(TypedDict):
        notes: Annotated[list, operator.add]
        pinned: list[Note]
        n: int


    def a(state):
        return {"notes": ["a"], "pinned": [Note("first", 1)], "n": 1}


    def b(state):
        return {"notes": ["b"], "n": state["n"] + 1}


    builder = StateGraph(State)
    builder.add_node("a", a)
    builder.add_node("b", b)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    serde = JsonPlusSerializer(pickle_fallback=True, allowed_json_modules=True)
    graph = builder.compile(checkpointer=InMemorySaver(serde=serde))
""")
EVIL = "open({marker!r}, 'w').write('imported')\nclass Anything:\n    def __init__(self, **kw):\n        pass\n"
THREAD = "t-1"


def _ext(code: int, *payload: Any) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, ormsgpack.packb(list(payload)))


def _payloads(marker: Path) -> dict[str, tuple[str, bytes, str]]:
    """Each payload kind: (type, bytes, the type the refusal names)."""

    class Boom:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    msgpack = {
        "ext0-os.system": (_ext(0, "os", "system", f"touch {marker}"), "os.system"),
        "ext0-builtins.exec": (_ext(0, "builtins", "exec", f"open({str(marker)!r}, 'w')"), "builtins.exec"),
        "ext1-subprocess.Popen": (_ext(1, "subprocess", "Popen", [["touch", str(marker)]]), "subprocess.Popen"),
        "ext2-subprocess.Popen": (_ext(2, "subprocess", "Popen", {"args": ["touch", str(marker)]}), "subprocess.Popen"),
        "ext3-method": (_ext(3, "os", "system", f"touch {marker}", "__call__"), "os.system.__call__"),
        "ext4-pydantic-v1": (_ext(4, "evil", "Anything", {"a": 1}), "evil.Anything"),
        "ext5-pydantic-v2": (_ext(5, "evil", "Anything", {"a": 1}, "model_validate_json"), "evil.Anything"),
        "ext6-numpy": (_ext(6, "<f8", [1], "C", b"\x00" * 8), "numpy.ndarray"),
        "nested-in-a-list": ([["ok", _ext(0, "os", "system", f"touch {marker}")]], "os.system"),
    }
    out = {k: ("msgpack", ormsgpack.packb(v), name) for k, (v, name) in msgpack.items()}
    out["json-lc1"] = ("json", _lc(1, ["os", "system"], marker), "os.system")
    out["json-lc2"] = ("json", _lc(2, ["subprocess", "Popen"], marker), "subprocess.Popen")
    out["pickle"] = ("pickle", pickle.dumps(Boom()), f"{os.system.__module__}.system")
    return out


def _lc(version: int, ids: list[str], marker: Path) -> bytes:
    record = {"lc": version, "type": "constructor", "id": ids, "kwargs": {"args": ["touch", str(marker)]}}
    return json.dumps({"wrapped": [record]}).encode()


@pytest.fixture
def project(tmp_path, monkeypatch):
    """The project folder as the current one: the app, and `evil.py` (it writes the marker when
    imported) beside it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "safety_app.py").write_text(APP)
    marker = tmp_path / "pwned"
    (tmp_path / "evil.py").write_text(EVIL.format(marker=str(marker)))
    return tmp_path


def _run_app(project: Path, saver: Any) -> None:
    """One real run of the app (imported as `statectl fork` imports it: by its file's name)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("safety_app", project / "safety_app.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["safety_app"] = module
    try:
        spec.loader.exec_module(module)
        graph = module.builder.compile(checkpointer=saver)
        graph.invoke({"notes": [], "pinned": [], "n": 0}, {"configurable": {"thread_id": THREAD}})
    finally:
        del sys.modules["safety_app"]


def _step(saver: Any, step: int) -> str:
    for tup in saver.list({"configurable": {"thread_id": THREAD}}):
        if tup.metadata.get("step") == step:
            return tup.config["configurable"]["checkpoint_id"]
    raise AssertionError(step)


# -- the three sources, each written by a real run, then one channel made hostile ----------------
def sqlite_source(project: Path, payload: tuple[str, bytes], pg: str) -> tuple[str, str]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    db = project / "src.sqlite"
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    _run_app(project, saver)
    cid = _step(saver, 1)
    saver.conn.close()
    conn = sqlite3.connect(db)
    with conn:
        (blob,) = conn.execute("SELECT checkpoint FROM checkpoints WHERE checkpoint_id = ?", (cid,)).fetchone()
        whole = ormsgpack.unpackb(blob, ext_hook=ormsgpack.Ext, option=ormsgpack.OPT_NON_STR_KEYS)
        type_, data = payload
        if type_ == "msgpack":  # (the whole checkpoint is one msgpack value: the payload goes in a channel)
            whole["channel_values"]["notes"] = ormsgpack.unpackb(data, ext_hook=ormsgpack.Ext)
            conn.execute("UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?", (ormsgpack.packb(whole), cid))
        else:  # (json and pickle values stand alone: a pending write of the checkpoint)
            conn.execute("UPDATE writes SET type = ?, value = ? WHERE checkpoint_id = ?", (type_, data, cid))
            assert conn.total_changes
    conn.execute("PRAGMA journal_mode=DELETE")  # (one file, as a copied store is)
    conn.close()
    return str(db), cid


def postgres_source(project: Path, payload: tuple[str, bytes], pg: str) -> tuple[str, str]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(pg) as saver:
        saver.setup()
        _run_app(project, saver)
        cid = _step(saver, 1)
    with psycopg.connect(pg, autocommit=True) as conn:
        (versions,) = conn.execute(
            "SELECT checkpoint->'channel_versions' FROM checkpoints WHERE checkpoint_id = %s", (cid,)
        ).fetchone()
        conn.execute(
            "UPDATE checkpoint_blobs SET type = %s, blob = %s WHERE channel = 'notes' AND version = %s",
            (*payload, versions["notes"]),
        )
    return pg, cid


def folder_source(project: Path, payload: tuple[str, bytes], pg: str) -> tuple[str, str]:
    """A `langgraph dev` folder: the in-memory saver's three dicts, pickled as its PersistentDict
    writes them (one protocol-2 pickle of a plain dict per file)."""
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    _run_app(project, saver)
    cid = _step(saver, 1)
    version = saver.storage[THREAD][""][cid][0]
    versions = saver.serde.loads_typed(version)["channel_versions"]
    saver.blobs[(THREAD, "", "notes", versions["notes"])] = payload
    folder = project / "app" / ".langgraph_api"
    folder.mkdir(parents=True)
    storage = {t: {ns: dict(c) for ns, c in by_ns.items()} for t, by_ns in saver.storage.items()}
    for n, data in enumerate((storage, dict(saver.writes), dict(saver.blobs)), start=1):
        (folder / f".langgraph_checkpoint.{n}.pckl").write_bytes(pickle.dumps(data, 2))
    return str(folder), cid


SOURCES = {"sqlite": sqlite_source, "postgres": postgres_source, "langgraph dev": folder_source}


def _refused(r: Any, name: str) -> None:
    """Exit 2 and one line naming the type, with the option that would allow it."""
    assert r.code == 2, r.err
    assert r.err.count("\n") == 1, r.err
    assert r.err.startswith("statectl: "), r.err
    assert f" names {name}, not a type the graph's state declares" in r.err, r.err
    assert f"--allow-type {name} builds it" in r.err, r.err


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _pg_rows(url: str) -> list[Any]:
    import psycopg

    with psycopg.connect(url) as conn:
        return [
            conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
        ]


@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("kind", list(_payloads(Path("m"))))
def test_a_value_naming_a_type_the_graph_does_not_declare_is_refused(run, project, pg_empty, source, kind):
    marker = project / "pwned"
    type_, data, name = _payloads(marker)[kind]
    db, cid = SOURCES[source](project, (type_, data), pg_empty)
    before, rows = _tree(project), _pg_rows(pg_empty) if source == "postgres" else None
    for args in (["fork", THREAD, cid, "--set", "n=5"], ["replay", THREAD, cid]):
        r = run(*args, "--db", db, "--graph", "safety_app.py:graph")
        assert not marker.exists()  # nothing ran, no process was spawned, `evil` never imported
        _refused(r, name)
        assert f"thread {THREAD!r}" in r.err
        assert f"checkpoint {cid}" in r.err
        assert _tree(project) == before  # no scratch file, nothing changed
        if rows is not None:
            assert _pg_rows(pg_empty) == rows


@pytest.mark.parametrize("source", list(SOURCES))
def test_in_place_and_into_postgres_refuse_before_writing(run, project, pg_empty, pg_scratch, source):
    marker = project / "pwned"
    type_, data, _ = _payloads(marker)["ext1-subprocess.Popen"]
    db, cid = SOURCES[source](project, (type_, data), pg_empty)
    before = _pg_rows(pg_scratch)
    r = run("fork", THREAD, cid, "--db", db, "--graph", "safety_app.py:graph", "--set", "n=5", "--to", pg_scratch)
    _refused(r, "subprocess.Popen")
    assert _pg_rows(pg_scratch) == before
    if source != "langgraph dev":
        rows = _pg_rows(pg_empty) if source == "postgres" else None
        tree = _tree(project)
        r = run(
            "fork", THREAD, cid, "--db", db, "--graph", "safety_app.py:graph", "--set", "n=5", "--in-place", "--yes"
        )
        _refused(r, "subprocess.Popen")
        assert _tree(project) == tree
        if rows is not None:
            assert _pg_rows(pg_empty) == rows
    assert not marker.exists()


def test_allow_type_builds_a_class_the_state_does_not_declare(run, project, pg_empty, monkeypatch):
    """A benign class stored in the thread and not in the state's annotations: refused, named;
    with --allow-type it is built, and the fork carries it over unchanged."""
    gift = ormsgpack.packb([_ext(0, "statectl_gift", "Gift", "socks")])
    (project / "statectl_gift.py").write_text("class Gift:\n    def __init__(self, what):\n        self.what = what\n")
    db, cid = sqlite_source(project, ("msgpack", gift), pg_empty)
    r = run("fork", THREAD, cid, "--db", db, "--graph", "safety_app.py:graph", "--set", "n=5")
    _refused(r, "statectl_gift.Gift")
    assert not (project / "statectl-scratch.sqlite").exists()
    r = run(
        "fork", THREAD, cid, "--db", db, "--graph", "safety_app.py:graph", "--set", "n=5",
        "--allow-type", "statectl_gift.Gift", "--json",
    )  # fmt: skip
    assert r.code == 0, r.err
    new = json.loads(r.out)["checkpoint_id"]
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.checkpoint.sqlite import SqliteSaver

    monkeypatch.syspath_prepend(str(project))  # (the app's serializer pickled it: read as the app would)
    serde = JsonPlusSerializer(pickle_fallback=True, allowed_msgpack_modules=[("statectl_gift", "Gift")])
    saver = SqliteSaver(sqlite3.connect(project / "statectl-scratch.sqlite", check_same_thread=False), serde=serde)
    tup = saver.get_tuple({"configurable": {"thread_id": THREAD, "checkpoint_ns": "", "checkpoint_id": new}})
    saver.conn.close()
    (value,) = tup.checkpoint["channel_values"]["notes"]
    assert type(value).__name__ == "Gift"
    assert value.what == "socks"
    assert tup.checkpoint["channel_values"]["n"] == 5


@pytest.mark.parametrize("bad", ["Gift", "statectl_gift.*", "a..b", "1x.Y"])
def test_allow_type_takes_module_dot_name(run, project, pg_empty, bad):
    db, cid = sqlite_source(project, ("msgpack", ormsgpack.packb(["fine"])), pg_empty)
    r = run("fork", THREAD, cid, "--db", db, "--graph", "safety_app.py:graph", "--set", "n=5", "--allow-type", bad)
    assert r.code == 2
    assert r.err.count("\n") == 1
    assert "is not module.Name" in r.err, r.err
    assert not (project / "statectl-scratch.sqlite").exists()


@pytest.mark.parametrize("source", list(SOURCES))
def test_ordinary_threads_with_declared_classes_still_fork_and_replay(run, project, pg_empty, source):
    """Positive control: the dataclass the state declares (`pinned: list[Note]`) is built; the
    fork and the replay work on every source."""
    db, cid = SOURCES[source](project, ("msgpack", ormsgpack.packb(["kept"])), pg_empty)
    r = run("fork", THREAD, cid, "--db", db, "--graph", "safety_app.py:graph", "--set", "n=5", "--json")
    assert r.code == 0, r.err
    r = run("replay", THREAD, cid, "--db", db, "--graph", "safety_app.py:graph", "--to", "replayed.sqlite", "--json")
    assert r.code == 0, r.err
    show = json.loads(run("show", THREAD, "--db", "replayed.sqlite", "--json").out)
    assert show["values"]["notes"] == ["kept", "b"]
    assert show["values"]["pinned"] == [{"$type": "safety_app.Note", "data": {"text": "first", "stars": 1}}]


@pytest.mark.parametrize("source", list(SOURCES))
def test_copy_carries_hostile_values_without_building_them(run, project, pg_empty, source):
    """`copy` reads no value: the stored bytes go over as they were (across layouts too: ext
    values kept unread), nothing runs; a fork of the copy then refuses them."""
    marker = project / "pwned"
    payloads = _payloads(marker)
    db, cid = SOURCES[source](project, payloads["ext2-subprocess.Popen"][:2], pg_empty)
    to = "copy.sqlite" if source == "postgres" else pg_empty if source == "sqlite" else "copy.sqlite"
    r = run("copy", "--thread", THREAD, "--db", db, "--to", to)
    assert r.code == 0, r.err
    assert not marker.exists()
    r = run("fork", THREAD, cid, "--db", to, "--graph", "safety_app.py:graph", "--set", "n=5", "--to", "f.sqlite")
    _refused(r, "subprocess.Popen")
    assert not marker.exists()


# -- the same pass: input that ended in an internal error -----------------------------------------
@pytest.fixture
def here(tmp_path, monkeypatch):
    from parity import SAMPLES

    monkeypatch.chdir(tmp_path)
    shutil.copy(SAMPLES / "custom.sqlite", tmp_path / "custom.sqlite")
    return tmp_path


def _notes() -> str:
    from parity import SAMPLES

    return f"{SAMPLES}/custom_app.py:notes_builder"


@pytest.mark.parametrize("depth", [201, 300, 60_000])
@pytest.mark.parametrize("command", ["fork", "replay"])
def test_json_nested_too_deep_is_one_line(run, here, depth, command):
    nested = "[" * depth + "]" * depth
    given = ["--set", f"log={nested}"] if command == "fork" else ["--resume", nested]
    before = _tree(here)
    r = run(command, "notes-edits", "1", "--db", "custom.sqlite", "--graph", _notes(), *given)
    assert r.code == 2, r.err
    assert r.err.count("\n") == 1, r.err
    assert "the JSON is nested deeper than 200 levels" in r.err
    assert _tree(here) == before


def test_json_nested_200_deep_is_taken(run, here):
    nested = "[" * 199 + "]" * 199  # (a list of lists: `log` is a list of anything)
    r = run("fork", "notes-edits", "1", "--db", "custom.sqlite", "--graph", _notes(), "--set", f"log=[{nested}]")
    assert r.code == 0, r.err


@pytest.mark.parametrize("command", ["fork", "copy"])
def test_a_destination_that_cannot_be_created_is_one_line(run, here, command):
    """/sys: access() allows root to write there; creating a file is refused all the same."""
    given = ["--graph", _notes(), "--set", 'topic="rye"'] if command == "fork" else []
    thread = ["notes-edits", "1"] if command == "fork" else ["--thread", "notes-edits"]
    r = run(command, *thread, "--db", "custom.sqlite", *given, "--to", "/sys/x.sqlite")
    assert r.code == 2, r.err
    assert r.err.count("\n") == 1, r.err
    assert r.err.startswith("statectl: cannot create /sys/x.sqlite"), r.err
    assert not Path("/sys/x.sqlite").exists()


def test_an_encrypted_thread_is_read_with_the_apps_cipher_and_checked_the_same(run, project):
    """The app's EncryptedSerializer: the fork reads with its cipher (and writes encrypted); a
    hostile value inside the ciphertext is refused all the same."""
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
    from langgraph.checkpoint.sqlite import SqliteSaver

    key = b"0123456789abcdef"
    app = APP.replace(
        "serde = JsonPlusSerializer(pickle_fallback=True, allowed_json_modules=True)",
        f"from langgraph.checkpoint.serde.encrypted import EncryptedSerializer\n"
        f"serde = EncryptedSerializer.from_pycryptodome_aes(key={key!r})",
    )
    (project / "safety_app.py").write_text(app)
    serde = EncryptedSerializer.from_pycryptodome_aes(key=key)
    db = project / "enc.sqlite"
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False), serde=serde)
    _run_app(project, saver)
    cid = _step(saver, 1)
    saver.conn.close()
    r = run("fork", THREAD, cid, "--db", str(db), "--graph", "safety_app.py:graph", "--set", "n=5", "--json")
    assert r.code == 0, r.err
    new = json.loads(r.out)["checkpoint_id"]
    with sqlite3.connect(project / "statectl-scratch.sqlite") as conn:
        (type_,) = conn.execute("SELECT type FROM checkpoints WHERE checkpoint_id = ?", (new,)).fetchone()
    assert type_ == "msgpack+aes"  # (written with the app's own serializer: still encrypted)
    (project / "statectl-scratch.sqlite").unlink()

    marker = project / "pwned"
    conn = sqlite3.connect(db)
    (blob,) = conn.execute("SELECT checkpoint FROM checkpoints WHERE checkpoint_id = ?", (cid,)).fetchone()
    whole = ormsgpack.unpackb(serde.cipher.decrypt("aes", blob), ext_hook=ormsgpack.Ext)
    whole["channel_values"]["notes"] = [_ext(1, "subprocess", "Popen", [["touch", str(marker)]])]
    _, hostile = serde.cipher.encrypt(ormsgpack.packb(whole))
    with conn:
        conn.execute("UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?", (hostile, cid))
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    before = _tree(project)
    r = run("fork", THREAD, cid, "--db", str(db), "--graph", "safety_app.py:graph", "--set", "n=5")
    assert not marker.exists()
    _refused(r, "subprocess.Popen")
    assert _tree(project) == before


# -- the allowlist itself (pure: no writer) --------------------------------------------------------
class Inner(BaseModel):
    x: int = 0


class Deeper(BaseModel):
    y: str = ""


@dataclass
class Outer:
    inner: list[Inner]
    pair: tuple[Deeper, int] | None = None


class Derived(Outer):
    pass


class PureState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    outer: Outer | None
    table: dict[str, list[Outer]]


def _allow(thread: str = "t") -> Any:
    from langgraph.graph import StateGraph

    from statectl.project.declared import declared
    from statectl.project.safeload import Allowlist

    builder = StateGraph(PureState)
    builder.add_node("n", lambda s: {})
    builder.set_entry_point("n")
    return Allowlist(set(), declared(builder.compile()), thread)


def test_declared_reaches_every_class_the_annotations_name():
    allow = _allow()
    for cls in (Outer, Inner, Deeper):  # (through Optional, dict, list, tuple and the fields)
        assert allow.allows(cls.__module__, cls.__name__), cls
    assert allow.allows("langchain_core.messages.ai", "AIMessage")
    assert allow.allows(__name__, "Derived")  # (a subclass of a declared class, its module loaded)
    assert not allow.allows("os", "system")
    assert not allow.allows("subprocess", "Popen")
    assert not allow.allows(__name__, "_allow")


def test_the_check_comes_before_any_import():
    import sys

    from statectl.project.safeload import Refused

    allow = _allow()
    name = "statectl_never_imported_module"
    for code in (0, 1, 2, 4, 5):
        value = ormsgpack.packb({"k": [_ext(code, name, "Thing", {"a": 1})]})
        with pytest.raises(Refused, match=f"names {name}.Thing"):
            allow.check_typed("msgpack", value, "here")
    with pytest.raises(Refused, match=f"names {name}.Thing"):
        allow.check_typed("json", json.dumps({"lc": 2, "type": "constructor", "id": [name, "Thing"]}).encode(), "x")
    with pytest.raises(Refused, match=f"names {name}.Thing"):
        allow.unpickle(b"\x80\x02c" + name.encode() + b"\nThing\nq\x00)\x81q\x01.", "x")
    assert name not in sys.modules


def test_a_pickle_of_declared_classes_is_rebuilt():
    allow = _allow()
    value = Outer([Inner(x=3)], (Deeper(y="d"), 2))
    assert allow.unpickle(pickle.dumps({"v": [value, {1, 2}, b"\x00"]}, 2), "x") == {"v": [value, {1, 2}, b"\x00"]}


def test_a_hostile_type_name_is_shown_escaped_on_one_line(run, project, pg_empty):
    evil = "os\x1b[2J\nx" + "y" * 5000
    db, cid = sqlite_source(project, ("msgpack", ormsgpack.packb([_ext(0, evil, "system", "x")])), pg_empty)
    r = run("fork", THREAD, cid, "--db", db, "--graph", "safety_app.py:graph", "--set", "n=5")
    assert r.code == 2, r.err
    assert r.err.count("\n") == 1, r.err
    assert "\x1b" not in r.err
    assert "os\\x1b[2J\\nx" in r.err
    assert len(r.err) < 1000


@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("kind", ["ext0-os.system", "pickle"])
def test_a_hostile_value_in_a_later_checkpoint_is_refused_before_the_thread_is_copied(
    run, project, pg_empty, source, kind
):
    """The fork starts before the hostile checkpoint (step 0, the planted one is step 1): the copy
    of the thread would carry it into the scratch file or --to, so every row of the thread is
    checked before anything is copied (a refusal left the hostile thread written there)."""
    marker = project / "pwned"
    payloads = _payloads(marker)
    type_, data, name = payloads[kind]
    db, _ = SOURCES[source](project, (type_, data), pg_empty)
    earlier = run("log", THREAD, "--db", db, "--json")
    first = [c["checkpoint_id"] for c in map(json.loads, earlier.out.splitlines()) if c["metadata"].get("step") == 0]
    assert first, earlier.out
    before = _tree(project)
    for args in (["fork", THREAD, first[0], "--set", "n=5"], ["replay", THREAD, first[0], "--to", "dest.sqlite"]):
        r = run(*args, "--db", db, "--graph", "safety_app.py:graph")
        assert not marker.exists()
        _refused(r, name)
        assert _tree(project) == before  # no scratch file, no dest.sqlite


@pytest.mark.parametrize(
    ("target", "opcodes"),
    [
        ("pathlib.Path", b"cpathlib\nPath\n"),  # (LangGraph's safe set)
        ("uuid.UUID", b"cuuid\nUUID\n"),
        ("Inner", b"c" + __name__.encode() + b"\nInner\n"),  # (a class the state declares)
    ],
)
@pytest.mark.parametrize("form", ["slots", "dict"])
def test_a_pickle_that_sets_attributes_of_a_class_is_refused(target, opcodes, form):
    """BUILD on a class object (state given to the class, not to an instance the pickle made)
    would change its methods for the rest of the run: refused, the class unchanged."""
    from statectl.project.safeload import Refused

    allow = _allow()
    allow.allowed |= {("pathlib", "Path"), ("uuid", "UUID")}
    if form == "slots":  # (state (None, {...}): pickle sets each as an attribute)
        payload = b"\x80\x02" + opcodes + b"N}X\x03\x00\x00\x00strcbuiltins\nset\ns\x86b."
    else:  # (state {...}: pickle updates the object's __dict__)
        payload = b"\x80\x02" + opcodes + b"}X\x03\x00\x00\x00strcbuiltins\nset\nsb."
    with pytest.raises(Refused, match="sets attributes of"):
        allow.unpickle(payload, "x")
    import pathlib
    import uuid

    assert "str" not in vars(pathlib.Path) or pathlib.Path.__str__ is not set
    assert uuid.UUID.__str__ is not set
    assert Inner.__dict__.get("str") is None
