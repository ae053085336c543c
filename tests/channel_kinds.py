"""A graph with every kind of channel (`doctor`'s clean stores): a DeltaChannel key that passes
its snapshot interval, a BinaryOperator, a Topic that accumulates and one that does not, an
EphemeralValue holding a primitive and one holding a dict, LastValue keys, a subgraph (its own
namespace, a DeltaChannel of its own) and a Send fan-out, run on a thread for several turns with
an interrupt resumed in each."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.channels import EphemeralValue, Topic
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt

THREADS = ("kinds-1", "kinds-2")
TURNS = 4


def extend(state: list, batches: list[list]) -> list:
    out = list(state)
    for batch in batches:
        out.extend(batch)
    return out


class Sub(TypedDict):
    log: Annotated[list, DeltaChannel(extend, snapshot_frequency=3)]
    inner: str


class Kinds(TypedDict):
    log: Annotated[list, DeltaChannel(extend, snapshot_frequency=3)]
    total: Annotated[int, operator.add]
    kept: Annotated[list, Topic(str, accumulate=True)]
    events: Annotated[list, Topic(str)]
    flash: Annotated[str, EphemeralValue]
    note: Annotated[dict, EphemeralValue]
    last: str
    inner: str
    answer: str


def _sub() -> Any:
    g = StateGraph(Sub)
    g.add_node("a", lambda s: {"log": ["sub-a"], "inner": "x"})
    g.add_node("b", lambda s: {"log": ["sub-b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g.compile()


def build(checkpointer: Any) -> Any:
    g = StateGraph(Kinds)
    g.add_node(
        "start",
        lambda s: {
            "log": ["start"],
            "total": 1,
            "kept": "k",
            "events": "e",
            "flash": "f",
            "note": {"n": 1},
            "last": "s",
        },
    )
    g.add_node("worker", lambda s: {"log": [f"w{s['last']}"], "total": 1, "kept": "w", "events": "w"})
    g.add_node("sub", _sub())
    g.add_node("ask", lambda s: {"answer": interrupt("ok?"), "log": ["asked"]})
    g.add_node("end", lambda s: {"log": ["end"], "last": "e"})
    g.add_edge(START, "start")
    g.add_conditional_edges("start", lambda s: [Send("worker", {**s, "last": str(i)}) for i in range(3)])
    g.add_edge("worker", "sub")
    g.add_edge("sub", "ask")
    g.add_edge("ask", "end")
    g.add_edge("end", END)
    return g.compile(checkpointer=checkpointer)


def run_turns(graph: Any, threads: tuple[str, ...] = THREADS, turns: int = TURNS) -> None:
    """`turns` runs on each thread, each paused at its interrupt and resumed."""
    for t in threads:
        config = {"configurable": {"thread_id": t}}
        for i in range(turns):
            graph.invoke({"log": [f"in{i}"], "total": 0, "last": ""}, config)
            graph.invoke(Command(resume=f"yes {i}"), config)
