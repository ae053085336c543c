"""The inert value forms every decoder builds: statectl's tagged values, base64, UUID text, set order."""

from __future__ import annotations

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
    import base64  # (here: the commands that write no bytes out, `threads` and `log`, skip its import)

    return None if blob is None else base64.b64encode(bytes(blob)).decode("ascii")


def b64_size(text: str | None) -> int:
    """How many bytes base64 `text` holds (its `=` padding is not data)."""
    text = (text or "").rstrip()
    return len(text) * 3 // 4 - (len(text) - len(text.rstrip("=")))


def unb64(text: str | None) -> bytes | None:
    """The bytes of `b64` text (None kept)."""
    import base64

    return None if text is None else base64.b64decode(text)


def dashed_uuid(hex32: str) -> str:
    """32 hex digits as a UUID's text (8-4-4-4-12)."""
    return f"{hex32[:8]}-{hex32[8:12]}-{hex32[12:16]}-{hex32[16:20]}-{hex32[20:32]}"


def dashed_or_same(hex32: Any) -> Any:
    return dashed_uuid(hex32) if isinstance(hex32, str) and len(hex32) == 32 else hex32


MAX_DEPTH = 200
"""The deepest nesting a value keeps once read (below orjson's 254, with room for the documents
that hold it): deeper parts read as an `$undecoded` placeholder saying so."""


def too_deep(limit: int = MAX_DEPTH) -> Tagged:
    """What a part of a value nested deeper than `limit` levels reads as."""
    return Tagged({"$undecoded": {"type": "value", "why": f"nested deeper than {limit} levels"}})


def cut_deep(value: Any, limit: int = MAX_DEPTH) -> Any:
    """`value` with what is nested deeper than `limit` levels of lists and dicts replaced by a
    `too_deep` placeholder; the value itself (no copy) when nothing is that deep. The depth is
    found without recursion, so any depth is measured; only the cut copy recurses, `limit` deep."""
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if depth > limit:
            return _cut(value, 0, limit)
        if isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values() if isinstance(x, (dict, list, tuple)))
        elif isinstance(v, (list, tuple)):
            stack.extend((x, depth + 1) for x in v if isinstance(x, (dict, list, tuple)))
    return value


def _cut(value: Any, depth: int, limit: int) -> Any:
    if not isinstance(value, (dict, list, tuple)):
        return value
    if depth > limit:
        return too_deep(limit)
    if isinstance(value, dict):
        out = {k: _cut(v, depth + 1, limit) for k, v in value.items()}
        return Tagged(out) if isinstance(value, Tagged) else out
    return [_cut(v, depth + 1, limit) for v in value]


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
