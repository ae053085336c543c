"""`replay --offline` (issue 51): the user's graph re-runs from a checkpoint with every model
answer, tool result, interrupt answer and input taken from what the thread recorded; the first
call that differs stops the run where it differs; `--check` makes a thread a regression test.

Every thread here was written by real LangGraph runs with scripted chat models (tests/offline_app.py
and the sample apps); a witness on the writer's path logs any network call it attempts."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from parity import SAMPLES

HERE = Path(__file__).resolve().parent
APP = f"{HERE}/offline_app.py"
AGENT = f"{SAMPLES}/agent_app.py:agent"
DEEP = f"{SAMPLES}/deep_app.py:deep_agent"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """tests/offline_app.py's threads, written once by real runs."""
    sys.path.insert(0, str(HERE))
    import offline_app

    path = tmp_path_factory.mktemp("offline") / "apps.sqlite"
    offline_app.record(path)
    return path


@pytest.fixture
def here(tmp_path, monkeypatch, recorded):
    """The test's folder as the current one (the scratch file goes there), the stores copied into
    it, and the network witness on the writer's path."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(recorded, tmp_path / "apps.sqlite")
    for name in ("agent", "deep"):
        shutil.copy(SAMPLES / f"{name}.sqlite", tmp_path / f"{name}.sqlite")
    log = tmp_path / "net.log"
    monkeypatch.setenv("STATECTL_TEST_NETLOG", str(log))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE / "netguard"), os.environ.get("PYTHONPATH", "")]))
    return tmp_path


def _net(here: Path) -> str:
    log = here / "net.log"
    return log.read_text() if log.exists() else ""


def test_the_network_witness_sees_a_connection(tmp_path):
    """(The witness itself: a lookup in a process started as the writer is, logged.)"""
    log = tmp_path / "net.log"
    env = {
        **os.environ,
        "STATECTL_TEST_NETLOG": str(log),
        "PYTHONPATH": os.pathsep.join([str(HERE / "netguard"), os.environ.get("PYTHONPATH", "")]),
    }
    code = "import socket\ntry: socket.getaddrinfo('localhost', 9)\nexcept OSError: pass"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    assert "socket.getaddrinfo" in log.read_text()


# -- the recording, from the data alone -----------------------------------------------------------
def test_dry_run_lists_the_recorded_calls(run, here):
    r = run("replay", "shop", "--db", "apps.sqlite", "--offline", "--dry-run", "--json")
    assert r.code == 0, r.err
    rec = json.loads(r.out)["recording"]
    got = [(c["kind"], c["step"], c["node"]) for c in rec["calls"]]
    assert got == [
        ("model", 1, "agent"),
        ("tool", 2, "tools"),
        ("tool", 2, "tools"),
        ("model", 3, "agent"),
        ("resume", 4, "review"),
    ]
    assert [c["answer"] for c in rec["calls"] if c["kind"] == "resume"] == [["yes"]]
    tools = [c for c in rec["calls"] if c["kind"] == "tool"]
    assert [c["answer"]["data"]["content"] for c in tools] == ["rye bread: 3 EUR", "croissant: 2 EUR"]
    first = rec["calls"][0]
    # the prompt the agent kept with its answer is recorded as what it made itself
    assert [rec["messages"][i]["content"] for i in first["own"]] == [
        "Find the prices of rye bread and croissants and say which is cheapest."
    ]
    human = run("replay", "shop", "--db", "apps.sqlite", "--offline", "--dry-run")
    assert human.code == 0
    assert "model answer  step 1  agent  → lookup_price" in human.out
    assert "tool result   step 2  tools  rye bread: 3 EUR" in human.out
    assert 'resume        step 4  review  ["yes"]' in human.out
    assert not (here / "statectl-scratch.sqlite").exists()


def test_dry_run_names_a_node_whose_model_output_is_not_in_the_state(run, here):
    r = run("replay", "raw", "--db", "apps.sqlite", "--offline", "--dry-run")
    assert r.code == 0, r.err
    assert "run as code" in r.out
    assert "step 1  summarize  wrote summary" in r.out
    assert "the branch recorded no model answer and no tool result" in r.out


def test_a_node_that_kept_only_a_derived_value_is_said_not_guessed(run, here):
    r = run("replay", "derived", "--db", "apps.sqlite", "--offline", "--dry-run")
    assert "step 1  summarize  wrote summary" in r.out
    r = run("replay", "derived", "--db", "apps.sqlite", "--graph", f"{APP}:derived_app", "--offline", "--json")
    assert r.code == 3, r.err + r.out
    report = json.loads(r.out.splitlines()[-1])["diverged"]
    assert (report["step"], report["node"], report["why"]) == (1, "summarize", "no recorded answer")
    assert report["detail"] == (
        "the recording has 0 model answers for this task; this is call 1 "
        "(the original task wrote summary: its model output is not in the state)"
    )
    human = run("replay", "derived", "--db", "apps.sqlite", "--graph", f"{APP}:derived_app", "--offline")
    assert "replay left the recording at step 2  summarize: no recorded answer" in human.out


def test_recorded_text_is_data_never_markup(run, here):
    """A thread id and model answers holding escape sequences and Rich markup: shown escaped, as written."""
    r = run("replay", "hostile", "--db", "apps.sqlite", "--offline", "--dry-run")
    assert r.code == 0, r.err
    assert "\x1b" not in r.out
    assert "\x07" not in r.out
    assert "[bold red]boom[/] \\x1b[2J" in r.out  # (as every output: markup as written, escapes shown)
    assert ":smile:" in r.out
    r = run("replay", "hostile", "--db", "apps.sqlite", "--graph", f"{APP}:shop_app", "--offline")
    assert r.code == 2
    assert "\x1b" not in r.err
    assert "the thread ran node 'plan': the graph has no such node" in r.err


def test_dry_run_finds_subgraph_and_fan_out_answers_where_the_model_made_them(run, here):
    r = run("replay", "fan", "--db", "apps.sqlite", "--offline", "--dry-run", "--json")
    calls = json.loads(r.out)["recording"]["calls"]
    # two Send workers in one step, then the subgraph's own node (not its parent's, which
    # only wrote the subgraph's output, nor the subgraph's input)
    assert sorted((c["ns"], c["step"], c["node"]) for c in calls) == [
        ("", 2, "worker"),
        ("", 2, "worker"),
        ("summary", 1, "write"),
    ]
    assert len({c["path"] for c in calls if c["node"] == "worker"}) == 2


# -- unchanged code: the new branch is the original, step by step --------------------------------
def _branch(db: Path, graph: Any, thread: str, end: str, start: str) -> list[dict[str, Any]]:
    """LangGraph's own reading of a branch (end back to start, oldest first), as compared: the
    values (message ids left out: a re-run makes new ones), next, the tasks' names, the source."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    g = graph.copy(update={"checkpointer": saver})
    out = []
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": end}}
    while config is not None:
        snap = g.get_state(config)
        if snap.metadata.get("source") != "fork":  # (LangGraph's first checkpoint of a time travel)
            out.append(
                {
                    "values": _plain(snap.values),
                    "next": snap.next,
                    "tasks": sorted(t.name for t in snap.tasks),
                    "source": snap.metadata.get("source"),
                    "interrupts": [_plain(i.value) for i in snap.interrupts],
                }
            )
        if snap.config["configurable"]["checkpoint_id"] == start:
            break
        config = snap.parent_config
    saver.conn.close()
    return out[::-1]


