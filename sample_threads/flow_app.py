"""Control flow a checkpoint reader must not trip over: retries, a jump from a subgraph to its
parent, a deferred node, and a run saved only at exit."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, RetryPolicy


class FlowState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    n: int


def start(state: FlowState):
    return {"log": ["start"], "n": state.get("n", 0) + 1}


def finish(state: FlowState):
    return {"log": ["finish"]}


def other(state: FlowState):
    return {"log": ["other"]}


# --- a node that fails twice with a retryable error, then succeeds -------------------------
class Flaky:
    """Raises ConnectionError on its first two calls (RetryPolicy retries those)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, state: FlowState):
        self.calls += 1
        if self.calls < 3:
            raise ConnectionError(f"upstream timeout (attempt {self.calls})")
        return {"log": [f"fetched after {self.calls} attempts"]}


def retry_builder() -> StateGraph:
    g = StateGraph(FlowState)
    g.add_node("start", start)
    g.add_node("fetch", Flaky(), retry_policy=RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False))
    g.add_edge(START, "start")
    g.add_edge("start", "fetch")
    g.add_edge("fetch", END)
    return g


# --- a subgraph node that sends its parent to another node (Command.PARENT) ----------------
def escalate(state: FlowState):
    return Command(graph=Command.PARENT, goto="other", update={"log": ["escalated"]})


inner_builder = StateGraph(FlowState)
inner_builder.add_node("escalate", escalate)
inner_builder.add_edge(START, "escalate")

jump_builder = StateGraph(FlowState)
jump_builder.add_node("start", start)
jump_builder.add_node("inner", inner_builder.compile())
jump_builder.add_node("finish", finish)
jump_builder.add_node("other", other)
jump_builder.add_edge(START, "start")
jump_builder.add_edge("start", "inner")
jump_builder.add_edge("inner", "finish")
jump_builder.add_edge("finish", END)
jump_builder.add_edge("other", END)


# --- a deferred node: runs once both branches are done -------------------------------------
def left(state: FlowState):
    return {"log": ["left"]}


def right(state: FlowState):
    return {"log": ["right"]}


defer_builder = StateGraph(FlowState)
defer_builder.add_node("left", left)
defer_builder.add_node("right", right)
defer_builder.add_node("finish", finish, defer=True)
defer_builder.add_edge(START, "left")
defer_builder.add_edge(START, "right")
defer_builder.add_edge("left", "finish")
defer_builder.add_edge("right", "finish")
defer_builder.add_edge("finish", END)
