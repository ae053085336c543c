"""A run that writes while a test prunes: a real LangGraph graph on SQLite or Postgres, turn
after turn on one thread, each step appending to a list (so a step built on a pruned, older
checkpoint would lose entries). Prints "ready" after the first turn.

    python tests/live_writer.py DB TURNS    run
    python tests/live_writer.py DB check    the final state as JSON, and whether the history
                                            left is one chain from the newest checkpoint
"""

from __future__ import annotations

import json
import operator
import sqlite3
import sys
import warnings
from contextlib import contextmanager
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

warnings.simplefilter("ignore")
THREAD = {"configurable": {"thread_id": "live"}}


class State(TypedDict):
    log: Annotated[list[str], operator.add]
    turn: int


def a(state: State) -> dict:
    return {"log": [f"a {state['turn']}"]}


def b(state: State) -> dict:
    return {"log": [f"b {state['turn']}"]}


builder = StateGraph(State)
builder.add_node("a", a)
builder.add_node("b", b)
builder.add_edge(START, "a")
builder.add_edge("a", "b")
builder.add_edge("b", END)


@contextmanager
def saver(db: str) -> Any:
    if db.startswith("postgresql:"):
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(db) as s:
            s.setup()
            yield s
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(db, check_same_thread=False)  # (SQLite's busy wait: 5 s)
        yield SqliteSaver(conn)
        conn.close()


def main() -> None:
    db, what = sys.argv[1], sys.argv[2]
    with saver(db) as s:
        graph = builder.compile(checkpointer=s)
        if what == "check":
            history = list(graph.get_state_history(THREAD))
            ids = [h.config["configurable"]["checkpoint_id"] for h in history]
            parents = [(h.parent_config or {}).get("configurable", {}).get("checkpoint_id") for h in history]
            chain = all(parents[i] == ids[i + 1] for i in range(len(ids) - 1))
            print(json.dumps({"log": history[0].values["log"], "chain_unbroken": chain}))
            return
        for i in range(int(what)):
            graph.invoke({"log": [f"turn {i}"], "turn": i}, THREAD)
            if i == 0:
                print("ready", flush=True)


if __name__ == "__main__":
    main()
