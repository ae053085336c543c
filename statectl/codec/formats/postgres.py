"""A Postgres checkpoint as PostgresSaver stores it: a JSONB row with the inline values, and a
blob row per channel version."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from statectl.codec.decode import decode_typed, fix_json, unb64
from statectl.errors import DecodeError

if TYPE_CHECKING:
    from statectl.codec.classes import Named


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


def parse_export(blob: bytes | None, memo: dict[str, Any]) -> tuple[dict, set[Named]]:
    """What `decode_export` checks, without building the blobs' values (`doctor`): the checkpoint
    as `assemble` gives it with each blob channel's value None, and the classes its blobs name.
    A msgpack blob is parsed once, ext payloads included (`classes.parse_msgpack`); any other is
    decoded and read for names as `decode_export` and `classes.named` would. `memo` holds each
    blob's answer by its text: the checkpoints of a thread name the same versions again and again.
    DecodeError where `decode_export` would raise one."""
    from statectl.codec.classes import named, parse_msgpack

    found: set[Named] = set()
    try:
        doc = orjson.loads(blob or b"")
        rows = [(ch, t, b, None if b in memo else unb64(b)) for ch, _v, t, b in doc["blobs"]]
        ckpt = assemble(doc["checkpoint"], [])
        values = ckpt["channel_values"]
        for channel, type_, text, data in rows:
            answer = memo.get(text)
            if answer is None:
                if type_ == "msgpack" and data:
                    try:
                        answer = parse_msgpack(data)[1]
                    except DecodeError as exc:
                        answer = exc
                else:
                    if type_ != "empty":
                        decode_typed(type_, data)
                    answer = named(type_, data)
                memo[text] = answer
            if isinstance(answer, DecodeError):
                raise answer
            found |= answer
            if type_ != "empty":
                values[channel] = None
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise DecodeError(f"damaged Postgres checkpoint ({type(exc).__name__})") from None
    return ckpt, found
