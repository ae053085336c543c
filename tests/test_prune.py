"""`statectl prune`: a plan, and the SQL that carries it out, which statectl never runs. The SQL
is run here on a copy of real LangGraph databases; then LangGraph's own `get_state` of every
checkpoint that remains is what it was, a thread waiting at an interrupt resumes to the same
result, and a deepagents thread keeps every file and message."""

from __future__ import annotations

import json
import operator
import shutil
import sqlite3
import sys
import warnings
from typing import Annotated, TypedDict

import pytest
from conftest import digest
from parity import SAMPLES
from test_prune_apply import _states

sys.path.insert(0, str(SAMPLES))


def _apply(run, db, *args) -> dict:
    """The plan as JSON, then its SQL run on the file (what the user would do)."""
    before = digest(db)
    plan = json.loads(run("prune", *args, "--json", "--db", str(db)).out)
    script = run("prune", *args, "--sql", "--db", str(db))
    assert script.code == 0
    assert script.out.startswith("BEGIN;")
    assert script.out.rstrip().endswith("COMMIT;")
    assert digest(db) == before  # statectl itself wrote nothing
    with sqlite3.connect(db) as conn:
        conn.executescript(script.out)
    return plan


def test_pruned_threads_read_as_before_and_resume(run, tmp_path):
    import custom_app as C
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import Command

    original, pruned = tmp_path / "original.sqlite", tmp_path / "pruned.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", original)
    shutil.copy(SAMPLES / "custom.sqlite", pruned)
    plan = _apply(run, pruned, "--keep-last", "1")
    dropped = {t["thread_id"]: t["drop"] for t in plan["threads"]}
    assert plan["drop"] > 0
    assert dropped["notes-edits"] > 0
    assert dropped["nested"] > 0
    notes = next(t for t in plan["threads"] if t["thread_id"] == "notes-edits")
    assert notes["kept_because"].get("branch head", 0) >= 1  # (a fork: every branch keeps its head)

    graphs = {
        "notes-edits": C.notes_builder,
        "nested": C.nested_builder,
        "fanout": C.fanout_builder,
        "approval-waiting": C.approval_builder,
        "approval-resumed": C.approval_builder,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a_conn = sqlite3.connect(original, check_same_thread=False)
        b_conn = sqlite3.connect(pruned, check_same_thread=False)
        a_saver, b_saver = SqliteSaver(a_conn), SqliteSaver(b_conn)
        for thread, builder in graphs.items():
            before = _states(a_saver, a_conn, thread)
            after = _states(b_saver, b_conn, thread)
            assert (after and set(after) < set(before)) or not dropped[thread], thread
            assert {k: before[k] for k in after} == after, thread  # every kept checkpoint unchanged
            latest = {"configurable": {"thread_id": thread}}
            assert (
                builder.compile(checkpointer=a_saver).get_state(latest).values
                == builder.compile(checkpointer=b_saver).get_state(latest).values
            )
        resumed = []
        for saver in (a_saver, b_saver):  # the waiting thread resumes to the same result
            graph = C.approval_builder.compile(checkpointer=saver)
            resumed.append(graph.invoke(Command(resume="yes"), {"configurable": {"thread_id": "approval-waiting"}}))
        assert resumed[0] == resumed[1]
        assert resumed[0]["decision"] == "yes"
        a_conn.close()
        b_conn.close()


def test_a_deepagents_thread_keeps_its_files_and_messages(run, tmp_path):
    """Delta channels are rebuilt from ancestors: the plan keeps them, and what LangGraph reads
    at the newest checkpoint (files, messages, todos) is unchanged after the SQL ran."""
    from deep_app import make_deep_agent
    from langgraph.checkpoint.sqlite import SqliteSaver

    original, pruned = tmp_path / "original.sqlite", tmp_path / "pruned.sqlite"
    shutil.copy(SAMPLES / "deep.sqlite", original)
    shutil.copy(SAMPLES / "deep.sqlite", pruned)
    plan = _apply(run, pruned, "--keep-last", "1")
    thread = next(t for t in plan["threads"] if t["thread_id"] == "deep-research")
    assert thread["kept_because"].get("delta-channel ancestor", 0) > 0
    config = {"configurable": {"thread_id": "deep-research"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values = []
        for db in (original, pruned):
            conn = sqlite3.connect(db, check_same_thread=False)
            values.append(make_deep_agent([], SqliteSaver(conn)).get_state(config).values)
            conn.close()
    assert values[0] == values[1]
    assert values[1]["files"]
    assert values[1]["messages"]


def test_plan_is_said_and_nothing_is_written(run, dbs, tmp_path):
    db = dbs["agent"]
    before = digest(db)
    human = run("prune", "--keep-last", "5", "--db", str(db))
    assert human.code == 0
    assert "Nothing was changed" in " ".join(human.out.split())
    assert "bakery-plan" in human.out
    assert digest(db) == before
    one = json.loads(run("prune", "--older-than", "1h", "--thread", "bakery", "--json", "--db", str(db)).out)
    assert [t["thread_id"] for t in one["threads"]] == ["bakery-plan"]
    assert one["applied"] is False
    assert one["threads"][0]["keep"] >= 1  # (its newest, whatever its age)
    recent = json.loads(run("prune", "--older-than", "3650d", "--json", "--db", str(db)).out)
    assert recent["drop"] == 0  # nothing is that old


@pytest.mark.parametrize(
    "args, code",
    [([], 2), (["--keep-last", "2", "--older-than", "soon"], 2), (["--keep-last", "2", "--thread", "nope"], 3)],
)
def test_prune_usage_errors(run, dbs, args, code):
    r = run("prune", *args, "--db", str(dbs["agent"]))
    assert r.code == code
    assert len(r.err.splitlines()) == 1
    assert r.err.startswith("statectl: ")


def test_keep_last_0_says_why_it_is_not_allowed(run, dbs):
    """`--keep-last 0` answered "say how much history to keep" as if nothing were given."""
    for more in ([], ["--apply", "--yes"], ["--json"]):
        r = run("prune", "--keep-last", "0", *more, "--db", str(dbs["agent"]))
        assert r.code == 2
        assert len(r.err.splitlines()) == 1
        assert r.err.startswith("statectl: --keep-last 0 keeps no history, and prune never deletes a namespace's")
        assert "--keep-last 1 keeps only the newest" in r.err
    with_age = run("prune", "--keep-last", "0", "--older-than", "30d", "--db", str(dbs["agent"]))
    assert with_age.code == 0, with_age.err  # (0 with an age: no bound by count, as before)


def test_an_export_is_not_pruned(run, dbs, tmp_path):
    exported = tmp_path / "all.json"
    assert run("export", "--all", "-o", str(exported), "--db", str(dbs["agent"])).code == 0
    r = run("prune", "--keep-last", "1", "--db", str(exported))
    assert r.code == 2
    assert "prune plans SQLite files and Postgres" in r.err


def test_postgres_plan_and_sql(run, pg_scratch):
    """On PostgresSaver's tables: the SQL also drops the blob versions no remaining checkpoint
    names; every remaining checkpoint still reads as LangGraph recorded it, and the waiting
    approval resumes."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.types import Command
    from parity import check, expected

    import statectl

    plan = json.loads(run("prune", "--keep-last", "2", "--json", "--db", pg_scratch).out)
    script = run("prune", "--keep-last", "2", "--sql", "--db", pg_scratch).out
    assert plan["drop"] > 0
    assert "DELETE FROM checkpoint_blobs" in script
    orphans = (
        "SELECT count(*) FROM checkpoint_blobs b WHERE NOT EXISTS (SELECT 1 FROM checkpoints c WHERE "
        "c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns AND "
        "c.checkpoint->'channel_versions'->>b.channel = b.version)"
    )
    with psycopg.connect(pg_scratch) as conn:
        blobs = conn.execute("SELECT count(*) FROM checkpoint_blobs").fetchone()[0]
        orphaned = conn.execute(orphans).fetchone()[0]
        conn.execute(script.replace("BEGIN;", "").replace("COMMIT;", ""))
        assert conn.execute("SELECT count(*) FROM checkpoint_blobs").fetchone()[0] < blobs
        assert conn.execute(orphans).fetchone()[0] == orphaned  # what the deleted named went with them
        left = {tuple(r) for r in conn.execute("SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints")}
    records = [
        e
        for db in ("agent", "custom", "deep", "flow", "interrupts", "orchestrator")
        for e in expected(db, ".postgres")
        if (e["thread_id"], e["checkpoint_ns"], e["checkpoint_id"]) in left
    ]
    with statectl.open(pg_scratch) as store:
        assert check(store, records) == len(left)
    import custom_app as C

    with PostgresSaver.from_conn_string(pg_scratch) as saver:
        graph = C.approval_builder.compile(checkpointer=saver)
        out = graph.invoke(Command(resume="yes"), {"configurable": {"thread_id": "approval-waiting"}})
    assert out["decision"] == "yes"
    assert "Published" in out["messages"][-1].content


def test_hostile_thread_ids_are_named_exactly_and_never_printed_raw(run, dbs, pg_server):
    """A thread id holding an escape sequence and markup: the plan shows it escaped, and the SQL
    names it by the hex of its bytes (no raw ESC reaches the terminal), which both databases read
    back as the same id."""
    import psycopg

    from statectl.core.store_kinds import STORE_KINDS

    evil = "[red]x[/] \x1b[2J\x1b]0;pwn\x07 \u202e"
    db = dbs["agent"]
    with sqlite3.connect(db) as conn:
        for table in ("checkpoints", "writes"):
            conn.execute(f"UPDATE {table} SET thread_id = ? WHERE thread_id = 'bakery-plan'", (evil,))
    human = run("prune", "--keep-last", "2", "--db", str(db))
    assert "\x1b" not in human.out
    assert "\\x1b" in human.out
    assert "[red]x[/]" in human.out
    script = run("prune", "--keep-last", "2", "--sql", "--db", str(db)).out
    assert "\x1b" not in script
    assert "\u202e" not in script
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = ?", (evil,)).fetchone()[0]
        conn.executescript(script)
        assert conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = ?", (evil,)).fetchone()[0] == 2 < before
        assert conn.execute(f"SELECT {STORE_KINDS['sqlite'].literal(evil)} = ?", (evil,)).fetchone()[0] == 1
    with psycopg.connect("postgresql:///postgres") as conn:
        assert conn.execute(f"SELECT {STORE_KINDS['postgres'].literal(evil)}").fetchone()[0] == evil
        quoted = STORE_KINDS["postgres"].literal("it's")
        assert conn.execute(f"SELECT {quoted}").fetchone()[0] == "it's"


class Counter(TypedDict):
    n: Annotated[int, operator.add]


def test_postgres_sql_means_the_same_whatever_the_server_settings(run, pg_empty):
    """A thread id crafted to end a standard '...' literal early when the server reads strings
    the old way (standard_conforming_strings=off: a backslash escapes the quote) and then match
    every thread. The script's literals read the same either way: run without its own SET line,
    under `off`, it deletes exactly the planned checkpoints of that thread, and the other thread
    keeps all of its checkpoints."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(Counter)
    g.add_node("step", lambda s: {"n": 1})
    g.add_edge(START, "step")
    g.add_edge("step", END)
    crafted = "x\\' OR true --"
    with PostgresSaver.from_conn_string(pg_empty) as saver:
        saver.setup()
        graph = g.compile(checkpointer=saver)
        for thread in (crafted, "bystander"):
            for _ in range(3):
                graph.invoke({"n": 1}, {"configurable": {"thread_id": thread}})
    with psycopg.connect(pg_empty) as conn:
        counts = dict(conn.execute("SELECT thread_id, count(*) FROM checkpoints GROUP BY thread_id").fetchall())
    assert counts == {crafted: 9, "bystander": 9}
    script = run("prune", "--keep-last", "2", "--thread", crafted, "--sql", "--db", pg_empty).out
    assert script.startswith("SET standard_conforming_strings = on;\nBEGIN;\n")
    plan = json.loads(run("prune", "--keep-last", "2", "--thread", crafted, "--json", "--db", pg_empty).out)
    with psycopg.connect(pg_empty, autocommit=True) as conn:
        conn.execute("SET standard_conforming_strings = off")
        conn.execute("SET escape_string_warning = off")
        body = script.replace("SET standard_conforming_strings = on;\n", "")
        conn.execute(body.replace("BEGIN;", "").replace("COMMIT;", ""))
        after = dict(conn.execute("SELECT thread_id, count(*) FROM checkpoints GROUP BY thread_id").fetchall())
    assert after == {crafted: 9 - plan["drop"], "bystander": 9}
    assert plan["drop"] > 0


def test_the_plans_bytes_are_the_dropped_rows_bytes(run, dbs):
    """The bytes a plan frees: the dropped checkpoints' blobs and their writes' values, as the rows
    measure them (SQL length(), a few hundred checkpoints a query: no blob read into Python)."""
    import sqlite3

    freed = 0
    for name in ("agent", "deep", "custom"):
        db = dbs[name]
        plan = json.loads(run("prune", "--keep-last", "1", "--json", "--db", str(db)).out)
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        for thread in plan["threads"]:
            expected = 0
            for d in thread["dropped"]:
                key = (thread["thread_id"], d["checkpoint_ns"], d["checkpoint_id"])
                (blob,) = conn.execute(
                    "SELECT checkpoint FROM checkpoints WHERE thread_id=? AND checkpoint_ns=? AND checkpoint_id=?", key
                ).fetchone()
                values = conn.execute(
                    "SELECT value FROM writes WHERE thread_id=? AND checkpoint_ns=? AND checkpoint_id=?", key
                ).fetchall()
                expected += len(blob) + sum(len(v or b"") for (v,) in values)
            assert thread["bytes"] == expected, (name, thread["thread_id"])
        freed += plan["bytes"]
        conn.close()
    assert freed > 0


def test_the_plan_as_json_is_written_thread_by_thread_as_one_document(run, dbs):
    """`prune --json` writes each thread's plan as it is made (memory: one thread's plan), and the
    document is the plans of every thread with their totals, as the core makes them."""
    import statectl
    from statectl.core import prune as core

    for name in ("agent", "custom", "interrupts"):
        db = str(dbs[name])
        r = run("prune", "--keep-last", "1", "--json", "--db", db)
        assert r.code == 0, r.err
        assert r.out.endswith("}\n")
        with statectl.open(db) as store:
            plans = [core.plan_thread(store, t, 1, None).to_json() for t in store.source.thread_ids("", 1 << 62)]
            label = store.label
        assert json.loads(r.out) == {
            "db": label,
            "threads": plans,
            "drop": sum(p["drop"] for p in plans),
            "bytes": sum(p["bytes"] for p in plans),
            "applied": False,
        }
