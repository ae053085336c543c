"""Databases of the `thread_ts` generation, written by LangGraph 0.0.x (no writes table) and 0.1.x
(a writes table), each with LangGraph's own `get_state_history` of every thread.

Before 0.2, SqliteSaver keyed checkpoints by `thread_ts` (no namespaces, no `type` column) and
stored them as JSON (JsonPlusSerializer, messages as `lc: 1` constructor dicts) or, in the
earliest releases, as pickles. LangGraph 1.x cannot open these files. This script runs in its own
venv with the old LangGraph:

    python3 -m venv /tmp/lg00 && /tmp/lg00/bin/pip install langgraph==0.0.69
    /tmp/lg00/bin/python sample_threads/thread_ts_app.py      # -> thread_ts_00.sqlite
    python3 -m venv /tmp/lg01 && /tmp/lg01/bin/pip install langgraph==0.1.19
    /tmp/lg01/bin/python sample_threads/thread_ts_app.py      # -> thread_ts_01.sqlite
"""

from __future__ import annotations

import json
import operator
import pickle
import sqlite3
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, StateGraph
from langgraph.graph.message import add_messages

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from record import tagged  # noqa: E402


class State(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    calls: Annotated[int, operator.add]
    topic: str


def agent(state: State) -> dict[str, Any]:
    if state.get("calls", 0) == 0:
        reply = AIMessage("", id="ai-1", tool_calls=[
            {"name": "lookup", "args": {"q": state.get("topic", "")}, "id": "call-1"}])
    else:
        reply = AIMessage(f"done after {state['calls']} calls", id=f"ai-{state['calls'] + 1}")
    return {"messages": [reply], "calls": 1}


def tools(state: State) -> dict[str, Any]:
    call = state["messages"][-1].tool_calls[0]
    return {"messages": [ToolMessage(f"found {call['args']['q']}", tool_call_id=call["id"], id="tool-1")]}


def route(state: State) -> str:
    return "tools" if getattr(state["messages"][-1], "tool_calls", None) else END


def build(saver: SqliteSaver, interrupt: bool = False):
    g = StateGraph(State)
    g.add_node("agent", agent)
    g.add_node("tools", tools)
    g.set_entry_point("agent")
    g.add_conditional_edges("agent", route, {"tools": "tools", END: END})
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=saver, interrupt_before=["tools"] if interrupt else None)


def old_tagged(obj: Any, pickled: bool = False) -> Any:
    """`record.tagged`, with LangChain 0.2 objects (pydantic v1) as their serializer keeps them:
    JSON keeps the `to_json()` kwargs (fields left at their defaults are not stored), a pickle
    every field."""
    if isinstance(obj, dict):
        return {k: old_tagged(v, pickled) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [old_tagged(v, pickled) for v in obj]
    if hasattr(obj, "to_json") and hasattr(obj, "is_lc_serializable"):
        return {"$type": f"{type(obj).__module__}.{type(obj).__name__}",
                "data": old_tagged(obj.dict() if pickled else obj.to_json()["kwargs"], pickled)}
    return tagged(obj)


def record(snap: Any, pickled: bool = False) -> dict[str, Any]:
    """One StateSnapshot of LangGraph 0.0.x/0.1.x in the `statectl log --json` shape."""
    conf, parent = snap.config["configurable"], (snap.parent_config or {}).get("configurable", {})
    return {"thread_id": conf["thread_id"], "checkpoint_ns": "", "checkpoint_id": conf["thread_ts"],
            "parent_checkpoint_id": parent.get("thread_ts"), "metadata": old_tagged(snap.metadata, pickled),
            "values": old_tagged(snap.values, pickled), "next": list(snap.next)}


def main() -> None:
    from importlib.metadata import version

    gen = "00" if version("langgraph").startswith("0.0.") else "01"
    db = HERE / f"thread_ts_{gen}.sqlite"
    db.unlink(missing_ok=True)
    conn = sqlite3.connect(db, check_same_thread=False)
    saver = SqliteSaver(conn)
    start = {"messages": [HumanMessage("look up rye", id="human-1")], "topic": "rye"}
    threads = []

    build(saver).invoke(start, {"configurable": {"thread_id": "ts-done"}})
    threads.append(("ts-done", saver))
    paused = build(saver, interrupt=True)
    paused.invoke(start, {"configurable": {"thread_id": "ts-waiting"}})
    threads.append(("ts-waiting", saver))
    edited = {"configurable": {"thread_id": "ts-updated"}}
    paused.invoke(start, edited)
    paused.update_state(edited, {"topic": "spelt"})
    threads.append(("ts-updated", saver))
    if gen == "00":  # the earliest releases pickled checkpoints (serde=pickle)
        pickled = SqliteSaver(conn, serde=pickle)
        build(pickled).invoke(start, {"configurable": {"thread_id": "ts-pickled"}})
        threads.append(("ts-pickled", pickled))

    records = []
    for thread, used in threads:
        for snap in build(used).get_state_history({"configurable": {"thread_id": thread}}):
            records.append(record(snap, pickled=used is not saver))
    conn.close()
    with (HERE / "expected" / f"thread_ts_{gen}.jsonl").open("w") as fh:
        for rec in records:
            fh.write(json.dumps(rec, default=str) + "\n")
    print(f"wrote {db.name} and expected/thread_ts_{gen}.jsonl: {len(records)} snapshots")


if __name__ == "__main__":
    main()