def _plain(value: Any) -> Any:
    from langchain_core.messages import BaseMessage

    if isinstance(value, BaseMessage):
        data = value.model_dump(exclude={"id"})
        if data.get("type") == "AIMessageChunk":
            data["type"] = "ai"  # (a chunk is kept as it came)
        return data
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "model_dump"):
        return _plain(value.model_dump())
    return value


def _loaded(spec: str) -> Any:
    from statectl.project import target

    return target.compiled(target.load(spec))


def _checkpoint(db: Path, thread: str, step: int) -> str:
    with sqlite3.connect(db) as c:
        rows = c.execute(
            "SELECT checkpoint_id, metadata FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''", (thread,)
        ).fetchall()
    return next(cid for cid, meta in sorted(rows) if json.loads(meta).get("step") == step)


@pytest.mark.parametrize(
    ("db", "thread", "graph", "step"),
    [
        ("apps", "shop", f"{APP}:shop_app", None),  # a StateGraph with a model node and ToolNode, an interrupt
        ("apps", "shop", f"{APP}:shop_app", 2),
        ("apps", "shop-streamed", f"{APP}:shop_streaming", None),
        ("apps", "shop-system", f"{APP}:shop_kept_system", None),  # a system message kept in the state
        ("apps", "shop-system", f"{APP}:shop_kept_system", 2),  # a streaming model: the aggregated chunk
        ("apps", "fan", f"{APP}:fan_app", None),  # Send fan-out, a subgraph's model
        ("apps", "priced", f"{APP}:priced_agent", None),  # create_agent: parallel tool calls, response_format
        ("agent", "bakery-plan", AGENT, None),  # create_agent, middleware, HITL interrupt, a second input
        ("agent", "bakery-plan", AGENT, 9),
        ("agent", "hola-panaderia", AGENT, 3),
        ("deep", "deep-research", DEEP, None),  # deepagents: delta channels, a subagent via the task tool
    ],
)
def test_unchanged_code_offline_is_the_original_branch(run, here, db, thread, graph, step):
    src = here / f"{db}.sqlite"
    args = [] if step is None else [_checkpoint(src, thread, step)]
    r = run(
        "replay",
        thread,
        *args,
        "--db",
        str(src),
        "--graph",
        graph,
        "--offline",
        "--check",
        "--json",
        "--to",
        "statectl-scratch.sqlite",
    )
    assert r.code == 0, r.err + r.out
    out = json.loads(r.out.splitlines()[-1])
    assert out["status"] in ("done", "interrupted")
    assert out["check"] is True
    assert out["diverged"] is None
    assert out["answered"]["model"] >= 1
    assert _net(here) == ""  # no connection was attempted
    scratch = here / "statectl-scratch.sqlite"
    start = args[0] if args else _first(src, thread)
    want = _branch(scratch, _loaded(graph), thread, out["original_checkpoint_id"], start)
    got = _branch(scratch, _loaded(graph), thread, out["checkpoint_id"], start)
    assert got == want


def _first(db: Path, thread: str) -> str:
    with sqlite3.connect(db) as c:
        return c.execute(
            "SELECT min(checkpoint_id) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''", (thread,)
        ).fetchone()[0]


# -- changed code: where it leaves the recording ----------------------------------------------------
def test_a_changed_tool_run_for_real_stops_at_the_next_model_call(run, here):
    r = run("replay", "shop", "--db", "apps.sqlite", "--graph", f"{APP}:shop_new_tool", "--offline", "models")
    assert r.code == 3, r.err
    assert "replay left the recording at step 4  agent: request differs" in r.out
    assert "message 2 sent to the model (tool) differs from the recording:" in r.out
    assert "rye bread: [-3-]{+4+} EUR" in r.out
    assert "recorded: rye bread: 3 EUR" in r.out
    assert "the recording's answer to it: A croissant (2 EUR) is cheaper" in r.out
    assert "(models answered from the recording, tools act)" in r.err
    assert _net(here) == ""
    # its tools answered from the recording instead, the new tool never runs: nothing differs
    r = run("replay", "shop", "--db", "apps.sqlite", "--graph", f"{APP}:shop_new_tool", "--offline", "--check")
    assert r.code == 0, r.err + r.out


