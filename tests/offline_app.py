"""Apps for `replay --offline` (tests/test_offline.py), run for real with scripted chat models.

`record(path)` writes their threads with LangGraph's SqliteSaver; each `*_app` below is the same
graph as the user's code on the replay side, some with a change: a tool that answers otherwise,
a prompt reworded, a node that calls a model outside LangChain (a raw socket, as an SDK would).
Their models' scripts are what a live model says after a divergence (`--live-after-divergence`).
"""

from __future__ import annotations

import json
import operator
import os
import socket
import sys
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import Send, interrupt
from typing_extensions import TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "sample_threads"))

from scripted import ScriptedChatModel, call, say


class StreamingChatModel(ScriptedChatModel):
    """A scripted model that streams its reply word by word (its tool calls in the last chunk)."""

    def _stream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        from langchain_core.outputs import ChatGenerationChunk

        reply = self._generate(messages).generations[0].message
        words = str(reply.content).split(" ") if reply.content else []
        for i, word in enumerate(words):
            yield ChatGenerationChunk(message=AIMessageChunk(content=word if i == 0 else " " + word, id=reply.id))
        chunks = [
            {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
            for i, c in enumerate(reply.tool_calls)
        ]
        yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=chunks, id=reply.id))


class BindingChatModel(ScriptedChatModel):
    """A scripted model whose `bind_tools` binds the tools as a provider's does (ChatOpenAI's
    `bind(tools=[OpenAI tool schemas])`): the call is given their names."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        from langchain_core.utils.function_calling import convert_to_openai_tool

        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


PROMPT = "Find the prices of {topic} and say which is cheapest."
SYSTEM = "You are a careful bakery assistant."


class ShopState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    topic: str
    verdict: str


def make_tool(currency: str = "EUR", bump: int = 0, name: str = "lookup_price") -> Any:
    from langchain_core.tools import tool

    @tool(name)
    def lookup_price(item: str) -> str:
        """The price of an item."""
        prices = {"rye bread": 3, "croissant": 2, "baguette": 1}
        return f"{item}: {prices.get(item, 9) + bump} {currency}"

    return lookup_price


def make_shop(
    script: list[Any],
    prompt: str = PROMPT,
    bump: int = 0,
    stream: bool = False,
    system: str = SYSTEM,
    keep_system: bool = False,
    tools: list[Any] | None = None,
    binding: bool = False,
    prompted: str | None = None,
) -> StateGraph:
    """A hand-written agent: `agent` (the model, its first call with a prompt it keeps with the
    answer; a system message prepended in code, kept in the state too with `keep_system`),
    `tools` (LangGraph's ToolNode, parallel calls in one task), then `review`, which asks a person
    (an interrupt)."""
    tool = make_tool(bump=bump)
    model = (StreamingChatModel if stream else BindingChatModel if binding else ScriptedChatModel)(script=script)
    bound = model.bind_tools(tools if tools is not None else [tool])

    def agent(state: ShopState) -> dict[str, Any]:
        first = not any(isinstance(m, AIMessage) for m in state.get("messages", []))
        asked: list[Any] = [HumanMessage(prompt.format(topic=state["topic"]))] if first else []
        if keep_system and first:
            asked = [SystemMessage(system), *asked]
        request = [*([] if keep_system else [SystemMessage(system)]), *state.get("messages", []), *asked]
        if prompted:  # (a system message prepended as middleware does, never kept)
            request = [SystemMessage(prompted), *request]
        if stream:
            answer: Any = None
            for chunk in bound.stream(request):
                answer = chunk if answer is None else answer + chunk
        else:
            answer = bound.invoke(request)
        return {"messages": [*asked, answer]}

    def route(state: ShopState) -> str:
        last = state["messages"][-1]
        return "tools" if getattr(last, "tool_calls", None) else "review"

    def review(state: ShopState) -> dict[str, Any]:
        answer = interrupt({"question": "Publish this answer?", "draft": state["messages"][-1].content})
        return {"verdict": str(answer)}

    builder = StateGraph(ShopState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools if tools is not None else [tool]))
    builder.add_node("review", review)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["tools", "review"])
    builder.add_edge("tools", "agent")
    builder.add_edge("review", END)
    return builder


SHOP_SCRIPT = [
    call(("lookup_price", {"item": "rye bread"}), ("lookup_price", {"item": "croissant"})),
    say("A croissant (2 EUR) is cheaper than rye bread (3 EUR)."),
]
LIVE = [say("Live: a croissant (3 EUR) is cheaper than rye bread (4 EUR).")]

shop_app = make_shop(LIVE)
"""The user's code unchanged."""
shop_new_tool = make_shop(LIVE, bump=1)
"""The tool answers otherwise (its prices went up)."""
shop_new_prompt = make_shop(LIVE, prompt="Find the prices of {topic} and say which is dearest.")
"""The agent's prompt reworded."""
shop_streaming = make_shop(LIVE, stream=True)
"""The agent streams its model (the recorded message is the aggregated chunk)."""
NEW_SYSTEM = "You are a terse bakery assistant."
shop_new_system = make_shop(LIVE, system=NEW_SYSTEM)
"""The system prompt reworded (prepended in code, in no recording)."""
shop_kept_system = make_shop(LIVE, keep_system=True)
"""The agent keeps its system message in the state (thread `shop-system`)."""
shop_kept_new_system = make_shop(LIVE, keep_system=True, system=NEW_SYSTEM)
shop_kept_and_prompted = make_shop(LIVE, keep_system=True, prompted="Always answer in English.")
"""It keeps its system message, and another one is prepended (as middleware does) and never kept."""
shop_binding = make_shop(LIVE, binding=True)
"""The model given its tools as a provider's is (their names knowable to the offline run)."""
shop_renamed_tool = make_shop(LIVE, binding=True, tools=[make_tool(name="find_price")])
"""The tool renamed (`find_price`): the recorded answer calls `lookup_price`."""
shop_removed_tool = make_shop(LIVE, binding=True, tools=[])
"""The tool removed: the model is given none."""
"""The same, its system prompt reworded: the recording holds it."""


# -- create_agent: parallel tool calls (one task each), structured output (response_format) ---------
def make_priced_agent(script: list[Any], binding: bool = False, tool_name: str = "lookup_price") -> Any:
    from langchain.agents import create_agent
    from langchain.agents.structured_output import ToolStrategy
    from pydantic import BaseModel

    class Cheapest(BaseModel):
        item: str
        price: int

    return create_agent(
        (BindingChatModel if binding else ScriptedChatModel)(script=script),
        tools=[make_tool(name=tool_name)],
        system_prompt=SYSTEM,
        response_format=ToolStrategy(Cheapest),
    )


PRICED_SCRIPT = [
    call(("lookup_price", {"item": "rye bread"}), ("lookup_price", {"item": "baguette"})),
    call(("Cheapest", {"item": "baguette", "price": 1})),
]
priced_agent = make_priced_agent(LIVE)
priced_binding = make_priced_agent(LIVE, binding=True)
"""The same agent, its model given its tools as a provider's is (names knowable)."""
priced_renamed = make_priced_agent(LIVE, binding=True, tool_name="find_price")
"""Its tool renamed: the recorded answer calls a tool the model is no longer given."""


# -- Send fan-out and a subgraph: each worker asks the model about one item -----------------
class FanState(TypedDict, total=False):
    items: list[str]
    messages: Annotated[list[AnyMessage], add_messages]
    notes: Annotated[list[str], operator.add]


def make_fan(script: list[Any]) -> StateGraph:
    model = ScriptedChatModel(script=script)

    def plan(state: FanState) -> dict[str, Any]:
        return {}

    def fan(state: FanState) -> list[Send]:
        return [Send("worker", {"items": [item]}) for item in state["items"]]

    def worker(state: FanState) -> dict[str, Any]:
        item = state["items"][0]
        asked = HumanMessage(f"One line about {item}.")
        answer = model.invoke([asked])
        return {"messages": [asked, answer], "notes": [f"{item} done"]}

    def write(state: FanState) -> dict[str, Any]:
        return {"messages": [model.invoke([SystemMessage("Sum up."), *state["messages"]])]}

    inner = StateGraph(FanState)
    inner.add_node("write", write)
    inner.add_edge(START, "write")
    inner.add_edge("write", END)

    builder = StateGraph(FanState)
    builder.add_node("plan", plan)
    builder.add_node("worker", worker)
    builder.add_node("summary", inner.compile())
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", fan, ["worker"])
    builder.add_edge("worker", "summary")
    builder.add_edge("summary", END)
    return builder


FAN_SCRIPT = [say("Rye is sour."), say("Croissants are buttery."), say("Both sell well.")]
fan_app = make_fan(LIVE)


# -- a node that calls a model outside LangChain (a raw client) -------------------------------
class RawState(TypedDict, total=False):
    question: str
    summary: str


def raw_summary(state: RawState) -> dict[str, Any]:
    if os.environ.get("OFFLINE_APP_RECORDING"):  # (the recording run stands in for the service)
        return {"summary": "the service said: fine"}
    with socket.create_connection(("api.example.com", 443), timeout=5) as conn:  # an SDK's HTTP client
        conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
    return {"summary": "unreachable"}


def make_raw() -> StateGraph:
    builder = StateGraph(RawState)
    builder.add_node("summarize", raw_summary)
    builder.add_edge(START, "summarize")
    builder.add_edge("summarize", END)
    return builder


raw_app = make_raw()


def make_derived(script: list[Any]) -> StateGraph:
    """A node that keeps only a value derived from its model's answer (not the message)."""
    model = ScriptedChatModel(script=script)

    def summarize(state: RawState) -> dict[str, Any]:
        return {"summary": str(model.invoke([HumanMessage(f"Summarize: {state['question']}")]).content).upper()}

    builder = StateGraph(RawState)
    builder.add_node("summarize", summarize)
    builder.add_edge(START, "summarize")
    builder.add_edge("summarize", END)
    return builder


derived_app = make_derived(LIVE)


def record(path: Path) -> None:
    """The threads the tests replay, written by real runs."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import Command

    os.environ["OFFLINE_APP_RECORDING"] = "1"
    try:
        saver = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
        shop = make_shop(list(SHOP_SCRIPT)).compile(checkpointer=saver)
        c = {"configurable": {"thread_id": "shop"}}
        shop.invoke({"topic": "rye bread and croissants"}, c)
        shop.invoke(Command(resume="yes"), c)
        kept = make_shop(list(SHOP_SCRIPT), keep_system=True).compile(checkpointer=saver)
        c = {"configurable": {"thread_id": "shop-system"}}
        kept.invoke({"topic": "rye bread and croissants"}, c)
        kept.invoke(Command(resume="yes"), c)
        streamed = make_shop(list(SHOP_SCRIPT), stream=True).compile(checkpointer=saver)
        streamed.invoke({"topic": "rye bread and croissants"}, {"configurable": {"thread_id": "shop-streamed"}})
        fan = make_fan(list(FAN_SCRIPT)).compile(checkpointer=saver)
        fan.invoke({"items": ["rye", "croissant"]}, {"configurable": {"thread_id": "fan"}})
        priced = make_priced_agent(list(PRICED_SCRIPT)).copy(update={"checkpointer": saver})
        priced.invoke(
            {"messages": [HumanMessage("Which is cheapest: rye bread or a baguette?")]},
            {"configurable": {"thread_id": "priced"}},
        )
        hostile = make_fan([say("[bold red]boom[/] \x1b[2J\x07 :smile:"), say("ok"), say("done")]).compile(
            checkpointer=saver
        )
        hostile.invoke({"items": ["[link=http://x]y[/link]"]}, {"configurable": {"thread_id": "hostile\x1b[31m"}})
        derived = make_derived([say("all fine")]).compile(checkpointer=saver)
        derived.invoke({"question": "status?"}, {"configurable": {"thread_id": "derived"}})
        raw = make_raw().compile(checkpointer=saver)
        raw.invoke({"question": "status?"}, {"configurable": {"thread_id": "raw"}})
        saver.conn.close()
    finally:
        del os.environ["OFFLINE_APP_RECORDING"]
