"""The pure parts, with plain asserts: reducers, the decoder's ext codes and fallbacks, diff paths
and message matching, thread status, LIKE escaping and paging. (Everything else is checked
against real LangGraph runs; these pin the edge cases those runs do not reach.)"""

from __future__ import annotations

import datetime
import decimal
import uuid

import ormsgpack
import pytest

from statectl.codec.decode import (
    EXT_CONSTRUCTOR_KW_ARGS,
    EXT_CONSTRUCTOR_POS_ARGS,
    EXT_CONSTRUCTOR_SINGLE_ARG,
    EXT_DELTA_SNAPSHOT,
    EXT_METHOD_SINGLE_ARG,
    EXT_NUMPY_ARRAY,
    EXT_PYDANTIC_V2,
    DeltaSnapshot,
    Tagged,
    b64,
    decode_msgpack,
    decode_typed,
    sniff,
    unb64,
)
from statectl.core import reducers
from statectl.core.diff import _key_changes, _messages, _paths
from statectl.errors import DecodeError, NotFoundError
from statectl.model import NULL_TASK_ID, ThreadPage
from statectl.sources.base import by_checkpoint, like, page, page_lazily, replay_order
from statectl.sources.status import thread_status


def msg(kind: str, mid: str | None, text: str = "") -> dict:
    return Tagged({"$type": f"langchain_core.messages.{kind}", "data": {"id": mid, "content": text}})


def human(mid: str | None, text: str = "") -> dict:
    return msg("human.HumanMessage", mid, text)


def remove(mid: str) -> dict:
    return msg("modifier.RemoveMessage", mid)


# -- reducers -----------------------------------------------------------------------------------
def test_add_messages_appends_replaces_by_id_and_removes():
    left = [human("1", "a"), human("2", "b")]
    got = reducers.add_messages(left, [human("2", "B"), human("3", "c"), remove("1")])
    assert [(m["data"]["id"], m["data"]["content"]) for m in got] == [("2", "B"), ("3", "c")]
    assert [m["data"]["content"] for m in left] == ["a", "b"]  # the base is not changed in place


def test_add_messages_remove_all_keeps_only_what_follows_it():
    got = reducers.add_messages([human("1"), human("2")], [human("x"), remove("__remove_all__"), human("4")])
    assert [m["data"]["id"] for m in got] == ["4"]


def test_add_messages_single_value_none_base_and_unknown_remove():
    assert reducers.add_messages(None, human("1")) == [human("1")]
    assert reducers.add_messages([human("1")], remove("nope")) == [human("1")]  # (LangGraph raises; kept)
    assert len(reducers.add_messages([human(None)], human(None))) == 2  # no id: appended


def test_merge_dict_none_deletes_and_concat_and_add():
    assert reducers.merge_dict({"a": 1, "b": 2}, {"b": None, "c": 3}) == {"a": 1, "c": 3}
    assert reducers.merge_dict(None, "not a dict") == {}
    assert reducers.concat([1], [2, 3]) == [1, 2, 3]
    assert reducers.concat(None, 4) == [4]
    assert reducers.add(1, 2) == 3
    assert reducers.add("a", "b") == "ab"
    assert reducers.add(1.5, 1) == 2.5
    assert reducers.add([1], [2]) == [1, 2]
    assert reducers.add(True, [1]) == [True, 1]


def test_overwrite_resets_and_none_reducer_is_last_value():
    over = {"$type": "langgraph.types.Overwrite", "data": {"value": [9]}}
    assert reducers.apply(reducers.concat, [1, 2], over) == [9]
    assert reducers.apply(None, [1, 2], [3]) == [3]
    assert reducers.apply(reducers.concat, [1], [2]) == [1, 2]


@pytest.mark.parametrize(
    ("values", "want"),
    [
        ([[human("1")]], reducers.add_messages),
        ([{"k": 1}], reducers.merge_dict),
        ([[1, 2]], reducers.concat),
        ([Tagged({"$uuid": "x"})], None),
        ([3], None),
        ([], None),
    ],
)
def test_reducer_for_picks_by_the_written_values(values, want):
    assert reducers.reducer_for(values) is want


def test_empty_like():
    assert reducers.empty_like([1]) == []
    assert reducers.empty_like({"a": 1}) == {}
    assert reducers.empty_like(Tagged({"$set": [1]})) == {"$set": []}
    assert reducers.empty_like(Tagged({"$uuid": "u"})) is None
    assert reducers.empty_like(3) is None


# -- the decoder --------------------------------------------------------------------------------
def ext(code: int, payload) -> bytes:
    return ormsgpack.packb(ormsgpack.Ext(code, ormsgpack.packb(payload)))


