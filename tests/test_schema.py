"""`statectl schema`: fields, channels, reducers, visibility and declaring middleware equal what
create_agent / StateGraph compute; drift against a thread; inference from history alone."""

from __future__ import annotations

import json
import sys
import typing

import pytest
from parity import SAMPLES, expected

sys.path.insert(0, str(SAMPLES))


def _schema(run, name: str, *extra: str) -> dict:
    r = run("schema", str(SAMPLES / name), "--json", *extra)
    assert r.code == 0, r.err
    return json.loads(r.out)


def _by_name(data: dict) -> dict[str, dict]:
    return {f["name"]: f for f in data["fields"]}


def _own(schema: type) -> dict[str, typing.Any]:
    """The fields a middleware's state_schema adds to (or changes in) AgentState."""
    from langchain.agents import AgentState

    base = typing.get_type_hints(AgentState, include_extras=True)
    hints = typing.get_type_hints(schema, include_extras=True)
    return {k: v for k, v in hints.items() if k not in base or v != base[k]}


def test_create_agent_fields_visibility_and_declaring_middleware(run):
    import agent_app
    from langchain.agents import AgentState
    from langchain.agents.factory import _resolve_schemas
    from langchain.agents.middleware import HumanInTheLoopMiddleware, TodoListMiddleware

    data = _schema(run, "agent_app.py:agent")
    fields = _by_name(data)
    builder = agent_app.agent.builder
    # the fields are the graph's state channels
    assert set(fields) == {k for k in builder.channels if not k.startswith("__")}
    # in / out are exactly create_agent's InputSchema / OutputSchema
    assert {k for k, f in fields.items() if f["input"]} == set(typing.get_type_hints(builder.input_schema))
    assert {k for k, f in fields.items() if f["output"]} == set(typing.get_type_hints(builder.output_schema))
    # the middleware list, in the order make_agent passes it, merged as create_agent merges it
    middleware = [
        agent_app.BusinessIdeaMiddleware(),
        agent_app.LanguageDetectorMiddleware(),
        agent_app.SkillsMiddleware(),
        TodoListMiddleware(),
        HumanInTheLoopMiddleware(interrupt_on={"send_email": True}),
    ]
    assert data["sources"] == [m.name for m in middleware] + ["AgentState"]
    merged, _, _ = _resolve_schemas([m.state_schema for m in middleware] + [AgentState])
    assert (
        typing.get_type_hints(merged, include_extras=True).keys()
        == typing.get_type_hints(builder.state_schema, include_extras=True).keys()
    )
    for name, f in fields.items():
        declarers = [m.name for m in middleware if name in _own(m.state_schema)]
        declarers += ["AgentState"] if name in typing.get_type_hints(AgentState) else []
        assert f["declared_by"] == declarers, name
    assert fields["business_idea_complete"]["declared_by"] == ["BusinessIdeaMiddleware"]
    assert fields["detected_language"]["declared_by"] == ["LanguageDetectorMiddleware"]
    assert fields["skills_metadata"]["declared_by"] == ["SkillsMiddleware"]
    assert fields["todos"]["declared_by"] == ["TodoListMiddleware"]
    # types, channels, reducers, visibility
    assert fields["messages"] | {"declared_by": None} == {
        "name": "messages",
        "type": "list[AnyMessage]",
        "channel": "reducer",
        "reducer": "add_messages",
        "required": True,
        "input": True,
        "output": True,
        "private": [],
        "declared_by": None,
        "winner": None,
    }
    assert fields["materialized_business_idea"]["type"] == "dict[str, Any] | None"
    assert fields["jump_to"]["channel"] == "ephemeral"
    assert fields["jump_to"]["private"] == ["PrivateStateAttr"]
    assert fields["todos"]["private"] == ["OmitFromInput"]
    assert fields["todos"]["output"]
    assert fields["hitl_edited_tool_calls"]["private"] == ["PrivateStateAttr"]
    assert not fields["detected_language"]["required"]


def test_deepagents_delta_channels_and_its_own_state_schema(run):
    fields = _by_name(data := _schema(run, "deep_app.py:deep_agent"))
    assert fields["messages"]["channel"] == "delta"
    assert fields["files"]["channel"] == "delta"
    assert fields["files"]["declared_by"] == ["FilesystemMiddleware"]
    assert fields["todos"]["declared_by"] == ["TodoListMiddleware"]
    assert fields["_blob_payloads"]["channel"] == "untracked"
    # create_deep_agent passes its own state_schema (messages as a delta channel): it is the base
    assert data["sources"][-1] == "state_schema"
    assert fields["messages"]["declared_by"] == ["state_schema"]
    assert "FilesystemMiddleware" in data["sources"]
    assert "SubAgentMiddleware" in data["sources"]
    # the pair whose relative order neither hook nodes nor wrapper chains pin down is named
    assert data["order_open"]
    assert any(n.startswith("the compiled graph leaves the relative order of ") for n in data["notes"])


