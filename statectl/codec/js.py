"""What LangGraph.js's JsonPlusSerializer writes besides plain JSON: its `lc: 2` records.

`{"lc": 2, "type": "undefined"}` is JavaScript's `undefined`; `delta_snapshot` a DeltaChannel's
snapshot; a `constructor` record with a one-element id is one of the closed set of built-ins it
writes (Set, Map, RegExp, Error, Uint8Array), read back only when its arguments are as LangGraph.js
would write them, else kept as the plain data it is (as LangGraph.js's reviver keeps it). Python's
records name a module (`["builtins", "set"]`): those are not read here.
"""

from __future__ import annotations

from typing import Any

from statectl.codec.values import TAGS, DeltaSnapshot, Tagged, b64

_UNSET = object()


class _Undefined:
    """JavaScript's `undefined` while a row is decoded: a LangChain object's field that is undefined
    is no field at all (its `toJSON` leaves it out); anywhere else it reads as null (`restore`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "undefined"


UNDEFINED = _Undefined()


def drop_undefined(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in kwargs.items() if v is not UNDEFINED}


def restore(value: Any) -> Any:
    """`value` with every remaining `undefined` as None (only for rows that hold one)."""
    if value is UNDEFINED:
        return None
    if isinstance(value, list):
        return [restore(v) for v in value]
    if isinstance(value, dict):
        out = {k: restore(v) for k, v in value.items()}
        return type(value)(out) if type(value) is not dict else out
    if isinstance(value, DeltaSnapshot):
        return DeltaSnapshot(restore(value.value))
    return value


def js_record(obj: dict[str, Any]) -> Any:
    """The value of an `lc: 2` record LangGraph.js wrote, or `_UNSET` when `obj` is not one."""
    kind = obj.get("type")
    if kind == "undefined":
        return UNDEFINED
    if kind == "delta_snapshot" and "value" in obj:
        return DeltaSnapshot(obj["value"])
    ident = obj.get("id")
    if kind != "constructor" or not isinstance(ident, list) or len(ident) != 1:
        return _UNSET
    name, method, raw = ident[0], obj.get("method"), obj.get("args")
    args: list[Any] = raw if isinstance(raw, list) else []
    first = args[0] if len(args) == 1 and isinstance(args[0], list) else None
    if name == "Set" and method is None and first is not None:
        return Tagged({"$set": list(first)})
    pairs = first is not None and all(isinstance(p, list) and len(p) == 2 for p in first)
    if name == "Map" and method is None and first is not None and pairs:
        if all(isinstance(k, str) for k, _ in first) and not TAGS & {k for k, _ in first}:
            return {k: v for k, v in first}
        return Tagged({"$dict": [list(p) for p in first]})
    if name == "RegExp" and method is None and len(args) == 2 and all(isinstance(a, str) for a in args):
        return Tagged({"$type": "RegExp", "args": list(args)})
    if name == "Error" and method is None and len(args) == 1 and isinstance(args[0], str):
        return Tagged({"$type": "Error", "args": list(args)})
    octets = first is not None and all(type(b) is int and 0 <= b <= 255 for b in first)
    if name == "Uint8Array" and method in (None, "from") and first is not None and octets:
        return Tagged({"$bytes": b64(bytes(first))})
    return obj  # (a record LangGraph.js does not read back: the plain data, as its reviver leaves it)


def is_unset(value: Any) -> bool:
    return value is _UNSET