@pytest.mark.parametrize(
    ("code", "payload", "want"),
    [
        (EXT_CONSTRUCTOR_SINGLE_ARG, ["uuid", "UUID", uuid.UUID(int=5).hex], {"$uuid": str(uuid.UUID(int=5))}),
        (EXT_CONSTRUCTOR_SINGLE_ARG, ["decimal", "Decimal", "1.10"], {"$decimal": "1.10"}),
        (EXT_CONSTRUCTOR_SINGLE_ARG, ["builtins", "set", ["b", "a"]], {"$set": ["a", "b"]}),
        (EXT_CONSTRUCTOR_SINGLE_ARG, ["builtins", "frozenset", [2, 1]], {"$frozenset": [1, 2]}),
        (EXT_CONSTRUCTOR_SINGLE_ARG, ["enum", "Color", "red"], {"$type": "enum.Color", "arg": "red"}),
        (EXT_CONSTRUCTOR_POS_ARGS, ["datetime", "date", [2026, 1, 2]], {"$date": "2026-01-02"}),
        (EXT_CONSTRUCTOR_POS_ARGS, ["app", "Point", [1, 2]], {"$type": "app.Point", "args": [1, 2]}),
        (EXT_CONSTRUCTOR_KW_ARGS, ["app", "Cfg", {"a": 1}], {"$type": "app.Cfg", "data": {"a": 1}}),
        (
            EXT_METHOD_SINGLE_ARG,
            ["datetime", "datetime", "2026-01-02T03:04:05", "fromisoformat"],
            {"$datetime": "2026-01-02T03:04:05"},
        ),
        (EXT_METHOD_SINGLE_ARG, ["app", "T", 1, "make"], {"$type": "app.T", "arg": 1, "method": "make"}),
        (EXT_PYDANTIC_V2, ["app.models", "User", {"name": "x"}], {"$type": "app.models.User", "data": {"name": "x"}}),
        (
            EXT_NUMPY_ARRAY,
            ["<i8", [2], "C", b"\x01"],
            {"$ndarray": {"dtype": "<i8", "shape": [2], "order": "C", "data": b64(b"\x01")}},
        ),
    ],
)
def test_each_ext_code_decodes_to_inert_data(code, payload, want):
    got = decode_msgpack(ext(code, payload))
    assert isinstance(got, Tagged)
    assert dict(got) == want


def test_unknown_or_malformed_ext_is_kept_as_bytes():
    for code, payload in (
        (42, ["a", "b", 1]),
        (EXT_CONSTRUCTOR_SINGLE_ARG, "not a list"),
        (EXT_CONSTRUCTOR_SINGLE_ARG, [1, 2, 3]),
    ):
        got = decode_msgpack(ext(code, payload))
        assert got["$ext"] == code
        assert unb64(got["data"]) == ormsgpack.packb(payload)
    raw = ormsgpack.packb(ormsgpack.Ext(EXT_CONSTRUCTOR_KW_ARGS, b"\xc1"))  # not msgpack inside
    assert decode_msgpack(raw) == {"$ext": EXT_CONSTRUCTOR_KW_ARGS, "data": b64(b"\xc1")}


def test_delta_snapshot_and_json_safety():
    assert decode_msgpack(ext(EXT_DELTA_SNAPSHOT, [1])) == DeltaSnapshot([1])
    got = decode_msgpack(ormsgpack.packb({"x": float("nan"), "b": b"\x00", "$type": "os.system"}))
    assert got == {"$dict": [["x", {"$float": "nan"}], ["b", {"$bytes": "AA=="}], ["$type", "os.system"]]}
    assert decode_msgpack(ormsgpack.packb({1: "a"}, option=ormsgpack.OPT_NON_STR_KEYS)) == {"$dict": [[1, "a"]]}
    with pytest.raises(DecodeError, match="corrupt msgpack"):
        decode_msgpack(b"\xc1")


def test_decode_typed_dispatch_and_fallbacks():
    assert decode_typed("null", b"") is None
    assert decode_typed("empty", None) is None
    assert decode_typed("bytes", b"\x01") == {"$bytes": "AQ=="}
    assert decode_typed(
        "json",
        b'{"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages",'
        b' "HumanMessage"], "kwargs": {"content": "hi"}}',
    ) == {"$type": "langchain_core.messages.human.HumanMessage", "data": {"content": "hi"}}
    assert decode_typed("whatever+format", b"abc") == {"$undecoded": {"type": "whatever+format", "size": 3}}
    assert decode_typed("pickle", b"\x80\x04N.")["$undecoded"]["type"] == "pickle"  # not unpickled by default
    assert decode_typed(None, b'{"a": 1}') == {"a": 1}  # no type column: sniffed
    with pytest.raises(DecodeError, match="corrupt JSON"):
        decode_typed("json", b"{")
    assert (sniff(b"{}"), sniff(b"\x80\x04."), sniff(b"\x81\xa1a\x01")) == ("json", "pickle", "msgpack")


def test_settings_apply_inside_their_block_only():
    """--unpickle-inert is a setting of one command: in force inside `applied()`, off after it (it
    was a module global a CLI test could leave on for the next test in the process)."""
    from statectl.settings import Settings, current

    pickled = b"\x80\x04\x95\x06\x00\x00\x00\x00\x00\x00\x00\x8c\x02hi\x94."
    assert "$undecoded" in decode_typed("pickle", pickled)
    with Settings(unpickle=True, timeout=3.0).applied():
        assert decode_typed("pickle", pickled) == "hi"
        assert current().timeout == 3.0
    assert "$undecoded" in decode_typed("pickle", pickled)
    assert current().timeout is None


