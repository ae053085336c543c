"""Issue 54: a key written with the value it had, every turn (`done = True`, as middleware that
writes a flag back does), is "written, unchanged" in `log` at the cost of its writes: the log
compares the write with the key's write before it, and decodes no checkpoint for each step.
The threads are written by real LangGraph runs (SqliteSaver and PostgresSaver)."""

from __future__ import annotations

import operator
import sqlite3
from typing import Annotated, TypedDict

import pytest

import statectl
from statectl.core.diff import ROOT_KEY, step_diff
from statectl.core.timeline import entries

TURNS = 12


class Flagged(TypedDict, total=False):
    messages: Annotated[list, operator.add]
    done: bool
    mode: str
    hits: Annotated[int, operator.add]
    seen: dict


def _runs(checkpointer) -> None:
    """Two threads. `flag`: every turn writes `done = True` (unchanged after the first), `mode`
    a, b, a, b... (bytes written before, a change every time), `seen` the same dict in another
    key order every other turn (other bytes, an equal value). `counter`: `hits += 1` every turn
    (the same bytes, a reducer: a change every time)."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END, START, StateGraph

    def reply(state: Flagged) -> dict:
        n = len(state.get("messages", []))
        seen = {"a": 1, "b": 2} if n // 2 % 3 else {"b": 2, "a": 1}
        return {
            "messages": [AIMessage(f"answer {n}", id=f"ai-{n}")],
            "done": True,
            "mode": "ab"[n // 2 % 2],
            "seen": seen,
        }

    def count(state: Flagged) -> dict:
        return {"hits": 1, "done": True}

    for name, node in (("flag", reply), ("counter", count)):
        g = StateGraph(Flagged)
        g.add_node(node.__name__, node)
        g.add_edge(START, node.__name__)
        g.add_edge(node.__name__, END)
        graph = g.compile(checkpointer=checkpointer)
        cfg = {"configurable": {"thread_id": name}}
        for i in range(TURNS):
            graph.invoke({"messages": [HumanMessage(f"question {i}", id=f"q-{i}")]}, cfg)


@pytest.fixture(scope="module")
def flag_db(tmp_path_factory):
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path_factory.mktemp("flag") / "flag.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    _runs(SqliteSaver(conn))
    conn.close()
    return str(path)


def _counted(read, calls: list):
    def counted(*args, **kwargs):
        calls.append(args)
        return read(*args, **kwargs)

    return counted


STATE = ("messages", "done", "mode", "hits", "seen")


def _checked(url: str) -> dict[str, int]:
    """Each thread's log checked against its step diffs (CHANGED and "written, unchanged" are
    what the diff says); the whole checkpoints each thread's log decoded. The log decodes each
    write's bytes at most once: no more write decodes than writes to state keys."""
    import statectl.core.timeline as timeline

    decoded = {}
    with statectl.open(url) as store:
        for thread in ("flag", "counter"):
            view = store.view(thread)
            source = view.source
            calls: list = []
            writes: list = []
            source.checkpoint = _counted(source.checkpoint, calls)
            decode_write = timeline.decode_write
            timeline.decode_write = _counted(decode_write, writes)
            try:
                ents = entries(view)
            finally:
                del source.checkpoint
                timeline.decode_write = decode_write
            decoded[thread] = len(calls)
            written = sum(len(ws) for key in STATE for ws in view.channel_writes(key).values())
            assert 0 < len(writes) <= written, (thread, len(writes), written)
            unchanged = 0
            for e in ents:
                if view.parent(e.record) is None:
                    continue
                d = step_diff(view, e.record)
                keys = {c.key for c in d.changes} - {ROOT_KEY}
                assert set(e.changed) == keys, (thread, e.record.step, e.changed, keys)
                assert not set(e.unchanged) & keys
                unchanged += "done" in e.unchanged
                if thread == "counter" and "count" in e.ran:
                    assert "hits" in e.changed, e
            assert unchanged == TURNS - 1, (thread, unchanged)
    return decoded


def _check_decodes(decoded: dict[str, int]) -> None:
    assert decoded["flag"] <= 4, decoded  # (a key each, once: not two a step)
    assert decoded["counter"] >= TURNS  # (a reducer: its steps are compared checkpoint by checkpoint)


def test_a_key_rewritten_unchanged_costs_its_writes(flag_db):
    _check_decodes(_checked(flag_db))


def test_a_key_rewritten_unchanged_costs_its_writes_on_postgres(pg_empty):
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(pg_empty) as saver:
        saver.setup()
        _runs(saver)
    _check_decodes(_checked(pg_empty))


def test_log_says_it_as_before(run, flag_db):
    out = run("log", "flag", "--db", flag_db).out
    rows = [line for line in out.splitlines() if " reply " in line]
    assert len(rows) == TURNS
    assert all("written, unchanged: done" in r for r in rows[:-1]), out
    assert "done" in rows[-1].split("reply", 1)[1]  # (the first turn: written, changed)
