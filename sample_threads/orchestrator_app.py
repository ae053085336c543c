"""An orchestrator StateGraph whose state is a pydantic model filled step by step."""

from __future__ import annotations

import operator
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, Field


class ResearchTask(BaseModel):
    topic: str
    priority: int = 1
    estimated_cost: float = 0.0


class Analysis(BaseModel):
    topic: str
    finding: str
    confidence: float


class OrchestratorState(BaseModel):
    user_query: str
    budget: float = 10.0
    task_queue: list[ResearchTask] = Field(default_factory=list)
    analysis_results: Annotated[list[Analysis], operator.add] = Field(default_factory=list)
    final_response: str | None = None


def plan(state: OrchestratorState):
    topics = ["market size", "competitors", "pricing"]
    return {"task_queue": [ResearchTask(topic=t, priority=i + 1, estimated_cost=1.5 * (i + 1))
                           for i, t in enumerate(topics)]}


def analyse(state: OrchestratorState):
    task, rest = state.task_queue[0], state.task_queue[1:]
    finding = Analysis(topic=task.topic, finding=f"{task.topic}: looks promising",
                       confidence=round(0.9 - 0.1 * task.priority, 2))
    return {"task_queue": rest, "analysis_results": [finding],
            "budget": round(state.budget - task.estimated_cost, 2)}


def more_work(state: OrchestratorState) -> str:
    return "analyse" if state.task_queue else "write"


def write(state: OrchestratorState):
    lines = [f"- {a.finding} ({a.confidence:.0%})" for a in state.analysis_results]
    return {"final_response": f"Answer to {state.user_query!r}:\n" + "\n".join(lines)}


builder = StateGraph(OrchestratorState)
builder.add_node("plan", plan)
builder.add_node("analyse", analyse)
builder.add_node("write", write)
builder.add_edge(START, "plan")
builder.add_edge("plan", "analyse")
builder.add_conditional_edges("analyse", more_work, ["analyse", "write"])
builder.add_edge("write", END)

orchestrator = builder.compile()