def test_datetime_and_decimal_values_do_not_need_their_modules():
    stamp = datetime.datetime(2026, 1, 2, 3, 4, 5)
    payload = ["datetime", "datetime", stamp.isoformat(), "fromisoformat"]
    assert decode_msgpack(ext(EXT_METHOD_SINGLE_ARG, payload)) == {"$datetime": "2026-01-02T03:04:05"}
    assert decimal.Decimal(
        decode_msgpack(ext(EXT_CONSTRUCTOR_SINGLE_ARG, ["decimal", "Decimal", "2.5"]))["$decimal"]
    ) == decimal.Decimal("2.5")


# -- diff ---------------------------------------------------------------------------------------
def test_paths_are_json_pointers_with_escapes():
    got = _paths({"a/b": 1, "m~n": [1, 2], "gone": 0}, {"a/b": 2, "m~n": [1], "new": {"x": 1}}, "")
    assert [(c.op, c.path) for c in got] == [
        ("replace", "/a~1b"),
        ("remove", "/m~0n/1"),
        ("remove", "/gone"),
        ("add", "/new"),
    ]


def test_messages_matched_by_id_as_add_messages_does():
    before = [human("1", "a"), human("2", "b"), human("3", "c")]
    after = [human("1", "a"), human("2", "B"), human("4", "d")]
    got = [(c.op, c.id, c.index) for c in _messages(before, after)]
    assert got == [("removed", "3", 2), ("edited", "2", 1), ("added", "4", 2)]
    assert _messages(before, before) == ()


def test_key_changes_name_the_writers_and_see_messages():
    before = {"kept": 1, "gone": 2, "messages": [human("1")]}
    after = {"kept": 1, "new": 3, "messages": [human("1"), human("2")]}
    got = {c.key: c for c in _key_changes(before, after, {"new": (("node",), ()), "messages": (("agent",), ())})}
    assert {k: c.op for k, c in got.items()} == {"gone": "removed", "new": "added", "messages": "changed"}
    assert got["new"].by == ("node",)
    assert got["gone"].by == ()
    assert [(m.op, m.id) for m in got["messages"].messages] == [("added", "2")]


# -- status -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("metadata", "writes", "due", "want"),
    [
        ({"source": "loop"}, [], None, "done"),
        ({"source": "loop"}, [], True, "interrupted"),  # tasks due, none began: a breakpoint
        ({"source": "loop"}, [("t1", "__error__")], None, "error"),
        ({"source": "loop"}, [("t1", "__interrupt__")], None, "interrupted"),
        ({"source": "loop"}, [("t1", "__interrupt__"), ("t1", "answer")], None, "pending"),  # answered, step open
        ({"source": "loop"}, [("t1", "log")], None, "pending"),  # one task finished, the step did not
        ({"source": "input"}, [], None, "pending"),  # input accepted, nothing ran
        ({"source": "loop"}, [(NULL_TASK_ID, "log")], None, "done"),  # a Command(update) alone
        ({"source": "loop"}, [("t1", "__error__"), ("t2", "__interrupt__")], None, "error"),
    ],
)
def test_thread_status(metadata, writes, due, want):
    assert thread_status(metadata, writes, due) == want


# -- sources' shared helpers --------------------------------------------------------------------
def test_like_escapes_its_wildcards():
    assert like("a_b%c\\d") == "%a\\_b\\%c\\\\d%"


def test_page_and_page_lazily_agree():
    rows = [f"t{i}" for i in range(5)]
    for limit, after, want, more in (
        (2, None, ["t0", "t1"], True),
        (2, "t3", ["t4"], False),
        (None, "t1", ["t2", "t3", "t4"], False),
        (0, None, rows, False),
    ):
        for got in (page(rows, limit, after, key=str), page_lazily(iter(rows), limit, after, key=str)):
            assert isinstance(got, ThreadPage), (limit, after)
            assert list(got) == want, (limit, after)
            assert got.more is more, (limit, after)
    assert page(rows, 2, None, key=str).total == 5
    assert page_lazily(iter(rows), 2, None, key=str).total is None
    for fn in (page, page_lazily):
        with pytest.raises(NotFoundError, match="no thread 'zz' to page after"):
            fn(rows, 2, "zz", key=str)


def test_replay_order_and_by_checkpoint():
    from statectl.model import WriteRecord

    ws = [
        WriteRecord("b", "~__pregel_pull, y", 0, "k", "json", b"1", checkpoint_id="c1"),
        WriteRecord("a", "~__pregel_pull, x", 1, "k", "json", b"2", checkpoint_id="c1"),
        WriteRecord("a", "~__pregel_pull, x", 0, "k", "json", b"3", checkpoint_id="c2"),
    ]
    assert [w.blob for w in replay_order(ws)] == [b"3", b"2", b"1"]
    grouped = by_checkpoint(ws)
    assert list(grouped) == ["c1", "c2"]
    assert [w.blob for w in grouped["c1"]] == [b"2", b"1"]
