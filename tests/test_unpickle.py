"""The inert unpickler runs nothing a pickle names: hostile pickles and a canary file."""

from __future__ import annotations

import copyreg
import functools
import os
import pickle
import subprocess
import sys
import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest

from statectl.codec.unpickle import decode_pickle, loads
from statectl.errors import DecodeError


class Payload:
    """Pickles as a call of `func(*args)` when loaded by the real unpickler."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


@pytest.fixture
def canary(tmp_path) -> Path:
    path = tmp_path / "canary"
    yield path
    assert not path.exists(), "a pickle payload ran"


def _hostile(canary: Path) -> dict[str, bytes]:
    touch = f"touch {canary}"

    def g(m: str, n: str) -> bytes:  # GLOBAL opcode
        return f"c{m}\n{n}\n".encode()

    def s(text: str) -> bytes:  # BINUNICODE
        return b"X" + len(text.encode()).to_bytes(4, "little") + text.encode()

    return {
        "os.system": pickle.dumps(Payload(os.system, touch), 2),
        "eval": pickle.dumps(Payload(eval, f"open({str(canary)!r}, 'w')"), 2),
        "exec": pickle.dumps(Payload(exec, f"open({str(canary)!r}, 'w')"), 4),
        "subprocess": pickle.dumps(Payload(subprocess.call, ["touch", str(canary)]), 5),
        "partial": pickle.dumps(Payload(functools.partial(os.system, touch)), 2),
        # getattr(import_module('os'), 'system')(cmd)
        "getattr chain": (
            b"\x80\x02"
            + g("builtins", "getattr")
            + g("importlib", "import_module")
            + s("os")
            + b"\x85R"
            + s("system")
            + b"\x86R"
            + s(touch)
            + b"\x85R."
        ),
        # INST (protocol 0): os.system(cmd)
        "INST": b"(S'" + touch.encode() + b"'\nios\nsystem\n.",
        # OBJ (protocol 1)
        "OBJ": b"(" + g("os", "system") + s(touch) + b"o.",
        # NEWOBJ + BUILD on a class whose __setstate__ would run code
        "NEWOBJ+BUILD": (b"\x80\x02" + g("evilmod", "Evil") + b")\x81}" + s("path") + s(str(canary)) + b"sb."),
        # a module with import side effects
        "import": b"\x80\x02" + g("evilmod", "thing") + b")R.",
        # persistent ids
        "PERSID": b"P" + touch.encode() + b"\n.",
        "BINPERSID": b"\x80\x02" + s(touch) + b"Q.",
    }


@pytest.fixture
def evilmod(tmp_path, canary, monkeypatch):
    """A module on the path that creates the canary when imported or used."""
    (tmp_path / "evilmod.py").write_text(
        f"open({str(canary)!r}, 'w').close()\n"
        "def thing(): open(__file__ + '.ran', 'w').close()\n"
        "class Evil:\n"
        "    def __setstate__(self, state): open(state['path'], 'w').close()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("evilmod", None)


def test_hostile_pickles_run_nothing(canary, evilmod):
    for name, data in _hostile(canary).items():
        try:
            value = decode_pickle(data)
        except DecodeError:
            continue  # refused as unreadable: nothing ran either
        assert isinstance(value, dict), (name, value)
        assert "$type" in value, (name, value)
        assert not canary.exists(), name
    assert "evilmod" not in sys.modules


def test_what_the_stand_ins_show(canary, evilmod):
    got = decode_pickle(_hostile(canary)["os.system"])
    assert got["$type"] in ("posix.system", "os.system")
    assert got["arg"] == f"touch {canary}"
    got = decode_pickle(_hostile(canary)["NEWOBJ+BUILD"])
    assert got == {"$type": "evilmod.Evil", "data": {"path": str(canary)}}


def test_extension_opcodes_name_only_stand_ins(canary):
    copyreg.add_extension("os", "system", 0xF0)
    try:
        touch = f"touch {canary}".encode()
        data = b"\x80\x02\x82\xf0X" + len(touch).to_bytes(4, "little") + touch + b"\x85R."
        got = decode_pickle(data)
        assert got["$type"] == "os.system"
        with pytest.raises(DecodeError):  # an unregistered code is an unreadable pickle
            loads(b"\x80\x02\x82\xf1)R.")
    finally:
        copyreg.remove_extension("os", "system", 0xF0)


def test_hostile_pickle_through_the_cli(run, tmp_path, canary, evilmod):
    """A folder whose every file is a payload: one line or stand-ins, and nothing runs."""
    folder = tmp_path / "app" / ".langgraph_api"
    folder.mkdir(parents=True)
    payloads = _hostile(canary)
    for i, name in enumerate(
        (
            ".langgraph_checkpoint.1.pckl",
            ".langgraph_checkpoint.2.pckl",
            ".langgraph_checkpoint.3.pckl",
            ".langgraph_ops.pckl",
        )
    ):
        (folder / name).write_bytes(list(payloads.values())[i])
    r = run("threads", "--db", str(folder.parent))
    assert r.code in (0, 2), r.err
    assert "internal error" not in r.err
    assert r.err.count("\n") <= 1
    # a storage file whose nested metadata pair is a hostile pickle
    tid, cid = "t", "1f000000-0000-6000-8000-000000000000"
    import ormsgpack

    ck = ormsgpack.packb(
        {
            "v": 4,
            "id": cid,
            "ts": "2026-01-01T00:00:00+00:00",
            "channel_values": {},
            "channel_versions": {},
            "versions_seen": {},
        }
    )
    storage = {tid: {"": {cid: (("msgpack", ck), ("pickle", payloads["os.system"]), None)}}}
    (folder / ".langgraph_checkpoint.1.pckl").write_bytes(pickle.dumps(storage, 2))
    for name in (".langgraph_checkpoint.2.pckl", ".langgraph_checkpoint.3.pckl", ".langgraph_ops.pckl"):
        (folder / name).write_bytes(pickle.dumps({}, 2))
    r = run("show", tid, "--db", str(folder), "--json")
    assert r.code == 0, r.err
    assert '"$type":"posix.system"' in r.out or '"$type":"os.system"' in r.out


def test_plain_data_round_trips():
    from langgraph.checkpoint.base.id import uuid6

    dd = defaultdict(dict, {"a": {"x": 1}})
    u, u6 = uuid.UUID(int=0x1234), uuid6()
    value = {
        "dd": dd,
        "u": u,
        "u6": u6,
        "when": datetime(2025, 3, 4, 5, 6, 7, 89, tzinfo=UTC),
        "naive": datetime(2025, 3, 4),
        "later": datetime(2025, 3, 4, tzinfo=timezone(timedelta(hours=-5))),
        "set": {1},
        "frozen": frozenset({"a"}),
        "bytes": b"\x00\xff",
        "empty": b"",
        "dec": Decimal("1.50"),
        ("tuple", "key"): (1, 2),
        "big": 2**70,
        "float": 1.5,
    }
    for protocol in (2, 4, 5):
        got = decode_pickle(pickle.dumps(value, protocol))
        assert got["dd"] == {"a": {"x": 1}}
        assert got["u"] == {"$uuid": str(u)}
        assert got["u6"] == {"$uuid": str(u6)}
        assert got["when"] == {"$datetime": "2025-03-04T05:06:07.000089+00:00"}
        assert got["naive"] == {"$datetime": "2025-03-04T00:00:00"}
        assert got["later"] == {"$datetime": "2025-03-04T00:00:00-05:00"}
        assert got["set"] == {"$set": [1]}
        assert got["frozen"] == {"$frozenset": ["a"]}
        assert got["bytes"] == {"$bytes": "AP8="}
        assert got["empty"] == {"$bytes": ""}
        assert got["dec"] == {"$decimal": "1.50"}
        assert got["big"] == 2**70
        assert got["float"] == 1.5
        assert got['["tuple","key"]'] == [1, 2]


def test_pydantic_message_is_a_typed_object():
    from langchain_core.messages import HumanMessage

    got = decode_pickle(pickle.dumps([HumanMessage("hi", id="m1")], 5))
    assert got[0]["$type"] == "langchain_core.messages.human.HumanMessage"
    assert got[0]["data"]["content"] == "hi"
    assert got[0]["data"]["id"] == "m1"


def test_garbage_is_one_decode_error():
    for data in (b"", b"\x80\x05", b"not a pickle", b"\x80\x02]q\x00(K\x01", os.urandom(64)):
        with pytest.raises(DecodeError):
            loads(data)


def test_no_import_in_a_fresh_interpreter(tmp_path):
    """Reading every hostile pickle imports no new module (checked in a clean process)."""
    canary = tmp_path / "canary"
    files = []
    for i, data in enumerate(_hostile(canary).values()):
        (tmp_path / f"{i}.pckl").write_bytes(data)
        files.append(str(tmp_path / f"{i}.pckl"))
    code = (
        "import sys, statectl.codec.unpickle as u\n"
        "before = set(sys.modules)\n"
        "for f in sys.argv[1:]:\n"
        "    try: u.decode_pickle(open(f, 'rb').read())\n"
        "    except Exception as e: pass\n"
        "new = set(sys.modules) - before\n"
        "print(sorted(new))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, *files], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
    assert not canary.exists()


def test_a_pickle_bomb_is_one_line_not_all_memory(run, dbs):
    """200 bytes of pickle whose shared references name 2**32 leaves: with --unpickle-inert, one
    line (exit 4) at once, not memory exhausted (it was exit 70 after 30 s). A hand-written row: a
    deliberately hostile input."""
    import sqlite3

    bomb: list = ["leaf"]
    for _ in range(32):
        bomb = [bomb, bomb]
    data = pickle.dumps(bomb, protocol=4)
    assert len(data) < 400
    db = dbs["custom"]
    with sqlite3.connect(db) as conn:
        (cid,) = conn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'fanout' AND checkpoint_ns = '' "
            "ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        conn.execute("UPDATE checkpoints SET type = 'pickle', checkpoint = ? WHERE checkpoint_id = ?", (data, cid))
    r = run("show", "fanout", "--db", str(db), "--unpickle-inert")
    assert r.code == 4, r.err
    assert "a pickle that expands to more than 2,000,000 values (shared references): not read" in r.err
    assert len(r.err.splitlines()) == 1
