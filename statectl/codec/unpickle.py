"""Pickles read inertly: nothing is imported, nothing the data names is ever called.

`langgraph dev` keeps its state in pickle files (FORMAT-langgraph-api §1.1), and old serializers
store pickled values. `pickle.load` would import and call whatever a file names. Here the
standard unpickler's only door to code, `find_class`, is replaced: it never imports, and every
global it hands back is either one of a few checked constructors for plain data (dict, list,
set, tuple, bytes via `_codecs.encode`, defaultdict, datetime, UUID, Decimal) or an inert
stand-in class. What the opcodes do to a stand-in (REDUCE, NEWOBJ, INST/OBJ, BUILD, SETITEMS,
APPENDS) is recorded on it and nothing else; persistent ids and out-of-band buffers become
stand-ins too. `to_data` then turns the result into statectl's tagged JSON form.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

import orjson

from statectl.codec.values import TAGS, Tagged, dashed_uuid, json_safe, set_order
from statectl.errors import DecodeError

_RENAMED = {"__builtin__": "builtins", "copy_reg": "copyreg"}


class Stub:
    """An object of a class statectl does not load: its module and name, and whatever the
    pickle gave it (constructor args, state, items)."""

    __module_name__ = "?"
    __qual_name__ = "?"
    _args: tuple[Any, ...]
    _kwargs: dict[str, Any]
    _state: Any
    _items: list[Any]
    _dictitems: list[tuple[Any, Any]]

    def __new__(cls, *args: Any, **kwargs: Any) -> Stub:  # NEWOBJ / INST
        obj = object.__new__(cls)
        obj.__dict__.update(_how="new", _args=args, _kwargs=kwargs, _state=None, _items=[], _dictitems=[])
        return obj

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # the class called (REDUCE, INST)
        self.__dict__["_how"] = "call"

    def __setstate__(self, state: Any) -> None:  # BUILD
        self.__dict__["_state"] = state

    def __setitem__(self, key: Any, value: Any) -> None:  # SETITEM(S) on a dict subclass
        self.__dict__["_dictitems"].append((key, value))

    def append(self, value: Any) -> None:  # APPEND(S) on a list subclass
        self.__dict__["_items"].append(value)

    def extend(self, values: Any) -> None:
        self.__dict__["_items"].extend(values)

    def add(self, value: Any) -> None:  # ADDITEMS on a set subclass
        self.__dict__["_items"].append(value)

    def __call__(self, *args: Any, **kwargs: Any) -> Stub:  # a stand-in used as a function
        return _stub("(result)", f"{self.qualname}(...)")(*args, **kwargs)

    def __reduce__(self) -> Any:  # never re-pickled as a real object
        raise TypeError("inert stand-ins cannot be pickled")

    @property
    def qualname(self) -> str:
        return f"{type(self).__module_name__}.{type(self).__qual_name__}"


_STUBS: dict[tuple[str, str], type] = {}


def _stub(module: str, name: str) -> type:
    """One stand-in class per global name (never the real one)."""
    key = (module, name)
    if key not in _STUBS:
        _STUBS[key] = type("Stub", (Stub,), {"__module_name__": module, "__qual_name__": name, "__slots__": ()})
    return _STUBS[key]


class _Checked:
    """An allow-listed global: builds plain data from plain arguments, else a stand-in."""

    def __init__(self, module: str, name: str, build: Any) -> None:
        self.module, self.name, self.build = module, name, build

    def __call__(self, *args: Any) -> Any:
        try:
            return self.build(*args)
        except Exception:  # arguments the real constructor would not take, or hostile sizes
            return _stub(self.module, self.name)(*args)


def _latin1(text: Any = "", encoding: Any = "latin1") -> bytes:
    # The real codecs.encode would look the encoding up, importing `encodings.<name>`.
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise TypeError("not a protocol-2 bytes literal")
    return text.encode("latin-1")


def _bytes(*args: Any) -> bytes:
    if not args:
        return b""
    if len(args) == 1 and isinstance(args[0], (bytes, bytearray, list)):
        return bytes(args[0])  # bytes(int) would allocate whatever size the data asks
    raise TypeError("not bytes data")


def _container(kind: type) -> Any:
    def build(items: Any = ()) -> Any:
        if not isinstance(items, (list, tuple, set, frozenset, dict)):
            raise TypeError("not plain items")
        return kind(items)

    return build


def _dict(*args: Any) -> dict:
    if not args:
        return {}
    if len(args) == 1 and isinstance(args[0], (dict, list)):
        return dict(args[0])
    raise TypeError("not dict items")


class _Value:
    """Allow-listed objects kept as their parts (datetime state bytes, UUID int, ...)."""

    __slots__ = ("args", "kind", "state")

    def __init__(self, kind: str, args: tuple) -> None:
        self.kind, self.args, self.state = kind, args, None

    def __setstate__(self, state: Any) -> None:
        self.state = state


class _ValueClass:
    """A class-like allow-listed global (NEWOBJ needs a type; REDUCE a callable)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.cls = type(kind, (_ValueBase,), {"__slots__": (), "_kind": kind})

    def __call__(self, *args: Any) -> Any:
        return _Value(self.kind, args)


