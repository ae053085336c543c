"""Time travel: `fork` is LangGraph's own `update_state`, `replay` its own `invoke(None, config)`
(or `Command(resume=...)`), each on a copy of the thread; `--dry-run` says exactly which tasks
run first; bad input writes nothing; the source is only read."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import digest
from parity import SAMPLES

sys.path.insert(0, str(SAMPLES))

from record import snapshot_record

NOTES = f"{SAMPLES}/custom_app.py:notes_builder"
APPROVAL = f"{SAMPLES}/custom_app.py:approval_builder"


@pytest.fixture
def here(tmp_path, monkeypatch):
    """The test's own folder as the current one (the scratch file is written there)."""
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "custom.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", src)
    return tmp_path


def _graph(spec: str, saver: Any) -> Any:
    from statectl.project import target

    return target.compiled(target.load(spec)).copy(update={"checkpointer": saver})


def _saver(path: Path) -> Any:
    from langgraph.checkpoint.sqlite import SqliteSaver

    return SqliteSaver(sqlite3.connect(path, check_same_thread=False))


def _state(spec: str, path: Path, thread: str, checkpoint_id: str | None = None) -> dict:
    """LangGraph's own snapshot of a checkpoint (the newest without an id), ids and times left out,
    with the checkpoint's channel versions."""
    saver = _saver(path)
    graph = _graph(spec, saver)
    config = {
        "configurable": {
            "thread_id": thread,
            "checkpoint_ns": "",
            **({"checkpoint_id": checkpoint_id} if checkpoint_id else {}),
        }
    }
    snap = graph.get_state(config)
    record = snapshot_record(snap)
    # (SqliteSaver's versions end in a random fraction: their order is the integer part)
    versions = {k: str(v).split(".")[0] for k, v in saver.get_tuple(snap.config).checkpoint["channel_versions"].items()}
    for k in ("checkpoint_id", "parent_checkpoint_id", "created_at"):
        record.pop(k)
    for t in record["tasks"]:
        t.pop("id")
    for i in record["interrupts"]:
        i.pop("id")
    saver.conn.close()
    return {**record, "versions": versions, "metadata": {k: v for k, v in record["metadata"].items() if k != "parents"}}


def _checkpoint(path: Path, thread: str, step: int) -> str:
    with sqlite3.connect(path) as c:
        rows = c.execute(
            "SELECT checkpoint_id, metadata FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''", (thread,)
        ).fetchall()
    return next(cid for cid, meta in sorted(rows) if json.loads(meta).get("step") == step)


@pytest.mark.parametrize(
    ("args", "values", "as_node"),
    [
        (["--set", 'topic="rye"'], {"topic": "rye"}, None),
        (["--set", 'log=["edited"]', "--set", "count=7"], {"log": ["edited"], "count": 7}, None),
        (["--set", 'log=["by review"]', "--as-node", "review"], {"log": ["by review"]}, "review"),
    ],
)
def test_fork_is_update_state(run, here, args, values, as_node):
    src = here / "custom.sqlite"
    before = digest(src)
    cid = _checkpoint(src, "notes-edits", 1)
    r = run("fork", "notes-edits", cid, "--db", str(src), "--graph", NOTES, *args, "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["parent_checkpoint_id"] == cid
    assert out["to"] == "statectl-scratch.sqlite"
    assert digest(src) == before  # the source is only read
    direct = here / "direct.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", direct)
    saver = _saver(direct)
    new = _graph(NOTES, saver).update_state(
        {"configurable": {"thread_id": "notes-edits", "checkpoint_ns": "", "checkpoint_id": cid}},
        values,
        as_node=as_node,
    )
    saver.conn.close()
    want = _state(NOTES, direct, "notes-edits", new["configurable"]["checkpoint_id"])
    got = _state(NOTES, here / "statectl-scratch.sqlite", "notes-edits", out["checkpoint_id"])
    assert got == want
    # what it printed is the diff `statectl diff` shows of the new checkpoint
    diff = json.loads(run("diff", "notes-edits", out["checkpoint_id"], "--db", "statectl-scratch.sqlite", "--json").out)
    assert out["diff"] == diff


