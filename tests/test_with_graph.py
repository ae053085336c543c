"""`--graph TARGET`: the app's compiled graph makes statectl exact where the data alone must
infer — pull tasks due together in the graph's node order, a reducer's empty value before its
first write — and a graph that does not fit the data is
said in one line while the rest still shows."""

from __future__ import annotations

import sqlite3
import sys
import textwrap
from pathlib import Path

import pytest
from parity import SAMPLES, normal, snapshot_json

import statectl
from statectl.project.introspect import graph_spec

sys.path.insert(0, str(SAMPLES))

APP = textwrap.dedent('''
    """Two parallel nodes defined out of name order, both waiting at an interrupt; a node's own
    input channel; a set field (a last value, never a reducer) and a counter reducer."""
    import operator
    from typing import Annotated

    from langgraph.graph import START, StateGraph
    from langgraph.types import interrupt
    from typing_extensions import TypedDict


    class State(TypedDict, total=False):
        log: Annotated[list[str], operator.add]
        calls: Annotated[int, operator.add]
        tags: set[str]


    class Private(TypedDict, total=False):
        scratch: str


    def zeta(state: State) -> dict:
        return {"log": [interrupt("zeta?")], "calls": 1}


    def alpha(state: State) -> dict:
        return {"log": [interrupt("alpha?")], "calls": 1}


    def prep(state: State) -> Private:
        return {"scratch": "private note"}


    def read(state: Private) -> dict:
        return {"tags": {"b", "a"}}


    builder = StateGraph(State)
    builder.add_node("prep", prep)
    builder.add_node("read", read, input_schema=Private)
    builder.add_node("zeta", zeta)
    builder.add_node("alpha", alpha)
    builder.add_edge(START, "prep")
    builder.add_edge("prep", "read")
    builder.add_edge("read", "zeta")
    builder.add_edge("read", "alpha")
''')


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> tuple[Path, str, list[dict]]:
    """The app, run for real: (database, TARGET, LangGraph's own history)."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import Command
    from record import snapshot_record

    from statectl.project.target import load

    folder = tmp_path_factory.mktemp("app")
    (folder / "order_app.py").write_text(APP)
    target = f"{folder / 'order_app.py'}:builder"
    db = folder / "order.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    graph = load(target).compile(checkpointer=SqliteSaver(conn))
    config = {"configurable": {"thread_id": "both-wait"}}
    graph.invoke({"log": []}, config)
    done = {"configurable": {"thread_id": "resumed"}}
    graph.invoke({"log": []}, done)
    waiting = graph.get_state(done).interrupts
    graph.invoke(Command(resume={i.id: "yes" for i in waiting}), done)
    records = [snapshot_record(s) for t in (config, done) for s in graph.get_state_history(t)]
    conn.close()
    return db, target, records


def test_the_graph_makes_every_checkpoint_langgraphs(app):
    db, target, records = app
    with statectl.open(str(db), graph=target) as store:
        for exp in records:
            assert normal(snapshot_json(store, exp)) == normal(exp), (exp["thread_id"], exp["metadata"]["step"])
    waiting = next(r for r in records if r["thread_id"] == "both-wait")
    assert waiting["next"] == ["zeta", "alpha"]  # the graph's order: neither name nor run order
    assert any(r["values"].get("calls") == 0 and "tags" not in r["values"] for r in records)


def test_without_the_graph_the_data_shows_what_it_can_prove(app):
    """The limits `--graph` lifts, pinned: alphabetical `next`, no counter before its first
    write."""
    db, _, _records = app
    with statectl.open(str(db)) as store:
        snap = store.snapshot("both-wait")
        assert snap.next == ("alpha", "zeta")
        first = store.snapshot("both-wait", "0")
        assert "calls" not in first.values
    with statectl.open(str(db), graph=app[1]) as store:
        assert store.snapshot("both-wait").next == ("zeta", "alpha")
        assert store.snapshot("both-wait", "0").values["calls"] == 0
        assert "calls" not in store.snapshot("both-wait", "0").inferred  # (the graph's: a fact)


def test_the_cli_takes_the_graph_on_every_reading_command(app, run, tmp_path):
    db, target, _ = app
    for args in (
        ["show", "both-wait", "0"],
        ["diff", "resumed"],
        ["log", "resumed", "-p"],
        ["log", "both-wait", "--json"],
    ):  # (each shows the counter's 0 before its first write)
        plain = run(*args, "--db", str(db))
        exact = run(*args, "--db", str(db), "--graph", target)
        assert plain.code == exact.code == 0, (args, exact.err)
        assert exact.err == "", args
        assert plain.out != exact.out, args
    assert "calls: 0 → 2" in run("diff", "resumed", "--db", str(db), "--graph", target).out
    show = run("show", "both-wait", "0", "--db", str(db), "--graph", target)
    assert "calls" in show.out
    assert "inferred" not in show.out
    shown = run("show", "both-wait", "--db", str(db), "--graph", target, "--json")
    assert '"next":["zeta","alpha"]' in shown.out
    out = tmp_path / "with-graph.json"
    r = run("export", "both-wait", "-o", str(out), "--db", str(db), "--graph", target)
    assert r.code == 0, r.err
    again = run("show", "both-wait", "--db", str(out), "--json")  # the export carries the graph
    assert again.out == shown.out


def test_a_graph_that_does_not_fit_is_said_once_and_the_rest_shown(run):
    """The notes graph against the agent's thread: one line on stderr naming what the graph
    lacks; the state still shown from the data."""
    db = str(SAMPLES / "agent.sqlite")
    target = str(SAMPLES / "custom_app.py:notes_builder")
    plain = run("log", "bakery-plan", "--db", db, "-p")
    r = run("log", "bakery-plan", "--db", db, "-p", "--graph", target)
    assert r.code == 0
    lines = r.err.splitlines()
    assert len(lines) == 1, r.err
    assert "does not match thread 'bakery-plan'" in lines[0], r.err
    assert "keys it lacks: " in lines[0]
    assert "messages" in lines[0]
    assert "nodes it lacks: " in lines[0]
    assert "model" in lines[0]
    assert "shown from the data" in lines[0]
    assert r.out == plain.out  # nothing of the graph fits: everything as from the data


def test_a_graph_that_cannot_load_is_one_line(run):
    r = run(
        "show",
        "bakery-plan",
        "--db",
        str(SAMPLES / "agent.sqlite"),
        "--graph",
        str(SAMPLES / "agent_app.py:nothing_here"),
    )
    assert r.code == 2
    assert r.out == ""
    assert r.err.count("\n") <= 2
    assert "has no attribute 'nothing_here'" in r.err


def test_the_spec_holds_what_the_graph_says():
    spec = graph_spec(str(SAMPLES / "interrupts_app.py:subgraph_builder"))
    root, review = spec.for_ns(""), spec.for_ns("review:49db45fe-7bf5-8e8d-5e17-dd7a9c613e06")
    assert root.nodes == ("__start__", "plan", "review", "finish")
    assert root.channels["log"].reducer == "operator.add"
    assert root.empties() == {"log": []}
    assert root.shown("draft")
    assert root.shown("branch:to:plan") is False
    assert root.shown("nope") is None
    assert review is not None
    assert review.nodes == ("__start__", "check", "apply")
    assert spec.for_ns("elsewhere:1") is None
    deep = graph_spec(str(SAMPLES / "deep_app.py:deep_agent")).for_ns("")
    assert deep.channels["messages"].kind == "DeltaChannel"
    assert deep.empties()["files"] == {}
    assert deep.shown("_blob_payloads") is not None


@pytest.mark.parametrize(
    "recorded",
    [
        {"target": 5, "graphs": {"": {"nodes": 3, "channels": {"x": {"empty": ["msgpack", "!!!"]}}}}},
        {"graphs": []},
        "a string",
        {"graphs": {"": {"channels": {"log": "not a channel"}}}},
    ],
)
def test_a_damaged_graph_in_an_export_is_a_note_not_a_failure(run, tmp_path, recorded):
    """An export whose recorded graph cannot be read (a damaged or hand-made file: deliberately
    broken input) still shows every thread, from the data alone, and says why in one note."""
    import json

    out = tmp_path / "export.json"
    assert run("export", "approval-waiting", "-o", str(out), "--db", str(SAMPLES / "custom.sqlite")).code == 0
    doc = json.loads(out.read_text())
    doc["graph"] = recorded
    out.write_text(json.dumps(doc))
    plain = run("show", "approval-waiting", "0", "--json", "--db", str(SAMPLES / "custom.sqlite"))
    r = run("show", "approval-waiting", "0", "--json", "--db", str(out))
    assert r.code == 0, r.err
    assert r.out == plain.out, r.err
    human = run("show", "approval-waiting", "0", "--db", str(out))
    assert human.code == 0
    assert "the graph this export recorded cannot be read" in human.out
