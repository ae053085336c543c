"""Hand-built LangGraph graphs that exercise every part of the checkpoint format."""

from __future__ import annotations

import dataclasses
import enum
import operator
from collections import namedtuple
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, TypedDict
from uuid import UUID

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph, add_messages
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel


def merge_scores(left: dict[str, float] | None, right: dict[str, float] | None) -> dict[str, float]:
    """Dict-merge reducer: right wins, a None value deletes the key."""
    out = dict(left or {})
    for k, v in (right or {}).items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


# --- reducers, update_state, forks ------------------------------------------------------
class NotesState(TypedDict, total=False):
    topic: str
    log: Annotated[list[str], operator.add]
    scores: Annotated[dict[str, float], merge_scores]
    count: int


def draft(state: NotesState):
    return {"log": [f"drafted {state['topic']}"], "scores": {"clarity": 0.4, "depth": 0.2},
            "count": state.get("count", 0) + 1}


def review(state: NotesState):
    return {"log": ["reviewed"], "scores": {"clarity": 0.8, "depth": None, "tone": 0.7}}


notes_builder = StateGraph(NotesState)
notes_builder.add_node("draft", draft)
notes_builder.add_node("review", review)
notes_builder.add_edge(START, "draft")
notes_builder.add_edge("draft", "review")
notes_builder.add_edge("review", END)


# --- Send fan-out with parallel writes and a join edge ------------------------------------
class FanState(TypedDict, total=False):
    items: list[str]
    results: Annotated[list[str], operator.add]
    audit: str
    summary: str


def split(state: FanState):
    return {"audit": "pending"}


def dispatch(state: FanState):
    return [Send("worker", {"item": item}) for item in state["items"]]


def worker(state: dict):
    return {"results": [state["item"].upper()]}


def audit(state: FanState):
    return {"audit": f"{len(state['items'])} items dispatched"}


def collect(state: FanState):
    return {"summary": ", ".join(sorted(state["results"]))}


fanout_builder = StateGraph(FanState)
fanout_builder.add_node("split", split)
fanout_builder.add_node("worker", worker)
fanout_builder.add_node("audit", audit)
fanout_builder.add_node("collect", collect)
fanout_builder.add_edge(START, "split")
fanout_builder.add_conditional_edges("split", dispatch, ["worker"])
fanout_builder.add_edge("split", "audit")
fanout_builder.add_edge(["worker", "audit"], "collect")
fanout_builder.add_edge("collect", END)


# --- nested subgraphs (two levels) --------------------------------------------------------
class ResearchState(TypedDict, total=False):
    question: str
    notes: Annotated[list[str], operator.add]
    depth: int


def dig(state: ResearchState):
    return {"notes": [f"dug into {state['question']}"], "depth": state.get("depth", 0) + 1}


deep_builder = StateGraph(ResearchState)
deep_builder.add_node("dig", dig)
deep_builder.add_edge(START, "dig")
deep_builder.add_edge("dig", END)


def gather(state: ResearchState):
    return {"notes": [f"gathered sources on {state['question']}"]}


research_builder = StateGraph(ResearchState)
research_builder.add_node("gather", gather)
research_builder.add_node("deep", deep_builder.compile())
research_builder.add_edge(START, "gather")
research_builder.add_edge("gather", "deep")
research_builder.add_edge("deep", END)


def prepare(state: ResearchState):
    return {"notes": ["prepared"], "depth": 0}


def report(state: ResearchState):
    return {"notes": [f"report with {len(state['notes'])} notes"]}


nested_builder = StateGraph(ResearchState)
nested_builder.add_node("prepare", prepare)
nested_builder.add_node("research", research_builder.compile())
nested_builder.add_node("report", report)
nested_builder.add_edge(START, "prepare")
nested_builder.add_edge("prepare", "research")
nested_builder.add_edge("research", "report")
nested_builder.add_edge("report", END)


# --- interrupt / resume, Command(goto, update), a failing node ----------------------------
class ApprovalState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    draft: str
    decision: str
    note: str


def write_draft(state: ApprovalState):
    return {"draft": "Launch on Monday", "messages": [AIMessage("Here is the draft.", id="ai-draft")]}


def approve(state: ApprovalState) -> Command:
    answer = interrupt({"question": "Publish this draft?", "draft": state["draft"]})
    goto = "publish" if answer == "yes" else "discard"
    return Command(goto=goto, update={"decision": answer})