def test_live_after_divergence_finishes_with_the_live_model_and_check_prints_the_diff(run, here):
    r = run(
        "replay",
        *("shop", "--db", "apps.sqlite", "--graph", f"{APP}:shop_new_tool"),
        *("--offline", "models", "--live-after-divergence", "--check"),
    )
    assert r.code == 1, r.err + r.out
    assert "the run left the recording at step 4 node agent (its task ran from checkpoint " in r.err
    assert "going on live from there" in r.err
    assert "--check: the new branch does not end as the original did" in r.err
    assert "Live: a croissant (3 EUR) is cheaper than rye bread (4 EUR)." in r.out  # the diff
    assert "A croissant (2 EUR) is cheaper than rye bread (3 EUR)." in r.out
    # the interrupt after it is still answered from the recording: the run ends done
    assert "is done" in r.out
    # the same with the original tool: exit 0 (a check's branch was in a temporary copy: nothing to clear)
    assert not (here / "statectl-scratch.sqlite").exists()
    r = run("replay", "shop", "--db", "apps.sqlite", "--graph", f"{APP}:shop_app", "--offline", "models", "--check")
    assert r.code == 0, r.err + r.out
    assert "--check: the new branch ends as the original did" in r.err


def test_a_changed_prompt_diverges_at_that_nodes_first_call(run, here):
    r = run("replay", "shop", "--db", "apps.sqlite", "--graph", f"{APP}:shop_new_prompt", "--offline", "--json")
    assert r.code == 3, r.err
    out = json.loads(r.out.splitlines()[-1])
    report = out["diverged"]
    assert (report["step"], report["node"], report["why"]) == (1, "agent", "request differs")
    assert report["recorded"]["content"].endswith("say which is cheapest.")
    assert report["now"]["content"].endswith("say which is dearest.")
    human = run("replay", "shop", "--db", "apps.sqlite", "--graph", f"{APP}:shop_new_prompt", "--offline")
    assert human.code == 3
    assert "say which is [-cheapest.-]{+dearest.+}" in human.out


def test_an_interrupt_is_answered_from_the_recording_and_resume_overrides_it(run, here):
    r = run(
        "replay", "shop", "--db", "apps.sqlite", "--graph", f"{APP}:shop_app", "--offline", "--expect", 'verdict="yes"'
    )
    assert r.code == 0, r.err + r.out
    waiting = _checkpoint(here / "apps.sqlite", "shop", 3)  # where review waits
    args = ("replay", "shop", waiting, "--db", "apps.sqlite", "--graph", f"{APP}:shop_app", "--offline")
    r = run(*args, "--resume", '"no"', "--expect", 'verdict="no"')
    assert r.code == 0, r.err + r.out
    r = run(*args, "--resume", '"no"', "--expect", 'verdict="yes"')
    assert r.code == 1
    assert 'statectl: --expect verdict: expected "yes", got "no"' in r.err


def test_a_model_called_outside_langchain_fails_with_a_line_that_says_so(run, here):
    r = run("replay", "raw", "--db", "apps.sqlite", "--graph", f"{APP}:raw_app", "--offline")
    assert r.code == 3, r.err + r.out
    assert (
        "offline: node summarize tried to connect to ('api.example.com', 443) (socket.create_connection): "
        "a model or client outside LangChain cannot be answered from the recording"
    ) in r.out
    assert "Traceback" not in r.err + r.out
    assert _net(here) == ""  # refused before the socket module was asked


# -- bad input: one line, nothing written -----------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["shop", "latest", "--graph", f"{APP}:shop_app", "--offline"],
            "nothing was recorded after checkpoint",
        ),
        (
            ["shop", "--graph", f"{SAMPLES}/custom_app.py:notes_builder", "--offline"],
            "the thread ran node 'agent': the graph has no such node (its nodes: draft, review)",
        ),
        (["shop", "1", "--graph", f"{APP}:shop_app", "--offline", "--resume", '"no"'], "--resume: no interrupt waits"),
        (["shop", "--graph", f"{APP}:shop_app", "--check"], "--check needs --offline"),
        (["shop", "--graph", f"{APP}:shop_app", "--offline", "--expect", "verdict"], "is not KEY=JSON"),
    ],
)
def test_bad_input_writes_nothing(run, here, args, message):
    r = run("replay", *args[:1], *args[1:], "--db", "apps.sqlite")
    assert r.code == 2, r.err + r.out
    assert message in r.err
    assert len(r.err.strip().splitlines()) <= 2
    assert not (here / "statectl-scratch.sqlite").exists()


def test_check_on_a_branch_that_errors_is_exit_1_with_the_error(run, here):
    r = run(
        "replay",
        *("market-lookup-fails", "--db", "agent.sqlite", "--graph", AGENT, "--offline", "models", "--check"),
    )
    assert r.code == 1, r.err + r.out
    assert "ended in an error in tools: RuntimeError: market data service unavailable for region 'Porto'" in r.out
    assert "Traceback" not in r.err


