"""A real run whose process dies in the middle of a step: `python crash_mid_step.py DB THREAD`;
with `--record OUT`, LangGraph's own `get_state_history` of that thread as JSON Lines instead.

Two nodes run in parallel after `plan`: `fast` returns, and `slow` waits until LangGraph has saved
fast's writes, then the process exits without unwinding (as a killed worker does). The thread's
newest checkpoint then holds one task's writes and no trace of the other: LangGraph resumes it by
running `slow` alone, and statectl calls its status `pending`. DB is a SQLite file (SqliteSaver)
or a postgresql:// URL (PostgresSaver).
"""

from __future__ import annotations

import operator
import os
import sqlite3
import sys
import time
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _fast_saved(db: str, thread_id: str) -> bool:
    query = "SELECT COUNT(*) FROM {table} WHERE thread_id = %s AND task_path LIKE '%%fast'"
    if db.startswith("postgresql:"):
        import psycopg

        with psycopg.connect(db) as conn:
            row = conn.execute(query.format(table="checkpoint_writes"), (thread_id,)).fetchone()
    else:
        with sqlite3.connect(db) as conn:
            row = conn.execute(
                query.format(table="writes").replace("%s", "?").replace("%%", "%"), (thread_id,)
            ).fetchone()
    return bool(row and row[0])


def builder(db: str, thread_id: str) -> StateGraph:
    def plan(state: State) -> dict:
        return {"log": ["planned"]}

    def fast(state: State) -> dict:
        return {"log": ["fast done"]}

    def slow(state: State) -> dict:
        deadline = time.monotonic() + 60
        while not _fast_saved(db, thread_id) and time.monotonic() < deadline:
            time.sleep(0.05)
        os._exit(0)  # the process dies here: no error is recorded, no write of this task

    g = StateGraph(State)
    g.add_node("plan", plan)
    g.add_node("fast", fast)
    g.add_node("slow", slow)
    g.add_edge(START, "plan")
    g.add_edge("plan", "fast")
    g.add_edge("plan", "slow")
    g.add_edge(["fast", "slow"], END)
    return g


def saved(db: str):
    """The app's checkpointer on DB."""
    if db.startswith("postgresql:"):
        from langgraph.checkpoint.postgres import PostgresSaver

        return PostgresSaver.from_conn_string(db)
    from contextlib import nullcontext

    from langgraph.checkpoint.sqlite import SqliteSaver

    return nullcontext(SqliteSaver(sqlite3.connect(db, check_same_thread=False)))


def main(db: str, thread_id: str) -> None:
    with saved(db) as saver:
        if db.startswith("postgresql:"):
            saver.setup()
        graph = builder(db, thread_id).compile(checkpointer=saver)
        graph.invoke({"log": []}, {"configurable": {"thread_id": thread_id}}, durability="sync")
    sys.exit("the run finished: the crash did not happen")


def record(db: str, thread_id: str, out: str) -> None:
    import json
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "sample_threads"))
    from record import snapshot_record

    with saved(db) as saver, open(out, "w") as fh:
        graph = builder(db, thread_id).compile(checkpointer=saver)
        for snap in graph.get_state_history({"configurable": {"thread_id": thread_id}}):
            fh.write(json.dumps(snapshot_record(snap), ensure_ascii=False, sort_keys=True) + "\n")


if __name__ == "__main__":
    if sys.argv[3:4] == ["--record"]:
        record(sys.argv[1], sys.argv[2], sys.argv[4])
    else:
        main(sys.argv[1], sys.argv[2])
