"""Checkpoints written with LangGraph's other serializers, by real runs in the test:
`JsonPlusSerializer(pickle_fallback=True)` (a value msgpack cannot hold makes the whole checkpoint a
pickle) and `EncryptedSerializer` (AES). statectl never lets such a value sink a command: without
`--unpickle-inert` / the key, the header and every other checkpoint show and the value says what it
is; with them, the state is LangGraph's own."""

from __future__ import annotations

import json
import operator
import sqlite3
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
from conftest import digest
from langchain_core.messages import AIMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from parity import normal
from typing_extensions import TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "sample_threads"))

KEY = "statectl-sample-aes-key-32bytes!"  # 32 bytes, as LANGGRAPH_AES_KEY holds it


class Reading:
    """A value msgpack cannot hold (a plain class): JsonPlusSerializer pickles the checkpoint."""

    def __init__(self, celsius: float) -> None:
        self.celsius = celsius


class State(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    steps: Annotated[int, operator.add]
    reading: Any


def _graph(checkpointer):
    def measure(state: State) -> dict:
        return {"steps": 1, "messages": [AIMessage("measured", id="ai-1")]}

    def report(state: State) -> dict:
        return {"steps": 1, "messages": [AIMessage("reported", id="ai-2")]}

    g = StateGraph(State)
    g.add_node("measure", measure)
    g.add_node("report", report)
    g.add_edge(START, "measure")
    g.add_edge("measure", "report")
    g.add_edge("report", END)
    return g.compile(checkpointer=checkpointer)


@pytest.fixture(scope="module")
def serde_db(tmp_path_factory):
    """One file, three threads: plain msgpack, pickled (pickle_fallback), encrypted (AES)."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.checkpoint.sqlite import SqliteSaver

    db = tmp_path_factory.mktemp("serde") / "serde.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    savers = {
        "plain": SqliteSaver(conn),
        "pickled": SqliteSaver(conn, serde=JsonPlusSerializer(pickle_fallback=True)),
        "encrypted": SqliteSaver(conn, serde=EncryptedSerializer.from_pycryptodome_aes(key=KEY.encode())),
    }
    history = {}
    for tid, saver in savers.items():
        graph = _graph(saver)
        cfg = {"configurable": {"thread_id": tid}}
        start = {"messages": [HumanMessage("measure it", id="h-1")], "steps": 0}
        if tid == "pickled":
            start["reading"] = Reading(21.5)
        else:
            start["reading"] = {"celsius": 21.5}
        graph.invoke(start, cfg)
        history[tid] = list(graph.get_state_history(cfg))
    conn.close()
    return db, history


def _values(snapshot, got: dict) -> dict:
    """LangGraph's values, without what the data alone cannot prove (a reducer channel's empty
    default before its first write, which only the graph knows: see parity.UNPROVABLE)."""
    from record import tagged

    values = {k: v for k, v in snapshot.values.items() if k != "reading" or not isinstance(v, Reading)}
    return {k: v for k, v in normal(tagged(values)).items() if k in got or v not in ([], 0)}


def test_encrypted_without_the_key_shows_the_header_and_says_what_it_is(run, serde_db):
    db, _ = serde_db
    before = digest(db)
    r = run("show", "encrypted", "--db", str(db))
    assert r.code == 0, r.err
    assert "encrypted (AES)" in r.out
    assert "--aes-key" in r.out
    assert "checkpoint" in r.out
    r = run("log", "encrypted", "--db", str(db))
    assert r.code == 0, r.out
    assert "$undecoded" not in r.out, r.out
    r = run("show", "encrypted", "--json", "--db", str(db))
    got = json.loads(r.out)
    assert got["values"]["$undecoded"]["type"] == "msgpack+aes"
    assert got["notes"]
    r = run("diff", "encrypted", "--db", str(db))
    assert r.code == 0, r.out
    assert "values not compared" in r.out, r.out
    assert "$undecoded" not in r.out, r.out
    assert run("show", "plain", "--db", str(db)).code == 0  # the other threads are untouched
    assert digest(db) == before


def test_encrypted_with_the_key_is_langgraphs_own_state(run, serde_db, monkeypatch):
    db, history = serde_db
    for args, env in (((["--aes-key", KEY]), None), ([], KEY)):
        if env:
            monkeypatch.setenv("LANGGRAPH_AES_KEY", env)
        r = run("log", "encrypted", "--json", "--db", str(db), *args)
        assert r.code == 0, r.err
        got = [json.loads(line) for line in r.out.splitlines()]
        want = history["encrypted"]
        assert [g["checkpoint_id"] for g in got] == [s.config["configurable"]["checkpoint_id"] for s in want]
        for g, s in zip(got, want, strict=True):
            assert normal(g["values"]) == _values(s, g["values"]), g["checkpoint_id"]
            assert g["next"] == list(s.next)
    assert KEY not in r.out + r.err


def test_a_wrong_aes_key_is_one_clear_line(run, serde_db):
    db, _ = serde_db
    r = run("show", "encrypted", "--db", str(db), "--aes-key", "x" * 32)
    assert r.code != 0, r.err
    assert "wrong key" in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert "x" * 32 not in r.err


def test_pickled_checkpoints_are_not_unpickled_unless_asked(run, serde_db):
    db, _ = serde_db
    r = run("show", "pickled", "--db", str(db))
    assert r.code == 0, r.err
    assert "pickle, " in r.out
    assert "--unpickle-inert" in r.out
    r = run("log", "pickled", "-p", "--db", str(db))
    assert r.code == 0, r.err
    assert r.out.count("loop") >= 2  # every step is listed, not only up to the first pickle


def test_pickled_checkpoints_read_inertly_are_langgraphs_own_state(run, serde_db):
    db, history = serde_db
    r = run("log", "pickled", "--json", "--db", str(db), "--unpickle-inert")
    assert r.code == 0, r.err
    got = [json.loads(line) for line in r.out.splitlines()]
    want = history["pickled"]
    assert len(got) == len(want)
    for g, s in zip(got, want, strict=True):
        values = normal(g["values"])
        reading = values.pop("reading", None)
        assert values == _values(s, values), g["checkpoint_id"]
        if "reading" in s.values:  # the class by name and its state, nothing imported
            assert reading["$type"].endswith(".Reading"), reading
            assert reading["data"] == {"celsius": 21.5}, reading
        assert g["next"] == list(s.next)


def test_unpickling_imports_nothing(serde_db):
    """The pickled checkpoints name `test_serde.Reading`: read in a fresh process, it is not imported."""
    import subprocess

    db, _ = serde_db
    code = (
        "import sys\nfrom statectl.cli import main\n"
        f"try:\n    main(['show', 'pickled', '--json', '--unpickle-inert', '--db', {str(db)!r}])\n"
        "except SystemExit:\n    pass\n"
        "print('IMPORTED', 'test_serde' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd="/")
    assert proc.stdout.strip().splitlines()[-1] == "IMPORTED False", proc.stdout[-400:] + proc.stderr
    assert '"celsius"' in proc.stdout
