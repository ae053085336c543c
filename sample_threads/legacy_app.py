"""A database written by LangGraph 0.2 (the channel layout before 0.3), with its own history.

LangGraph before 0.3 kept bookkeeping channels that later versions dropped: a channel named after
each node holding the node's name, `start:NODE`, and `branch:SRC:COND:DST`. statectl must not show
them as state. This script runs in its own venv with the old LangGraph (it cannot share one with
the current version), writes `legacy.sqlite` and LangGraph 0.2's own `get_state_history` of every
thread into `expected/legacy.jsonl`:

    python3 -m venv /tmp/lg02
    /tmp/lg02/bin/pip install langgraph==0.2.62 langgraph-checkpoint-sqlite==2.0.1 "langchain-core<0.4"
    /tmp/lg02/bin/python sample_threads/legacy_app.py

The same app with langgraph-checkpoint 1.0.1, whose serializer stored every value as a `json`
typed row (LangChain's `lc: 1` JSON), writes `json_rows.sqlite` and `expected/json_rows.jsonl`:

    python3 -m venv /tmp/lg020
    /tmp/lg020/bin/pip install langgraph-checkpoint-sqlite==1.0.0 "langchain-core<0.3"
    /tmp/lg020/bin/pip install langgraph-checkpoint==1.0.1 && /tmp/lg020/bin/pip install --no-deps langgraph==0.2.0
    LEGACY_NAME=json_rows /tmp/lg020/bin/python sample_threads/legacy_app.py
"""

from __future__ import annotations

import json
import operator
import os
import sqlite3
import sys
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
try:
    from langgraph.types import Send
except ImportError:  # langgraph 0.2.0
    from langgraph.constants import Send
from typing_extensions import TypedDict

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from record import snapshot_record  # noqa: E402


class State(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    calls: Annotated[int, operator.add]
    findings: Annotated[list, operator.add]
    topic: str


def agent(state: State) -> dict[str, Any]:
    if state.get("calls", 0) == 0:
        reply = AIMessage("", id="ai-1", tool_calls=[
            {"name": "lookup", "args": {"q": state.get("topic", "")}, "id": "call-1", "type": "tool_call"}])
    else:
        reply = AIMessage(f"done: {len(state.get('findings', []))} findings", id=f"ai-{state['calls'] + 1}")
    return {"messages": [reply], "calls": 1}


def should_continue(state: State) -> str:
    last = state["messages"][-1]
    return "tools" if getattr(last, "tool_calls", None) else END


def tools(state: State) -> dict[str, Any]:
    call = state["messages"][-1].tool_calls[0]
    return {"messages": [ToolMessage(f"found {call['args']['q']}", tool_call_id=call["id"], id="tool-1")]}


def plan(state: State) -> list[Send]:
    return [Send("research", {"topic": f"{state['topic']} #{i}"}) for i in range(2)]


def research(state: State) -> dict[str, Any]:
    return {"findings": [f"note on {state['topic']}"]}


def build(saver: SqliteSaver, interrupt: bool = False):
    g = StateGraph(State)
    g.add_node("agent", agent)
    g.add_node("tools", tools)
    g.add_node("research", research)
    g.add_conditional_edges(START, plan, ["research"])
    g.add_edge("research", "agent")
    g.add_conditional_edges("agent", should_continue, ["tools", END])
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=saver, interrupt_before=["tools"] if interrupt else None)


def graph():
    """The app's graph without a checkpointer, as `--graph legacy_app.py:graph` loads it (with the
    current LangGraph too: the tests hold statectl to LangGraph 0.2's history with it)."""
    return build(None)


def main() -> None:
    name = os.environ.get("LEGACY_NAME", "legacy")
    db = HERE / f"{name}.sqlite"
    db.unlink(missing_ok=True)
    conn = sqlite3.connect(db, check_same_thread=False)
    saver = SqliteSaver(conn)
    start = {"messages": [HumanMessage("look up sourdough", id="human-1")], "topic": "sourdough"}

    plain = build(saver)
    plain.invoke(start, {"configurable": {"thread_id": "legacy-done"}})

    paused = build(saver, interrupt=True)
    config = {"configurable": {"thread_id": "legacy-resumed"}}
    paused.invoke(start, config)
    paused.invoke(None, config)
    paused.invoke(start, {"configurable": {"thread_id": "legacy-waiting"}})

    edited = {"configurable": {"thread_id": "legacy-updated"}}
    paused.invoke(start, edited)
    paused.update_state(edited, {"topic": "rye"}, as_node="agent")

    records = []
    for thread in ("legacy-done", "legacy-resumed", "legacy-waiting", "legacy-updated"):
        for snap in plain.get_state_history({"configurable": {"thread_id": thread}}):
            records.append(snapshot_record(snap))
    conn.close()
    with (HERE / "expected" / f"{name}.jsonl").open("w") as fh:
        for rec in records:
            fh.write(json.dumps(rec, default=str) + "\n")
    print(f"wrote {db.name} and expected/{name}.jsonl: {len(records)} snapshots")


if __name__ == "__main__":
    main()