def test_fork_human_output_names_the_new_checkpoint(run, here):
    r = run("fork", "notes-edits", "1", "--db", "custom.sqlite", "--graph", NOTES, "--set", 'topic="rye"')
    assert r.code == 0, r.err
    first = r.out.splitlines()[0]
    assert first.startswith("forked thread notes-edits at ")
    new = first.split("new checkpoint ")[1].split(" ")[0]
    assert len(new) == 36  # the whole id, never shortened
    assert "~ topic: pricing → rye   by update_state" in r.out
    assert "statectl: copied thread notes-edits (12 checkpoints) to statectl-scratch.sqlite" in r.err
    # a second fork uses the copy already there, and its history keeps both branches
    r = run("fork", "notes-edits", "1", "--db", "custom.sqlite", "--graph", NOTES, "--set", 'topic="spelt"')
    assert r.code == 0, r.err
    assert "using thread notes-edits already in statectl-scratch.sqlite" in r.err
    log = [
        json.loads(x) for x in run("log", "notes-edits", "--db", "statectl-scratch.sqlite", "--json").out.splitlines()
    ]
    assert len(log) == 14


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "nope=1"], "the graph has no state key 'nope' (its keys: count, log, scores, topic)"),
        (["--set", "topic=rye"], "--set topic: 'rye' is not JSON"),
        (["--set", "topic"], "--set 'topic' is not KEY=JSON"),
        (
            ["--as-node", "ghost", "--set", "count=1"],
            "--as-node 'ghost': the graph has no such node (its nodes: draft, review)",
        ),
        ([], "say what the fork changes"),
        (["--set", "count=1", "--in-place"], "confirm with --yes (there is no terminal to ask)"),
        (["--set", "count=1", "--graph", "nothere.py:graph"], "no such file: nothere.py"),
        (["--set", "count=1", "--graph", "broken.py:graph"], "importing broken.py failed: ModuleNotFoundError"),
    ],
)
def test_fork_bad_input_writes_nothing(run, here, args, message):
    """Nothing is created or changed: the graph is loaded, and the keys, types and node it is
    given are checked, before the thread is copied into the scratch file."""
    src = here / "custom.sqlite"
    (here / "broken.py").write_text("import not_a_module_anywhere\ngraph = None\n")
    before = {p.name: digest(p) for p in here.iterdir()}
    r = run("fork", "notes-edits", "1", "--db", str(src), "--graph", NOTES, *args)
    assert r.code == 2, (r.code, r.err)
    assert message in r.err
    assert len(r.err.strip().splitlines()) <= 2
    assert {p.name: digest(p) for p in here.iterdir()} == before


def test_a_mistyped_thread_or_checkpoint_is_said_before_the_graph_loads(run, here):
    (here / "slow.py").write_text("raise SystemExit('the graph was loaded')\n")
    r = run("fork", "notes-edtis", "--db", "custom.sqlite", "--graph", "slow.py:graph", "--set", "count=1")
    assert (r.code, r.err.splitlines()[0]) == (
        3,
        "statectl: no thread 'notes-edtis' in custom.sqlite (did you mean notes-edits?)",
    )
    r = run("fork", "notes-edits", "99", "--db", "custom.sqlite", "--graph", "slow.py:graph", "--set", "count=1")
    assert r.code == 3, r.err
    assert "the graph was loaded" not in r.err
    assert not (here / "statectl-scratch.sqlite").exists()


def test_fork_refuses_a_checkpoint_not_in_the_thread_and_in_place_on_an_export(run, here):
    r = run("fork", "notes-edits", "ffffffff", "--db", "custom.sqlite", "--graph", NOTES, "--set", "count=1")
    assert r.code == 3  # (not found)
    assert "no checkpoint" in r.err
    assert run("export", "notes-edits", "--db", "custom.sqlite", "-o", "t.json").code == 0
    r = run("fork", "notes-edits", "--db", "t.json", "--graph", NOTES, "--set", "count=1", "--in-place", "--yes")
    assert r.code == 2
    assert "--in-place writes only SQLite files and Postgres databases" in r.err


def test_fork_in_place_with_yes(run, here):
    src = here / "custom.sqlite"
    r = run(
        "fork", "notes-edits", "--db", str(src), "--graph", NOTES, "--set", "count=42", "--in-place", "--yes", "--json"
    )
    assert r.code == 0, r.err
    new = json.loads(r.out)["checkpoint_id"]
    assert not (here / "statectl-scratch.sqlite").exists()
    assert _state(NOTES, src, "notes-edits", new)["values"]["count"] == 42


def _editor(here: Path, script: str) -> str:
    path = here / "editor.py"
    path.write_text(f"import sys, json\npath = sys.argv[1]\n{textwrap.dedent(script)}\n")
    return f"{sys.executable} {path}"


