"""Issue 54: `show` decodes what it shows. A transcript of thousands of messages prints its newest
`Limits.items` (200): the msgpack array is length-prefixed, so the earlier messages are walked
and checked to be messages in their bytes (`codec.arrays.Tail`), not decoded into values; the
rest only for `--full`, `--json` or a reducer. The output is the one of the whole decode, byte
for byte: on a real LangGraph chat in SQLite and Postgres, and where an early element is not a
message (a list of other things, a message whose bytes were altered)."""

from __future__ import annotations

import sqlite3
from typing import Annotated, TypedDict

import pytest
from langgraph.graph import add_messages

from statectl.codec import arrays, decode

ASKED = 300
"""Questions sent in each of the 2 turns: 602 messages in the newest checkpoint."""


class State(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    items: list
    done: bool


def _runs(checkpointer) -> None:
    """`long`: 2 turns of 300 questions and an answer each (602 messages); `items`: the same,
    and a list of 400 plain values beside them (a long array that is not a transcript)."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END, START, StateGraph

    def reply(state: State) -> dict:
        n = len(state["messages"])
        out: dict = {"messages": [AIMessage(f"answer to {n} questions")], "done": True}
        if "items" in state:
            out["items"] = [{"n": i, "text": f"item {i}"} for i in range(400)]
        return out

    g = StateGraph(State)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    g.add_edge("reply", END)
    graph = g.compile(checkpointer=checkpointer)
    for thread in ("long", "items"):
        cfg = {"configurable": {"thread_id": thread}}
        for turn in range(2):
            asked = [HumanMessage(f"question {turn}.{i}: " + "why? " * 20) for i in range(ASKED)]
            first = {"items": []} if thread == "items" and turn == 0 else {}
            graph.invoke({"messages": asked, **first}, cfg)


@pytest.fixture(scope="module")
def chat_db(tmp_path_factory):
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path_factory.mktemp("tail") / "chat.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    _runs(SqliteSaver(conn))
    conn.close()
    return str(path)


def _counted(monkeypatch) -> list:
    """The ext payloads decoded (a message each) from here on, with nothing remembered before."""
    calls: list = []
    hook = decode._ext_hook

    def counted(code, data):
        calls.append(code)
        return hook(code, data)

    decode.MEMO.__init__()
    arrays.ARRAYS.__init__()
    monkeypatch.setattr(decode, "_ext_hook", counted)
    return calls


def _whole(monkeypatch) -> None:
    """Decode as before: every transcript whole."""
    monkeypatch.setattr(arrays, "_tail", lambda *args: None)


def _outputs(run, db: str, thread: str) -> list[tuple[int, str, str]]:
    return [
        (r.code, r.out, r.err)
        for r in (run(*args, thread, "--db", db) for args in (["show"], ["show", "--full"], ["show", "--json"]))
    ]


def _check(run, monkeypatch, db: str) -> None:
    for thread in ("long", "items"):
        calls = _counted(monkeypatch)
        shown = run("show", thread, "--db", db)
        assert shown.code == 0, shown.err
        assert f"messages ({2 * ASKED + 2})" in shown.out
        assert f"{2 * ASKED + 2 - 200:,} earlier messages (--full shows them)" in shown.out
        assert len(calls) <= 200 + 10, (thread, len(calls))  # (the 200 shown, not 602)
        fast = _outputs(run, db, thread)
        with monkeypatch.context() as m:
            _whole(m)
            calls = _counted(m)
            assert run("show", thread, "--db", db).out == shown.out
            assert len(calls) > 2 * ASKED  # (the same view, every message decoded)
            assert _outputs(run, db, thread) == fast


def test_show_decodes_the_messages_it_shows(run, monkeypatch, chat_db):
    _check(run, monkeypatch, chat_db)


def test_show_decodes_the_messages_it_shows_on_postgres(run, monkeypatch, pg_empty):
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(pg_empty) as saver:
        saver.setup()
        _runs(saver)
    _check(run, monkeypatch, pg_empty)


@pytest.mark.parametrize("early", [0, 150, 401])
def test_an_early_element_that_is_not_a_message_decodes_all(run, monkeypatch, chat_db, tmp_path, early):
    """A message's bytes altered before the shown ones (its class renamed: no longer a message,
    or its payload cut: undecodable): the transcript is not a transcript, so it is decoded whole
    and shown as the whole decode shows it."""
    import shutil

    db = tmp_path / "altered.sqlite"
    shutil.copy(chat_db, db)
    conn = sqlite3.connect(db)
    cid, blob = conn.execute(
        "SELECT checkpoint_id, checkpoint FROM checkpoints WHERE thread_id = 'long' ORDER BY checkpoint_id DESC LIMIT 1"
    ).fetchone()
    name = b"langchain_core.messages.human"
    at = -1
    for _ in range(early + 1):
        at = blob.index(name, at + 1)
    for altered in (b"langchain_core.massages.human", b"\xc1angchain_core.messages.human"):
        conn.execute(
            "UPDATE checkpoints SET checkpoint = ? WHERE thread_id = 'long' AND checkpoint_id = ?",
            (blob[:at] + altered + blob[at + len(name) :], cid),
        )
        conn.commit()
        fast = _outputs(run, str(db), "long")
        with monkeypatch.context() as m:
            _whole(m)
            assert _outputs(run, str(db), "long") == fast
        assert fast[0][0] == 0, fast[0]
    conn.close()


def test_a_tail_is_the_whole_transcript_to_anything_but_the_view():
    """Compared, it is the whole list (a reducer or a comparison never sees a part of it)."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    _, data = JsonPlusSerializer().dumps_typed([HumanMessage(f"m{i}", id=str(i)) for i in range(300)])
    whole = decode.decode_msgpack(data)
    with arrays.tail(200):
        part = arrays.decode_sharing(data, decode._unpack)
    assert isinstance(part, arrays.Tail)
    assert len(part) == 200
    assert part.total == 300
    assert part[0] == whole[100]
    assert part == whole
    assert whole == part
    assert part != whole[100:]
    assert arrays.whole(part) == whole
    assert arrays.whole(whole) is whole