class _ValueBase(_Value):
    __slots__ = ()
    _kind = ""

    def __new__(cls, *args: Any) -> _Value:  # type: ignore[misc]  # (a plain _Value, by design)
        return _Value(cls._kind, args)

    def __init__(self, *args: Any) -> None:  # __new__ returned a _Value: never reached
        pass


_VALUES = {("datetime", n): _ValueClass(f"datetime.{n}") for n in ("datetime", "date", "time", "timedelta", "timezone")}
_VALUES[("uuid", "UUID")] = _ValueClass("uuid.UUID")
_VALUES[("langgraph.checkpoint.base.id", "UUID")] = _VALUES[("uuid", "UUID")]  # LangGraph's uuid6 subclass
_VALUES[("decimal", "Decimal")] = _ValueClass("decimal.Decimal")
_CHECKED = {
    ("_codecs", "encode"): _latin1,
    ("builtins", "bytes"): _bytes,
    ("builtins", "bytearray"): _bytes,
    ("builtins", "set"): _container(set),
    ("builtins", "frozenset"): _container(frozenset),
    ("builtins", "list"): _container(list),
    ("builtins", "tuple"): _container(tuple),
    ("builtins", "dict"): _dict,
    ("collections", "OrderedDict"): _dict,
    ("collections", "defaultdict"): lambda factory=None, *items: _dict(*items),
}
_TYPES = {
    ("builtins", "dict"): dict,
    ("builtins", "list"): list,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "tuple"): tuple,
}


class InertUnpickler(pickle.Unpickler):
    """`pickle.Unpickler` whose globals are never imported (see the module docstring)."""

    def find_class(self, module: str, name: str) -> Any:
        module = _RENAMED.get(module, module)
        key = (module, name)
        if key in _VALUES:
            v = _VALUES[key]
            return v.cls
        if key in _CHECKED:
            # NEWOBJ needs a type: a dict/list/set subclass object built with cls.__new__(cls)
            return _CheckedType.get(module, name)
        return _stub(module, name)

    def persistent_load(self, pid: Any) -> Any:
        return _stub("(persistent id)", repr(pid)[:80])()


class _CheckedType:
    """Checked builders as classes: callable for REDUCE, and a type for NEWOBJ (which then
    makes a plain, empty container or a stand-in; `__init__` of the data's class is never run)."""

    _made: dict[tuple[str, str], type] = {}

    @classmethod
    def get(cls, module: str, name: str) -> type:
        key = (module, name)
        if key not in cls._made:
            build = _Checked(module, name, _CHECKED[key])
            base = _TYPES.get(key)

            def new(klass: type, *args: Any, _build: Any = build, _base: Any = base) -> Any:
                if _base is not None and not args:
                    return _base()
                return _build(*args)

            cls._made[key] = type(name, (), {"__new__": new})
        return cls._made[key]


def loads(data: bytes) -> Any:
    """Unpickle `data` inertly (protocols 0 to 5). Raises DecodeError if it is not a pickle."""
    try:
        return InertUnpickler(io.BytesIO(data), encoding="latin1").load()
    except Exception as exc:  # any malformed stream: the unpickler raises many kinds
        raise DecodeError(f"not a readable pickle ({type(exc).__name__}: {str(exc)[:120]})") from None


