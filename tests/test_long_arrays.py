"""A transcript decoded once across a thread's checkpoints (issue 36, `log -p`): an array whose
leading elements are the bytes of one decoded before shares their values and decodes the rest.
The result is always what decoding the whole payload gives: checked on every checkpoint of the
sample stores and of a real run whose messages were rewritten and removed part-way, read oldest
first and newest first; broken payloads fall back to the whole decode and its error."""

from __future__ import annotations

import sqlite3

import ormsgpack
import pytest

import statectl
from statectl.codec import arrays, decode
from statectl.errors import DecodeError

TURNS = 40
TEXT = "a line of a long answer, " * 32  # 800 characters: a checkpoint passes MIN_BLOB at ~20 turns


def _chat_runs(checkpointer) -> None:
    """40 turns of an add_messages chat, run by LangGraph on `checkpointer`: at turn 25 the node
    rewrites an early message (same id, new text), at turn 30 it removes another, so the
    transcript then differs from the one before it in its middle, not only at its end."""
    from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
    from langgraph.graph import END, START, StateGraph
    from long_chat import Chat

    def reply(state: Chat) -> dict:
        msgs = state["messages"]
        out: list = [AIMessage(f"answer {len(msgs)}: {TEXT}")]
        if len(msgs) == 49:  # (turn 25)
            out.append(AIMessage("rewritten", id=msgs[11].id))
        if len(msgs) == 59:  # (turn 30)
            out.append(RemoveMessage(id=msgs[6].id))
        return {"messages": out, "notes": f"turn {len(msgs)}"}

    g = StateGraph(Chat)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    g.add_edge("reply", END)
    graph = g.compile(checkpointer=checkpointer)
    cfg = {"configurable": {"thread_id": "chat"}}
    for i in range(TURNS):
        graph.invoke({"messages": [HumanMessage(f"question {i}: {TEXT}")]}, cfg)


@pytest.fixture(scope="module")
def chat_db(tmp_path_factory):
    """The chat in a SqliteSaver file."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path_factory.mktemp("chat") / "chat.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    _chat_runs(SqliteSaver(conn))
    conn.close()
    return path


@pytest.fixture
def fresh(monkeypatch):
    """Empty caches (the memo and the arrays), so a test sees its own decoding only."""
    monkeypatch.setattr(decode, "MEMO", decode._Memo())
    monkeypatch.setattr(arrays, "ARRAYS", arrays._Arrays())


def _blobs(db) -> list[bytes]:
    conn = sqlite3.connect(db)
    rows = [b for (b,) in conn.execute("SELECT checkpoint FROM checkpoints WHERE type = 'msgpack' ORDER BY rowid")]
    conn.close()
    return rows


def _as_array(blob: bytes) -> bytes | None:
    """A checkpoint's messages as a Postgres checkpoint_blobs row holds them: one msgpack array."""
    raw = ormsgpack.unpackb(blob, ext_hook=ormsgpack.Ext, option=ormsgpack.OPT_NON_STR_KEYS)
    msgs = raw.get("channel_values", {}).get("messages")
    return ormsgpack.packb(msgs) if isinstance(msgs, list) else None


def test_the_chat_changes_in_its_middle(chat_db):
    """(The fixture is what the tests below need: blobs past MIN_BLOB, a rewrite and a removal.)"""
    with statectl.open(str(chat_db)) as store:
        view = store.view("chat")
        texts = [
            [m["data"]["content"] for m in view.checkpoint(r.checkpoint_id)["channel_values"].get("messages", [])]
            for r in view.records
        ]
    assert len(texts) == 3 * TURNS
    assert "rewritten" in texts[0]
    assert texts[0][6].startswith("answer")  # (message 6, a question, removed)
    assert sum(len(b) >= arrays.MIN_BLOB for b in _blobs(chat_db)) >= 40


@pytest.mark.parametrize("order", ["oldest first", "newest first"])
@pytest.mark.parametrize("name", ["chat", "agent", "deep", "custom"])
def test_sharing_decodes_every_checkpoint_as_the_whole_decode_does(chat_db, dbs, fresh, monkeypatch, order, name):
    """Every checkpoint (and its messages as one array), decoded with sharing at any size,
    equals the whole decode; where leading elements are the same bytes they are the same objects."""
    monkeypatch.setattr(arrays, "MIN_ITEMS", 1)
    blobs = _blobs(chat_db if name == "chat" else dbs[name])
    if order == "newest first":
        blobs.reverse()
    shared = 0
    for payload in [p for b in blobs for p in (b, _as_array(b)) if p is not None]:
        got = arrays.decode_sharing(payload, decode._unpack)
        if got is not None:  # (None: nothing to share, the caller decodes it whole)
            assert got == decode._unpack(payload)
            shared += 1
    assert shared >= len(blobs) // 2


