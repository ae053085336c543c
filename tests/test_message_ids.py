"""Issue 54: `log` reads the ids of the messages a list of messages writes (its "written,
unchanged" check) from the write's bytes, with no message built (`codec.arrays.message_ids`).
Those ids are the ones the decoded write gives, for every write of every sample store (real
LangGraph runs) and for hostile payloads; and `log` of a thread decodes none of its message
writes (SQLite and Postgres, real runs: tests/test_rewrites.py's threads)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Annotated, TypedDict

import ormsgpack
import pytest
from langgraph.graph.message import add_messages
from parity import SAMPLES
from test_rewrites import _runs

import statectl
from statectl.codec.arrays import message_ids
from statectl.core.reducers import is_message, message_data
from statectl.core.state import decode_write
from statectl.errors import DecodeError
from statectl.model import WriteRecord

M = "langchain_core.messages.ai"


def _expected(type_: str | None, blob: bytes | None) -> list[str | None] | None:
    """The ids as `log` read them before: from the decoded write, where it is a list of messages."""
    try:
        value = decode_write(WriteRecord("task", "", 0, "messages", type_, blob, "c"))
    except DecodeError:
        return None
    if not isinstance(value, list) or not value or not all(is_message(m) for m in value):
        return None
    return [message_data(m).get("id") for m in value]


def _agree(type_: str | None, blob: bytes | None) -> bool:
    """`message_ids` gives the decoded write's ids, or None (then `log` decodes the write)."""
    found = message_ids(type_, blob)
    if found is None:
        return False
    expected = _expected(type_, blob)
    assert expected is not None, found
    assert [str(i) for i in found if i] == [str(i) for i in expected if i], (found, expected)
    assert [i is None for i in found] == [not isinstance(i, str) for i in expected]
    return True


def test_every_sample_write_reads_its_ids_as_decoded():
    read = 0
    for db in sorted(SAMPLES.glob("*.sqlite")):
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows = conn.execute("SELECT type, value FROM writes").fetchall()
        except sqlite3.OperationalError:  # (a store of another layout)
            continue
        finally:
            conn.close()
        read += sum(_agree(t, v) for t, v in rows)
    assert read > 50  # (the sample chats' message writes are read from their bytes)


def _ext(code: int, *payload) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, ormsgpack.packb(list(payload), option=ormsgpack.OPT_NON_STR_KEYS))


def _msg(kwargs, code: int = 2, cls: str = "AIMessage") -> ormsgpack.Ext:
    return _ext(code, M, cls, kwargs, "model_validate_json") if code == 5 else _ext(code, M, cls, kwargs)


HOSTILE = [
    [_msg({"content": "a", "id": "x"}), _msg({"content": "b"}), _msg({"content": "c", "id": ""})],
    [_msg({"content": "a", "id": "p"}, 5), _msg({"content": "a", "id": "q"}, 4)],
    [_msg("text", 0), _msg(["a"], 1), _msg({"id": "y"}, 3)],  # (no data: no id)
    [_msg({"content": "a", "id": 7})],  # an id that is not text
    [_msg({"content": "a", "id": _ext(0, "uuid", "UUID", "0" * 32)})],  # an id that is an ext
    [_msg({"content": "a", "id": b"raw"})],
    [_msg({"$type": "x", "id": "z"})],  # a key like statectl's tags: escaped
    [_msg({1: "a", "id": "z"})],  # a key that is not text
    [_msg({"id": "z", "extra": ormsgpack.Ext(7, b"\xc1")})],  # a broken DeltaSnapshot inside: not a message
    [_msg({"id": "z", "extra": ormsgpack.Ext(9, b"\xc1")})],  # an unknown ext inside: kept as data
    [_msg({"content": "a", "id": "x"}), {"content": "b", "id": "y"}],  # not all messages
    [_ext(2, "os", "system", {"id": "x"})],  # not a message class
    [_ext(2, "langchain_core.messages.ai", 5, {"id": "x"})],
    [ormsgpack.Ext(2, b"\xc1")],
    [],
    _msg({"content": "a", "id": "x"}),  # one message, not a list
    {"id": "x"},
    "x",
]


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_writes_read_as_decoded_or_left_to_the_decoder(value):
    blob = ormsgpack.packb(value)
    if not _agree("msgpack", blob):
        assert message_ids("msgpack", blob) is None
    for other in ("json", "msgpack+aes", None, "pickle"):
        assert message_ids(other, blob) is None
    assert message_ids("msgpack", blob[:-1]) is None  # (truncated)
    assert message_ids("msgpack", b"") is None
    assert message_ids("msgpack", None) is None