MAX_VALUES = 2_000_000
"""The most values one pickle may expand to. A pickle shares references (its memo): 200 bytes can
name a list of 2**32 leaves, which read as data would exhaust memory."""
_left = [MAX_VALUES]
_limit = [MAX_VALUES]


_too_big: set[int] = set()
"""The ids of the objects whose reading ran out of values, kept for one file (`one_file`): an
item naming one already known too big fails at once (a file of many items that share one tree
is not read once an item)."""
_in_file = [False]


class one_file:
    """`with one_file():` the to_data calls inside read the objects of one unpickled file (alive
    throughout: their ids stay theirs)."""

    def __enter__(self) -> None:
        _too_big.clear()
        _in_file[0] = True

    def __exit__(self, *exc: object) -> None:
        _in_file[0] = False
        _too_big.clear()


def to_data(obj: Any, depth: int = 0) -> Any:
    """An inertly unpickled object as statectl's tagged JSON form (like the msgpack decoder's):
    UUIDs, datetimes, sets and bytes tagged; pydantic-like stand-ins as `{"$type", "data"}`;
    other stand-ins with what the pickle gave them. At most MAX_VALUES values (else DecodeError)."""
    if depth == 0:
        import os

        raw = os.environ.get("STATECTL_MAX_PICKLE_VALUES", "")
        _left[0] = _limit[0] = int(raw) if raw.isdigit() else MAX_VALUES
        if not _in_file[0]:
            _too_big.clear()
    _left[0] -= 1
    if _left[0] < 0 or id(obj) in _too_big:
        raise DecodeError(f"a pickle that expands to more than {_limit[0]:,} values (shared references): not read")
    try:
        return _to_data(obj, depth)
    except DecodeError as exc:
        if "expands to more than" in exc.message:
            _too_big.add(id(obj))
        raise


def _to_data(obj: Any, depth: int) -> Any:
    if depth > 200:
        return Tagged({"$undecoded": {"type": "pickle", "reason": "nested too deeply"}})
    d = depth + 1
    t = type(obj)
    if obj is None or t in (str, int, bool, float):
        return json_safe(obj)
    if t is tuple or t is list:
        return [to_data(x, d) for x in obj]
    if t is dict:  # (the values are data already: json_safe on each level walked the tree again)
        out = {_key(k, d): to_data(v, d) for k, v in obj.items()}
        if all(type(k) is str for k in out) and not (TAGS & out.keys()):
            return out
        return Tagged({"$dict": [[json_safe(k), v] for k, v in out.items()]})
    if t in (set, frozenset):
        return Tagged({"$set" if t is set else "$frozenset": set_order([to_data(x, d) for x in obj])})
    if t in (bytes, bytearray):
        return json_safe(bytes(obj))
    if isinstance(obj, _Value):
        return _value(obj, d)
    if isinstance(obj, Stub):
        return _stub_data(obj, d)
    return Tagged({"$type": f"{t.__module__}.{t.__qualname__}"})