# -- the README's workflow ---------------------------------------------------------------------------
def test_readme_workflow_runs_as_written(run, here):
    readme = (HERE.parent / "README.md").read_text()
    assert "statectl copy THREAD --to tests/fixtures/incident-123.sqlite" in readme
    assert not (here / "tests").exists()  # (copy makes the fixture's folders: no mkdir in the workflow)
    copy = next(x for x in readme.splitlines() if x.startswith("statectl copy THREAD --to tests/fixtures/"))
    argv = ["shop" if a == "THREAD" else a for a in copy.split("#")[0].split()[1:]]
    r = run(*argv, "--db", "apps.sqlite")  # (the README's production store: this test's)
    assert r.code == 0, r.err
    line = next(x for x in readme.splitlines() if "--offline --check" in x and "incident-123" in x)
    argv = line.strip().removeprefix("statectl ").split()
    argv[argv.index("--graph") + 1] = f"{APP}:shop_app"  # (the README's app.py:graph)
    before = (here / "tests/fixtures/incident-123.sqlite").read_bytes()
    r = run(*argv)
    assert r.code == 0, r.err + r.out
    assert "--check: the new branch ends as the original did" in r.err
    assert (here / "tests/fixtures/incident-123.sqlite").read_bytes() == before  # the fixture stays as it was


def test_offline_replay_into_postgres(run, here, pg_empty):
    """The same run written through LangGraph's PostgresSaver (the thread copied there first)."""
    r = run(
        "replay",
        *("shop", "--db", "apps.sqlite", "--graph", f"{APP}:shop_app", "--offline", "--check", "--to", pg_empty),
    )
    assert r.code == 0, r.err + r.out
    assert "--check: the new branch ends as the original did" in r.err
    assert _net(here) == ""
    assert not (here / "statectl-scratch.sqlite").exists()


# -- the TUI: R ---------------------------------------------------------------------------------------
async def test_tui_R_reruns_offline_and_shows_where_it_diverged(here):
    import asyncio

    from rich.console import Console
    from rich.text import Text
    from tui_helpers import settle, timeline_ids

    from statectl.tui import make_app
    from statectl.tui.screens.fork_rerun import ConfirmRun
    from statectl.tui.widgets.timeline import Timeline

    async def until(pilot, done, seconds: float = 90.0) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while loop.time() < deadline:
            await pilot.pause(0.1)
            if done():
                return True
        return False

    app = make_app("apps.sqlite", "shop", poll=0.2, graph=f"{APP}:shop_new_prompt")
    async with app.run_test(size=(80, 24)) as pilot:  # (a laptop's default terminal)
        await settle(pilot)
        assert len(timeline_ids(app)) == 6
        await pilot.press("G")  # the thread's first checkpoint
        await settle(pilot)
        await pilot.press("R")
        assert await until(pilot, lambda: isinstance(app.screen, ConfirmRun) and app.screen.is_mounted)
        console = Console(width=200, color_system=None)
        with console.capture() as cap:
            console.print(app.screen.plan)
        assert "model answer  step 1  agent  → lookup_price" in cap.get()
        await pilot.press("enter")
        assert await until(
            pilot,
            lambda: any(
                "re-run left the recording at step 2 (agent): request differs" in str(n.message)
                for n in app._notifications
            ),
        ), [str(n.message) for n in app._notifications]
        # the new branch is shown: LangGraph's fork checkpoint and the step before the agent
        assert await until(pilot, lambda: len(timeline_ids(app)) == 8), timeline_ids(app)
        await settle(pilot)
        # the divergence is on the timeline, at the row of the checkpoint its task ran from
        # (selected), and said whole in the banner above the state
        timeline = app.screen.query_one(Timeline)
        (at,) = timeline.diverged
        assert timeline.selected == at
        row = [c.plain if isinstance(c, Text) else str(c) for c in timeline.get_row(at)]
        assert row[0].startswith("✖ ")
        assert "notes" not in timeline.widths  # (80 columns: the banner says why, whole with b)
        timeline.diverged = {**timeline.diverged}
        assert timeline._notes(next(e for e in timeline.entries if e.record.checkpoint_id == at)).plain.startswith(
            "✖ left the recording"
        )  # (a wider pane's notes column)
        banner = str(app.screen.query_one("#banner").render())
        assert (
            "✖  step 2 agent: the re-run left the recording here\n   request differs (b: whole): message 0 (human)"
            in banner
        )
        await pilot.press("b")
        await settle(pilot)
        banner = str(app.screen.query_one("#banner").render())
        assert (
            "message 0 (human): Find the prices of rye bread and croissants and say which is "
            "[-cheapest.-]{+dearest.+}" in " ".join(banner.split())
        )
        await pilot.press("q")
    assert _net(here) == ""


def test_until_stops_an_offline_run_before_the_node(run, here):
    r = run(
        "replay",
        *("shop", "--db", "apps.sqlite", "--graph", f"{APP}:shop_app", "--offline", "--until", "tools", "--json"),
    )
    assert r.code == 0, r.err + r.out
    out = json.loads(r.out.splitlines()[-1])
    assert (out["status"], out["next"], out["answered"]["model"]) == ("interrupted", ["tools"], 1)


SLOW_CHAT = """
import os, sys, time
from typing import Annotated, TypedDict
sys.path.insert(0, {samples!r})
from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph, add_messages
from scripted import ScriptedChatModel, say

class S(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]

model = ScriptedChatModel(script=[say(f"tick {{i}}") for i in range(20)])

def tick(state: S) -> dict:
    time.sleep(float(os.environ.get("TICK", "0")))
    return {{"messages": [model.invoke(state["messages"])]}}

def again(state: S) -> str:
    return "tick" if len(state["messages"]) < 21 else END

builder = StateGraph(S)
builder.add_node("tick", tick)
builder.add_edge(START, "tick")
builder.add_conditional_edges("tick", again, ["tick", END])
graph = builder
"""


