"""A `langgraph dev` checkpoint as its `.langgraph_api` folder keeps it: InMemorySaver's
(type, bytes) pair and the blobs of its channel versions (FORMAT-langgraph-api.md)."""

from __future__ import annotations

import orjson

from statectl.codec.decode import decode_typed, unb64
from statectl.errors import DecodeError

_ERA_B = (
    "channel values of this checkpoint were never saved: the langgraph-checkpoint of "
    "this folder's server (2.0.22-2.0.24) did not write its blobs file; the tasks and "
    "their writes below are what was saved"
)


def decode_inmem(blob: bytes | None) -> dict:
    """A checkpoint as `raw_checkpoint` packed it: `InMemorySaver._load_blobs` over the
    checkpoint's own values (era A keeps them inline); era-B checkpoints, whose blobs were
    never saved, come back with no values and a note saying so."""
    try:
        doc = orjson.loads(blob or b"")
        if "server_record" in doc:
            return doc["server_record"]
        type_, data = doc["checkpoint"]
        ck = decode_typed(type_, unb64(data))
        if not isinstance(ck, dict):
            return ck
        if "channel_values" not in ck:
            values = {}
            for ch, bt, bb in doc["blobs"]:
                if bt != "empty":
                    values[ch] = decode_typed(bt, unb64(bb))
            ck["channel_values"] = values
            missing = [ch for ch in doc.get("missing") or () if not ch.startswith(("branch:", "__"))]
            if missing and not doc["blobs"]:
                ck["$notes"] = [_ERA_B]
            elif missing:
                ck["$notes"] = [
                    f"the blobs file holds no value for {', '.join(missing)} at this "
                    "checkpoint (the server did not save it): shown without it"
                ]
        return ck
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise DecodeError(f"damaged langgraph dev checkpoint ({type(exc).__name__})") from None
