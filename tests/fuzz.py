"""Seeded fuzzing of the decoder, the reducers, the diff and the renderers: `python3 tasks.py fuzz
[N]` (default 100,000 inputs); the test suite runs a small budget (tests/test_fuzz.py).

Inputs are the sample databases' own rows (checkpoint and write blobs, msgpack and JSON), mutated
(bytes flipped, cut, repeated, inserted) and re-typed, plus generated JSON and msgpack trees that
are deep, wide, tag-shaped (`{"$type": ...}`, `{"$set": 5}`), with huge integers, non-string keys,
NaN and control characters. Each decoded value goes through what a command does with it: the
reducers, a diff against the previous value, the JSON output and the human renderers. The only
allowed failure is statectl's own DecodeError; anything else is counted and the first few shown.
"""

from __future__ import annotations

import io
import random
import sqlite3
import sys
import traceback
from pathlib import Path
from typing import Any

import ormsgpack

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_threads"


def corpus() -> list[tuple[str | None, bytes]]:
    rows: list[tuple[str | None, bytes]] = []
    for name in ("agent", "custom", "deep", "legacy", "json_rows", "thread_ts_00"):
        db = SAMPLES / f"{name}.sqlite"
        conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
        cols = {r[1] for r in conn.execute("PRAGMA table_info(checkpoints)")}
        t = "type" if "type" in cols else "NULL"
        rows += [(a, bytes(b)) for a, b in conn.execute(f"SELECT {t}, checkpoint FROM checkpoints LIMIT 40")]
        try:
            wcols = {r[1] for r in conn.execute("PRAGMA table_info(writes)")}
            wt = "type" if "type" in wcols else "NULL"
            rows += [(a, bytes(b or b"")) for a, b in conn.execute(f"SELECT {wt}, value FROM writes LIMIT 60")]
        except sqlite3.DatabaseError:
            pass
        conn.close()
    return rows


def generated(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(14 if depth < 6 else 7)
    if kind == 0:
        return rng.choice([None, True, False, 0, -1, 2**70, -(2**65), 1.5, float("nan"), float("inf")])
    if kind == 1:
        return rng.choice(["", "x", "\x1b[2J", "\u202e", "a" * 300, "[red]x[/]", "\x00"])
    if kind == 2:
        return rng.choice(
            [
                {"$type": "os.system", "arg": "x"},
                {"$set": 5},
                {"$dict": 3},
                {"$uuid": 1},
                {"$datetime": None},
                {"$bytes": "!!"},
                {"$undecoded": 7},
                {"lc": 1, "type": "constructor", "id": 5, "kwargs": []},
                {"lc": 1, "type": "constructor", "id": ["a"], "kwargs": [1]},
            ]
        )
    if kind == 3:
        node: Any = "leaf"
        for _ in range(rng.choice([10, 300, 2000])):
            node = [node] if rng.random() < 0.5 else {"k": node}
        return node
    if kind == 4:
        return {rng.choice([1, 2.5, None, True, "k", (1, 2)]): generated(rng, depth + 1)}
    if kind == 5:
        return {
            "type": rng.choice(["human", "ai", "tool", 5, None]),
            "content": generated(rng, depth + 1),
            "id": rng.choice(["m1", None, 3]),
            "tool_calls": generated(rng, depth + 1),
        }
    if kind == 6:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(20)))
    n = rng.randrange(5)
    if kind < 10:
        return [generated(rng, depth + 1) for _ in range(n)]
    return {f"k{i}": generated(rng, depth + 1) for i in range(n)}


def mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        op = rng.randrange(5)
        if not b:
            b = bytearray(b"\x80")
        i = rng.randrange(len(b))
        if op == 0:
            b[i] = rng.randrange(256)
        elif op == 1:
            del b[i : i + rng.randrange(1, 50)]
        elif op == 2:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        elif op == 3:
            b = b[:i]
        else:
            b[i:i] = b[i : i + rng.randrange(1, 40)] * rng.randrange(2, 20)
    return bytes(b)