def test_fork_edit(run, here, monkeypatch):
    monkeypatch.setenv(
        "EDITOR",
        _editor(
            here,
            """
        state = json.load(open(path))
        assert state["topic"] == "pricing", state
        state["topic"] = "edited in the editor"
        json.dump(state, open(path, "w"))
    """,
        ),
    )
    r = run("fork", "notes-edits", "1", "--db", "custom.sqlite", "--graph", NOTES, "--edit", "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    changes = {c["key"] for c in out["diff"]["changes"]}
    assert changes == {"topic"}  # only what was edited is written
    assert (
        _state(NOTES, here / "statectl-scratch.sqlite", "notes-edits", out["checkpoint_id"])["values"]["topic"]
        == "edited in the editor"
    )


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("sys.exit(3)", "the editor exited with 3: nothing written"),
        ("pass", "the state was saved unchanged: nothing written"),
        ("open(path, 'w').write('{oops')", "the edited state is not JSON"),
    ],
)
def test_fork_edit_that_writes_nothing(run, here, monkeypatch, script, message):
    monkeypatch.setenv("EDITOR", _editor(here, script))
    r = run("fork", "notes-edits", "1", "--db", "custom.sqlite", "--graph", NOTES, "--edit")
    assert r.code == 2
    assert message in r.err
    assert len(run("log", "notes-edits", "--db", "statectl-scratch.sqlite", "--json").out.splitlines()) == 12


def test_replay_is_invoke_from_the_checkpoint(run, here):
    src = here / "custom.sqlite"
    before = digest(src)
    cid = _checkpoint(src, "notes-edits", 1)
    r = run("replay", "notes-edits", cid, "--db", str(src), "--graph", NOTES)
    assert r.code == 0, r.err
    assert "replay runs" in r.err
    assert "the new branch of thread notes-edits in statectl-scratch.sqlite is done" in r.out
    assert "ran: review" in r.out
    assert digest(src) == before
    direct = here / "direct.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", direct)
    saver = _saver(direct)
    _graph(NOTES, saver).invoke(
        None, {"configurable": {"thread_id": "notes-edits", "checkpoint_ns": "", "checkpoint_id": cid}}
    )
    saver.conn.close()
    assert _state(NOTES, here / "statectl-scratch.sqlite", "notes-edits") == _state(NOTES, direct, "notes-edits")


def test_replay_resume_is_command_resume(run, here):
    from langgraph.types import Command

    r = run("replay", "approval-waiting", "--db", "custom.sqlite", "--graph", APPROVAL, "--resume", '"no"')
    assert r.code == 0, r.err
    direct = here / "direct.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", direct)
    saver = _saver(direct)
    _graph(APPROVAL, saver).invoke(Command(resume="no"), {"configurable": {"thread_id": "approval-waiting"}})
    saver.conn.close()
    got = _state(APPROVAL, here / "statectl-scratch.sqlite", "approval-waiting")
    assert got == _state(APPROVAL, direct, "approval-waiting")
    assert got["values"]["decision"] == "no"


def test_replay_that_fails_says_which_node(run, here):
    failing = f"{SAMPLES}/custom_app.py:failing_builder"
    r = run("replay", "parse-fails", "0", "--db", "custom.sqlite", "--graph", failing)
    assert r.code == 1, r.err
    assert "ended in an error in parse: ValueError: could not parse price" in r.out
    status = json.loads(run("threads", "--db", "statectl-scratch.sqlite", "--json").out)[0]["status"]
    assert status == "error"


def test_replay_until_stops_before_the_node(run, here):
    r = run("replay", "notes-edits", "0", "--db", "custom.sqlite", "--graph", NOTES, "--until", "review", "--json")
    assert r.code == 0, r.err
    end = json.loads(r.out.splitlines()[-1])
    assert end["status"] == "interrupted"
    assert end["next"] == ["review"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--until", "reviw"], "--until 'reviw': the graph has no such node (its nodes: draft, review)"),
        (["--graph", "nothere.py:graph"], "no such file: nothere.py"),
    ],
)
def test_replay_bad_input_writes_nothing(run, here, args, message):
    """A node the graph does not have (LangGraph's stream would ignore it and run to the end) or a
    graph that does not load: one line, before anything is copied or run."""
    before = {p.name: digest(p) for p in here.iterdir()}
    r = run("replay", "notes-edits", "0", "--db", "custom.sqlite", "--graph", NOTES, *args)
    assert r.code == 2, (r.code, r.err)
    assert message in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert {p.name: digest(p) for p in here.iterdir()} == before


def test_dry_run_notes_a_node_the_thread_never_named(run, here):
    r = run("replay", "notes-edits", "0", "--db", "custom.sqlite", "--dry-run", "--until", "reviw", "--until", "review")
    assert r.code == 0, r.err
    assert "stops before: reviw, review" in r.out
    notes = [line for line in r.out.splitlines() if line.startswith("note: ")]
    assert notes == [
        "note: no checkpoint of this thread names a node 'reviw': if your graph has none, LangGraph runs past "
        "it (replay checks it against --graph before it runs)"
    ]


def test_replay_refuses_resume_where_nothing_waits(run, here):
    r = run("replay", "notes-edits", "1", "--db", "custom.sqlite", "--graph", NOTES, "--resume", "1")
    assert r.code == 2
    assert "--resume: no interrupt waits at checkpoint" in r.err
    assert not (here / "statectl-scratch.sqlite").exists()


