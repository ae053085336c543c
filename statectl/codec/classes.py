"""The classes stored values name, read from the bytes without decoding them into objects and
without importing anything: what LangGraph's loader will import, construct or call when it reads
the value (`doctor`'s load-safety check).

A name comes with how LangGraph loads it (FORMAT.md §8):
- `msgpack-ctor`: msgpack ext 0/1/2: imported and called; if that fails, LangGraph warns and the
  value reads as its raw payload;
- `msgpack-pydantic`: ext 4/5: imported and validated; if the import fails the value reads as a
  plain dict, without a warning;
- `json-lc`: a LangChain `lc` constructor in a JSON row: revived only for LangChain's own
  classes, else left a dict;
- `pickle`: a global in a pickle: imported by `pickle.load`; if missing, the row does not load.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Iterator
from typing import Any

import orjson
import ormsgpack

from statectl.codec.values import unb64

CTOR, PYDANTIC, LC, PICKLE = "msgpack-ctor", "msgpack-pydantic", "json-lc", "pickle"
Named = tuple[str, str, str]
"""(module, class name, how it loads)."""

SAFE = frozenset(
    {("datetime", n) for n in ("datetime", "date", "time", "timedelta", "timezone")}
    | {
        ("uuid", "UUID"),
        ("decimal", "Decimal"),
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("collections", "deque"),
        ("zoneinfo", "ZoneInfo"),
        ("re", "compile"),
        ("pathlib", "Path"),
        ("pathlib", "PosixPath"),
        ("pathlib", "WindowsPath"),
        ("pathlib._local", "Path"),
        ("pathlib._local", "PosixPath"),
        ("pathlib._local", "WindowsPath"),
        ("langchain_core.documents.base", "Document"),
        ("langgraph.store.base", "Item"),
        ("langgraph.store.base", "GetOp"),
    }
    | {
        ("langgraph.types", n)
        for n in ("Send", "TimeoutPolicy", "Interrupt", "Command", "StateSnapshot", "PregelTask", "Overwrite")
    }
)
"""LangGraph's SAFE_MSGPACK_TYPES (and the message classes, below): always loaded, never warned
about, present wherever LangGraph is."""


def is_safe(module: str, name: str) -> bool:
    return (
        (module, name) in SAFE
        or module.startswith("ipaddress")
        or module.startswith("langchain_core.messages")
        or (module == "langchain_core.messages" and name.endswith(("Message", "MessageChunk")))
    )


RUNS_CODE_MODULES = frozenset(
    {
        "os", "posix", "nt", "subprocess", "_posixsubprocess", "pty", "runpy", "importlib", "imp", "zipimport",
        "code", "codeop", "ctypes", "_ctypes", "pickle", "_pickle", "marshal", "shelve", "dill", "cloudpickle",
        "joblib", "jsonpickle", "webbrowser", "antigravity", "shutil", "sys", "socket", "multiprocessing",
        "asyncio.subprocess", "commands", "popen2", "pdb", "bdb", "timeit", "trace", "profile", "cProfile",
        "pydoc", "idlelib", "ensurepip", "venv", "signal", "_thread", "threading", "ptyprocess", "pexpect",
        "sh", "plumbum", "fabric", "paramiko",
    }
)  # fmt: skip
"""Modules whose callables run a program, load code or touch the process: whatever a stored value
names in them (or in a submodule) runs code when LangGraph loads it."""
RUNS_CODE = frozenset(
    {("builtins", n) for n in ("exec", "eval", "compile", "open", "__import__", "getattr", "setattr", "delattr")}
    | {("builtins", n) for n in ("globals", "locals", "vars", "input", "breakpoint", "exit", "quit", "help")}
    | {("__builtin__", n) for n in ("exec", "eval", "execfile", "compile", "open", "__import__", "getattr")}
    | {("types", "CodeType"), ("types", "FunctionType"), ("operator", "methodcaller"), ("operator", "attrgetter")}
    | {("numpy", "load"), ("numpy.lib.npyio", "load"), ("torch", "load"), ("torch.serialization", "load")}
    | {("pandas", "read_pickle"), ("yaml", "load"), ("yaml", "unsafe_load"), ("yaml", "full_load")}
)
"""Callables of other modules that run code, or load what does."""


def runs_code(module: str, name: str) -> bool:
    """Whether `module.name` is a callable that runs code (a program, `exec`, an import, a loader
    of pickles) — never something LangGraph stores: a value naming it is an attack or a fault,
    and no allowlist should ever hold it. Decided from the name alone (nothing is imported)."""
    if (module, name) in RUNS_CODE:
        return True
    return any(module == m or module.startswith(m + ".") for m in RUNS_CODE_MODULES)


def named(type_: str | None, blob: bytes | None) -> set[Named]:
    """Every class a stored value names (msgpack, JSON, pickle; the envelopes statectl's sources
    give for Postgres and langgraph dev folders), read from the bytes alone. A value that does not
    parse names nothing here (the decode check reports it)."""
    out: set[Named] = set()
    if not blob:
        return out
    try:
        for t, b in _parts(type_, blob):
            if t == "msgpack":
                _msgpack(b, out)
            elif t == "json":
                _lc(orjson.loads(b), out, 0)
            elif t == "pickle":
                _pickle(b, out)
    except (ValueError, TypeError, RecursionError, pickle.UnpicklingError, EOFError):
        pass
    return out


def parse_msgpack(data: bytes) -> tuple[Any, set[Named]]:
    """A msgpack value parsed whole, every ext payload included (what decoding it needs, without
    building anything from the payloads): its top level, exts as None, and the classes it names.
    DecodeError on bytes that do not parse."""
    from statectl.errors import DecodeError

    found: set[Named] = set()
    try:
        value = _parse(data, found)
    except (ValueError, TypeError, RecursionError) as exc:
        raise DecodeError(f"corrupt msgpack data ({exc})") from None
    return value, found


def _parse(data: bytes, out: set[Named]) -> Any:
    def hook(code: int, payload: bytes) -> Any:
        out.update(_ext_names(code, payload))
        return None

    return ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)


def _parts(type_: str | None, blob: bytes) -> Iterator[tuple[str, bytes]]:
    """(serializer type, bytes) of each value a row holds."""
    from statectl.codec.formats import INMEM_TYPE, PG_TYPE

    if type_ == PG_TYPE:
        for row in orjson.loads(blob).get("blobs") or ():
            if isinstance(row, list) and len(row) == 4 and isinstance(row[3], str):
                yield str(row[2]), unb64(row[3]) or b""
    elif type_ == INMEM_TYPE:
        env = orjson.loads(blob)
        ck = env.get("checkpoint")
        if isinstance(ck, list) and len(ck) == 2 and isinstance(ck[1], str):
            yield str(ck[0]), unb64(ck[1]) or b""
        for row in env.get("blobs") or ():
            if isinstance(row, list) and len(row) == 3 and isinstance(row[2], str):
                yield str(row[1]), unb64(row[2]) or b""
    elif type_ is not None:
        yield type_, blob


_MEMO: dict[tuple[int, bytes], frozenset[Named]] = {}
"""The names inside an ext payload, by its bytes: LangGraph stores the whole state at every step,
so a message is the same bytes in every later checkpoint (as `decode`'s memo)."""
MEMO_BYTES = 32 << 20
"""The payload bytes the memo may hold; it starts over when full."""
_held = [0]


def _ext_names(code: int, payload: bytes) -> frozenset[Named]:
    key = (code, bytes(payload)) if len(payload) >= 128 else None
    if key is not None and (seen := _MEMO.get(key)) is not None:
        return seen
    found: set[Named] = set()

    def hook(inner_code: int, inner: bytes) -> Any:
        found.update(_ext_names(inner_code, inner))
        return None

    value = ormsgpack.unpackb(payload, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
    if code in (0, 1, 2, 3, 4, 5) and isinstance(value, list) and len(value) >= 2:
        module, name = value[0], value[1]
        if isinstance(module, str) and isinstance(name, str):
            found.add((module, name, PYDANTIC if code in (4, 5) else CTOR))
    out = frozenset(found)
    if key is not None:
        if _held[0] + len(key[1]) > MEMO_BYTES:
            _MEMO.clear()
            _held[0] = 0
        _MEMO[key] = out
        _held[0] += len(key[1])
    return out


def _msgpack(data: bytes, out: set[Named]) -> None:
    _parse(data, out)


def _lc(value: Any, out: set[Named], depth: int) -> None:
    if depth > 200:
        return
    if isinstance(value, dict):
        ident = value.get("id")
        constructor = value.get("lc") in (1, 2) and value.get("type") == "constructor"
        # (a one-element id is LangGraph.js's `lc: 2` built-in, Set or Map: no Python class, codec/js.py)
        if constructor and isinstance(ident, list) and len(ident) > 1:
            path = [str(p) for p in ident]
            out.add((".".join(path[:-1]), path[-1], LC))
        for v in value.values():
            _lc(v, out, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _lc(v, out, depth + 1)


def _pickle(data: bytes, out: set[Named]) -> None:
    """The globals a pickle names, found by the inert unpickler (nothing imported)."""
    from statectl.codec.unpickle import InertUnpickler

    class Listing(InertUnpickler):
        def find_class(self, module: str, name: str) -> Any:
            out.add((module, name, PICKLE))
            return super().find_class(module, name)

    try:
        Listing(io.BytesIO(data), encoding="latin1").load()
    except Exception:  # (a damaged pickle: the names read so far stand)
        pass


class BlobMemo(dict):
    """`parse_pg_export`'s answers by (type, text), holding at most LIMIT characters of text:
    emptied when full (a long thread's version of `messages` holds its whole transcript, and is
    named again only by the next few checkpoints; before, a thread's every version was kept)."""

    LIMIT = 16 << 20

    def __init__(self) -> None:
        super().__init__()
        self.held = 0

    def __setitem__(self, key: Any, value: Any) -> None:
        size = len(key[1] or "")  # (the text: a str, or None for an empty blob)
        if self.held + size > self.LIMIT:
            self.clear()
            self.held = 0
        super().__setitem__(key, value)
        self.held += size


def parse_pg_export(blob: bytes | None, memo: dict[tuple[Any, Any], Any]) -> tuple[dict, set[Named]]:
    """What `formats.postgres.decode_export` checks, without building the blobs' values
    (`doctor`): the checkpoint as `assemble` gives it with each blob channel's value None, and the
    classes its blobs name. A msgpack blob is parsed once, ext payloads included (`parse_msgpack`);
    any other is decoded and read for names as `decode_export` and `named` would. `memo` holds
    each blob's answer by its type and text: the checkpoints of a thread name the same versions
    again and again (the same text under another type is another answer: an empty NULL is not a
    msgpack NULL). DecodeError where `decode_export` would raise one."""
    from statectl.codec.decode import decode_typed
    from statectl.codec.formats.postgres import assemble
    from statectl.errors import DecodeError

    found: set[Named] = set()
    try:
        doc = orjson.loads(blob or b"")
        rows = [(ch, t, b) for ch, _v, t, b in doc["blobs"]]
        ckpt = assemble(doc["checkpoint"], [])
        values = ckpt["channel_values"]
        for channel, type_, text in rows:
            answer = memo.get((type_, text))
            if answer is None:  # (decoded from its text only now: the memo may have been emptied)
                data = unb64(text)
                if type_ == "msgpack" and data:
                    try:
                        answer = parse_msgpack(data)[1]
                    except DecodeError as exc:
                        answer = exc
                else:
                    if type_ != "empty":
                        decode_typed(type_, data)
                    answer = named(type_, data)
                memo[(type_, text)] = answer
            if isinstance(answer, DecodeError):
                raise answer
            found |= answer
            if type_ != "empty":
                values[channel] = None
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise DecodeError(f"damaged Postgres checkpoint ({type(exc).__name__})") from None
    return ckpt, found


# -- the classes each stored value names (`doctor --types`) ---------------------------------------
_mark_hook = _ext_names
"""The ext hook of `named_values`: an ext value parses as the classes it names (it and the values
inside it), nothing built (msgpack itself never gives a frozenset)."""


WALK_DEPTH = 200
"""How deep a parsed value is walked for its marks (ormsgpack itself refuses deeper data)."""


def _marks(value: Any) -> set[Named]:
    """The classes the ext values inside `value` name (an explicit stack: no recursion)."""
    out: set[Named] = set()
    todo = [(value, 0)]
    while todo:
        v, depth = todo.pop()
        kind = type(v)
        if kind is frozenset:
            out |= v
            continue
        if depth >= WALK_DEPTH:
            continue
        if kind is dict:
            items: Any = v.values()
            for k in v:
                if type(k) is frozenset:
                    out |= k
        elif kind is list:
            items = v
        else:
            continue
        for x in items:
            inner = type(x)
            if inner is frozenset:
                if x:
                    out |= x
            elif inner is dict or inner is list:
                todo.append((x, depth + 1))
    return out


def _split(top: Any, names_of: Any) -> tuple[list[tuple[str, set[Named]]], Any]:
    """A parsed row as stored values: a checkpoint's channel values one by one and the rest of it
    as one (pending sends of old checkpoints); anything else as one value. With its `ts`."""
    if isinstance(top, dict) and isinstance(top.get("channel_values"), dict):
        out = [(str(k), names_of(v)) for k, v in top["channel_values"].items()]
        rest = names_of({k: v for k, v in top.items() if k != "channel_values"})
        if rest:
            out.append(("", rest))
        return out, top.get("ts")
    return [("", names_of(top))], None


def _lc_names(value: Any) -> set[Named]:
    out: set[Named] = set()
    _lc(value, out, 0)
    return out


def _pickle_names(data: bytes) -> set[Named]:
    out: set[Named] = set()
    _pickle(data, out)
    return out


def _typed_values(type_: str, data: bytes) -> tuple[list[tuple[str, set[Named]]], Any]:
    if not data:
        return [], None
    if type_ == "msgpack":
        return _split(ormsgpack.unpackb(data, ext_hook=_mark_hook, option=ormsgpack.OPT_NON_STR_KEYS), _marks)
    if type_ == "json":
        return _split(orjson.loads(data), _lc_names)
    if type_ == "pickle":
        return [("", _pickle_names(data))], None
    return [], None


def named_values(
    type_: str | None, blob: bytes | None, memo: dict[tuple[Any, Any], Any] | None = None
) -> tuple[list[tuple[str, set[Named]]], Any]:
    """Each stored value a row holds, with the classes it names: a checkpoint's channel values
    one by one (a Postgres checkpoint's blob rows, a langgraph dev folder's blobs), a write's value
    as one; and the checkpoint's `ts` (LangGraph.js writes it as JavaScript does). Read from the
    bytes alone, as `named`; ValueError (and the parsers' errors) on bytes that do not parse.
    `memo` (a `BlobMemo`) holds a Postgres blob's answer by its type and text."""
    from statectl.codec.formats import INMEM_TYPE, PG_TYPE

    if not blob or type_ is None:
        return [], None
    if type_ == PG_TYPE:
        doc = orjson.loads(blob)
        ck = doc.get("checkpoint") if isinstance(doc, dict) else None
        out = []
        for row in doc.get("blobs") or ():
            if isinstance(row, list) and len(row) == 4 and isinstance(row[3], str):
                names = None if memo is None else memo.get((row[2], row[3]))
                if names is None:  # (checkpoints share blob versions: each parsed once, `memo`)
                    values, _ = _typed_values(str(row[2]), unb64(row[3]) or b"")
                    names = frozenset().union(*(n for _, n in values))
                    if memo is not None:
                        memo[(row[2], row[3])] = names
                out.append((str(row[0]), set(names)))
        return out, ck.get("ts") if isinstance(ck, dict) else None
    if type_ == INMEM_TYPE:
        env = orjson.loads(blob)
        out, ts = [], None
        ck = env.get("checkpoint")
        if isinstance(ck, list) and len(ck) == 2 and isinstance(ck[1], str):
            out, ts = _typed_values(str(ck[0]), unb64(ck[1]) or b"")
        for row in env.get("blobs") or ():
            if isinstance(row, list) and len(row) == 3 and isinstance(row[2], str):
                values, _ = _typed_values(str(row[1]), unb64(row[2]) or b"")
                out.append((str(row[0]), set().union(*(n for _, n in values))))
        return out, ts
    return _typed_values(type_, blob)