def test_ctrl_c_stops_an_offline_replay_and_keeps_what_was_written(here):
    """Ctrl+C during an offline re-run: exit 130, the steps saved so far stay, LangGraph reads them."""
    import signal
    import time

    (here / "slow_chat.py").write_text(SLOW_CHAT.format(samples=str(SAMPLES)))
    code = (
        f"import sys, sqlite3; sys.path.insert(0, {str(here)!r}); import slow_chat\n"
        "from langchain_core.messages import HumanMessage\n"
        "from langgraph.checkpoint.sqlite import SqliteSaver\n"
        "saver = SqliteSaver(sqlite3.connect('slow.sqlite', check_same_thread=False))\n"
        "g = slow_chat.graph.compile(checkpointer=saver)\n"
        "g.invoke({'messages': [HumanMessage('go')]}, {'configurable': {'thread_id': 'slow'}})\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=here, timeout=120)
    argv = [sys.executable, "-m", "statectl", "replay", "slow", "--db", "slow.sqlite"]
    argv += ["--graph", f"{here / 'slow_chat.py'}:graph", "--offline", "--to", "run.sqlite"]
    proc = subprocess.Popen(
        argv,
        cwd=here,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "TICK": "1.0"},
    )
    try:
        seen = 0
        deadline = time.monotonic() + 120
        assert proc.stdout is not None
        while seen < 3 and time.monotonic() < deadline:  # (the fork, __start__, a tick: then Ctrl+C)
            if proc.stdout.readline().startswith("step"):
                seen += 1
        os.killpg(proc.pid, signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "replay stopped: the steps written so far stay" in err
    assert "Traceback" not in err
    sys.path.insert(0, str(here))
    from langgraph.checkpoint.sqlite import SqliteSaver

    saver = SqliteSaver(sqlite3.connect(here / "run.sqlite", check_same_thread=False))
    graph = _loaded(f"{here / 'slow_chat.py'}:graph").copy(update={"checkpointer": saver})
    history = list(graph.get_state_history({"configurable": {"thread_id": "slow"}}))
    original = 22  # (input, __start__ and 20 ticks)
    assert original + 3 <= len(history) < original + 22  # the saved steps, not the whole run
    assert history[0].next == ("tick",)
    assert _net(here) == ""
    saver.conn.close()


def test_a_tool_that_raised_raises_again_where_it_did(run, here):
    """create_agent's tool raised in the recording (no ToolMessage): offline, the same error ends
    the branch at the same task, as the original ended."""
    r = run("replay", "market-lookup-fails", "--db", "agent.sqlite", "--graph", AGENT, "--offline", "--json")
    assert r.code == 1, r.err + r.out
    out = json.loads(r.out.splitlines()[-1])
    assert out["failure"] == "RuntimeError: market data service unavailable for region 'Porto'"
    assert (out["diverged"], out["answered"]["tool"]) == (None, 1)
    assert _net(here) == ""


@pytest.mark.parametrize(
    ("saved", "kind", "args"),
    [
        ("RuntimeError(\"market data service unavailable for region 'Porto'\")", "RuntimeError", None),
        ("KeyError('sku')", "KeyError", ("sku",)),
        ("ValueError()", "ValueError", ()),
        ("PaymentDeclined('card 4242')", "RecordedError", ("PaymentDeclined('card 4242')",)),
        ("ValueError(__import__('os').system('true'))", "ValueError", ("__import__('os').system('true')",)),
        ("SystemExit(3)", "RecordedError", ("SystemExit(3)",)),
    ],
)
def test_a_recorded_error_is_rebuilt_from_python_classes_only(saved, kind, args):
    from statectl.project.offline import _recorded_error

    exc = _recorded_error(saved)
    assert type(exc).__name__ == kind
    if args is not None:
        assert exc.args == args


def test_check_writes_a_temporary_copy_and_leaves_no_scratch_file(run, here):
    """A check is a verdict: without --to its branch goes to a temporary copy, removed when statectl
    ends (a ./statectl-scratch.sqlite kept every run's branch, and once the source's thread had
    grown, its old copy there made --check fail)."""
    for _ in range(2):
        r = run("replay", "shop", "--db", "apps.sqlite", "--graph", f"{APP}:shop_app", "--offline", "--check")
        assert r.code == 0, r.err + r.out
        assert "--check: the new branch ends as the original did" in r.err
    assert not (here / "statectl-scratch.sqlite").exists()
    r = run("replay", "shop", "--db", "apps.sqlite", "--graph", f"{APP}:shop_app", "--offline")
    assert r.code == 0, r.err + r.out
    assert (here / "statectl-scratch.sqlite").exists()  # (a run without a verdict keeps its branch, as replay does)


@pytest.mark.parametrize("args", [["nosuch-thread"], ["shop", "nosuchcheckpoint"]])
def test_offline_a_thread_or_checkpoint_not_found_is_bad_input_not_a_divergence(run, here, args):
    """Offline, exit 3 says the run left the recording: a mistyped id in CI is exit 2."""
    r = run("replay", *args, "--db", "apps.sqlite", "--graph", f"{APP}:shop_app", "--offline", "--check")
    assert r.code == 2, r.err + r.out
    assert r.err.startswith("statectl: no "), r.err
    assert not (here / "statectl-scratch.sqlite").exists()


# -- step numbers: one numbering, the new branch's own -------------------------------------------------
def test_a_divergence_is_named_by_the_new_branchs_step_and_checkpoints_show_takes(run, here):
    """A time travel adds LangGraph's fork checkpoint: the report names the new branch's own step
    (as `log` shows it there) and the checkpoints the task and the recorded call ran from, which
    `show` takes; never two step numbers."""
    r = run(
        "replay",
        *("shop", "--db", "apps.sqlite", "--graph", f"{APP}:shop_new_tool", "--offline", "models", "--to", "x.sqlite"),
    )
    assert r.code == 3, r.err + r.out
    assert "(the new branch's step" not in r.out
    assert "replay left the recording at step 4  agent: request differs" in r.out
    line = next(x for x in r.out.splitlines() if "the new branch's task ran from checkpoint" in x)
    new, old = line.split("checkpoint ")[1].split(";")[0], line.split("the recorded call from ")[1].split()[0]
    log = run("log", "shop", "--db", "x.sqlite", "--json")
    rows = [json.loads(x) for x in log.out.splitlines()] if log.out.lstrip().startswith("{") else json.loads(log.out)
    steps = {row["checkpoint_id"][-12:]: row for row in rows}
    assert steps[new]["metadata"]["step"] == 3  # the task of step 4 ran from the new branch's step 3
    assert steps[old]["metadata"]["step"] == 2  # the recorded call ran from the original's step 2 (no fork there)
    shown = run("show", "shop", new, "--db", "x.sqlite")
    assert shown.code == 0, shown.err
    assert "rye bread: 4 EUR" in shown.out  # the new tool's result: what the model was sent


# -- --check / --expect verdicts ----------------------------------------------------------------------
@pytest.mark.parametrize("verdict", [["--check"], ["--expect", 'verdict="yes"'], ["--check", "--expect", "x=1"]])
def test_check_and_expect_on_a_branch_that_errors_say_the_verdict(run, here, verdict):
    r = run(
        "replay",
        *("market-lookup-fails", "--db", "agent.sqlite", "--graph", AGENT, "--offline", *verdict),
    )
    assert r.code == 1, r.err + r.out
    assert "ended in an error in tools: RuntimeError: market data service unavailable" in r.out
    for flag in [v for v in verdict if v.startswith("--")]:
        assert (
            f"statectl: {flag}: failed: the new branch ended in an error "
            "(RuntimeError: market data service unavailable for region 'Porto')"
        ) in r.err
    assert "Traceback" not in r.err
    j = run(
        "replay", *("market-lookup-fails", "--db", "agent.sqlite", "--graph", AGENT, "--offline", "--json"), *verdict
    )
    assert j.code == 1
    out = json.loads(j.out.splitlines()[-1])
    if "--check" in verdict:
        assert out["check"] is False
    if "--expect" in verdict:
        assert all(v["checked"] is False for v in out["expect"].values())


def test_check_on_a_run_that_left_the_recording_says_it_was_not_checked(run, here):
    r = run("replay", "shop", "--db", "apps.sqlite", "--graph", f"{APP}:shop_new_prompt", "--offline", "--check")
    assert r.code == 3, r.err + r.out
    assert "statectl: --check: not checked: the run left the recording (exit 3)" in r.err


@pytest.mark.parametrize(
    ("thread", "graph", "expect", "code", "said"),
    [
        ("shop", "shop_app", 'verdict="yes"', 0, None),
        (
            "shop",
            "shop_app",
            'verdikt="yes"',
            1,
            "--expect verdikt: no key 'verdikt' in the final state; did you mean verdict?",
        ),
        ("shop", "shop_app", 'messages.-1.content="A croissant (2 EUR) is cheaper than rye bread (3 EUR)."', 0, None),
        (
            "shop",
            "shop_app",
            'messages.9.content="x"',
            1,
            "--expect messages.9.content: no item 9 in messages (a list of 5)",
        ),
        ("shop", "shop_app", 'messages.last="x"', 1, "messages is a list: 'last' is not an index (a number: 0, -1)"),
        ("shop", "shop_app", "verdict.x=1", 1, "--expect verdict.x: verdict is str: it has no 'x'"),
        ("priced", "priced_agent", "structured_response.price=1", 0, None),
        ("priced", "priced_agent", 'structured_response={"item": "baguette", "price": 1}', 0, None),
        (
            "priced",
            "priced_agent",
            "structured_response.price=2",
            1,
            "--expect structured_response.price: expected 2, got 1",
        ),
        (
            "priced",
            "priced_agent",
            "structured_response.prise=1",
            1,
            "no key 'prise' in structured_response; did you mean price?",
        ),
    ],
)
def test_expect_names_a_missing_key_and_takes_a_path(run, here, thread, graph, expect, code, said):
    r = run("replay", thread, "--db", "apps.sqlite", "--graph", f"{APP}:{graph}", "--offline", "--expect", expect)
    assert r.code == code, r.err + r.out
    if said is not None:
        assert said in r.err
        assert "got null" not in r.err


def test_expect_folds_a_huge_value_and_escapes_it(run, here):
    args = ("replay", "hostile", "--db", "apps.sqlite", "--graph", f"{APP}:fan_app", "--offline")
    r = run(*args, "--expect", "messages=[]")
    assert r.code == 1, r.err + r.out
    line = next(x for x in r.err.splitlines() if x.startswith("statectl: --expect messages:"))
    assert "expected [], got [" in line
    assert len(line) < 500
    assert "chars)" in line
    r = run(*args, "--expect", 'messages.1.content="ok"')
    assert r.code == 1, r.err + r.out
    assert '--expect messages.1.content: expected "ok", got "[bold red]boom[/] \\u001b[2J' in r.err
    assert "\x1b" not in r.err
    assert "\x07" not in r.err


# -- --offline's value ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("word", "meant"), [("model", "models"), ("Models", "models"), ("modles", "models"), ("al", "all")]
)
def test_offline_with_a_misspelt_value_is_an_error_not_a_checkpoint(run, here, word, meant):
    for argv in (["--offline", word], [f"--offline={word}"]):
        r = run("replay", "shop", *argv, "--db", "apps.sqlite", "--graph", f"{APP}:shop_app")
        assert r.code == 2, r.err + r.out
        assert r.err.startswith(f"statectl: --offline {word!r}: did you mean --offline {meant}?"), r.err
        assert len(r.err.strip().splitlines()) == 1
    assert not (here / "statectl-scratch.sqlite").exists()


