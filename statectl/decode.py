"""Stored bytes -> inert Python values, without importing or calling anything the data names.

Every value comes back as plain JSON-able data. What JSON cannot hold uses statectl's tagged
form (see README, "JSON output"): ``{"$uuid": ...}``, ``{"$datetime": ...}``, ``{"$set": [...]}``,
``{"$type": "module.Class", "data" | "arg" | "args": ...}``, ``{"$bytes": base64}``, ... Tagged
objects are `Tagged` dicts so they are never confused with user dicts that happen to use the same
keys (those are escaped as ``{"$dict": [[key, value], ...]}``).
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

import ormsgpack

from statectl.errors import DecodeError

# msgpack ext codes written by langgraph.checkpoint.serde.jsonplus
EXT_CONSTRUCTOR_SINGLE_ARG = 0
EXT_CONSTRUCTOR_POS_ARGS = 1
EXT_CONSTRUCTOR_KW_ARGS = 2
EXT_METHOD_SINGLE_ARG = 3
EXT_PYDANTIC_V1 = 4
EXT_PYDANTIC_V2 = 5
EXT_NUMPY_ARRAY = 6
EXT_DELTA_SNAPSHOT = 7

TAGS = frozenset({"$uuid", "$decimal", "$set", "$frozenset", "$date", "$datetime", "$type",
                  "$bytes", "$dict", "$ndarray", "$ext", "$float", "$undecoded"})


class Tagged(dict):
    """A value the decoder built in the tagged form (not a user dict)."""

    __slots__ = ()


class DeltaSnapshot:
    """A `DeltaChannel` snapshot (ext 7): the full channel value at that checkpoint."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeltaSnapshot) and other.value == self.value

    def __repr__(self) -> str:
        return f"DeltaSnapshot({self.value!r})"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _dashed(hex32: Any) -> Any:
    if isinstance(hex32, str) and len(hex32) == 32:
        return f"{hex32[:8]}-{hex32[8:12]}-{hex32[12:16]}-{hex32[16:20]}-{hex32[20:]}"
    return hex32


def _fix(obj: Any) -> Any:
    """Make an unpacked msgpack tree JSON-safe (bytes, non-str keys, NaN, tag-like keys)."""
    t = type(obj)
    if t is str or t is int or t is bool or obj is None or t is Tagged or t is DeltaSnapshot:
        return obj
    if t is list:
        return [_fix(x) for x in obj]
    if t is dict:
        if all(type(k) is str for k in obj) and not (TAGS & obj.keys()):
            return {k: _fix(v) for k, v in obj.items()}
        return Tagged({"$dict": [[_fix(k), _fix(v)] for k, v in obj.items()]})
    if t is float:
        return Tagged({"$float": repr(obj)}) if math.isnan(obj) or math.isinf(obj) else obj
    if t is bytes or t is bytearray:
        return Tagged({"$bytes": _b64(bytes(obj))})
    if t is tuple:
        return [_fix(x) for x in obj]
    return obj


def _unpack(data: bytes) -> Any:
    return _fix(ormsgpack.unpackb(data, ext_hook=_ext_hook, option=ormsgpack.OPT_NON_STR_KEYS))


def _ext_hook(code: int, data: bytes) -> Any:
    """Turn one msgpack ext into data. Imports nothing, calls nothing the payload names."""
    if code == EXT_DELTA_SNAPSHOT:
        return DeltaSnapshot(_unpack(data))
    try:
        payload = _unpack(data)
    except (ValueError, TypeError):
        return Tagged({"$ext": code, "data": _b64(data)})
    if code == EXT_NUMPY_ARRAY and isinstance(payload, list) and len(payload) == 4:
        dtype, shape, order, buf = payload
        return Tagged({"$ndarray": {"dtype": dtype, "shape": shape, "order": order,
                                    "data": buf.get("$bytes") if isinstance(buf, dict) else buf}})
    if (code > EXT_PYDANTIC_V2 or not isinstance(payload, list) or len(payload) < 3
            or not isinstance(payload[0], str) or not isinstance(payload[1], str)):
        return Tagged({"$ext": code, "data": _b64(data)})
    qual = f"{payload[0]}.{payload[1]}"
    arg = payload[2]
    if code == EXT_CONSTRUCTOR_SINGLE_ARG:
        if qual == "uuid.UUID":
            return Tagged({"$uuid": _dashed(arg)})
        if qual == "decimal.Decimal":
            return Tagged({"$decimal": arg})
        if qual == "builtins.set":
            return Tagged({"$set": arg})
        if qual == "builtins.frozenset":
            return Tagged({"$frozenset": arg})
        return Tagged({"$type": qual, "arg": arg})
    if code == EXT_CONSTRUCTOR_POS_ARGS:
        if qual == "datetime.date" and isinstance(arg, list) and len(arg) == 3:
            y, m, d = arg
            return Tagged({"$date": f"{y:04d}-{m:02d}-{d:02d}"})
        return Tagged({"$type": qual, "args": arg})
    if code == EXT_METHOD_SINGLE_ARG:
        method = payload[3] if len(payload) > 3 else None
        if qual == "datetime.datetime" and method == "fromisoformat":
            return Tagged({"$datetime": arg})
        return Tagged({"$type": qual, "arg": arg, "method": method})
    return Tagged({"$type": qual, "data": arg})  # kwargs (2), pydantic v1 (4) / v2 (5)


def decode_msgpack(data: bytes) -> Any:
    """Decode one msgpack payload written by LangGraph's serializer."""
    try:
        return _unpack(data)
    except (ValueError, TypeError, RecursionError) as exc:
        raise DecodeError(f"corrupt msgpack data ({exc})") from None


def _json_hook(obj: dict[str, Any]) -> Any:
    """LangChain `lc` constructor envelopes become inert `$type` objects."""
    if obj.get("lc") in (1, 2) and obj.get("type") == "constructor" and isinstance(obj.get("id"), list):
        data = obj.get("kwargs", {})
        if obj.get("args"):
            data = {**data, "args": obj["args"]}
        return Tagged({"$type": ".".join(map(str, obj["id"])), "data": data})
    if TAGS & obj.keys():
        return Tagged({"$dict": [[k, v] for k, v in obj.items()]})
    return obj


def decode_typed(type_: str | None, data: bytes | memoryview | None) -> Any:
    """Decode a `(type, bytes)` pair as stored in a `type`/`blob` column pair."""
    if data is not None and not isinstance(data, bytes):
        data = bytes(data)
    if type_ == "null" or type_ == "empty":
        return None
    if type_ == "msgpack":
        return decode_msgpack(data or b"")
    if type_ in ("bytes", "bytearray"):
        return Tagged({"$bytes": _b64(data or b"")})
    if type_ == "json":
        try:
            return json.loads(data or b"null", object_hook=_json_hook)
        except ValueError as exc:
            raise DecodeError(f"corrupt JSON data ({exc})") from None
    if type_ == "statectl+json":  # writes made from a LangGraph server's snapshot
        from statectl.sources.server import decode_json

        try:
            return decode_json(data or b"null")
        except ValueError as exc:
            raise DecodeError(f"corrupt JSON data ({exc})") from None
    if type_ == "inert-pickle":  # a langgraph dev folder's cloudpickle pairs: nothing runs
        from statectl.unpickle import decode_pickle

        return decode_pickle(data or b"")
    # pickle, encrypted ("msgpack+aes"), or a serializer statectl does not know: never decoded
    return Tagged({"$undecoded": {"type": type_, "size": len(data or b"")}})