def test_equal_leading_messages_are_one_object(chat_db, fresh):
    blobs = _blobs(chat_db)
    older, newer = (arrays.decode_sharing(b, decode._unpack) for b in (blobs[-4], blobs[-1]))
    a, b = older["channel_values"]["messages"], newer["channel_values"]["messages"]
    assert len(b) > len(a) >= arrays.MIN_ITEMS
    assert all(x is y for x, y in zip(a, b[: len(a)], strict=True))
    assert a is not b


def _log_p_both_ways(run, db: str, monkeypatch) -> tuple[list, list]:
    """`log -p` of the chat with arrays shared, then with every checkpoint decoded whole (the
    same output, checked here): the sizes of the payloads each run handed to ormsgpack."""
    sizes: list[list[int]] = [[]]  # (the shared run's, then the whole run's)
    unpackb = ormsgpack.unpackb

    def counted(data, *args, **kwargs):
        sizes[-1].append(len(data))
        return unpackb(data, *args, **kwargs)

    monkeypatch.setattr(ormsgpack, "unpackb", counted)
    shared = run("log", "-p", "chat", "--db", db)
    sizes.append([])
    monkeypatch.setattr(arrays, "MIN_BLOB", 1 << 40)  # (never shared: each checkpoint decoded whole)
    monkeypatch.setattr(decode, "MEMO", decode._Memo())
    whole = run("log", "-p", "chat", "--db", db)
    assert shared.code == whole.code == 0, shared.err + whole.err
    assert whole.out == shared.out
    assert "rewritten" in shared.out
    return sizes[0], sizes[1]


def test_log_p_decodes_what_each_step_adds(run, chat_db, fresh, monkeypatch):
    """`log -p` over the chat hands the decoder each step's new bytes, not the transcript again
    (before: every checkpoint's whole blob, 80 messages at its end), and prints the same as
    decoding every checkpoint whole."""
    shared, whole = _log_p_both_ways(run, str(chat_db), monkeypatch)
    total = sum(len(b) for b in _blobs(chat_db))
    # whole transcripts, or most of one: the newest step's, and at each of the two steps that
    # changed an early message, the messages from that one on
    big = [n for n in shared if n >= 32 << 10]
    assert len(big) <= 3, f"{len(big)} payloads of a whole transcript decoded"
    assert sum(shared) < total / 2, f"{sum(shared)} bytes decoded, the blobs are {total}"
    assert sum(whole) >= total
    assert sum(n >= 32 << 10 for n in whole) >= TURNS


def test_postgres_channel_blobs_share_their_leading_messages(run, pg_empty, fresh, monkeypatch):
    """PostgresSaver keeps each version of `messages` as its own blob, one msgpack array: `log -p`
    decodes what each version adds, and prints what decoding every blob whole prints."""
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(pg_empty) as saver:
        saver.setup()
        _chat_runs(saver)
    shared, whole = _log_p_both_ways(run, pg_empty, monkeypatch)
    assert sum(n >= 32 << 10 for n in shared) <= 3  # (as on SQLite: the newest, two changes)
    assert sum(n >= 32 << 10 for n in whole) >= TURNS


def _dup_key(blob: bytes) -> bytes:
    """The checkpoint map with one more `channel_values` entry, an empty map (0x80)."""
    size = blob[0] & 0x0F
    assert blob[0] & 0xF0 == 0x80
    assert size < 15
    return bytes([0x80 | (size + 1)]) + blob[1:] + ormsgpack.packb("channel_values") + b"\x80"