def test_offline_all_is_the_default_and_a_step_after_offline_is_the_checkpoint(run, here):
    a = run("replay", "shop", "--db", "apps.sqlite", "--offline", "all", "--dry-run", "--json")
    b = run("replay", "shop", "--db", "apps.sqlite", "--offline", "--dry-run", "--json")
    assert a.code == b.code == 0
    assert json.loads(a.out) == json.loads(b.out)
    r = run("replay", "shop", "--db", "apps.sqlite", "--offline", "2", "--dry-run", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["recording"]["checkpoint_id"] == _checkpoint(here / "apps.sqlite", "shop", 2)


# -- --resume offline without CHECKPOINT ------------------------------------------------------------------
def test_resume_offline_takes_the_checkpoint_where_the_interrupt_waited(run, here):
    args = ("replay", "shop", "--db", "apps.sqlite", "--graph", f"{APP}:shop_app", "--offline", "--json")
    r = run(*args, "--resume", '"no"', "--expect", 'verdict="no"')
    assert r.code == 0, r.err + r.out
    out = json.loads(r.out.splitlines()[-1])
    assert out["answered"]["resume"] == 0  # (the user's answer, not the recording's)
    assert f"from checkpoint {_checkpoint(here / 'apps.sqlite', 'shop', 3)}" in r.err
    r = run("replay", "fan", "--db", "apps.sqlite", "--graph", f"{APP}:fan_app", "--offline", "--resume", '"no"')
    assert r.code == 2
    assert "statectl: --resume: no interrupt waited in thread fan" in r.err


# -- --dry-run: a later input where it came ----------------------------------------------------------------
def test_dry_run_lists_a_later_input_between_the_steps_where_it_came(run, here):
    r = run("replay", "bakery-plan", "--db", "agent.sqlite", "--offline", "--dry-run")
    assert r.code == 0, r.err
    lines = [x.strip() for x in r.out.splitlines()]
    at = next(i for i, x in enumerate(lines) if x.startswith("input"))
    assert "Email the plan to my cofounder maria@example.com" in lines[at]
    assert '"$type"' not in lines[at]
    assert lines[at - 1].startswith("model answer  step 14  model  Your idea **Pão Bom** is saved")
    assert lines[at + 1].startswith("model answer  step 22  model  → send_email(")


# -- Postgres as the source ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("thread", "graph"), [("bakery-plan", AGENT), ("deep-research", DEEP)])
def test_a_postgres_thread_replayed_offline_is_the_original_branch(run, here, pg_samples, thread, graph):
    r = run(
        "replay",
        *(thread, "--db", pg_samples, "--graph", graph, "--offline", "--check", "--json", "--to", "pg.sqlite"),
    )
    assert r.code == 0, r.err + r.out
    out = json.loads(r.out.splitlines()[-1])
    assert (out["check"], out["diverged"]) == (True, None)
    assert out["answered"]["model"] >= 1
    assert _net(here) == ""
    start = _first(here / "pg.sqlite", thread)
    want = _branch(here / "pg.sqlite", _loaded(graph), thread, out["original_checkpoint_id"], start)
    got = _branch(here / "pg.sqlite", _loaded(graph), thread, out["checkpoint_id"], start)
    assert got == want


def test_a_postgres_thread_replayed_offline_into_postgres(run, here, pg_samples, pg_empty):
    r = run("replay", "bakery-plan", "--db", pg_samples, "--graph", AGENT, "--offline", "--check", "--to", pg_empty)
    assert r.code == 0, r.err + r.out
    assert "--check: the new branch ends as the original did" in r.err
    assert _net(here) == ""


# -- a new file's missing folders --------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["copy", "fork", "replay"])
def test_a_new_file_in_missing_folders_is_created_with_them(run, here, command):
    dest = "ci/fixtures/deep/incident.sqlite"
    args = {
        "copy": ["copy", "shop", "--db", "apps.sqlite", "--to", dest],
        "fork": [
            "fork",
            "shop",
            "2",
            "--db",
            "apps.sqlite",
            "--graph",
            f"{APP}:shop_app",
            "--set",
            'verdict="maybe"',
            "--to",
            dest,
        ],
        "replay": ["replay", "shop", "--db", "apps.sqlite", "--graph", f"{APP}:shop_app", "--offline", "--to", dest],
    }[command]
    r = run(*args)
    assert r.code == 0, r.err + r.out
    assert (here / dest).is_file()
    assert run("log", "shop", "--db", dest).code == 0


def test_missing_folders_are_not_left_behind_when_nothing_is_written(run, here):
    r = run("copy", "nosuch", "--db", "apps.sqlite", "--to", "ci/fixtures/x.sqlite")
    assert r.code != 0
    assert not (here / "ci").exists()
    (here / "plain").write_text("a file")
    r = run("copy", "shop", "--db", "apps.sqlite", "--to", "plain/x/y.sqlite")
    assert r.code == 2
    assert r.err.strip() == "statectl: cannot create plain/x/y.sqlite: plain is not a folder"


# -- system prompts ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("thread", "graph", "node"), [("shop", "shop_app", "agent"), ("priced", "priced_agent", "model")]
)
def test_a_system_prompt_not_in_the_recording_is_said_once_and_in_the_check(run, here, thread, graph, node):
    """A system message made in code (prepended by the node; create_agent's system_prompt) is in
    no recording: the run says so once for its node, and --check says it was not compared."""
    r = run("replay", thread, "--db", "apps.sqlite", "--graph", f"{APP}:{graph}", "--offline", "--check")
    assert r.code == 0, r.err + r.out
    said = [x for x in r.err.splitlines() if x.startswith("statectl: note:") and "system message" in x]
    assert said == [
        f"statectl: note: node {node} sends a system message ('You are a careful bakery assistant.') that is "
        "not in the recording: a change to it cannot be detected offline (it is not compared)"
    ]
    assert f"statectl: --check: not compared: node {node} sends a system message" in r.err
    j = run("replay", thread, "--db", "apps.sqlite", "--graph", f"{APP}:{graph}", "--offline", "--check", "--json")
    out = json.loads(j.out.splitlines()[-1])
    assert [(n["node"], n["system"]) for n in out["system_unchecked"]] == [
        (node, "You are a careful bakery assistant.")
    ]


