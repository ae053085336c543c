"""A Postgres checkpoint as PostgresSaver stores it: a JSONB row with the inline values, and a
blob row per channel version."""

from __future__ import annotations

from typing import Any

import orjson

from statectl.codec.decode import decode_typed, fix_json, unb64
from statectl.errors import DecodeError


def assemble(jsonb: Any, blobs: list[tuple[str, str | None, bytes | None]]) -> dict:
    """`PostgresSaver._load_checkpoint`: inline values, then blob values over them."""
    ckpt = dict(jsonb) if isinstance(jsonb, dict) else {}
    # inline values are plain JSON: a user's dict that looks like statectl's tagged form
    # ({"$type": "os.system"}, {"$set": 5}) stays a dict, escaped as the msgpack path escapes it
    values = {k: fix_json(v) for k, v in (ckpt.get("channel_values") or {}).items()}
    for channel, type_, blob in blobs:
        if type_ == "empty":
            continue
        values[channel] = decode_typed(type_, blob)
    ckpt["channel_values"] = values
    return ckpt


def decode_export(blob: bytes | None) -> dict:
    """A Postgres checkpoint as `raw_checkpoint` packed it (for export files)."""
    try:
        doc = orjson.loads(blob or b"")
        blobs = [(ch, t, unb64(b)) for ch, _v, t, b in doc["blobs"]]
        return assemble(doc["checkpoint"], blobs)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise DecodeError(f"damaged Postgres checkpoint ({type(exc).__name__})") from None
