"""Every command, human and --json, through the real entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import check_status_filter, thread_pages
from parity import expected, normal


def test_threads_json_contract(run, dbs):
    r = run("threads", "--db", str(dbs["agent"]), "--json")
    assert r.code == 0, r.err
    rows = json.loads(r.out)
    base = {"thread_id", "checkpoints", "namespaces", "latest_checkpoint_id", "updated_at", "status", "preview"}
    fields = {x["thread_id"]: set(x) for x in rows}
    assert fields == {
        "bakery-plan": base,
        "hola-panaderia": base,
        "investor-email": base | {"interrupt"},
        "market-lookup-fails": base | {"error", "error_node"},
    }
    status = {x["thread_id"]: x["status"] for x in rows}
    assert status == {
        "bakery-plan": "done",
        "hola-panaderia": "done",
        "investor-email": "interrupted",
        "market-lookup-fails": "error",
    }
    latest = {e["thread_id"]: e["checkpoint_id"] for e in reversed(expected("agent"))}
    assert all(x["latest_checkpoint_id"] == latest[x["thread_id"]] for x in rows)


def test_threads_status_custom(run, dbs):
    rows = json.loads(run("threads", "--db", str(dbs["custom"]), "--json").out)
    status = {x["thread_id"]: x["status"] for x in rows}
    assert status["approval-waiting"] == "interrupted"
    assert status["parse-fails"] == "error"
    assert status["approval-resumed"] == "done"
    assert {x["thread_id"]: x["namespaces"] for x in rows}["nested"] == 3


def test_threads_human(run, dbs):
    r = run("threads", "--db", str(dbs["agent"]))
    assert r.code == 0
    import re

    # each thread on its own row with its own status (not the word anywhere in the output)
    for thread, status in [
        ("investor-email", "interrupted"),
        ("market-lookup-fails", "error"),
        ("bakery-plan", "done"),
        ("hola-panaderia", "done"),
    ]:
        assert re.search(rf"^{thread}\s+{status}\s+\d+\s+1\s+\d+\s", r.out, re.M), (thread, r.out)


def test_log_json_is_get_state_history(run, dbs):
    r = run("log", "approval-resumed", "--db", str(dbs["custom"]), "--json")
    assert r.code == 0, r.err
    got = [json.loads(line) for line in r.out.splitlines()]
    want = [e for e in expected("custom") if e["thread_id"] == "approval-resumed"]
    assert [g.pop("inferred", []) for g in got][-1] == ["messages"]  # (the input checkpoint's)
    for g in got:
        for t in g["tasks"]:
            t.pop("subgraph_ns", None)
    assert normal(got) == normal(want)


def test_log_namespace(run, dbs):
    ns = next(e["checkpoint_ns"] for e in expected("deep") if e["checkpoint_ns"])
    r = run("log", "deep-research", "--db", str(dbs["deep"]), "--ns", ns, "--json")
    assert r.code == 0, r.err
    assert {json.loads(line)["checkpoint_ns"] for line in r.out.splitlines()} == {ns}


def test_log_human_marks_branches_errors_interrupts(run, dbs):
    r = run("log", "notes-edits", "--db", str(dbs["custom"]))
    assert r.code == 0, r.err
    assert "branches" in r.out
    assert "fork" in r.out
    assert "update" in r.out
    r = run("log", "parse-fails", "--db", str(dbs["custom"]))
    assert "error in parse: ValueError" in r.out
    assert "parse" in r.out
    r = run("log", "approval-waiting", "--db", str(dbs["custom"]))
    assert "interrupt:" in r.out


def test_show_json_latest_equals_langgraph(run, dbs):
    r = run("show", "market-lookup-fails", "--db", str(dbs["agent"]), "--json")
    assert r.code == 0, r.err
    got = json.loads(r.out)
    want = next(e for e in expected("agent") if e["thread_id"] == "market-lookup-fails")
    assert normal(got) == normal(want)
    assert got["tasks"][0]["error"].startswith("RuntimeError(")


def test_show_human_transcript_todos_files(run, dbs):
    r = run("show", "bakery-plan", "--db", str(dbs["agent"]))
    assert r.code == 0, r.err
    assert "tool send_email" in r.out
    assert "→ send_email(" in r.out
    assert "☑ Email the cofounder" in r.out
    r = run("show", "deep-research", "--db", str(dbs["deep"]))
    assert "plan.md" in r.out
    assert "budget.md" in r.out
    assert "notes/" in r.out


def test_show_pending_interrupt_is_visible(run, dbs):
    r = run("show", "investor-email", "--db", str(dbs["agent"]))
    assert r.code == 0
    assert "interrupt" in r.out
    assert "investors@example.com" in r.out


def test_show_selectors(run, dbs):
    db = str(dbs["custom"])
    history = [e for e in expected("custom") if e["thread_id"] == "fanout"]
    first = history[-1]["checkpoint_id"]
    for sel in (first, first[:-4], first[-12:], "-1"):
        r = run("show", "fanout", "--db", db, "--json", "--", sel)  # "--" lets a step be -1
        assert r.code == 0, (sel, r.err)
        assert json.loads(r.out)["checkpoint_id"] == first
    assert (
        json.loads(run("show", "fanout", "latest", "--db", db, "--json").out)["checkpoint_id"]
        == history[0]["checkpoint_id"]
    )


def test_show_ambiguous_step_names_candidates(run, dbs):
    r = run("show", "notes-edits", "2", "--db", str(dbs["custom"]))
    assert r.code == 3
    assert r.err.count("\n") == 1
    assert "step 2 is ambiguous" in r.err
    for e in expected("custom"):
        if e["thread_id"] == "notes-edits" and e["metadata"]["step"] == 2:
            assert e["checkpoint_id"] in r.err


def test_show_key(run, dbs):
    r = run("show", "many-types", "--db", str(dbs["custom"]), "--key", "ident", "--json")
    assert json.loads(r.out)["values"] == {"ident": {"$uuid": "12345678-1234-5678-1234-567812345678"}}
    r = run("show", "many-types", "--db", str(dbs["custom"]), "--key", "nope")
    assert r.code == 3
    assert "no state key 'nope'" in r.err


def test_tagged_values(run, dbs):
    values = json.loads(run("show", "many-types", "--db", str(dbs["custom"]), "--json").out)["values"]
    assert values["when"] == {"$datetime": "2026-11-01T12:00:05.123456+02:00"}
    assert values["day"] == {"$date": "2026-11-01"}
    assert values["price"] == {"$decimal": "19.99"}
    assert values["tags"] == {"$set": ["urgent"]}
    assert values["blob"] == {"$bytes": "AAFiaW5hcnn/"}
    assert values["by_id"] == {"$dict": [[1, "one"], [2, "two"]]}
    assert values["pair"] == [1, "one"]
    assert values["level"] == {"$type": "custom_app.Level", "arg": 20}
    assert values["customer"]["$type"] == "custom_app.Customer"
    assert values["customer"]["data"]["address"] == {"street": "1 Loop Rd", "city": "Zurich"}


def test_export_roundtrip(run, dbs, tmp_path):
    out = tmp_path / "bug-report.json"
    r = run("export", "bakery-plan", "-o", str(out), "--db", str(dbs["agent"]))
    assert r.code == 0, r.err
    a = run("log", "bakery-plan", "--json", "--db", str(dbs["agent"])).out
    b = run("log", "bakery-plan", "--json", "--db", str(out)).out
    assert a == b
    assert a
    rows = json.loads(run("threads", "--json", "--db", str(out)).out)
    assert [x["thread_id"] for x in rows] == ["bakery-plan"]


def test_db_from_environment(run, dbs, monkeypatch):
    monkeypatch.setenv("STATECTL_DB", str(dbs["orchestrator"]))
    rows = json.loads(run("threads", "--json").out)
    assert [x["thread_id"] for x in rows] == ["orchestrate-bakery"]


@pytest.mark.parametrize("command", [["threads"], ["log", "x"], ["show", "x"]])
def test_no_database_anywhere(run, tmp_path, monkeypatch, command):
    monkeypatch.delenv("STATECTL_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    r = run(*command)
    assert r.code == 2
    assert r.err.startswith("statectl: no database given")
    assert "checkpoints.sqlite" in r.err
    assert list(tmp_path.iterdir()) == []


def test_threads_limit(run, dbs):
    r = run("threads", "--db", str(dbs["custom"]), "--limit", "2")
    assert "8 threads" in r.out
    assert "2 shown; next page: --after many-types" in r.out
    assert len(r.out.splitlines()) == 2 + 2  # title, header, two rows
    assert len(run("threads", "--db", str(dbs["custom"])).out.splitlines()) == 2 + 8


def test_threads_pages_with_after(run, dbs):
    db = str(dbs["custom"])
    everything = [t["thread_id"] for t in json.loads(run("threads", "--db", db, "--json").out)]
    pages = thread_pages(run, db, 3)
    assert [len(p) for p in pages] == [3, 3, 2]
    assert [t for p in pages for t in p] == everything
    r = run("threads", "--db", db, "--after", "nope")
    assert r.code == 3
    assert r.err.count("\n") == 1
    assert "no thread 'nope' to page after" in r.err
    r = run("threads", "--db", db, "--limit", "-1")
    assert r.code != 0
    assert r.err.count("\n") == 1


def test_piped_tables_keep_whole_cells(dbs):
    """Into a pipe with no COLUMNS, tables are not squeezed to 80 columns: every cell is whole;
    with COLUMNS (a terminal's width), the time column gives way and node names fold, never cut."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    argv = [sys.executable, "-m", "statectl", "log", "bakery-plan", "--db", str(dbs["agent"])]
    piped = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert piped.returncode == 0
    assert "…" not in piped.stdout
    assert "HumanInTheLoopMiddleware.after_model" in piped.stdout
    assert max(len(line) for line in piped.stdout.splitlines()) > 80
    narrow = subprocess.run(argv, capture_output=True, text=True, env={**env, "COLUMNS": "80"}, timeout=60)
    assert "…" not in narrow.stdout
    assert "(left out at 80 columns: TIME (UTC)" in narrow.stdout
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 80


def test_threads_match(run, dbs, tmp_path):
    """--match keeps the thread ids containing the text, ignoring case; LIKE's % and _ are
    plain characters; the same on SQLite and export files."""
    export = tmp_path / "all.json"
    assert run("export", "--all", "--db", str(dbs["custom"]), "-o", str(export)).code == 0
    for db in (str(dbs["custom"]), str(export)):

        def ids(*a: str, db: str = db) -> list[str]:
            return [t["thread_id"] for t in json.loads(run("threads", "--db", db, "--json", *a).out)]

        assert ids("--match", "APPROVAL") == ["approval-waiting", "approval-resumed"]
        assert ids("-m", "es", "--sort", "id") == [
            "approval-resumed",
            "functional-essay",
            "many-types",
            "nested",
            "notes-edits",
        ]
        assert ids("-m", "%") == []
        assert ids("-m", "_") == []
        assert ids("-m", "es", "--sort", "id", "--limit", "2", "--after", "many-types") == ["nested", "notes-edits"]
    r = run("threads", "--db", str(dbs["custom"]), "-m", "fan")
    assert "1 thread matching 'fan' in" in r.out
    assert "fanout" in r.out


@pytest.mark.parametrize("command", ["threads", "log", "show", "diff", "log -p"])
def test_data_that_looks_like_markup_is_printed_as_written(run, markup_db, command):
    db, thread, key = markup_db
    name, *flags = command.split()
    r = run(name, *([] if name == "threads" else [thread]), *flags, "--db", str(db))
    assert r.code == 0, r.err
    assert thread in r.out  # not a MarkupError, not "run  😄"
    if name != "threads":
        assert key in r.out
        assert "👍" not in r.out
        assert "😄" not in r.out
    if name in ("show", "diff"):
        assert "closing [/b] tag :thumbs_up:" in r.out


def test_show_names_each_waiting_interrupt_with_the_id_to_resume_it(run, dbs):
    """Two Send tasks wait at once: Command(resume={id: answer}) needs each interrupt's id."""
    r = run("show", "parallel-waiting", "--db", str(dbs["interrupts"]))
    assert r.code == 0, r.err
    latest = next(e for e in expected("interrupts") if e["thread_id"] == "parallel-waiting")
    assert len(latest["interrupts"]) == 2
    for i in latest["interrupts"]:
        line = next(line for line in r.out.splitlines() if f"id {i['id']}" in line)
        assert "interrupt" in line
        assert i["value"] in line


def test_a_thread_at_a_static_breakpoint(run, dbs):
    """interrupt_before/interrupt_after leave no write: `threads` reads the tasks the newest
    checkpoint plans (none begun) and lists the thread as interrupted, not done; `show` gives the
    node it waits before, as LangGraph does."""
    db = str(dbs["interrupts"])
    status = {t["thread_id"]: t["status"] for t in json.loads(run("threads", "--db", db, "--json").out)}
    assert status["breakpoint-before"] == status["breakpoint-after"] == "interrupted"
    assert status["breakpoint-resumed"] == "done"
    for thread in ("breakpoint-before", "breakpoint-after"):
        latest = next(e for e in expected("interrupts") if e["thread_id"] == thread)
        assert latest["next"] == ["second"]
        assert latest["interrupts"] == []
        shown = json.loads(run("show", thread, "--db", db, "--json").out)
        assert shown["next"] == latest["next"]
        human = run("show", thread, "--db", db).out  # the header says the run stopped there
        assert "stopped  before second ran: a static breakpoint" in " ".join(human.split("│"))
    older = run("show", "breakpoint-before", "0", "--db", db).out  # next `first`, but not the end
    done = run("show", "breakpoint-resumed", "--db", db).out
    waiting = run("show", "parallel-waiting", "--db", db).out  # an interrupt is not a stop
    assert "stopped" not in older + done + waiting


def test_log_says_when_earlier_steps_were_not_saved(run, dbs):
    """durability='exit' saves the final checkpoint alone: its step is 2 and it has no parent."""
    r = run("log", "saved-at-exit", "--db", str(dbs["flow"]))
    assert r.code == 0, r.out
    assert "(1 checkpoint)" in r.out, r.out
    assert "first saved checkpoint" in r.out, r.out
    assert "first saved" not in run("log", "deferred", "--db", str(dbs["flow"])).out


@pytest.mark.parametrize("name", ["custom", "interrupts", "agent"])
def test_threads_status_filter(run, dbs, tmp_path, name):
    assert check_status_filter(run, str(dbs[name])) > 0
    exported = tmp_path / "all.json"
    assert run("export", "--all", "-o", str(exported), "--db", str(dbs[name])).code == 0
    assert check_status_filter(run, str(exported)) > 0
    r = run("threads", "--status", "error", "--db", str(dbs[name]))
    assert r.code == 0
    assert "error in" in r.out.splitlines()[0]
    bad = run("threads", "--status", "failed", "--db", str(dbs[name]))
    assert bad.code != 0
    assert bad.err.count("\n") == 1
    assert "done, interrupted, error or pending" in bad.err


def test_log_decodes_no_checkpoint(dbs):
    """`log` reads metadata and writes only: telling the pre-0.3 layout's node channels from
    state must not decode the newest checkpoint where the writes carry task paths. The one
    exception: a step whose writes may have left a key as it was (a message id written again)
    is compared value by value, reading that checkpoint and its parent, and no other."""
    import statectl
    from statectl.core.timeline import entries

    with statectl.open(str(dbs["agent"])) as store:
        decoded = []
        read = store.source.checkpoint
        store.source.checkpoint = lambda *a, **k: decoded.append(a[2]) or read(*a, **k)
        assert len(entries(store.view("hola-panaderia"))) == 8
        assert decoded == []
        ents = entries(store.view("bakery-plan"))
        assert len(ents) > 30
        step = {e.record.checkpoint_id: e.record.step for e in ents}
        assert sorted(step[c] for c in decoded) == [22, 23]  # HITL wrote the AI message back at 23


def test_thread_ids_accept_a_unique_prefix_and_suggest(run, dbs, tmp_path):
    """A unique prefix names the thread in every command; an ambiguous one lists the candidates
    (exit 3); a typo suggests the closest ids (exit 3). The same on SQLite and an export."""
    db = str(dbs["custom"])
    exported = tmp_path / "custom.json"
    assert run("export", "--all", "-o", str(exported), "--db", db).code == 0
    for source in (db, str(exported)):
        r = run("log", "notes-e", "--db", source)
        assert r.code == 0, r.err
        assert r.out.startswith("thread notes-edits  (12 checkpoints)"), r.err
        assert json.loads(run("show", "notes", "--json", "--db", source).out)["thread_id"] == "notes-edits"
        assert run("diff", "notes-e", "--json", "--db", source).code == 0
        r = run("log", "approval", "--db", source)
        assert r.code == 3
        assert r.err.startswith("statectl: thread 'approval' is ambiguous: ")
        assert "approval-resumed" in r.err
        assert "approval-waiting" in r.err
        r = run("show", "notes-edist", "--db", source)
        assert r.code == 3
        assert "did you mean notes-edits?" in r.err
    out = tmp_path / "one.json"
    assert run("export", "fan", "-o", str(out), "--db", db).code == 0
    assert [t["thread_id"] for t in json.loads(out.read_text())["threads"]] == ["fanout"]


def test_version_and_short_help(run):
    from statectl import __version__

    r = run("--version")
    assert (r.code, r.out) == (0, f"statectl {__version__}\n")
    for args in (["-h"], ["log", "-h"], ["show", "-h"]):
        r = run(*args)
        assert r.code == 0, args
        assert r.out.startswith("Usage: statectl"), args


PREVIEWS = {
    "agent": {
        "market-lookup-fails": "✖ tools: RuntimeError(\"market data service unavailable for region 'Porto'\")",
        "investor-email": "⏸ send_email",
        "bakery-plan": "I want to open a bakery in Lisbon. Help me shape the idea.",
    },
    "custom": {
        "approval-waiting": "⏸ Publish this draft?",
        "nested": "question: why is sourdough sour?",
        "fanout": "items: [3 items]",
    },
    "json_rows": {"legacy-done": "look up sourdough"},
}


@pytest.mark.parametrize("name", sorted(PREVIEWS))
def test_threads_preview_tells_threads_apart(run, dbs, tmp_path, name):
    """PREVIEW: the error, the pending interrupt, else the first user message (or the input's
    fields); the same from the database and from an export of it."""
    samples = Path(__file__).resolve().parent.parent / "sample_threads"
    db = str(dbs[name]) if name in dbs else str(samples / f"{name}.sqlite")
    exported = tmp_path / "all.json"
    assert run("export", "--all", "-o", str(exported), "--db", db).code == 0
    for source in (db, str(exported)):
        r = run("threads", "--db", source)
        assert r.code == 0
        assert "PREVIEW" in r.out.splitlines()[1]
        lines = {line.split()[0]: line for line in r.out.splitlines()[2:]}
        for tid, text in PREVIEWS[name].items():
            assert lines[tid].rstrip().endswith("  " + text), (source, lines[tid])


def test_log_filters_like_git(run, dbs):
    """-n, --node, -S/--changed, --grep and --oneline select and shorten as git log does, the
    same in the table, -p and --json; the time column carries the date."""
    db = str(dbs["agent"])
    full = json.loads("[" + ",".join(run("log", "bakery-plan", "--json", "--db", db).out.split("\n")[:-1]) + "]")
    assert len(full) == 36

    r = run("log", "bakery-plan", "-n", "3", "--db", db)
    assert r.code == 0
    assert r.out.startswith("thread bakery-plan  (3 of 36 checkpoints)")
    assert "TIME (UTC)" in r.out
    assert "2026-11-22 15:44:47" in r.out
    assert len(r.out.strip().splitlines()) == 5  # title, header, 3 rows

    tools = run("log", "bakery-plan", "--node", "tools", "--oneline", "--db", db).out.splitlines()
    assert len(tools) == 4
    assert all(line.split()[5] == "tools" for line in tools)

    oneline = run("log", "bakery-plan", "-S", "todos", "--oneline", "--db", db).out
    ids = [line.split()[0] for line in oneline.splitlines()]
    as_json = [
        json.loads(line)["checkpoint_id"][-12:]
        for line in run("log", "bakery-plan", "--changed", "todos", "--json", "--db", db).out.splitlines()
    ]
    assert ids == as_json
    assert 0 < len(ids) < 36

    for how in (["--oneline"], ["--json"], [], ["-p"]):  # a key no checkpoint holds: said, with the closest
        typo = run("log", "bakery-plan", "-S", "todo", *how, "--db", db)
        assert typo.code == 3, (how, typo.out)
        assert typo.err == "statectl: no state key 'todo' in thread bakery-plan (did you mean todos?)\n"
        assert typo.out == ""
    far = run("log", "bakery-plan", "--changed", "zzz", "--db", db)
    assert far.code == 3
    assert far.err.startswith("statectl: no state key 'zzz' in thread bakery-plan (its keys: ")
    assert "todos" in far.err
    none_here = run("log", "bakery-plan", "-S", "todos", "--node", "__start__", "--db", db)  # a key, no match
    assert none_here.code == 0, none_here.err
    assert "(0 of 36 checkpoints)" in none_here.out

    found = run("log", "bakery-plan", "--grep", "SOURDOUGH", "--json", "--db", db).out
    hits = [json.loads(line) for line in found.splitlines()]
    assert hits
    assert all("sourdough" in json.dumps(h["values"]).lower() for h in hits)
    missed = [s for s in full if s["checkpoint_id"] not in {h["checkpoint_id"] for h in hits}]
    assert missed
    assert not any("sourdough" in json.dumps(s["values"], ensure_ascii=False).lower() for s in missed)

    patch = run("log", "bakery-plan", "-p", "--node", "tools", "-n", "1", "--db", db).out
    assert patch.count("\nstep ") + patch.startswith("step ") == 1
    assert "ran: tools" in patch
    assert run("log", "bakery-plan", "-n", "-1", "--db", db).code == 2
    assert run("log", "bakery-plan", "--node", "nobody", "--oneline", "--db", db).out == ""


def test_log_local_time(run, dbs, monkeypatch):
    import time

    monkeypatch.setenv("TZ", "Asia/Kolkata")  # UTC+05:30, no daylight saving
    time.tzset()
    try:
        r = run("log", "bakery-plan", "-n", "1", "--local", "--db", str(dbs["agent"]))
        assert "TIME (LOCAL)" in r.out
        assert "2026-11-22 21:14:47" in r.out
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


@pytest.fixture(scope="module")
def ops_db(tmp_path_factory):
    """Threads of real runs for operational questions: users in the run's config, a node that
    raises, an interrupt; all written now."""
    from typing import TypedDict

    from conftest import one_node_runs
    from langgraph.types import interrupt

    class S(TypedDict):
        n: int

    def fetch(s: S) -> dict:
        if s["n"] < 0:
            raise RuntimeError("upstream down")
        if s["n"] == 7:
            interrupt("approve?")
        return {"n": s["n"] + 1}

    runs = [
        ({"n": n}, {"configurable": {"thread_id": tid, "user_id": user}, "metadata": {"tenant": "acme"}})
        for tid, user, n in (("ok-1", "u-1", 0), ("ok-2", "u-2", 0), ("fails", "u-1", -1), ("waits", "u-2", 7))
    ]
    return one_node_runs(tmp_path_factory.mktemp("ops") / "ops.sqlite", S, fetch, runs, ignore=(RuntimeError,))


def _ids(run, *args: str) -> list[str]:
    r = run("threads", "--json", *args)
    assert r.code in (0, 1), r.err
    return sorted(t["thread_id"] for t in json.loads(r.out))


def test_threads_operational_filters(run, ops_db, dbs):
    db = ("--db", str(ops_db))
    assert _ids(run, *db, "--meta", "user_id=u-1") == ["fails", "ok-1"]
    assert _ids(run, *db, "--meta", "user_id=u-2", "--meta", "tenant=acme") == ["ok-2", "waits"]
    assert _ids(run, *db, "--meta", "tenant=other") == []
    assert _ids(run, *db, "--failed-node", "fetch") == ["fails"]
    assert _ids(run, *db, "--failed-node", "other") == []
    assert _ids(run, *db, "--since", "1h") == ["fails", "ok-1", "ok-2", "waits"]
    assert _ids(run, *db, "--older-than", "1h") == []
    # written 2026-11-22 15:44:47-48: every sample thread is older than an hour
    agent = ("--db", str(dbs["agent"]))
    assert _ids(run, *agent, "--older-than", "1h") == [
        "bakery-plan",
        "hola-panaderia",
        "investor-email",
        "market-lookup-fails",
    ]
    assert _ids(run, *agent, "--until", "2026-11-22T15:44:48") == ["bakery-plan"]
    assert _ids(run, *agent, "--since", "2026-11-22T15:44:48", "-s", "error,interrupted") == [
        "investor-email",
        "market-lookup-fails",
    ]

    for t in json.loads(run("threads", "--json", *agent).out):  # (bounds taken from the ids, inclusive)
        assert t["thread_id"] in _ids(run, *agent, "--since", t["updated_at"])
        assert t["thread_id"] in _ids(run, *agent, "--until", t["updated_at"])

    # a cron alert: exit 1 when a waiting thread is older than 2 hours, 0 when none is
    stuck = run("threads", "-s", "interrupted", "--older-than", "2h", "--exit-code", *agent)
    assert stuck.code == 1
    assert "investor-email" in stuck.out
    fresh = run("threads", "-s", "interrupted", "--older-than", "2h", "--exit-code", *db)
    assert fresh.code == 0
    assert fresh.out.startswith("0 threads interrupted in")
    assert "THREAD" not in fresh.out
    assert run("threads", "-s", "interrupted", "--exit-code", "--json", *db).code == 1

    paged = run("threads", "--meta", "tenant=acme", "--limit", "2", *db)
    assert paged.code == 0
    assert "(2 shown; next page: --after" in paged.out
    for bad in (["--since", "yesterday"], ["--meta", "user_id"], ["--older-than", "2 hours"]):
        r = run("threads", *bad, *db)
        assert r.code == 2, bad
        assert r.err.startswith("statectl: "), bad
        assert len(r.err.splitlines()) == 1, bad


def test_output_into_a_pipe_is_whole_lines(run, dbs):
    """Not a terminal: no line padded with blanks, none wrapped at 80 columns, so that
    `log -p T | grep "ran: tools"` finds every step that ran tools."""
    db = str(dbs["agent"])
    tools = run("log", "bakery-plan", "--node", "tools", "--oneline", "--no-pager", "--db", db).out.splitlines()
    for args in (
        ["log", "bakery-plan", "-p"],
        ["show", "bakery-plan"],
        ["diff", "bakery-plan", "10"],
        ["threads"],
        ["log", "bakery-plan"],
    ):
        out = run(*args, "--db", db).out
        assert not [line for line in out.splitlines() if line.endswith(" ")], args
    patch = run("log", "bakery-plan", "-p", "--db", db).out
    ran_tools = [line for line in patch.splitlines() if "ran: tools" in line]
    assert len(ran_tools) == len(tools) == 4
    assert all(line.startswith("step ") for line in ran_tools)
    assert max(map(len, patch.splitlines())) > 100  # long lines kept whole


def test_help_is_plain_and_whole(run):
    """No `\\[required]` escapes, no summary cut with '...', every option described."""
    root = run("--help").out
    summaries = root.split("Commands:", 1)[1]
    assert "..." not in summaries
    assert "…" not in summaries
    for command in ("threads", "log", "show", "diff", "export", "schema", "graph", "size", "prune", "tui", "mcp"):
        text = run(command, "--help").out
        assert "\\[" not in text, command
        options = text.split("Options:", 1)[1]
        assert all(not line.strip().startswith("--") or len(line.split("  ")) > 1 for line in options.splitlines()), (
            command
        )  # (an option with no description)
        assert "Positional arguments" not in text, command
        assert text.count("Arguments:") <= 1, command
        if "Arguments:" in text:  # every argument described too (click 8.3+ dropped Typer's help)
            arguments = text.split("Arguments:", 1)[1].split("Options:", 1)[0]
            described = [line for line in arguments.splitlines() if line.strip()]
            assert described, (command, arguments)
            assert all(
                len(line.strip().split("  ")) > 1
                for line in described
                if line.startswith("  ") and not line.startswith("   ")
            ), (command, arguments)
    assert "The thread's id, or a unique prefix of it." in run("show", "--help").out


def test_ns_by_prefix_or_subgraph_node_and_db_before_the_command(run, dbs):
    db = str(dbs["custom"])
    deep = "research:9495910e-4937-dffb-9bfe-cab174318bf4|deep:039159b7-d6f4-7933-a2d0-c4a4e9228835"
    for ns in ("deep", deep[:60], deep):
        r = run("show", "nested", "--ns", ns, "--json", "--db", db)
        assert r.code == 0, (ns, r.err)
        assert json.loads(r.out)["checkpoint_ns"] == deep, (ns, r.err)
    r = run("log", "nested", "--ns", "research", "-n", "1", "--db", db)  # the parent, not its child
    assert r.code == 0, r.err
    assert r.out.startswith("thread nested  ns research:9495910e-4937-dffb-9bfe-cab174318bf4  (1 of 4 checkpoints)")
    r = run("log", "nested", "--ns", "nowhere", "--db", db)
    assert r.code == 3
    assert "its namespaces" in r.err
    r = run("--db", db, "log", "notes", "-n", "1")  # the option before the command, as git -C
    assert r.code == 0
    assert r.out.startswith("thread notes-edits")
    assert run("--db", db, "threads", "--db", str(dbs["agent"])).out.startswith("4 threads in")  # its own wins


@pytest.mark.parametrize(
    "args, says",
    [
        (["threads", "--limit", "abc"], "'abc' is not an integer"),
        (["log", "bakery-plan", "-n", "2x"], "'2x' is not"),
        (["tui", "--poll", "-1"], "--poll"),
        (["tui", "--poll", "soon"], "'soon' is not a number"),
    ],
)
def test_values_that_are_not_numbers_are_usage_errors(run, dbs, args, says):
    """Typed values (parsed by statectl itself under Typer 0.2x, by click before) fail as usage
    errors: exit 2, one line naming the value."""
    r = run(*args, "--db", str(dbs["agent"]))
    assert r.code == 2, r.err
    assert len(r.err.splitlines()) == 1, r.err
    assert says in r.err, r.err


def test_typed_values_arrive_typed(run, dbs, tmp_path):
    """A list of ids, a Path, an int and a float reach the commands as what they are."""
    out = tmp_path / "two.json"
    r = run("export", "bakery-plan", "investor-email", "-o", str(out), "--db", str(dbs["agent"]))
    assert r.code == 0
    assert [t["thread_id"] for t in json.loads(out.read_text())["threads"]] == ["bakery-plan", "investor-email"]
    assert len(json.loads(run("threads", "--json", "--limit", "2", "--db", str(dbs["agent"])).out)) == 2


@pytest.mark.parametrize(
    "args",
    [
        ["threads"],
        ["threads", "--json"],
        ["log", "bakery-plan"],
        ["log", "bakery-plan", "-p"],
        ["log", "bakery-plan", "--json"],
        ["show", "bakery-plan"],
        ["show", "bakery-plan", "--json"],
        ["diff", "bakery-plan", "0"],
        ["export", "--all"],
    ],
)
def test_a_closed_pipe_exits_quietly_with_0(dbs, args):
    """`statectl ... | head -1`: the reader goes away early; every command then stops writing and
    exits 0 with nothing on stderr (click itself would exit 1, and only where the output was larger
    than the pipe's buffer)."""
    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "statectl", *args, "--db", str(dbs["agent"])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout.read(1)
    proc.stdout.close()  # before the command has written everything (most write far more than 64 KiB)
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0, (args, err)
    assert err == b"", (args, err)


def _langgraph_status(records: list[dict]) -> dict[str, str]:
    """Each thread's status as LangGraph's own newest root snapshot tells it: a task error; an
    interrupt, or tasks planned and none of them run yet (a breakpoint, `interrupt_before` or
    `interrupt_after`: the run resumes with them); tasks of which some ran; else done."""
    newest: dict[str, dict] = {}
    for r in records:  # (history order: newest first)
        if r["checkpoint_ns"] == "":
            newest.setdefault(r["thread_id"], r)
    out = {}
    for t, r in newest.items():
        ran = [x for x in r["tasks"] if x.get("result") is not None]
        out[t] = (
            "error"
            if any(x.get("error") for x in r["tasks"])
            else "interrupted"
            if r["interrupts"] or (r["next"] and not ran)
            else "pending"
            if r["next"] or r["metadata"].get("source") == "input"
            else "done"
        )
    return out


@pytest.mark.parametrize("name", ["interrupts", "custom", "agent", "flow", "deep", "orchestrator"])
def test_thread_status_is_langgraphs(run, dbs, tmp_path, name):
    """`threads` STATUS says what LangGraph's snapshot says: a thread stopped at a static breakpoint
    waits (interrupted), it is not done; the same from an export of the database."""
    want = _langgraph_status(expected(name))
    exported = tmp_path / "all.json"
    assert run("export", "--all", "-o", str(exported), "--db", str(dbs[name])).code == 0
    for db in (str(dbs[name]), str(exported)):
        got = {t["thread_id"]: t["status"] for t in json.loads(run("threads", "--json", "--db", db).out)}
        assert got == want, db
    if name == "interrupts":
        assert want["breakpoint-before"] == want["breakpoint-after"] == "interrupted"


def test_lost_interrupt_writes_still_wait(run, dbs):
    """Two interrupts at once from a Send fan-out, whose `__interrupt__` writes never landed (what
    ShallowPostgresSaver does under load: its checkpoint put deletes them; hand-removed here, in a
    copy). LangGraph then shows no interrupt and `next` = the two asks, which run on resume:
    the thread waits, it is not done."""
    import sqlite3

    db = dbs["interrupts"]
    with sqlite3.connect(db) as conn:
        assert (
            conn.execute(
                "DELETE FROM writes WHERE thread_id = 'parallel-waiting' AND channel = '__interrupt__'"
            ).rowcount
            == 2
        )
    snap = json.loads(run("show", "parallel-waiting", "--json", "--db", str(db)).out)
    assert snap["next"] == ["ask", "ask"]
    assert snap["interrupts"] == []
    got = {t["thread_id"]: t["status"] for t in json.loads(run("threads", "--json", "--db", str(db)).out)}
    assert got["parallel-waiting"] == "interrupted"


def test_inferred_values_are_marked_never_shown_as_facts(run, dbs):
    """Before a reducer key's first write LangGraph shows its type's empty value; statectl infers
    it from the later writes (the data never stores it) and says so: `(inferred ...)` beside the
    value, and `inferred` in the JSON. A value that was read carries no mark."""
    db = str(dbs["custom"])
    snap = json.loads(run("show", "notes-edits", "0", "--json", "--db", db).out)
    assert snap["inferred"] == ["log", "scores"]
    assert snap["values"]["log"] == []
    assert snap["values"]["scores"] == {}
    lines = {
        line.split(":")[0]: line
        for line in run("show", "notes-edits", "0", "--db", db).out.splitlines()
        if line[:1].isalpha()
    }
    assert "(inferred" in lines["log"]
    assert "(inferred" in lines["scores"]
    assert "(inferred" not in lines["count"]
    assert "(inferred" in run("show", "notes-edits", "0", "--key", "log", "--db", db).out
    assert "inferred" not in json.loads(run("show", "notes-edits", "--json", "--db", db).out)
    assert "(inferred" not in run("show", "notes-edits", "--db", db).out


def test_the_start_of_the_id_log_shows_selects_it(run, dbs):
    """`log` shows a checkpoint id's last 12 characters; their first 6 select it, as a git user
    expects of an abbreviated hash (before: only the 12 or a true suffix did); a number that is
    neither a step nor an id still says which steps there are."""
    db = str(dbs["agent"])
    records = [json.loads(x) for x in run("log", "bakery-plan", "--db", db, "--json").out.splitlines()]
    target = records[5]["checkpoint_id"]
    shown = target[-12:]
    assert shown in run("log", "bakery-plan", "--db", db).out
    r = run("show", "bakery-plan", shown[:6], "--db", db, "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["checkpoint_id"] == target
    r = run("show", "bakery-plan", "999", "--db", db)
    assert r.code == 3
    assert "no checkpoint at step 999" in r.err


@pytest.mark.parametrize("extra", [[], ["-s", "interrupted,error"], ["--sort", "id"], ["-m", "e"]])
def test_threads_json_of_a_whole_store_is_streamed_in_chunks_as_one_array(run, dbs, monkeypatch, extra):
    """`threads --json` of every thread is written a chunk at a time (memory flat in the number of
    threads): with two threads a chunk it is byte for byte the array the paged listing gives."""
    import statectl.sources.sqlite as sqlite_source

    for name in ("agent", "custom", "interrupts"):
        db = str(dbs[name])
        whole = run("threads", "--json", "--limit", "100000", "--db", db, *extra)  # (not streamed: a page)
        assert whole.code == 0, whole.err
        monkeypatch.setattr(sqlite_source, "CHUNK", 2)
        streamed = run("threads", "--json", "--db", db, *extra)
        monkeypatch.undo()
        assert streamed.code == 0, streamed.err
        assert streamed.out == whole.out
        assert json.loads(streamed.out) or extra
