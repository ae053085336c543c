"""`statectl diff` and `log -p`: held to LangGraph's own values for every step of every sample."""

from __future__ import annotations

import json
import re

import jsonpatch
import orjson
import pytest
from conftest import corrupt_latest
from parity import DBS, expected, knowable, normal

import statectl
from statectl.core.diff import diff, patch
from statectl.core.steps import step_writers

_MISSING = object()


def _ids(messages) -> list:
    return [m["data"]["id"] for m in messages or [] if isinstance(m, dict) and "data" in m]


@pytest.mark.parametrize("db", DBS)
def test_every_step_agrees_with_langgraph(dbs, db):
    """Changed keys = keys whose LangGraph values differ; added message ids are named;
    the JSON Patch applied to A's LangGraph values gives B's."""
    recorded = {(e["thread_id"], e["checkpoint_ns"], e["checkpoint_id"]): knowable(e) for e in expected(db)}
    steps = 0
    with statectl.open(str(dbs[db])) as store:
        for (thread, ns, cid), want_b in recorded.items():
            view = store.view(thread, ns)
            b = view.by_id[cid]
            a = view.by_id.get(b.parent_checkpoint_id or "")
            d = diff(view, a, b)
            want_a = recorded[(thread, ns, a.checkpoint_id)]["values"] if a else None
            va, vb = normal(want_a), normal(want_b["values"])
            if isinstance(vb, dict) and (a is None or isinstance(va, dict)):
                va = va if isinstance(va, dict) else {}
                differ = {k for k in {*va, *vb} if va.get(k, _MISSING) != vb.get(k, _MISSING)}
                assert {c.key for c in d.changes} == differ, (thread, ns, cid)
                for c in d.changes:
                    if c.messages is not None:
                        added = set(_ids(vb.get(c.key))) - set(_ids(va.get(c.key)))
                        assert {m.id for m in c.messages if m.op == "added"} == added
            else:
                assert bool(d.changes) == (va != vb)
            start = {} if a is None and isinstance(vb, dict) else va
            ops = orjson.loads(orjson.dumps(patch(d)))
            assert normal(jsonpatch.apply_patch(start, ops)) == vb, (thread, ns, cid)
            steps += 1
    assert steps == len(recorded) > 0


def _step(view, predicate):
    """The first step (oldest first) whose diff satisfies `predicate`."""
    for rec in reversed(view.records):
        parent = view.by_id.get(rec.parent_checkpoint_id or "")
        d = diff(view, parent, rec)
        if predicate(d):
            return d
    raise AssertionError("no such step")


def _change(d, key):
    return next(c for c in d.changes if c.key == key)


def test_writers_on_create_agent(dbs):
    with statectl.open(str(dbs["agent"])) as store:
        view = store.view("bakery-plan")
        init = _step(view, lambda d: any(c.key == "business_idea_complete" for c in d.changes))
        c = _change(init, "business_idea_complete")
        assert (c.op, c.after, c.by) == ("added", False, ("BusinessIdeaMiddleware.before_agent",))
        done = _step(view, lambda d: any(c.key == "business_idea_complete" and c.after is True for c in d.changes))
        assert done.ran == ("tools",)
        assert done.adjacent
        assert _change(done, "business_idea_complete").by == ("tools",)
        idea = _change(done, "materialized_business_idea")
        assert idea.before is None
        assert idea.after["name"] == "Pão Bom"
        msgs = _change(done, "messages").messages
        assert [(m.op, m.after["data"]["type"], m.after["data"]["name"]) for m in msgs] == [
            ("added", "tool", "save_business_idea")
        ]
        lang = _step(view, lambda d: any(c.key == "detected_language" for c in d.changes))
        assert _change(lang, "detected_language").by == ("LanguageDetectorMiddleware.before_model",)
        todos = _step(view, lambda d: any(c.key == "todos" and c.op == "changed" for c in d.changes))
        paths = {p.path: (p.before, p.after) for p in _change(todos, "todos").paths}
        assert "/todos/0/status" in paths
        assert paths["/todos/0/status"][1] == "completed"


def test_writers_and_text_diff_on_deepagents(dbs):
    with statectl.open(str(dbs["deep"])) as store:
        view = store.view("deep-research")
        edit = _step(
            view,
            lambda d: any(
                c.key == "files" and c.op == "changed" and any(p.path == "/files/~1plan.md/content" for p in c.paths)
                for c in d.changes
            ),
        )
        files = _change(edit, "files")
        assert files.by == ("tools",)
        content = next(p for p in files.paths if p.path == "/files/~1plan.md/content")
        assert "Beat Gleba on price" in str(content.after)
        assert "Beat Gleba" not in str(content.before)
        model = _step(view, lambda d: d.ran == ("model",) and d.changes)
        added = _change(model, "messages").messages
        assert added[0].op == "added"
        assert added[0].after["data"]["type"] == "ai"


