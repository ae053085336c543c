"""`--json` output that never fails on a value statectl decoded.

orjson is fast but refuses integers beyond 64 bits, keys that are not strings or numbers and
nesting deeper than 254 levels, all of which a valid state can hold. Those values take a slower
path: Python's json (arbitrary integers), keys as their text, and what is nested deeper than
MAX_DEPTH levels replaced by an `$undecoded` placeholder saying so.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from statectl.codec.values import MAX_DEPTH

_SURROGATES = {c: f"\\u{c:04x}" for c in range(0xD800, 0xE000)}


def json_bytes(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except (orjson.JSONEncodeError, TypeError):
        text = json.dumps(_plain(value, 0), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        # (a lone surrogate, which UTF-8 cannot hold, as the JSON escape that reads back to it)
        return text.translate(_SURROGATES).encode()


def _plain(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        return {"$undecoded": {"type": "value", "why": f"nested deeper than {MAX_DEPTH} levels"}}
    t = type(value)
    if value is None or t in (str, bool, int):
        return value
    if t is float:
        return value if value == value and value not in (float("inf"), float("-inf")) else {"$float": repr(value)}
    if isinstance(value, dict):
        return {k if isinstance(k, str) else _key(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, (bytes, bytearray)):
        import base64

        return {"$bytes": base64.b64encode(bytes(value)).decode()}
    try:
        return orjson.loads(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))
    except (orjson.JSONEncodeError, TypeError):
        return str(value)


def _key(k: Any) -> str:
    if isinstance(k, bool) or k is None:
        return json.dumps(k)
    if isinstance(k, (int, float)):
        return repr(k)
    return str(k)
