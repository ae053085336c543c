"""Interrupts where they are hardest to read: inside a subgraph, and several at once."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send, interrupt


# --- an interrupt inside a subgraph -------------------------------------------------------
class ReviewState(TypedDict, total=False):
    draft: str
    verdict: str
    log: Annotated[list[str], operator.add]


def check(state: ReviewState):
    answer = interrupt({"question": "Keep this draft?", "draft": state["draft"]})
    return {"verdict": answer, "log": [f"reviewer said {answer}"]}


def apply(state: ReviewState):
    return {"log": [f"applied {state['verdict']}"]}


review_builder = StateGraph(ReviewState)
review_builder.add_node("check", check)
review_builder.add_node("apply", apply)
review_builder.add_edge(START, "check")
review_builder.add_edge("check", "apply")
review_builder.add_edge("apply", END)


def plan(state: ReviewState):
    return {"draft": f"plan for {state['draft']}", "log": ["planned"]}


def finish(state: ReviewState):
    return {"log": ["finished"]}


subgraph_builder = StateGraph(ReviewState)
subgraph_builder.add_node("plan", plan)
subgraph_builder.add_node("review", review_builder.compile())
subgraph_builder.add_node("finish", finish)
subgraph_builder.add_edge(START, "plan")
subgraph_builder.add_edge("plan", "review")
subgraph_builder.add_edge("review", "finish")
subgraph_builder.add_edge("finish", END)


# --- several interrupts at once (Send fan-out), resumed one at a time ----------------------
class AskState(TypedDict, total=False):
    questions: list[str]
    answers: Annotated[list[str], operator.add]


def collect(state: AskState):
    return {"answers": []}


def route(state: AskState):
    return [Send("ask", {"question": q}) for q in state["questions"]]


def ask(state: dict):
    answer = interrupt(state["question"])
    return {"answers": [f"{state['question']} -> {answer}"]}


def summarize(state: AskState):
    return {"answers": [f"{len(state['answers'])} answered"]}


parallel_builder = StateGraph(AskState)
parallel_builder.add_node("collect", collect)
parallel_builder.add_node("ask", ask)
parallel_builder.add_node("summarize", summarize)
parallel_builder.add_edge(START, "collect")
parallel_builder.add_conditional_edges("collect", route, ["ask"])
parallel_builder.add_edge("ask", "summarize")
parallel_builder.add_edge("summarize", END)


# --- static breakpoints: interrupt_before / interrupt_after at compile time ----------------
class StepsState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    n: int


def first(state: StepsState):
    return {"log": ["first"], "n": state.get("n", 0) + 1}


def second(state: StepsState):
    return {"log": ["second"]}


def third(state: StepsState):
    return {"log": ["third"]}


steps_builder = StateGraph(StepsState)
steps_builder.add_node("first", first)
steps_builder.add_node("second", second)
steps_builder.add_node("third", third)
steps_builder.add_edge(START, "first")
steps_builder.add_edge("first", "second")
steps_builder.add_edge("second", "third")
steps_builder.add_edge("third", END)