def _key(k: Any, depth: int) -> Any:
    """A dict key as data: scalars stay, anything else becomes its JSON text."""
    if type(k) in (str, int, float, bool) or k is None:
        return k
    try:
        return orjson.dumps(to_data(k, depth), option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(type(k))


def _stub_data(obj: Stub, depth: int) -> Any:
    state, items, dictitems = obj._state, obj._items, obj._dictitems
    out: dict[str, Any] = {"$type": obj.qualname}
    # pydantic v2 models: BUILD {'__dict__': fields, '__pydantic_extra__': ...} (like msgpack ext 5)
    if isinstance(state, dict) and isinstance(state.get("__dict__"), dict):
        out["data"] = to_data(state["__dict__"], depth)
        return Tagged(out)
    # slotted classes: BUILD (None, {slot: value})
    if isinstance(state, tuple) and len(state) == 2 and state[0] is None and isinstance(state[1], dict):
        out["data"] = to_data(state[1], depth)
        return Tagged(out)
    if isinstance(state, dict) and not obj._args and not items and not dictitems:
        out["data"] = to_data(state, depth)
        return Tagged(out)
    if len(obj._args) == 1 and not obj._kwargs and state is None and not items and not dictitems:
        out["arg"] = to_data(obj._args[0], depth)  # an enum member, like msgpack's one-arg constructor
        return Tagged(out)
    if obj._args:
        out["args"] = to_data(list(obj._args), depth)
    if obj._kwargs:
        out["kwargs"] = to_data(obj._kwargs, depth)
    if state is not None:
        out["state"] = to_data(state, depth)
    if items:
        out["items"] = to_data(items, depth)
    if dictitems:
        out["data"] = to_data(dict((_key(k, depth), v) for k, v in dictitems), depth)
    return Tagged(out)


def _value(v: _Value, depth: int) -> Any:
    try:
        if v.kind == "uuid.UUID":
            n = v.state.get("int") if isinstance(v.state, dict) else (v.args[0] if v.args else None)
            if isinstance(n, int) and 0 <= n < 1 << 128:
                return Tagged({"$uuid": dashed_uuid(f"{n:032x}")})
            if isinstance(n, str):
                return Tagged({"$uuid": n})
        elif v.kind in ("datetime.datetime", "datetime.date", "datetime.time"):
            return _datetime(v, depth)
        elif v.kind == "datetime.timedelta" and all(isinstance(a, int) for a in v.args):
            days, secs, us = ([*list(v.args), 0, 0, 0])[:3]
            return Tagged({"$type": "datetime.timedelta", "seconds": days * 86400 + secs + us / 1e6})
        elif v.kind == "datetime.timezone":
            return Tagged({"$type": "datetime.timezone", "args": to_data(list(v.args), depth)})
        elif v.kind == "decimal.Decimal" and v.args and isinstance(v.args[0], str):
            return Tagged({"$decimal": v.args[0]})
    except (TypeError, ValueError, AttributeError, IndexError):
        pass
    return Tagged({"$type": v.kind, "args": to_data(list(v.args), depth), "state": to_data(v.state, depth)})


def _datetime(v: _Value, depth: int) -> Any:
    """datetime's pickled state: 10 (datetime), 4 (date) or 6 (time) bytes, plus a tzinfo."""
    raw = v.args[0] if v.args else None
    if isinstance(raw, str):
        raw = raw.encode("latin-1")
    if not isinstance(raw, bytes):
        raise TypeError
    offset = _utcoffset(v.args[1]) if len(v.args) > 1 else None
    if v.kind == "datetime.date" and len(raw) == 4:
        return Tagged({"$date": f"{raw[0] * 256 + raw[1]:04d}-{raw[2]:02d}-{raw[3]:02d}"})
    if v.kind == "datetime.datetime" and len(raw) == 10:
        y, mo, d, h, mi, s = raw[0] * 256 + raw[1], raw[2] & 0x7F, raw[3], raw[4], raw[5], raw[6]
        us = (raw[7] << 16) | (raw[8] << 8) | raw[9]
        if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s < 60):
            raise ValueError
        text = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}" + (f".{us:06d}" if us else "")
        return Tagged({"$datetime": text + (offset or "")})
    if v.kind == "datetime.time" and len(raw) == 6:
        us = (raw[3] << 16) | (raw[4] << 8) | raw[5]
        return Tagged(
            {
                "$type": "datetime.time",
                "arg": f"{raw[0] & 0x7F:02d}:{raw[1]:02d}:{raw[2]:02d}" + (f".{us:06d}" if us else ""),
            }
        )
    raise ValueError


def _utcoffset(tz: Any) -> str | None:
    """'+00:00' for `timezone(timedelta(...))` (or `timezone.utc`), else None."""
    if isinstance(tz, _Value) and tz.kind == "datetime.timezone" and tz.args:
        delta = tz.args[0]
        if isinstance(delta, _Value) and delta.kind == "datetime.timedelta":
            days, secs = ([*list(delta.args), 0, 0])[:2]
            total = int(days) * 86400 + int(secs)
            sign = "-" if total < 0 else "+"
            total = abs(total)
            return f"{sign}{total // 3600:02d}:{total % 3600 // 60:02d}"
    if isinstance(tz, Stub) and tz.qualname in ("datetime.timezone.utc", "pytz.utc", "pytz._UTC"):
        return "+00:00"
    return None


def decode_pickle(data: bytes) -> Any:
    """A pickled value (a `('pickle', bytes)` pair) as tagged data."""
    return to_data(loads(data))