def test_writers_update_state_command_and_sends(dbs):
    with statectl.open(str(dbs["custom"])) as store:
        notes = store.view("notes-edits")
        manual = _step(notes, lambda d: any(c.key == "log" and "manual note" in (c.after or []) for c in d.changes))
        assert manual.b.metadata["source"] == "update"
        assert _change(manual, "log").by == ("update_state",)
        approval = store.view("approval-resumed")
        resumed = _step(approval, lambda d: any(c.key == "note" for c in d.changes))
        assert _change(resumed, "note").by == ("Command(update)",)
        fanout = store.view("fanout")
        sent = _step(fanout, lambda d: any(c.key == "results" and c.after for c in d.changes))
        assert _change(sent, "results").by == ("worker",)
        assert set(sent.ran) == {"audit", "worker"}


def test_distant_checkpoints_name_every_step_between(dbs):
    with statectl.open(str(dbs["custom"])) as store:
        view = store.view("fanout")
        first, last = view.records[-1], view.records[0]
        d = diff(view, first, last)
        assert not d.adjacent
        results = _change(d, "results")
        assert results.by == ("worker",)
        assert [s[0] for s in results.steps] == [2]
        assert {c.key for c in d.changes} == {"items", "results", "audit", "summary"}
        notes = store.view("notes-edits")
        on_branch = [r for r in notes.records if r.metadata.get("source") == "update"][-1]
        cross = diff(notes, notes.records[0], on_branch)
        assert any("branch" in n for n in cross.notes)


