"""Checkpoints as each backend stores them, decoded without the backend: what its source reads,
and what an export file carries under a type tag of its own (`statectl+pg`, `statectl+inmem`,
`statectl+server`). Sources and export files both read through here; no source imports another.
"""

from __future__ import annotations

import orjson

from statectl.codec.decode import decode_typed
from statectl.errors import DecodeError

PG_TYPE = "statectl+pg"
"""A Postgres checkpoint (`PostgresSource.raw_checkpoint`): JSON of its JSONB row and its blob rows."""
INMEM_TYPE = "statectl+inmem"
"""A checkpoint of a langgraph dev folder: the checkpoint pair and its channel blobs."""
SERVER_TYPE = "statectl+server"
"""A checkpoint read from a LangGraph server: the server's snapshot as JSON."""


def checked_checkpoint(thread_id: str, checkpoint_id: str, type_: str | None, blob: bytes | None) -> dict:
    """Decode a checkpoint blob, naming the checkpoint if it is corrupt."""
    try:
        if type_ == PG_TYPE:
            from statectl.codec.formats.postgres import decode_export

            value = decode_export(blob)
        elif type_ == INMEM_TYPE:
            from statectl.codec.formats.inmem import decode_inmem

            value = decode_inmem(blob)
        elif type_ == SERVER_TYPE:
            from statectl.codec.formats.server import server_checkpoint

            try:
                value = server_checkpoint(orjson.loads(blob or b"{}"))
            except (orjson.JSONDecodeError, AttributeError) as exc:
                raise DecodeError(f"corrupt server snapshot ({exc})") from None
        else:
            value = decode_typed(type_, blob)
    except DecodeError as exc:
        raise DecodeError.corrupt(thread_id, checkpoint_id, exc.message) from None
    if isinstance(value, dict) and "$undecoded" in value:
        # (a pickle_fallback checkpoint, an encrypted one without its key): the rows' header and
        # every other checkpoint still show; this one's values, next and tasks cannot be known
        from statectl.codec.decode import undecoded_text

        return {
            "channel_values": {},
            "channel_versions": {},
            "versions_seen": {},
            "$undecoded": value["$undecoded"],
            "$notes": [
                f"this checkpoint is stored as {undecoded_text(value['$undecoded'])}; "
                "its values, next and tasks cannot be read"
            ],
        }
    if not isinstance(value, dict) or not isinstance(value.get("channel_values"), dict):
        raise DecodeError(
            f"checkpoint {checkpoint_id} of thread {thread_id!r} is not a LangGraph checkpoint (stored as {type_!r})"
        )
    return value
