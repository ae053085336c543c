"""Write the sample checkpoint databases by running real LangGraph graphs.

    python sample_threads/generate.py            # SQLite files in sample_threads/
    python sample_threads/generate.py --postgres postgresql://localhost/statectl_samples

Every model reply comes from a script (no network). After the runs, the script asks LangGraph
itself for the history of every thread and namespace (`get_state_history`) and stores it in
`expected/<db>.jsonl`, so the tests can hold statectl to what LangGraph reports.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
warnings.filterwarnings("ignore")

from langchain_core.messages import HumanMessage  # noqa: E402
from langgraph.types import Command  # noqa: E402

import custom_app as C  # noqa: E402
import flow_app as F  # noqa: E402
import interrupts_app as I  # noqa: E402
from agent_app import make_agent  # noqa: E402
from deep_app import make_deep_agent  # noqa: E402
from orchestrator_app import builder as orchestrator_builder  # noqa: E402
from record import snapshot_record  # noqa: E402
from scripted import call, say  # noqa: E402

APPROVE = Command(resume={"decisions": [{"type": "approve"}]})


def cfg(thread_id: str, **meta: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}, "metadata": meta}


def user(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


def run_failing(fn: Callable[[], Any]) -> None:
    """Run something that is meant to fail inside the graph (the failure is the sample)."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the error is recorded in the checkpoint
        print(f"    (expected failure: {type(exc).__name__}: {exc})")
    else:
        raise SystemExit("a sample that should fail did not")


# ---------------------------------------------------------------------------------------------
def agent_threads(saver) -> Iterator[tuple[str, Any]]:
    """create_agent + middlewares: multi-turn, approval, waiting, failing tool, Spanish."""
    script = [
        call(("write_todos", {"todos": [
            {"content": "Clarify the bakery idea", "status": "in_progress"},
            {"content": "Save the idea", "status": "pending"},
            {"content": "Email the cofounder", "status": "pending"}]})),
        call(("save_business_idea", {"name": "Pão Bom", "pitch": "Sourdough and pastéis de nata "
              "baked at dawn", "target_market": "Commuters in Lisbon"})),
        say("Your idea **Pão Bom** is saved: sourdough and pastéis de nata for Lisbon commuters."),
        call(("send_email", {"to": "maria@example.com", "subject": "Pão Bom plan",
                             "body": "Hi Maria, here is the plan for Pão Bom."})),
        call(("write_todos", {"todos": [
            {"content": "Clarify the bakery idea", "status": "completed"},
            {"content": "Save the idea", "status": "completed"},
            {"content": "Email the cofounder", "status": "completed"}]})),
        say("Done: Maria has the plan, and every todo is complete."),
    ]
    agent = make_agent(script, saver)
    c = cfg("bakery-plan", user_id="u-42", tenant="acme")
    agent.invoke(user("I want to open a bakery in Lisbon. Help me shape the idea."), c)
    agent.invoke(user("Email the plan to my cofounder maria@example.com"), c)
    agent.invoke(APPROVE, c)
    yield "bakery-plan", agent

    agent = make_agent([say("¡Hola! Una panadería es una gran idea. ¿En qué barrio?")], saver)
    agent.invoke(user("Hola, quiero abrir una panadería"), cfg("hola-panaderia", user_id="u-7"))
    yield "hola-panaderia", agent

    agent = make_agent([call(("send_email", {"to": "investors@example.com", "subject": "Seed round",
                                             "body": "We are raising 500k."}))], saver)
    agent.invoke(user("Email our investors about the seed round."), cfg("investor-email", user_id="u-42"))
    yield "investor-email", agent

    agent = make_agent([call(("lookup_market", {"region": "Porto"}))], saver)
    run_failing(lambda: agent.invoke(user("How big is the bakery market in Porto?"),
                                     cfg("market-lookup-fails", user_id="u-42")))
    yield "market-lookup-fails", agent