# -- the dry run says exactly what runs first --------------------------------------------------
COUNTING_APP = """
import operator, os
from typing import Annotated, TypedDict
from langgraph.graph import StateGraph, START, END
from langgraph.types import Send, interrupt

def ran(name):
    with open(os.environ["RAN_LOG"], "a") as fh:
        fh.write(name + "\\n")

class S(TypedDict):
    items: list
    out: Annotated[list, operator.add]
    answer: str

def plan(s):
    ran("plan")
    return {}

def fan(s):
    return [Send("work", {"items": [i]}) for i in s["items"]]

def work(s):
    ran("work:" + s["items"][0])
    return {"out": [s["items"][0]]}

def ask(s):
    ran("ask")
    return {"answer": interrupt("go on?")}

def check(s):
    ran("check")
    return {}

b = StateGraph(S)
b.add_node("plan", plan)
b.add_node("work", work)
b.add_node("ask", ask)
b.add_node("check", check)
b.add_edge(START, "plan")
b.add_conditional_edges("plan", fan, ["work"])
b.add_edge("work", "ask")
b.add_edge("work", "check")
b.add_edge("ask", END)
b.add_edge("check", END)
graph = b
"""


@pytest.fixture
def counting(here, monkeypatch):
    """A graph whose nodes log that they ran (a Send fan-out, then two nodes, one interrupting),
    run for real into the thread `counted`."""
    app = here / "counting_app.py"
    app.write_text(COUNTING_APP)
    log = here / "ran.log"
    monkeypatch.setenv("RAN_LOG", str(log))
    code = (
        f"import sys, sqlite3; sys.path.insert(0, {str(here)!r}); import counting_app\n"
        "from langgraph.checkpoint.sqlite import SqliteSaver\n"
        "g = counting_app.graph.compile(checkpointer=SqliteSaver(sqlite3.connect('counted.sqlite', "
        "check_same_thread=False)))\n"
        "g.invoke({'items': ['a', 'b'], 'out': []}, {'configurable': {'thread_id': 'counted'}})\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=here, timeout=120)
    log.unlink()
    return f"{app}:graph", log


def _first_step(log: Path) -> list[str]:
    return sorted(log.read_text().split()) if log.exists() else []


@pytest.mark.parametrize(("step", "resume"), [(1, None), (2, None), (2, '"yes"')])
def test_dry_run_lists_the_tasks_that_run_first(run, here, counting, step, resume):
    """Step 1: the two Sends (work:a, work:b); step 2: ask and check re-run (time travel);
    step 2 with --resume at the newest checkpoint: check's saved result is handed back, only
    ask runs."""
    spec, log = counting
    extra = ["--resume", resume] if resume else []
    plan = json.loads(run("replay", "counted", str(step), "--db", "counted.sqlite", "--dry-run", "--json", *extra).out)
    runs = sorted(t["name"] for t in plan["tasks"] if t["runs"])
    r = run(
        "replay",
        "counted",
        str(step),
        "--db",
        "counted.sqlite",
        "--graph",
        spec,
        "--to",
        f"run-{step}-{bool(resume)}.sqlite",
        *extra,
    )
    assert r.code == 0, r.err
    ran = _first_step(log)
    want = {
        (1, None): (["work", "work"], ["ask", "check", "work:a", "work:b"]),  # then ask and check again
        (2, None): (["ask", "check"], ["ask", "check"]),
        (2, '"yes"'): (["ask"], ["ask"]),
    }[(step, resume)]  # check's saved result handed back
    assert (runs, ran) == want


def test_replay_from_a_subgraph_checkpoint_says_what_reruns(run, here):
    nested = [
        json.loads(x)
        for x in run("log", "nested", "--db", "custom.sqlite", "--ns", "research", "--json").out.splitlines()
    ]
    inner = nested[-1]["checkpoint_id"]
    r = run("replay", "nested", inner, "--db", "custom.sqlite", "--ns", "research", "--dry-run")
    assert r.code == 0, r.err
    assert "LangGraph re-runs a subgraph through its parent graph" in r.out
    assert "task research re-runs the subgraph whole" in r.out


def test_diff_across_threads_and_stores(run, here):
    r = run("diff", "approval-waiting", "approval-resumed", "--db", "custom.sqlite", "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    assert d["from_thread_id"] == "approval-waiting"
    assert d["thread_id"] == "approval-resumed"
    assert any(c["key"] == "decision" and c["op"] == "added" for c in d["changes"])
    r = run("diff", "approval-waiting:latest", "approval-resumed:1", "--db", "custom.sqlite")
    assert r.code == 0, r.err
    assert r.out.startswith("diff approval-waiting step 1 ")
    # the original run against its re-run in the scratch copy
    assert run("replay", "approval-waiting", "--db", "custom.sqlite", "--graph", APPROVAL, "--resume", '"no"').code == 0
    r = run("diff", "approval-waiting", "--db", "custom.sqlite", "--db-b", "statectl-scratch.sqlite")
    assert r.code == 0, r.err
    assert "+ decision: no   by approve" in r.out
    assert "note: A and B are in two stores: A in custom.sqlite, B in statectl-scratch.sqlite" in r.out


@pytest.mark.parametrize("json_out", [False, True], ids=["text", "json"])
def test_diff_every_form_the_help_shows(run, here, json_out):
    """`diff T:A T:B` of one thread is `diff T A B` (no note of two stores); across stores the
    second argument may name B's thread as across threads do (`T1[:A] T2[:B] --db-b`), or B's
    checkpoint of the same thread (`T:A B --db-b`, `T A B --db-b`)."""
    shutil.copy(here / "custom.sqlite", here / "other.sqlite")
    out = ["--json"] if json_out else []

    def ok(*args: str) -> str:
        r = run("diff", *args, "--db", "custom.sqlite", *out)
        assert r.code == 0, (args, r.err)
        return r.out

    assert ok("approval-resumed:1", "approval-resumed:3") == ok("approval-resumed", "1", "3")
    assert ok("approval-resumed:0", "approval-resumed:latest") == ok("approval-resumed", "0", "latest")
    assert "two stores" not in ok("approval-resumed:1", "approval-resumed:3")
    across = ok("approval-waiting:1", "approval-resumed:3")
    for args in (("approval-waiting:1", "approval-resumed:3"), ("approval-waiting:latest", "approval-resumed")):
        stores = ok(*args, "--db-b", "other.sqlite")
        if json_out:
            got, want = json.loads(stores), json.loads(across)
            assert (got["from_thread_id"], got["thread_id"]) == ("approval-waiting", "approval-resumed")
            assert got["changes"] == want["changes"]
        else:
            assert stores.startswith("diff approval-waiting step 1 ")
            assert "approval-resumed step 3 " in stores.splitlines()[0]
            assert "A in approval-waiting of custom.sqlite, B in approval-resumed of other.sqlite" in stores
    same = ok("approval-resumed", "1", "3", "--db-b", "other.sqlite")
    assert ok("approval-resumed:1", "3", "--db-b", "other.sqlite") == same
    assert ok("approval-resumed:1", "approval-resumed:3", "--db-b", "other.sqlite") == same
    if not json_out:
        assert "A and B are in two stores: A in custom.sqlite, B in other.sqlite" in same
    bad = run("diff", "approval-resumed:1", "nope:3", "--db", "custom.sqlite", "--db-b", "other.sqlite")
    assert bad.code == 3, bad.err
    assert len(bad.err.splitlines()) == 1
    assert "nope" in bad.err


@pytest.mark.parametrize("op", ["fork", "replay", "fork-scratch"])
def test_what_statectl_wrote_is_in_the_file_itself(run, here, op):
    """fork and replay said "done" while their checkpoints were still in a -wal beside the file: a
    reader open when the writer closed (the CLI showing a step, another process) kept the -wal,
    and a copy of the file alone held 3 of 6 checkpoints. When statectl says it wrote, the file
    is whole: committed, closed and checkpointed (the reader here stays open throughout)."""
    db = here / ("statectl-scratch.sqlite" if op == "fork-scratch" else "custom.sqlite")
    if op == "fork-scratch":  # (a second fork reuses the scratch copy the first one made)
        assert run("fork", "notes-edits", "--db", "custom.sqlite", "--graph", NOTES, "--set", "count=3").code == 0
    else:  # (a store LangGraph has written is in WAL mode: the sample is not)
        setup = sqlite3.connect(db)
        setup.execute("PRAGMA journal_mode=WAL").fetchone()
        setup.close()
    reader = sqlite3.connect(db)
    count = "SELECT count(*) FROM checkpoints"
    try:
        before = reader.execute(count).fetchone()[0]
        if op == "replay":
            args = ["replay", "approval-waiting", "--graph", APPROVAL, "--resume", '"no"']
        else:
            args = ["fork", "notes-edits", "1", "--graph", NOTES, "--set", "count=2"]
        r = subprocess.run(  # (a process of its own, as a user runs it, beside the reader's)
            [sys.executable, "-m", "statectl", *args, "--db", str(db), "--in-place", "--yes"],
            capture_output=True,
            text=True,
            cwd=here,
            env={**os.environ, "PYTHONPATH": str(SAMPLES.parent)},
            timeout=300,
        )
        assert r.returncode == 0, r.stderr
        written = reader.execute(count).fetchone()[0]
        assert written > before
        shutil.copy(db, here / "alone.sqlite")  # the file without its -wal
        with sqlite3.connect(here / "alone.sqlite") as alone:
            assert alone.execute(count).fetchone()[0] == written
        wal = Path(f"{db}-wal")
        assert not wal.exists() or wal.stat().st_size == 0
    finally:
        reader.close()


@pytest.mark.parametrize("node", ["publish", "discard"])
def test_replay_until_a_node_the_history_never_shows_asks_the_graph(run, here, node):
    """`replay --until NODE --graph`: the node exists (the loaded graph checked it) though no
    checkpoint names it yet: no warning that LangGraph may run past it. The dry run, which loads
    no graph, still says it; a node the graph lacks is refused."""
    dry = run("replay", "approval-waiting", "--db", "custom.sqlite", "--until", node, "--dry-run")
    assert f"no checkpoint of this thread names a node '{node}'" in dry.out + dry.err
    r = run("replay", "approval-waiting", "--db", "custom.sqlite", "--graph", APPROVAL, "--until", node)
    assert r.code == 0, r.err
    assert "names a node" not in r.err
    bad = run("replay", "approval-waiting", "--db", "custom.sqlite", "--graph", APPROVAL, "--until", "nope")
    assert bad.code == 2
    assert "--until 'nope': the graph has no such node" in bad.err


@pytest.mark.parametrize(
    ("db", "thread", "node"), [("agent", "market-lookup-fails", "tools"), ("custom", "parse-fails", "parse")]
)
def test_a_dry_run_where_a_step_failed_says_so(run, dbs, db, thread, node):
    """`replay --dry-run` at the checkpoint whose step failed last time (why one replays from
    there): the plan names the node and its error; a checkpoint where nothing failed says nothing."""
    shown = json.loads(run("show", thread, "--db", str(dbs[db]), "--json").out)
    error = next(t["error"] for t in shown["tasks"] if t.get("error"))
    text = run("replay", thread, "--db", str(dbs[db]), "--dry-run")
    assert text.code == 0, text.err
    assert f"note: {node} failed here last time: {error[:60]}" in text.out
    plan = json.loads(run("replay", thread, "--db", str(dbs[db]), "--dry-run", "--json").out)
    assert any(n.startswith(f"{node} failed here last time: ") for n in plan["notes"])
    earlier = run("replay", thread, "0", "--db", str(dbs[db]), "--dry-run")
    assert "failed here" not in earlier.out


def test_a_scratch_file_is_never_replaced(run, here):
    """The scratch name taken by a file that is not a SQLite database: refused, the file kept."""
    scratch = here / "statectl-scratch.sqlite"
    scratch.write_text("my notes\n")
    r = run("fork", "notes-edits", "--db", "custom.sqlite", "--graph", NOTES, "--set", "count=1")
    assert r.code == 2
    assert "statectl-scratch.sqlite is not a SQLite database" in r.err
    assert scratch.read_text() == "my notes\n"


def test_help_says_replay_runs_code(run):
    r = run("replay", "--help")
    assert "RUNS YOUR CODE" in r.out


SLOW_APP = """
import operator, os, time
from typing import Annotated, TypedDict
from langgraph.graph import StateGraph, START, END

class S(TypedDict):
    n: Annotated[int, operator.add]

def tick(s):
    time.sleep(float(os.environ.get("TICK", "0")))
    return {"n": 1}

def more(s):
    return "tick" if s["n"] < 30 else END

b = StateGraph(S)
b.add_node("tick", tick)
b.add_edge(START, "tick")
b.add_conditional_edges("tick", more, ["tick", END])
graph = b
"""


def test_ctrl_c_stops_a_replay_and_keeps_what_was_written(here):
    """Ctrl+C (SIGINT to the terminal's process group) during a re-run: statectl and LangGraph stop,
    exit 130; the steps saved so far stay, and LangGraph reads the copy consistently."""
    import signal
    import time

    (here / "slow_app.py").write_text(SLOW_APP)
    code = (
        f"import sys, sqlite3; sys.path.insert(0, {str(here)!r}); import slow_app\n"
        "from langgraph.checkpoint.sqlite import SqliteSaver\n"
        "g = slow_app.graph.compile(checkpointer=SqliteSaver(sqlite3.connect('slow.sqlite', "
        "check_same_thread=False)))\n"
        "g.invoke({'n': 0}, {'configurable': {'thread_id': 'slow'}})\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=here, timeout=120)
    argv = [
        sys.executable,
        "-m",
        "statectl",
        "replay",
        "slow",
        "-1",
        "--db",
        "slow.sqlite",
        "--graph",
        f"{here / 'slow_app.py'}:graph",
        "--to",
        "run.sqlite",
    ]
    proc = subprocess.Popen(  # (each tick of the re-run takes a second: Ctrl+C comes in the middle)
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
        while seen < 1 and time.monotonic() < deadline:  # a step saved and shown, then Ctrl+C
            if proc.stdout.readline().startswith("step"):
                seen += 1
        os.killpg(proc.pid, signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "replay stopped: the steps written so far stay" in err
    saver = _saver(here / "run.sqlite")
    graph = _graph(f"{here / 'slow_app.py'}:graph", saver)
    history = list(graph.get_state_history({"configurable": {"thread_id": "slow"}}))
    original = 32  # (input, the start and 30 ticks: what the first run saved)
    assert original + 1 <= len(history) < original + 31  # the saved steps, and not the whole run (30 s)
    assert history[0].next == ("tick",)  # stopped in the middle: the thread would go on from here


ORCHESTRATOR = f"{SAMPLES}/orchestrator_app.py:builder"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('budget="lots"', "budget: Input should be a valid number"),
        (
            'task_queue=[{"nope": 1}]',
            "task_queue.0.topic: Field required (OrchestratorState.task_queue is list[orchestrator_app.ResearchTask])",
        ),
    ],
)
def test_fork_checks_a_pydantic_state(run, here, value, message):
    """LangGraph's update_state writes a pydantic state's values as given (the next node would fail
    on them): the fork refuses a value of the wrong type in one line, and writes nothing."""
    shutil.copy(SAMPLES / "orchestrator.sqlite", here / "orchestrator.sqlite")
    r = run("fork", "orchestrate-bakery", "1", "--db", "orchestrator.sqlite", "--graph", ORCHESTRATOR, "--set", value)
    assert r.code == 2
    assert message in r.err
    assert not (here / "statectl-scratch.sqlite").exists()  # (checked before the thread was copied)
    r = run(
        "fork", "orchestrate-bakery", "1", "--db", "orchestrator.sqlite", "--graph", ORCHESTRATOR, "--set", "budget=3"
    )
    assert r.code == 0, r.err


PLAIN_STATE_APP = """
import dataclasses, operator, sys, sqlite3
from typing import Annotated, Optional, TypedDict
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import StateGraph, START, END

class Order(TypedDict, total=False):
    drink: str
    counter: int
    price: float
    note: Optional[str]
    log: Annotated[list[str], operator.add]

@dataclasses.dataclass
class OrderData:
    drink: str = ""
    counter: int = 0
    price: float = 0.0
    note: Optional[str] = None
    log: Annotated[list[str], operator.add] = dataclasses.field(default_factory=list)

def take(state):
    return {"counter": 1, "price": 2.5, "log": ["taken"]}

def build(schema):
    b = StateGraph(schema)
    b.add_node("take", take)
    b.add_edge(START, "take")
    b.add_edge("take", END)
    return b

typed = build(Order)
data = build(OrderData)

if __name__ == "__main__":
    for name in ("typed", "data"):
        g = build(Order if name == "typed" else OrderData).compile(
            checkpointer=SqliteSaver(sqlite3.connect(name + ".sqlite", check_same_thread=False))
        )
        g.invoke({"drink": "tea"}, {"configurable": {"thread_id": "order-tea"}})
"""


@pytest.mark.parametrize("state", ["typed", "data"])
@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('counter="x"', "counter: a str value, and "),
        ("drink=3", "drink: a int value, and "),
        ('price="cheap"', "price: a str value, and "),
        ("counter=[1]", "counter: a list[int] value, and "),
    ],
)
def test_fork_checks_a_typeddict_or_dataclass_state(run, here, state, value, message):
    """`fork --set` wrote a str into a TypedDict's (or dataclass's) `counter: int` and said done;
    `schema --all-threads` then said the thread would break. Refused in one line, as that check
    judges it, before anything is written; values that fit (an int for a float, None for an
    Optional, a reducer's update) are written."""
    (here / "plain_app.py").write_text(PLAIN_STATE_APP)
    subprocess.run([sys.executable, "plain_app.py"], check=True, cwd=here, timeout=120)
    target = f"{here}/plain_app.py:{state}"
    r = run("fork", "order-tea", "--db", f"{state}.sqlite", "--graph", target, "--set", value)
    assert r.code == 2, r.err
    key = value.split("=")[0]
    owner = "Order" if state == "typed" else "OrderData"
    assert r.err.startswith(f"statectl: {message}{owner}.{key} is "), r.err
    assert len(r.err.splitlines()) == 1
    assert not (here / "statectl-scratch.sqlite").exists()
    fits = ("counter=2", 'drink="latte"', "price=3", "note=null", 'log=["fixed"]')
    r = run("fork", "order-tea", "--db", f"{state}.sqlite", "--graph", target, *[x for v in fits for x in ("--set", v)])
    assert r.code == 0, r.err
    checked = run("schema", target, "--all-threads", "--db", "statectl-scratch.sqlite", "--json")
    assert checked.code == 0, checked.out


def test_fork_resume_is_replay_resume(run, here):
    r = run("fork", "approval-waiting", "--db", "custom.sqlite", "--graph", APPROVAL, "--resume", '"yes"', "--json")
    assert r.code == 0, r.err
    end = json.loads(r.out.splitlines()[-1])
    assert end["status"] == "done"
    assert _state(APPROVAL, here / "statectl-scratch.sqlite", "approval-waiting")["values"]["decision"] == "yes"


def test_fork_into_postgres(run, here, pg_empty):
    """--to a Postgres database: the thread copied there, the fork written by PostgresSaver."""
    r = run(
        "fork",
        "notes-edits",
        "1",
        "--db",
        "custom.sqlite",
        "--graph",
        NOTES,
        "--set",
        'topic="rye"',
        "--to",
        pg_empty,
        "--json",
    )
    assert r.code == 0, r.err
    new = json.loads(r.out)["checkpoint_id"]
    show = json.loads(run("show", "notes-edits", new, "--db", pg_empty, "--json").out)
    assert show["values"]["topic"] == "rye"
    assert not (here / "statectl-scratch.sqlite").exists()


def test_copy_takes_thread_options(run, here):
    r = run("copy", "--thread", "fanout", "--thread", "nested", "--db", "custom.sqlite", "--to", "two.sqlite", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["threads"] == 2


def test_a_hostile_thread_id_is_escaped_in_what_fork_says(run, here):
    """A thread id holding an escape sequence (data): the lines fork and replay print on stderr
    show it escaped, never the raw ESC."""
    evil = "n\x1b[2Jx"
    with sqlite3.connect(here / "custom.sqlite") as conn:
        for table in ("checkpoints", "writes"):
            conn.execute(f"UPDATE {table} SET thread_id = ? WHERE thread_id = 'notes-edits'", (evil,))
    r = run("fork", evil, "1", "--db", "custom.sqlite", "--graph", NOTES, "--set", "count=2")
    assert r.code == 0, r.err
    assert "\x1b" not in r.err
    assert "copied thread n\\x1b[2Jx (12 checkpoints)" in r.err
    assert "\x1b" not in r.out


@pytest.mark.parametrize(
    "args",
    [
        ("approval-resumed",),
        ("approval-resumed", "1", "3"),
        ("approval-resumed:1", "approval-resumed:3"),
        ("approval-waiting:1", "approval-resumed:3"),
        ("approval-resumed", "--db-b", "other.sqlite"),
        ("approval-resumed", "1", "3", "--db-b", "other.sqlite"),
        ("approval-resumed:1", "3", "--db-b", "other.sqlite"),
        ("approval-resumed:1", "approval-resumed:3", "--db-b", "other.sqlite"),
        ("approval-waiting:1", "approval-resumed:3", "--db-b", "other.sqlite"),
    ],
    ids=[
        *("thread", "T-A-B", "T:A-T:B", "two-threads"),
        *("db-b", "db-b-T-A-B", "db-b-T:A-B", "db-b-T:A-T:B", "db-b-two-threads"),
    ],
)
@pytest.mark.parametrize("json_out", [False, True], ids=["text", "json"])
def test_diff_key_no_checkpoint_holds_is_one_line_in_every_form(run, here, args, json_out):
    """`diff --db-b OTHER --key NOSUCHKEY` ended in "internal error: UnboundLocalError", and
    across threads an unknown key gave an empty diff: in every form a key neither checkpoint holds
    is one line naming the keys there are (or the close ones), exit 3, as within one thread."""
    shutil.copy(here / "custom.sqlite", here / "other.sqlite")
    before = {name: digest(here / name) for name in ("custom.sqlite", "other.sqlite")}
    out = ["--json"] if json_out else []
    r = run("diff", *args, "--db", "custom.sqlite", "--key", "nosuchkey", *out)
    assert (r.code, r.out) == (3, ""), r.err
    assert r.err == "statectl: no state key 'nosuchkey' at either checkpoint (keys: decision, draft, messages, note)\n"
    r = run("diff", *args, "--db", "custom.sqlite", "--key", "drafts", *out)
    assert (r.code, r.out) == (3, ""), r.err
    assert r.err == "statectl: no state key 'drafts' at either checkpoint (did you mean draft?)\n"
    assert run("diff", *args, "--db", "custom.sqlite", "--key", "draft", *out).code == 0
    assert {name: digest(here / name) for name in ("custom.sqlite", "other.sqlite")} == before