def test_read_from_bytes_where_the_decoder_agrees():
    read = [i for i, v in enumerate(HOSTILE) if _agree("msgpack", ormsgpack.packb(v))]
    assert read == [0, 1, 2, 9], read  # (the rest: decoded, as before)


def _log_decodes(url: str) -> list[str]:
    """The channels of the writes `log` decoded for the test threads."""
    import statectl.core.timeline as timeline
    from statectl.core.timeline import entries

    channels: list[str] = []
    decode = timeline.decode_write

    def counted(w: WriteRecord):
        channels.append(w.channel)
        return decode(w)

    timeline.decode_write = counted
    try:
        with statectl.open(url) as store:
            for thread in ("flag", "counter"):
                view = store.view(thread)
                assert any(view.channel_writes("messages").values())
                assert any(e.changed == ("messages",) or "messages" in e.changed for e in entries(view))
    finally:
        timeline.decode_write = decode
    return channels


def test_log_decodes_no_message_write(tmp_path: Path):
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "flag.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    _runs(SqliteSaver(conn))
    conn.close()
    channels = _log_decodes(str(path))
    assert channels  # (the other keys' writes are read)
    assert "messages" not in channels, channels


def test_log_decodes_no_message_write_on_postgres(pg_empty):
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(pg_empty) as saver:
        saver.setup()
        _runs(saver)
    channels = _log_decodes(pg_empty)
    assert channels  # (the other keys' writes are read)
    assert "messages" not in channels, channels


CHAT_TURNS = 20


class Chat(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    done: bool


def _chat(checkpointer) -> None:
    """A chat whose node writes `done = True` every turn (issue 54's shape), its transcript long
    enough (40 messages, 80 kB) to be walked in its bytes rather than decoded whole."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END, START, StateGraph

    def reply(state: Chat) -> dict:
        n = len(state["messages"])
        return {"messages": [AIMessage("word " * 400, id=f"ai-{n}")], "done": True}

    g = StateGraph(Chat)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    g.add_edge("reply", END)
    graph = g.compile(checkpointer=checkpointer)
    cfg = {"configurable": {"thread_id": "chat"}}
    for i in range(CHAT_TURNS):
        graph.invoke({"messages": [HumanMessage(f"question {i}", id=f"q-{i}")]}, cfg)


def _messages_built(url: str, monkeypatch) -> int:
    """The messages `log` of the chat built (each message ext made a value: none kept from
    before), its "written, unchanged" notes checked."""
    from statectl.codec import decode
    from statectl.core.timeline import entries

    built: list = []
    make = decode._ext_value

    def counted(code: int, data: bytes):
        value = make(code, data)
        built.extend([value] if is_message(value) else [])
        return value

    monkeypatch.setattr(decode, "MEMO", decode._Memo())
    monkeypatch.setattr(decode, "_ext_value", counted)
    with statectl.open(url) as store:
        ents = entries(store.view("chat"))
    assert sum("done" in e.unchanged for e in ents) == CHAT_TURNS - 1
    assert all("messages" in e.changed for e in ents if e.ran == ("reply",))
    return len(built)


def test_log_builds_no_message(tmp_path: Path, monkeypatch):
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "chat.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    _chat(SqliteSaver(conn))
    conn.close()
    assert _messages_built(str(path), monkeypatch) == 0


def test_log_builds_no_message_on_postgres(pg_empty, monkeypatch):
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(pg_empty) as saver:
        saver.setup()
        _chat(saver)
    assert _messages_built(pg_empty, monkeypatch) == 0