def publish(state: ApprovalState):
    return {"messages": [AIMessage(f"Published: {state['draft']}", id="ai-published")]}


def discard(state: ApprovalState):
    return {"messages": [AIMessage("Discarded.", id="ai-discarded")]}


approval_builder = StateGraph(ApprovalState)
approval_builder.add_node("write_draft", write_draft)
approval_builder.add_node("approve", approve, destinations=("publish", "discard"))
approval_builder.add_node("publish", publish)
approval_builder.add_node("discard", discard)
approval_builder.add_edge(START, "write_draft")
approval_builder.add_edge("write_draft", "approve")
approval_builder.add_edge("publish", END)
approval_builder.add_edge("discard", END)


class FetchState(TypedDict, total=False):
    url: str
    raw: str
    parsed: dict[str, Any]


def fetch(state: FetchState):
    return {"raw": "<html>price: n/a</html>"}


def parse(state: FetchState):
    raise ValueError(f"could not parse price from {state['raw']!r}")


failing_builder = StateGraph(FetchState)
failing_builder.add_node("fetch", fetch)
failing_builder.add_node("parse", parse)
failing_builder.add_edge(START, "fetch")
failing_builder.add_edge("fetch", "parse")
failing_builder.add_edge("parse", END)


# --- values of many types --------------------------------------------------------------------
class Level(enum.IntEnum):
    DEBUG = 10
    INFO = 20


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


Point = namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Receipt:
    amount: Decimal
    paid_at: datetime
    tags: set[str]


class Address(BaseModel):
    street: str
    city: str


class Customer(BaseModel):
    name: str
    address: Address
    since: date


class TypesState(TypedDict, total=False):
    when: datetime
    day: date
    wait: timedelta
    ident: UUID
    tags: set[str]
    frozen: frozenset[int]
    level: Level
    colour: Colour
    blob: bytes
    price: Decimal
    customer: Customer
    receipt: Receipt
    point: Point
    pair: tuple[int, str]
    by_id: dict[int, str]
    path: Path
    messages: Annotated[list[AnyMessage], add_messages]
    nothing: None
    ratio: float


def fill(state: TypesState):
    paid = datetime(2026, 11, 2, 9, 30, tzinfo=timezone.utc)
    return {
        "when": datetime(2026, 11, 1, 12, 0, 5, 123456, tzinfo=timezone(timedelta(hours=2))),
        "day": date(2026, 11, 1),
        "wait": timedelta(days=1, seconds=30),
        "ident": UUID("12345678-1234-5678-1234-567812345678"),
        "tags": {"urgent"},
        "frozen": frozenset({3}),
        "level": Level.INFO,
        "colour": Colour.BLUE,
        "blob": b"\x00\x01binary\xff",
        "price": Decimal("19.99"),
        "customer": Customer(name="Ada", address=Address(street="1 Loop Rd", city="Zurich"),
                             since=date(2020, 5, 17)),
        "receipt": Receipt(amount=Decimal("5.50"), paid_at=paid, tags={"food"}),
        "point": Point(3, 4),
        "pair": (1, "one"),
        "by_id": {1: "one", 2: "two"},
        "path": Path("/data/report.csv"),
        "messages": [
            HumanMessage("What's the weather in Paris?", id="h1"),
            AIMessage("", id="a1", tool_calls=[{"name": "weather", "args": {"city": "Paris"},
                                                 "id": "call_w1", "type": "tool_call"}]),
            ToolMessage("18°C and sunny", tool_call_id="call_w1", id="t1"),
            AIMessage("It is 18°C and sunny in Paris.", id="a2"),
        ],
        "nothing": None,
        "ratio": 0.25,
    }


types_builder = StateGraph(TypesState)
types_builder.add_node("fill", fill)
types_builder.add_edge(START, "fill")
types_builder.add_edge("fill", END)


# --- the functional API ----------------------------------------------------------------------
@task
def outline(topic: str) -> list[str]:
    return [f"{topic}: intro", f"{topic}: body", f"{topic}: end"]


@task
def polish(line: str) -> str:
    return line.title()


def make_essay_workflow(checkpointer):
    @entrypoint(checkpointer=checkpointer)
    def essay(topic: str) -> dict[str, Any]:
        lines = outline(topic).result()
        polished = [f.result() for f in [polish(line) for line in lines]]
        return {"topic": topic, "lines": polished}
    return essay


essay_workflow = make_essay_workflow(None)
"""The functional-API workflow without a checkpointer (for `statectl schema/graph TARGET`)."""
