"""Long threads and huge values (issue 21 §6): walking a thread holds a few checkpoints, not the
thread; the decoder decodes a message shared by many checkpoints once, without changing a result;
`export` streams; `show`, `log -p`, `diff` and the TUI shorten long values by default and show
them whole on request (--full, `F`); JSON is never cut. The threads are written by real LangGraph
runs; the sizes and times are in bench/size.py, not here."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest

import statectl
from statectl.codec import decode
from statectl.render import Limits

LONG_TEXT = "start " + "word " * 300 + "the end"  # 1,512 characters: more than a text shows
MESSAGES = 260  # more than a transcript shows


@pytest.fixture(scope="module")
def long_db(tmp_path_factory):
    """One thread holding 260 messages and a long text, from a real run."""
    from conftest import one_node_runs
    from langchain_core.messages import AIMessage, HumanMessage
    from long_chat import Chat

    def reply(state: Chat) -> dict:
        return {"messages": [AIMessage(f"read {len(state['messages'])} messages")], "notes": LONG_TEXT}

    cfg = {"configurable": {"thread_id": "long"}}
    given = {"messages": [HumanMessage(f"question {i:03d}") for i in range(MESSAGES - 1)]}
    return one_node_runs(tmp_path_factory.mktemp("long") / "long.sqlite", Chat, reply, [(given, cfg)])


def test_walking_a_thread_holds_a_few_checkpoints(dbs):
    """`log -p` over a 36-checkpoint thread: the view keeps at most CACHED decoded checkpoints
    (it kept all of them), and every step diff equals one made by a fresh view."""
    from statectl.core.diff import diff

    with statectl.open(str(dbs["agent"])) as store:
        view = store.view("bakery-plan")
        assert len(view.records) > view.CACHED
        walked = [diff(view, view.by_id.get(r.parent_checkpoint_id or ""), r).to_json() for r in view.records]
        assert len(view._checkpoints) <= view.CACHED
    with statectl.open(str(dbs["agent"])) as store:
        fresh = store.view("bakery-plan")
        rec = fresh.records[len(fresh.records) // 2]
        assert walked[len(fresh.records) // 2] == diff(fresh, fresh.by_id[rec.parent_checkpoint_id], rec).to_json()


def test_messages_shared_by_checkpoints_are_decoded_once(dbs):
    with statectl.open(str(dbs["agent"])) as store:
        view = store.view("bakery-plan")
        newest, parent = (view.checkpoint(r.checkpoint_id)["channel_values"]["messages"] for r in view.records[:2])
        assert newest[0] is parent[0]  # the same bytes: one decoded object


@pytest.mark.parametrize(
    "name,thread", [("agent", "bakery-plan"), ("deep", "deep-research"), ("custom", "notes-edits")]
)
def test_the_memo_never_changes_a_result(run, dbs, monkeypatch, name, thread):
    """Every snapshot and step diff is the same with the memo at its size and with a memo that
    evicts at every insert (what a thread larger than the memo meets)."""
    db = str(dbs[name])
    monkeypatch.setattr(decode, "MEMO", decode._Memo())
    full = run("log", thread, "-p", "--json", "--db", db).out, run("log", thread, "--json", "--db", db).out
    monkeypatch.setattr(decode._Memo, "LIMIT", 0)
    monkeypatch.setattr(decode, "MEMO", decode._Memo())
    tiny = run("log", thread, "-p", "--json", "--db", db).out, run("log", thread, "--json", "--db", db).out
    assert full == tiny
    assert full[0].count("\n") > 3


def test_show_shortens_long_values_and_says_so(run, long_db):
    r = run("show", "long", "--db", str(long_db))
    assert r.code == 0, r.err
    assert f"{MESSAGES - Limits.items:,} earlier messages (--full shows them)" in r.out
    assert "question 000" not in r.out
    assert f"question {MESSAGES - 2:03d}" in r.out
    assert "the end" not in r.out
    assert "chars)" in r.out
    assert "note: 2 long values were shortened: --full shows them whole, --json exactly" in r.out

    whole = run("show", "long", "--full", "--db", str(long_db))
    assert whole.code == 0
    assert "earlier messages" not in whole.out
    assert "shortened" not in whole.out
    assert all(f"question {i:03d}" in whole.out for i in range(MESSAGES - 1))
    assert "the end" in whole.out

    data = json.loads(run("show", "long", "--json", "--db", str(long_db)).out)["values"]
    assert len(data["messages"]) == MESSAGES
    assert data["notes"] == LONG_TEXT


def test_log_patch_and_diff_shorten_a_step_that_added_many_messages(run, long_db):
    for args in (["log", "long", "-p"], ["diff", "long", "0"]):
        r = run(*args, "--db", str(long_db))
        assert r.code == 0, (args, r.err)
        assert f"{MESSAGES - 1 - Limits.items:,} more messages (--full shows them)" in r.out, args
        assert "question 000" in r.out
        assert f"question {MESSAGES - 2:03d}" not in r.out
        whole = run(*args, "--full", "--db", str(long_db))
        assert f"question {MESSAGES - 2:03d}" in whole.out
        assert "more messages" not in whole.out


def test_export_needs_threads_and_streams(run, dbs, tmp_path, monkeypatch):
    db = str(dbs["agent"])
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()
    r = run("export", "-o", str(tmp_path / "x.json"), "--db", db)
    assert r.code == 2
    assert "--all" in r.err
    assert not (tmp_path / "x.json").exists()
    r = run("export", "bakery-plan", "nope", "-o", str(tmp_path / "x.json"), "--db", db)
    assert r.code == 3
    assert "nope" in r.err
    assert list(tmp_path.iterdir()) == []

    from statectl.sources.export import write_export

    class Sink:
        def __init__(self) -> None:
            self.reads_at_write: list[int] = []
            self.data = b""

        def write(self, b: bytes) -> None:
            if b'"checkpoint_id"' in b:
                self.reads_at_write.append(reads)
            self.data += b

    with statectl.open(db) as store:
        source = store.source
        reads = 0

        def counting(read):
            def counted(*a):
                nonlocal reads
                reads += 1
                return read(*a)

            return counted

        # (a checkpoint's row is read by raw_checkpoint, or on SQLite with its metadata by raw_row)
        for name in ("raw_checkpoint", "raw_row"):
            if hasattr(source, name):
                monkeypatch.setattr(source, name, counting(getattr(source, name)))
        sink = Sink()
        write_export(source, ["bakery-plan"], sink)
    assert reads == 36
    assert sink.reads_at_write[:3] == [1, 2, 3]
    assert len(json.loads(sink.data)["threads"][0]["checkpoints"]) == 36

    out = tmp_path / "all.json"
    with statectl.open(db) as store:
        n = len(store.every_thread_id())
    pages = []
    real = type(source).thread_ids_after
    monkeypatch.setattr(
        type(source), "thread_ids_after", lambda self, after, limit: pages.append(after) or real(self, after, 1)
    )
    r = run("export", "--all", "-o", str(out), "--db", db)
    assert r.code == 0
    assert f"exported {n} threads to {out}" in r.err
    assert len(pages) == n + 1  # (--all reads the ids a page at a time: here a thread a page)
    assert [p.name for p in tmp_path.iterdir()] == ["all.json"]
    assert (out.stat().st_mode & 0o777) == 0o600 & ~_umask()  # (an export can hold secrets: private)
    assert json.loads(run("threads", "--json", "--db", str(out)).out) == json.loads(
        run("threads", "--json", "--db", db).out
    )


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_export_refuses_a_terminal(dbs):
    """JSON for a file is not sent to a terminal (a real pty)."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "statectl", "export", "bakery-plan", "--db", str(dbs["agent"])],
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith("statectl: the export is JSON for a file, not for the terminal")


async def test_the_tui_shortens_a_long_transcript_and_F_shows_it_whole(long_db):
    from tui_helpers import settle

    from statectl.tui import make_app
    from statectl.tui.widgets.document import Document

    app = make_app(str(long_db), "long", poll=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        doc = app.screen.query_one(Document)
        assert f"{MESSAGES - Limits.items:,} earlier messages (F shows them)" in doc.text
        assert "question 000" not in doc.text
        await pilot.press("F")
        await settle(pilot)
        assert "question 000" in doc.text
        assert "earlier messages" not in doc.text
        await pilot.press("F")
        await settle(pilot)
        assert "question 000" not in doc.text
        await pilot.press("q")
    assert app.return_code in (0, None)


@pytest.fixture(autouse=True)
def _limits():
    yield
    Limits.full, Limits.cut, Limits.hint = False, 0, "--full"