def deep_threads(saver) -> Iterator[tuple[str, Any]]:
    """deepagents: todos, files (delta channels), a subagent run through the task tool."""
    plan = "# Bakery plan\n\n1. Find a location\n2. Hire a baker\n3. Open in spring\n"
    script = [
        call(("write_todos", {"todos": [
            {"content": "Draft the plan", "status": "in_progress"},
            {"content": "Research competitors", "status": "pending"}]})),
        call(("write_file", {"file_path": "/plan.md", "content": plan})),
        call(("write_file", {"file_path": "/notes/budget.md", "content": "Budget: 80k EUR\n"})),
        call(("task", {"description": "Find three bakery competitors in Lisbon",
                       "subagent_type": "researcher"})),
        say("Competitors: Padaria Portuguesa, Gleba, Manteigaria."),
        call(("edit_file", {"file_path": "/plan.md", "old_string": "3. Open in spring",
                            "new_string": "3. Beat Gleba on price\n4. Open in spring"})),
        call(("write_todos", {"todos": [
            {"content": "Draft the plan", "status": "completed"},
            {"content": "Research competitors", "status": "completed"}]})),
        say("The plan is in /plan.md, updated with the competitor research."),
    ]
    agent = make_deep_agent(script, saver)
    agent.invoke(user("Plan a bakery launch in Lisbon and research the competition."),
                 cfg("deep-research", user_id="u-42"))
    yield "deep-research", agent


def orchestrator_threads(saver) -> Iterator[tuple[str, Any]]:
    """A pydantic-state orchestrator filled step by step."""
    graph = orchestrator_builder.compile(checkpointer=saver)
    graph.invoke({"user_query": "Should we open a bakery in Lisbon?", "budget": 12.0},
                 cfg("orchestrate-bakery"))
    yield "orchestrate-bakery", graph


def custom_threads(saver) -> Iterator[tuple[str, Any]]:
    """Reducers, Send fan-out, subgraphs, interrupts, errors, update_state, forks, types."""
    notes = C.notes_builder.compile(checkpointer=saver)
    c = cfg("notes-edits")
    notes.invoke({"topic": "pricing", "count": 0}, c)
    history = list(notes.get_state_history(c))
    after_draft = next(s for s in history if s.next == ("review",))
    notes.update_state(c, {"log": ["manual note"], "scores": {"tone": None}}, as_node="review")
    # a branch: update an older checkpoint, then a time-travel fork run from it
    branch = notes.update_state(after_draft.config, {"topic": "pricing v2"})
    notes.invoke(None, branch)
    notes.update_state(after_draft.config, None, as_node="__copy__")
    notes.invoke({"topic": "second run", "count": 10}, c)
    yield "notes-edits", notes

    fan = C.fanout_builder.compile(checkpointer=saver)
    fan.invoke({"items": ["alpha", "beta", "gamma"]}, cfg("fanout"))
    yield "fanout", fan

    nested = C.nested_builder.compile(checkpointer=saver)
    nested.invoke({"question": "why is sourdough sour?"}, cfg("nested"))
    yield "nested", nested

    approval = C.approval_builder.compile(checkpointer=saver)
    c = cfg("approval-resumed")
    approval.invoke({"messages": [HumanMessage("Draft a launch post", id="h-launch")]}, c)
    approval.invoke(Command(resume="yes", update={"note": "approved by ops"}), c)
    yield "approval-resumed", approval
    approval.invoke({"messages": [HumanMessage("Draft a sale post", id="h-sale")]},
                    cfg("approval-waiting"))
    yield "approval-waiting", approval

    failing = C.failing_builder.compile(checkpointer=saver)
    run_failing(lambda: failing.invoke({"url": "https://example.com/bread"}, cfg("parse-fails")))
    yield "parse-fails", failing

    types = C.types_builder.compile(checkpointer=saver)
    types.invoke({"ratio": 0.5}, cfg("many-types"))
    yield "many-types", types

    essay = C.make_essay_workflow(saver)
    essay.invoke("bread", cfg("functional-essay"))
    yield "functional-essay", essay


def interrupt_threads(saver) -> Iterator[tuple[str, Any]]:
    """An interrupt inside a subgraph (waiting, resumed); two at once (waiting, resumed one at a
    time by interrupt id)."""
    sub = I.subgraph_builder.compile(checkpointer=saver)
    sub.invoke({"draft": "spring menu"}, cfg("subgraph-waiting"))
    yield "subgraph-waiting", sub
    c = cfg("subgraph-resumed")
    sub.invoke({"draft": "bakery sign"}, c)
    sub.invoke(Command(resume="keep"), c)
    yield "subgraph-resumed", sub

    par = I.parallel_builder.compile(checkpointer=saver)
    par.invoke({"questions": ["price?", "name?"]}, cfg("parallel-waiting"))
    yield "parallel-waiting", par
    c = cfg("parallel-resumed")
    par.invoke({"questions": ["size?", "color?"]}, c)
    for pending in par.get_state(c).interrupts:  # one answer per run, by interrupt id
        par.invoke(Command(resume={pending.id: f"answer to {pending.value}"}), c)
    yield "parallel-resumed", par

    before = I.steps_builder.compile(checkpointer=saver, interrupt_before=["second"])
    before.invoke({"n": 0}, cfg("breakpoint-before"))
    yield "breakpoint-before", before
    c = cfg("breakpoint-resumed")
    before.invoke({"n": 0}, c)
    before.invoke(None, c)
    yield "breakpoint-resumed", before
    after = I.steps_builder.compile(checkpointer=saver, interrupt_after=["first"])
    after.invoke({"n": 0}, cfg("breakpoint-after"))
    yield "breakpoint-after", after