def test_a_changed_system_prompt_not_in_the_recording_is_said_not_a_false_divergence(run, here):
    r = run("replay", "shop", "--db", "apps.sqlite", "--graph", f"{APP}:shop_new_system", "--offline", "--check")
    assert r.code == 0, r.err + r.out
    assert (
        "node agent sends a system message ('You are a terse bakery assistant.') that is not in the recording" in r.err
    )


def test_a_changed_system_prompt_kept_in_the_state_diverges_with_its_diff(run, here):
    r = run("replay", "shop-system", "--db", "apps.sqlite", "--graph", f"{APP}:shop_kept_system", "--offline")
    assert r.code == 0, r.err + r.out
    assert "system message" not in r.err  # (recorded: compared)
    args = ("replay", "shop-system", "--db", "apps.sqlite", "--graph", f"{APP}:shop_kept_new_system", "--offline")
    r = run(*args, "--check")
    assert r.code == 3, r.err + r.out
    assert "replay left the recording at step 2  agent: request differs" in r.out
    assert "message 0 sent to the model (system) differs from the recording:" in r.out
    assert "You are a [-careful-]{+terse+} bakery assistant." in r.out
    # from a later step the state holds the recorded system message (compared, and the same)
    r = run(*args[:2], _checkpoint(here / "apps.sqlite", "shop-system", 2), *args[2:], "--check")
    assert r.code == 0, r.err + r.out


