"""Sets are not lists: a Python set has no order, and the order its elements are stored in is the
hash order of the process that wrote it (strings hash differently in every process). A thread
resumed in another process re-stores an unchanged set in another order. statectl must show such a
value as unchanged, and must not take the reordering for a reducer at work (a last-value `set`
field is then shown as nothing before its first write, as LangGraph shows it, not as `{"$set": []}`).

The database is written by real LangGraph runs in two processes with different hash seeds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from parity import normal, snapshot_json

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "sample_threads"))

APP = r"""
import json, sqlite3, sys
from typing import TypedDict
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
sys.path.insert(0, sys.argv[3])
from record import snapshot_record

class S(TypedDict, total=False):
    n: int
    tags: set[str]
    frozen: frozenset[str]

WORDS = [f"tag-{i}" for i in range(24)]
def tag(s): return {"tags": set(WORDS[:12]), "frozen": frozenset(WORDS[12:])}
def count(s): return {"n": s.get("n", 0) + 1}
def more(s): return {"tags": s["tags"] | {"tag-new"}}

g = StateGraph(S)
for f in (tag, count, more):
    g.add_node(f.__name__, f)
g.add_edge(START, "tag"); g.add_edge("tag", "count"); g.add_edge("count", "more"); g.add_edge("more", END)
conn = sqlite3.connect(sys.argv[1], check_same_thread=False)
graph = g.compile(checkpointer=SqliteSaver(conn), interrupt_before=["count", "more"])
cfg = {"configurable": {"thread_id": "sets"}}
graph.invoke({"n": 0} if sys.argv[2] == "first" else None, cfg)
if sys.argv[2] == "last":
    with open(sys.argv[1] + ".jsonl", "w") as fh:
        for snap in graph.get_state_history(cfg):
            fh.write(json.dumps(snapshot_record(snap)) + "\n")
conn.close()
"""


@pytest.fixture(scope="module")
def sets_db(tmp_path_factory) -> Path:
    """Three processes, three hash seeds: `tag` writes the sets, `count` and `more` resume."""
    db = tmp_path_factory.mktemp("sets") / "sets.sqlite"
    for phase, seed in (("first", "1"), ("resume", "2"), ("last", "3")):
        subprocess.run(
            [sys.executable, "-c", APP, str(db), phase, str(ROOT / "sample_threads")],
            check=True,
            timeout=120,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
    return db


def _stored_orders(db: Path) -> set[tuple]:
    """The element orders `tags` was stored in across the thread's checkpoints (raw msgpack)."""
    import sqlite3

    import ormsgpack

    orders = set()
    for (blob,) in sqlite3.connect(db).execute("SELECT checkpoint FROM checkpoints"):
        values = ormsgpack.unpackb(blob, ext_hook=lambda c, d: ormsgpack.unpackb(d, ext_hook=lambda c2, d2: d2))
        tags = values["channel_values"].get("tags")
        if tags is not None:
            orders.add(tuple(tags[2]))
    return orders


def test_the_runs_really_stored_one_set_in_several_orders(sets_db):
    assert len(_stored_orders(sets_db)) > 1  # (else this file tests nothing)


def test_a_reordered_set_is_unchanged_and_no_reducer(run, sets_db):
    import statectl

    records = [json.loads(line) for line in Path(f"{sets_db}.jsonl").read_text().splitlines()]
    with statectl.open(str(sets_db)) as store:  # every checkpoint as LangGraph reports it
        for exp in records:
            assert normal(snapshot_json(store, exp)) == normal(exp), exp["metadata"].get("step")
    db = str(sets_db)
    first = run("show", "sets", "0", "--json", "--db", db)  # before `tag` ran: no tags at all
    assert first.code == 0
    assert "tags" not in json.loads(first.out)["values"]
    d = json.loads(run("diff", "sets", "2", "--json", "--db", db).out)  # the step `count` ran
    assert [c["key"] for c in d["changes"]] == ["n"], d["changes"]  # tags and frozen: unchanged
    patch = run("log", "sets", "-p", "--db", db).out
    assert "~ tags" not in patch.split("ran: more")[0]
    assert "~ frozen" not in patch
    last = json.loads(run("diff", "sets", "--json", "--db", db).out)  # `more` added one element
    assert [(c["op"], c["after"]) for c in last["changes"] if c["key"] == "tags" and c["op"] != "changed"] == [
        ("added", "tag-new")
    ], last["changes"]
    ops = json.loads(run("diff", "sets", "--format", "patch", "--db", db).out)
    assert [op for op in ops if op["path"].startswith("/tags")] == [
        {"op": "add", "path": "/tags/$set/12", "value": "tag-new"}
    ], ops