# -- the command ---------------------------------------------------------------------------------
def test_diff_json_contract(run, dbs):
    r = run("diff", "bakery-plan", "12", "--db", str(dbs["agent"]), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert set(doc) >= {"from", "to", "changes", "next", "interrupts"}
    top = [c for c in doc["changes"] if c["path"].count("/") == 1]
    assert {c["key"] for c in top} == {"messages", "business_idea_complete", "materialized_business_idea"}
    assert all(set(c) >= {"key", "op", "path", "before", "after", "by"} for c in doc["changes"])
    flag = next(c for c in top if c["key"] == "business_idea_complete")
    assert (flag["op"], flag["before"], flag["after"], flag["by"]) == ("changed", False, True, ["tools"])
    added = [c for c in doc["changes"] if c.get("message_id")]
    assert added
    assert added[0]["op"] == "added"
    assert added[0]["path"].startswith("/messages/")
    assert doc["next"]["before"] == ["tools"]


def test_diff_human_output(run, dbs):
    r = run("diff", "bakery-plan", "12", "--db", str(dbs["agent"]))
    assert r.code == 0, r.err
    assert "~ business_idea_complete: false → true   by tools" in r.out
    assert re.search(r"\+ \[4\] tool save_business_idea +Saved idea 'Pão Bom'", r.out)
    assert "\x1b[" not in r.out  # a pipe gets no colour codes
    r = run("diff", "deep-research", "--db", str(dbs["deep"]), "--key", "files", "0", "latest")
    assert r.code == 0, r.err
    assert '+ ["/plan.md"]' in r.out
    assert "messages" not in r.out.split("\n", 1)[1]


def test_diff_colour_when_forced(run, dbs, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    r = run("diff", "bakery-plan", "12", "--db", str(dbs["agent"]))
    # the message step 12 added: its line green from the first character, the marker and index
    assert "\n    \x1b[32m+ [4] \x1b[0m" in r.out, r.out[:2000]
    assert "\x1b[31m" not in r.out  # and nothing removed (red)


def test_diff_patch_format(run, dbs):
    db = str(dbs["custom"])
    r = run("diff", "notes-edits", "-1", "latest", "--db", db, "--format", "patch")
    assert r.code == 0, r.err
    ops = json.loads(r.out)
    a = json.loads(run("show", "notes-edits", "-1", "--db", db, "--json").out)["values"]
    b = json.loads(run("show", "notes-edits", "--db", db, "--json").out)["values"]
    assert jsonpatch.apply_patch(a, ops) == b
    assert {op["op"] for op in ops} <= {"add", "remove", "replace"}


def test_exit_code(run, dbs):
    db = str(dbs["agent"])
    assert run("diff", "bakery-plan", "12", "--db", db, "--exit-code").code == 1
    assert run("diff", "bakery-plan", "12", "12", "--db", db, "--exit-code").code == 0
    assert run("diff", "bakery-plan", "12", "--db", db).code == 0


def test_log_patch(run, dbs):
    db = str(dbs["custom"])
    r = run("log", "approval-resumed", "-p", "--db", db)
    assert r.code == 0, r.err
    headings = [line for line in r.out.splitlines() if re.match(r"step -?\d+  ", line)]
    assert len(headings) == 5
    assert "+ note: approved by ops   by Command(update)" in r.out
    assert "+ decision: yes   by approve" in r.out
    lines = run("log", "approval-resumed", "-p", "--json", "--db", db).out.splitlines()
    docs = [json.loads(line) for line in lines]
    assert len(docs) == 5
    assert all("changes" in d for d in docs)
    newest = [e["checkpoint_id"] for e in expected("custom") if e["thread_id"] == "approval-resumed"]
    assert [d["to"] for d in docs] == newest
    assert docs[-1]["from"] is None


def test_diff_bad_input(run, dbs):
    db = str(dbs["custom"])
    r = run("diff", "nope", "--db", db)
    assert r.code == 3
    assert r.err.count("\n") == 1
    assert "no thread 'nope'" in r.err
    r = run("diff", "fanout", "zzzz", "--db", db)
    assert r.code == 3
    assert r.err.count("\n") == 1
    other = next(e["checkpoint_id"] for e in expected("custom") if e["thread_id"] == "notes-edits")
    r = run("diff", "fanout", "latest", other, "--db", db)
    assert r.code == 3
    assert r.err.count("\n") == 1
    assert f"checkpoint {other} belongs to thread 'notes-edits', not to thread 'fanout'" in r.err
    r = run("diff", "fanout", "--db", db, "--key", "nope")
    assert r.code == 3
    assert r.err.count("\n") == 1
    assert "no state key 'nope' at either checkpoint" in r.err
    r = run("diff", "fanout", "--db", db, "--format", "yaml")
    assert r.code != 0
    assert r.err.count("\n") == 1
    assert "unknown format" in r.err


def test_diff_corrupt_checkpoint(run, dbs):
    db = dbs["agent"]
    cid = corrupt_latest(db, "hola-panaderia")
    r = run("diff", "hola-panaderia", "--db", str(db))
    assert r.code == 4
    assert r.err.count("\n") == 1
    assert "internal error" not in r.err
    assert f"checkpoint {cid} of thread 'hola-panaderia' is corrupt" in r.err
    assert run("diff", "hola-panaderia", "1", "2", "--db", str(db)).code == 0


def test_log_ran_column_names_send_targets(run, dbs):
    """`log`'s `ran` column uses the same attribution: Send tasks are named by their node."""
    with statectl.open(str(dbs["custom"])) as store:
        view = store.view("fanout")
        writers = step_writers(view, view.records[1])
        assert writers["results"] == ["worker"]
        assert writers["audit"] == ["audit"]
    r = run("log", "fanout", "--db", str(dbs["custom"]))
    assert re.search(r"^\s+2  loop .* audit, worker\s+audit, results", r.out, re.M), r.out


def test_internal_channels_only_on_request(run, dbs):
    db = str(dbs["custom"])
    plain = run("diff", "fanout", "2", "--db", db)
    full = run("diff", "fanout", "2", "--db", db, "--internal")
    assert "branch:to:" not in plain.out
    assert "internal channels" in full.out
    assert "branch:to:" in full.out
    doc = json.loads(run("diff", "fanout", "2", "--db", db, "--internal", "--json").out)
    assert doc["internal"]
    assert all(not c["key"].startswith(("branch:", "__")) for c in doc["changes"])
    assert "internal" not in json.loads(run("diff", "fanout", "2", "--db", db, "--json").out)


def test_a_checkpoint_against_itself_has_no_note(run, dbs):
    """`diff T 5 5`: no state changes, and no note that B is an ancestor of A (it is A)."""
    r = run("diff", "bakery-plan", "5", "5", "--db", str(dbs["agent"]))
    assert r.code == 0, r.err
    assert r.out.splitlines()[1:] == ["no state changes"]


def test_the_appended_messages_shortcut_says_what_the_full_match_says():
    """A list of messages that only grew is diffed without a pass over the messages it kept; where
    an appended id was seen before (add_messages replaced one), or an id is missing, the full
    match by id decides. Either way the changes are the full match's."""
    from statectl.core.diff import _grown_messages, _messages

    def msg(i, text="x"):
        return {"$type": "langchain_core.messages.ai.AIMessage", "data": {"content": text, "id": i}}

    kept = [msg(f"m{i}") for i in range(50)]
    cases = [
        (kept, [*kept, msg("new1"), msg("new2")], True),
        (kept, [*kept, msg("m3", "again")], False),  # (an id seen before)
        (kept, [*kept, msg(None)], False),
        (kept, [*kept[:-1], msg("m49", "edited"), msg("new")], False),  # (not a prefix)
        ([], [msg("a")], False),
    ]
    for before, after, fast in cases:
        full = _messages(before, after)
        grown = _grown_messages(before, after)
        assert (grown is not None) == fast
        if grown is not None:
            assert grown == full
    assert [c.op for c in _messages(kept, [*kept, msg("m3", "again")])] == ["edited"]