@pytest.mark.parametrize("factory", ["agent_app:make_agent", "deep_app:make_deep_agent"])
def test_middleware_order_is_create_agents_own(monkeypatch, factory):
    """The merge order statectl reads from the compiled graph is the `middleware=` list that
    create_agent was called with, except the middlewares it says it cannot place."""
    import importlib

    import langchain.agents

    from statectl.project.schema import schema

    module_name, fn = factory.split(":")
    module = importlib.import_module(module_name)
    real, calls = langchain.agents.create_agent, []

    def spy(*args, **kwargs):
        calls.append([m.name for m in kwargs.get("middleware", ())])
        return real(*args, **kwargs)

    owner = importlib.import_module("deepagents.graph") if module_name == "deep_app" else module
    monkeypatch.setattr(owner, "create_agent", spy)
    result = schema(getattr(module, fn)())
    truth = calls[-1]
    ours = result.sources[:-1]
    assert sorted(ours) == sorted(truth)
    assert [m for m in ours if m not in result.order_open] == [m for m in truth if m not in result.order_open]
    assert len(result.order_open) <= 2
    assert module_name == "deep_app" or not result.order_open


def test_pydantic_state_required_and_reducers(run):
    import orchestrator_app

    fields = _by_name(_schema(run, "orchestrator_app.py:orchestrator"))
    model = orchestrator_app.OrchestratorState.model_fields
    assert list(fields) == list(model)
    assert {k: f["required"] for k, f in fields.items()} == {k: v.is_required() for k, v in model.items()}
    assert fields["analysis_results"]["reducer"] == "operator.add"
    assert all(f["declared_by"] == ["OrchestratorState"] for f in fields.values())


def test_plain_graph_reducers_and_types(run):
    fields = _by_name(_schema(run, "custom_app.py:notes_builder"))
    assert fields["log"]["reducer"] == "operator.add"
    assert fields["scores"]["reducer"] == "merge_scores"
    assert fields["topic"]["channel"] == "last value"
    assert fields["log"]["type"] == "list[str]"
    types = _by_name(_schema(run, "custom_app.py:types_builder"))
    assert types["pair"]["type"] == "tuple[int, str]"
    assert types["tags"]["type"] == "set[str]"


def test_functional_api(run):
    data = _schema(run, "custom_app.py:essay_workflow")
    assert data["kind"] == "functional"
    fields = _by_name(data)
    assert fields["__start__"]["input"]
    assert fields["__end__"]["output"]
    assert fields["__start__"]["type"] == "str"


def test_human_table_marks_declarers_and_merge_order(run):
    r = run("schema", str(SAMPLES / "agent_app.py:agent"))
    assert r.code == 0
    assert "merged in this order (a later declaration wins): BusinessIdeaMiddleware → " in r.out
    line = next(line for line in r.out.splitlines() if line.startswith("detected_language"))
    assert "LanguageDetectorMiddleware" in line


def test_drift_against_a_thread(run):
    data = _schema(run, "agent_app.py:agent", "--db", str(SAMPLES / "agent.sqlite"), "bakery-plan")
    assert data["drift"] == {
        "thread_id": "bakery-plan",
        "unknown_keys": [],
        "never_written": ["structured_response"],
        "type_mismatches": [],
    }
    # the wrong schema for a thread: every key is unknown, every field unwritten
    other = _schema(
        run, "orchestrator_app.py:orchestrator", "--db", str(SAMPLES / "agent.sqlite"), "--thread", "bakery-plan"
    )["drift"]
    assert "messages" in other["unknown_keys"]
    assert "user_query" in other["never_written"]


def test_drift_finds_a_type_mismatch(run):
    # notes-edits writes `count` as an int; a schema declaring it str must be flagged
    import statectl
    from statectl.core.schema import Field, Schema, drift, infer

    view = statectl.open(str(SAMPLES / "custom.sqlite")).view("notes-edits")
    s = Schema([Field("count", "str", "last value", None, False, True, True)], "StateGraph", ["X"])
    d = drift(s, infer(view))
    assert d.type_mismatches == [{"field": "count", "declared": "str", "observed": ["int"]}]


def test_inferred_from_history_alone(run):
    r = run("schema", "--db", str(SAMPLES / "agent.sqlite"), "bakery-plan", "--json")
    assert r.code == 0, r.err
    keys = {k["name"]: k for k in json.loads(r.out)["keys"]}
    langgraph = [e for e in expected("agent") if e["thread_id"] == "bakery-plan" and e["checkpoint_ns"] == ""]
    assert set(keys) == {k for e in langgraph for k in e["values"]}
    assert keys["messages"]["accumulates"]
    assert keys["messages"]["first_step"] == -1
    assert keys["messages"]["checkpoints"] == sum("messages" in e["values"] for e in langgraph)
    assert "bool" in keys["business_idea_complete"]["types"]
    human = run("schema", "--db", str(SAMPLES / "agent.sqlite"), "bakery-plan")
    assert "inferred from the thread's history alone" in human.out


def test_schema_needs_a_target_or_a_thread(run):
    r = run("schema")
    assert r.code == 2
    assert r.err.startswith("statectl: give a TARGET")


