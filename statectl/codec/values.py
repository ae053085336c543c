"""The inert value forms every decoder builds: statectl's tagged values, base64, UUID text, set order."""

from __future__ import annotations

import base64
import math
from typing import Any

import orjson

TAGS = frozenset(
    {
        "$uuid",
        "$decimal",
        "$set",
        "$frozenset",
        "$date",
        "$datetime",
        "$type",
        "$bytes",
        "$dict",
        "$ndarray",
        "$ext",
        "$float",
        "$undecoded",
    }
)


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


def b64(blob: bytes | bytearray | memoryview | None) -> str | None:
    """Bytes as base64 text, the way exports, folders and `$bytes` values carry them (None kept)."""
    return None if blob is None else base64.b64encode(bytes(blob)).decode("ascii")


def b64_size(text: str | None) -> int:
    """How many bytes base64 `text` holds (its `=` padding is not data)."""
    text = (text or "").rstrip()
    return len(text) * 3 // 4 - (len(text) - len(text.rstrip("=")))


def unb64(text: str | None) -> bytes | None:
    """The bytes of `b64` text (None kept)."""
    return None if text is None else base64.b64decode(text)


def dashed_uuid(hex32: str) -> str:
    """32 hex digits as a UUID's text (8-4-4-4-12)."""
    return f"{hex32[:8]}-{hex32[8:12]}-{hex32[12:16]}-{hex32[16:20]}-{hex32[20:32]}"


def dashed_or_same(hex32: Any) -> Any:
    return dashed_uuid(hex32) if isinstance(hex32, str) and len(hex32) == 32 else hex32


_KEPT = frozenset({str, int, bool, Tagged, DeltaSnapshot})
"""What json_safe returns as it is (with None)."""


def json_safe(obj: Any) -> Any:
    """Make an unpacked msgpack tree JSON-safe (bytes, non-str keys, NaN, tag-like keys)."""
    t = type(obj)
    if t is str or t is int or t is bool or obj is None or t is Tagged or t is DeltaSnapshot:
        return obj
    if t is list:  # (a kept value is not passed to json_safe: a long list of messages is mostly those)
        return [x if type(x) in _KEPT or x is None else json_safe(x) for x in obj]
    if t is dict:
        if all(type(k) is str for k in obj) and not (TAGS & obj.keys()):
            return {k: v if type(v) in _KEPT or v is None else json_safe(v) for k, v in obj.items()}
        return Tagged({"$dict": [[json_safe(k), json_safe(v)] for k, v in obj.items()]})
    if t is float:
        return Tagged({"$float": repr(obj)}) if math.isnan(obj) or math.isinf(obj) else obj
    if t is bytes or t is bytearray:
        return Tagged({"$bytes": b64(obj)})
    if t is tuple:
        return [json_safe(x) for x in obj]
    return obj


def fix_json(value: Any) -> Any:
    """A plain JSON value (a Postgres JSONB inline value) in statectl's form: dicts whose keys
    look like its tags escaped as `{"$dict": ...}`, NaN tagged."""
    return json_safe(value)


def set_order(items: Any) -> Any:
    """A set's elements in one fixed order. A set has none: the order it was stored in is the hash
    order of the process that wrote it, which differs from process to process for strings. Sorted,
    equal sets decode equal and a diff shows only elements added or removed."""
    if not isinstance(items, list) or len(items) < 2:
        return items
    return sorted(items, key=_set_key)


def _set_key(item: Any) -> tuple[int, bytes]:
    try:
        return 0, orjson.dumps(item, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return 1, repr(item).encode()