def flow_threads(saver) -> Iterator[tuple[str, Any]]:
    """Retries, a subgraph jumping to its parent, a deferred node, a run saved only at exit."""
    retry = F.retry_builder().compile(checkpointer=saver)
    retry.invoke({"n": 0}, cfg("retried"))
    yield "retried", retry
    jump = F.jump_builder.compile(checkpointer=saver)
    jump.invoke({"n": 0}, cfg("parent-jump"))
    yield "parent-jump", jump
    defer = F.defer_builder.compile(checkpointer=saver)
    defer.invoke({"n": 0}, cfg("deferred"))
    yield "deferred", defer
    at_exit = F.defer_builder.compile(checkpointer=saver)
    at_exit.invoke({"n": 0}, cfg("saved-at-exit"), durability="exit")
    yield "saved-at-exit", at_exit


SAMPLES: dict[str, Callable[[Any], Iterator[tuple[str, Any]]]] = {
    "agent": agent_threads,
    "deep": deep_threads,
    "orchestrator": orchestrator_threads,
    "custom": custom_threads,
    "interrupts": interrupt_threads,
    "flow": flow_threads,
}


# ---------------------------------------------------------------------------------------------
def namespaces(list_rows: Callable[[], list[tuple[str, str]]]) -> list[tuple[str, str]]:
    return sorted(set(list_rows()))


def record(name: str, graphs: dict[str, Any], pairs: list[tuple[str, str]], out: Path) -> int:
    """Write LangGraph's own history of every (thread, namespace) as JSON Lines."""
    count = 0
    with out.open("w") as fh:
        for thread_id, ns in pairs:
            graph = graphs[thread_id]
            config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
            for snap in graph.get_state_history(config):
                fh.write(json.dumps(snapshot_record(snap), ensure_ascii=False, sort_keys=True) + "\n")
                count += 1
    print(f"  {name}: recorded {count} snapshots from LangGraph in {out.name}")
    return count


@contextmanager
def sqlite_saver(path: Path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        yield SqliteSaver(conn), lambda: conn.execute(
            "SELECT DISTINCT thread_id, checkpoint_ns FROM checkpoints").fetchall()
    finally:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")  # a single self-contained file to commit
        conn.close()


@contextmanager
def postgres_saver(url: str):
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        yield saver, lambda: [tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in
                              saver.conn.execute("SELECT DISTINCT thread_id, checkpoint_ns "
                                                 "FROM checkpoints").fetchall()]


def generate(names: list[str], postgres: str | None, out_dir: Path) -> None:
    expected_dir = out_dir / "expected"
    expected_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        print(f"- {name}")
        opener = postgres_saver(postgres) if postgres else sqlite_saver(out_dir / f"{name}.sqlite")
        with opener as (saver, list_rows):
            graphs = dict(SAMPLES[name](saver))
            pairs = [p for p in namespaces(list_rows) if p[0] in graphs]
            suffix = ".postgres" if postgres else ""
            record(name, graphs, pairs, expected_dir / f"{name}{suffix}.jsonl")
    if postgres:  # the rows PostgresSaver wrote, as a dump the tests restore into a fresh database
        dump = out_dir / "postgres.sql"
        subprocess.run(["pg_dump", "--no-owner", "--no-privileges", "--no-comments", "-f", str(dump),
                        postgres], check=True)
        print(f"  dumped the database to {dump.name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"samples to write (default: all of {list(SAMPLES)})")
    parser.add_argument("--postgres", help="write to this Postgres database instead of SQLite")
    parser.add_argument("--out", type=Path, default=HERE, help="folder for the SQLite files")
    args = parser.parse_args()
    unknown = set(args.names) - set(SAMPLES)
    if unknown:
        parser.error(f"unknown sample(s): {sorted(unknown)}")
    generate(args.names or list(SAMPLES), args.postgres, args.out)


if __name__ == "__main__":
    main()