def encode(rng: random.Random, value: Any) -> tuple[str | None, bytes]:
    import json

    kind = rng.randrange(3)
    try:
        if kind == 0:
            return "msgpack", ormsgpack.packb(value, option=ormsgpack.OPT_NON_STR_KEYS)
        if kind == 1:
            return "json", json.dumps(value, default=str).encode()
    except (TypeError, ValueError, RecursionError):
        pass
    try:
        text = str(value)[:500]
    except RecursionError:
        text = "[[[["
    return rng.choice(["msgpack", "json", None, "pickle", "bytes"]), text.encode()


def exercise(type_: str | None, blob: bytes, previous: Any) -> Any:
    """What a command does with one stored value; returns the decoded value."""
    from rich.console import Console

    from statectl.cli.output import json_bytes as _json_bytes
    from statectl.codec.decode import decode_typed
    from statectl.core import reducers
    from statectl.core.diff import _key_changes
    from statectl.errors import DecodeError
    from statectl.render.safe import SafeConsole
    from statectl.render.state import value_block

    try:
        value = decode_typed(type_, blob)
    except DecodeError:
        return previous
    _json_bytes({"values": value})
    fn = reducers.reducer_for([value]) or reducers.concat
    reducers.apply(fn, previous, value)
    list(_key_changes({"k": previous}, {"k": value}, {}))
    console: Console = SafeConsole(file=io.StringIO(), width=100, markup=False, emoji=False)
    console.print(value_block("k", value))
    return value


SEEDS: list[tuple[str | None, bytes]] = [
    ("json", b"[" * 100_000 + b"]" * 100_000),
    ("json", b'{"a":' * 50_000 + b"1" + b"}" * 50_000),
    ("msgpack", b"\x91" * 100_000 + b"\xc0"),
    ("msgpack", b"\x81\xa1k" * 100_000 + b"\xc0"),
    ("json", b'{"lc": 1, "type": "constructor", "id": ["a"], "kwargs": [1], "args": [2]}'),
    ("json", b'{"lc": 1, "type": "constructor", "id": 5, "kwargs": 3}'),
    ("json", b'{"$type": "os.system", "arg": "x", "$set": 5}'),
    ("json", b"123456789012345678901234567890"),
    ("json", b'{"1": [1e999, -1e999]}'),
    ("msgpack", b"\xcf" + b"\xff" * 8),  # uint64 max
    (None, b"\x80\x04\x95"),
]


def run(n: int, seed: int = 1, show: int = 5) -> int:
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    rng = random.Random(seed)
    rows = corpus()
    failures: dict[str, int] = {}
    shown = 0
    previous: Any = None
    for i in range(n):
        r = rng.random()
        if i < len(SEEDS):
            type_, blob = SEEDS[i]
        elif r < 0.5:
            type_, blob = rng.choice(rows)
            blob = mutate(rng, blob)
            if rng.random() < 0.1:
                type_ = rng.choice(["msgpack", "json", None, "pickle", "msgpack+aes", "bytes", "null"])
        elif r < 0.6:
            type_, blob = rng.choice(rows)
        else:
            type_, blob = encode(rng, generated(rng))
        try:
            previous = exercise(type_, blob, previous)
        except Exception as exc:
            key = f"{type(exc).__name__}: {str(exc)[:80]}"
            failures[key] = failures.get(key, 0) + 1
            if shown < show:
                shown += 1
                print(f"--- input {i} ({type_}, {len(blob)} bytes): {key}")
                print("".join(traceback.format_exc().splitlines(True)[-6:]))
            previous = None
    total = sum(failures.values())
    print(f"{n} inputs, {total} uncaught")
    for key, count in sorted(failures.items(), key=lambda kv: -kv[1])[:15]:
        print(f"  {count:6d}  {key}")
    return total


if __name__ == "__main__":
    sys.exit(1 if run(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000) else 0)