def test_inferred_accumulation_is_a_growing_collection_not_a_rising_number(run):
    """parent-jump: `log` is operator.add, `n` a plain value that a node sets to n + 1."""
    r = run("schema", "--db", str(SAMPLES / "flow.sqlite"), "parent-jump", "--json")
    keys = {k["name"]: k for k in json.loads(r.out)["keys"]}
    assert keys["log"]["accumulates"]
    assert not keys["n"]["accumulates"]


V2 = """
import operator
from typing import Annotated, TypedDict
from langchain_core.messages import AnyMessage
from langgraph.graph import END, START, StateGraph

class ApprovalState(TypedDict, total=False):  # the next release: messages lose their reducer,
    messages: list[AnyMessage]                 # the draft becomes a number, `decision` goes,
    draft: int                                 # and `approve` is renamed
    note: str

def write_draft(state): return {}
def review_draft(state): return {}
def publish(state): return {}

builder = StateGraph(ApprovalState)
builder.add_node("write_draft", write_draft)
builder.add_node("review_draft", review_draft)
builder.add_node("publish", publish)
builder.add_edge(START, "write_draft")
builder.add_edge("write_draft", "review_draft")
builder.add_edge("review_draft", "publish")
builder.add_edge("publish", END)
graph = builder.compile()
"""


@pytest.fixture
def approvals(tmp_path):
    """Real runs of the sample approval graph: one thread waits at its interrupt, one is done."""
    import sqlite3

    from custom_app import approval_builder
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import Command

    db = tmp_path / "approvals.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    graph = approval_builder.compile(checkpointer=SqliteSaver(conn))
    graph.invoke(
        {"messages": [("user", "Draft a post")]},
        {"configurable": {"thread_id": "waits"}, "metadata": {"release": "v1"}},
    )
    done = {"configurable": {"thread_id": "done"}, "metadata": {"release": "v0"}}
    graph.invoke({"messages": [("user", "Draft another")]}, done)
    graph.invoke(Command(resume="yes"), done)
    conn.close()
    return db


def test_all_threads_against_the_schema_about_to_be_deployed(run, approvals, tmp_path):
    """`schema NEW --all-threads --db DB`: every thread's newest checkpoint against the schema of
    the code about to be deployed; one line per affected thread, a summary, exit 1 because a
    waiting thread would resume into a node that no longer exists."""
    (tmp_path / "v2.py").write_text(V2)
    db, new = str(approvals), f"{tmp_path / 'v2.py'}:graph"
    same = run("schema", f"{SAMPLES}/custom_app.py:approval_builder", "--all-threads", "--db", db)
    assert same.code == 0, same.out + same.err
    assert "2 threads" in same.out, same.out + same.err
    assert "0 affected" in same.out, same.out + same.err
    r = run("schema", new, "--all-threads", "--db", db, "--json")
    assert r.code == 1, r.err
    data = json.loads(r.out)
    assert data["threads"] == 2
    assert data["waiting_affected"] == 1
    found = {a["thread_id"]: a for a in data["affected"]}
    problems = {t: {(p["problem"], p.get("key") or p.get("node")) for p in a["problems"]} for t, a in found.items()}
    assert found["waits"]["waiting"]
    assert not found["done"]["waiting"]
    assert problems["waits"] == {("missing_node", "approve"), ("reducer_removed", "messages"), ("type", "draft")}
    assert problems["done"] == {("unknown_key", "decision"), ("reducer_removed", "messages"), ("type", "draft")}
    human = run("schema", new, "--all-threads", "--db", db)
    assert human.code == 1
    lines = human.out.splitlines()
    assert lines[0].startswith("waits  interrupted  ")
    assert "next approve: no such node" in lines[0]
    assert "2 threads of" in human.out, human.out
    assert "2 affected, 1 of them waiting to resume (these would break)" in " ".join(lines)
    bad = run("schema", new, "--all-threads", "waits", "--db", db)
    assert bad.code == 2
    assert len(bad.err.splitlines()) == 1
    one = json.loads(run("schema", new, "--all-threads", "--db", db, "--json", "--meta", "release=v0").out)
    assert one["threads"] == 1
    assert [a["thread_id"] for a in one["affected"]] == ["done"]
    alone = run("schema", new, "--db", db, "--meta", "release=v0")
    assert alone.code == 2
    assert "--meta goes with --all-threads" in alone.err


def test_schema_thread_uses_the_database_every_command_finds(run, tmp_path, monkeypatch):
    """`statectl schema THREAD` with no --db reads ./checkpoints.sqlite like every other command
    (it took the thread for a TARGET: "target 'bakery-plan' is not MODULE:ATTR", exit 2)."""
    import shutil

    shutil.copy(SAMPLES / "agent.sqlite", tmp_path / "checkpoints.sqlite")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STATECTL_DB", raising=False)
    r = run("schema", "bakery-plan")
    assert r.code == 0, r.err
    assert r.out.startswith("state keys of thread bakery-plan\n")