@pytest.mark.parametrize(
    "broken",
    [
        lambda b: b[:-10],  # cut short
        lambda b: b + b"\x00",  # a byte after the map
        _dup_key,  # a repeated key: the whole decode keeps the last one
        lambda b: b"\xdd\xff\xff\xff\xff" + b[:40000],  # an array claiming 4 billion elements
        lambda b: b"\xc1" * 40000,  # a byte msgpack never uses
    ],
    ids=["truncated", "trailing", "repeated-key", "huge-count", "reserved-byte"],
)
def test_broken_payloads_decode_whole_as_before(chat_db, fresh, broken):
    """Sharing gives up (None) and the whole decode runs: its value or its one-line error."""
    blob = broken(_blobs(chat_db)[-1])
    assert arrays.decode_sharing(blob, decode._unpack) is None
    try:
        expected: object = decode._unpack(blob)
    except (ValueError, TypeError) as exc:
        expected = DecodeError(f"corrupt msgpack data ({exc})")
    try:
        got: object = decode.decode_msgpack(blob)
    except DecodeError as exc:
        got = exc
    assert str(got) == str(expected) if isinstance(expected, Exception) else got == expected


def _whole(payload: bytes) -> object:
    """What the whole decode gives: the value, or the error's type and text."""
    try:
        return decode._unpack(payload)
    except (ValueError, TypeError, RecursionError) as exc:
        return (type(exc), str(exc))


def test_mutated_transcripts_decode_as_the_whole_decode_or_not_at_all(chat_db, fresh):
    """Seeded mutations (tests/fuzz.py's: bytes flipped, cut, inserted, repeated) of the chat's
    long checkpoints and of their messages as one array, each read right after its unchanged
    neighbour (so the walk compares against a seen array): sharing gives the whole decode's
    value or gives up (None); it never raises and never gives anything else."""
    import itertools
    import random

    from fuzz import mutate

    rng = random.Random(36)
    blobs = [b for b in _blobs(chat_db) if len(b) >= arrays.MIN_BLOB]
    pairs = list(itertools.pairwise(blobs))
    pairs += [(x, y) for a, b in pairs[:20] if (x := _as_array(a)) is not None and (y := _as_array(b)) is not None]
    shared = gave_up = 0
    for _ in range(400):
        before, payload = rng.choice(pairs)
        arrays.decode_sharing(before, decode._unpack)  # (seen: the next is compared with it)
        mutated = mutate(rng, payload)
        got = arrays.decode_sharing(mutated, decode._unpack)
        if got is None:
            gave_up += 1
            continue
        shared += 1
        assert got == _whole(mutated)
    assert shared > 20  # (a flipped byte inside a message's text still decodes: both ways agree)
    assert gave_up > 50


def test_the_arrays_kept_are_bounded(monkeypatch):
    """At most ENTRIES arrays and LIMIT bytes of their elements are kept, the least recently used
    going first; an array larger than LIMIT is not kept at all."""
    monkeypatch.setattr(arrays, "LIMIT", 1000)
    monkeypatch.setattr(arrays, "ENTRIES", 3)
    kept = arrays._Arrays()
    for i in range(6):
        kept.put(("k", i), arrays._Seen(b"x" * 300, [300], [i]))
        assert kept.size == sum(len(s.elems) for s in kept.seen.values()) <= 1000
        assert len(kept.seen) <= 3
    assert list(kept.seen) == [("k", 3), ("k", 4), ("k", 5)]
    assert kept.get(("k", 3)) is not None  # (used: now the newest)
    kept.put(("k", 6), arrays._Seen(b"x" * 500, [500], [6]))
    assert list(kept.seen) == [("k", 3), ("k", 6)]  # (4 and 5 went: 300 + 300 + 500 > 1000)
    kept.put(("big", 0), arrays._Seen(b"x" * 1001, [1001], [0]))
    assert ("big", 0) not in kept.seen


def test_a_payload_without_a_long_array_is_not_walked(dbs, chat_db, fresh, monkeypatch):
    """No array16 or array32 header byte (0xdc, 0xdd) anywhere: no array of 16 or more elements,
    so sharing gives up before walking (a large checkpoint of other values was walked, then
    decoded whole: 1.7x the time on real stores' checkpoints of 50-80 kB)."""
    walked: list[int] = []
    head = arrays._head

    def counted(d, i):
        walked.append(i)
        return head(d, i)

    monkeypatch.setattr(arrays, "_head", counted)
    blobs = _blobs(dbs["agent"])
    plain = [b for b in blobs if b"\xdc" not in b and b"\xdd" not in b]
    assert plain
    for b in plain:
        assert arrays.decode_sharing(b, decode._unpack) is None
    assert walked == []
    assert arrays.decode_sharing(_blobs(chat_db)[-1], decode._unpack) is not None  # (a transcript: walked)
    assert walked