# -- the tools a model is given --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("thread", "graph", "node", "now"),
    [
        ("shop", "shop_renamed_tool", "agent", "'find_price'"),  # a StateGraph with ToolNode: renamed
        ("shop", "shop_removed_tool", "agent", "none"),  # removed
        ("priced", "priced_renamed", "model", "'find_price', 'Cheapest'"),  # create_agent (+ its response_format tool)
    ],
)
def test_a_renamed_or_removed_tool_the_recorded_answer_calls_diverges_there(run, here, thread, graph, node, now):
    r = run("replay", thread, "--db", "apps.sqlite", "--graph", f"{APP}:{graph}", "--offline", "--check")
    assert r.code == 3, r.err + r.out
    assert f"replay left the recording at step 2  {node}: tool not bound" in r.out
    assert (
        f"the recorded answer calls tool 'lookup_price', which the model is no longer given (its tools now: {now})"
    ) in r.out
    assert "Traceback" not in r.err + r.out
    j = run("replay", thread, "--db", "apps.sqlite", "--graph", f"{APP}:{graph}", "--offline", "--json")
    report = json.loads(j.out.splitlines()[-1])["diverged"]
    assert (report["why"], report["node"], report["step"]) == ("tool not bound", node, 1)


@pytest.mark.parametrize(("thread", "graph"), [("shop", "shop_binding"), ("priced", "priced_binding")])
def test_the_same_tools_given_as_a_provider_binds_them_is_no_divergence(run, here, thread, graph):
    r = run("replay", thread, "--db", "apps.sqlite", "--graph", f"{APP}:{graph}", "--offline", "--check")
    assert r.code == 0, r.err + r.out
    assert "--check: the new branch ends as the original did" in r.err


def test_an_exported_thread_replayed_offline_is_the_original_branch(run, here):
    """An export (`statectl export`) as the source: the same recording, the same branch."""
    assert run("export", "bakery-plan", "--db", "agent.sqlite", "-o", "bakery.jsonl").code == 0
    r = run("replay", "bakery-plan", "--db", "bakery.jsonl", "--graph", AGENT, "--offline", "--check", "--json")
    assert r.code == 0, r.err + r.out
    out = json.loads(r.out.splitlines()[-1])
    assert (out["check"], out["diverged"]) == (True, None)
    assert out["answered"] == {"model": 6, "tool": 4, "resume": 1, "input": 1}
    assert _net(here) == ""


def test_a_system_message_prepended_besides_the_kept_one_is_said_not_a_divergence(run, here):
    """The node keeps its system message (compared) and middleware prepends another, in no
    recording: said, not compared; the kept one still is."""
    r = run("replay", "shop-system", "--db", "apps.sqlite", "--graph", f"{APP}:shop_kept_and_prompted", "--offline")
    assert r.code == 0, r.err + r.out
    assert "node agent sends a system message ('Always answer in English.') that is not in the recording" in r.err
