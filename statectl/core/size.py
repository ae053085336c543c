"""`statectl size`: where a checkpoint store's bytes go, read without decoding a value.

Per store: the bytes of each table (and its indexes, and what `VACUUM` would give back) as the
store reports them. Per thread: checkpoints, bytes, bytes per checkpoint, and growth (the
newest root checkpoint's size against the oldest's). Per channel of one thread: the bytes each
state channel takes across the history and in the newest checkpoint: in a SqliteSaver file
every checkpoint re-stores every channel, so the channel that grows (`messages`) is re-stored
at every step; a PostgresSaver stores each channel version once.

Sizes come from SQL (`length()`, `pg_column_size`) and, for one thread's channels, from walking
the msgpack structure of its checkpoints (lengths only: no value is built).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from statectl.errors import DecodeError
from statectl.sizes import ChannelSize, Part, StoreSize, ThreadChannels, ThreadSize

if TYPE_CHECKING:
    from statectl.sources.base import Source

__all__ = [
    "ChannelSize",
    "Part",
    "StoreSize",
    "ThreadChannels",
    "ThreadSize",
    "channel_lengths",
    "store_size",
    "thread_channels",
]


# -- msgpack lengths -------------------------------------------------------------------------
def _skip(data: bytes | memoryview, i: int, depth: int = 0) -> int:
    """The offset just after the msgpack object that starts at `i` (nothing is built)."""
    if depth > 512:
        raise DecodeError("msgpack nested too deeply")
    b = data[i]
    if b <= 0x7F or b >= 0xE0 or b in (0xC0, 0xC2, 0xC3):  # fixint, nil, bool
        return i + 1
    if 0xA0 <= b <= 0xBF:  # fixstr
        return i + 1 + (b & 0x1F)
    if 0x90 <= b <= 0x9F or 0x80 <= b <= 0x8F:  # fixarray, fixmap
        n, i = (b & 0x0F) * (2 if b <= 0x8F else 1), i + 1
        for _ in range(n):
            i = _skip(data, i, depth + 1)
        return i
    width = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8, 0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8, 0xCA: 4, 0xCB: 8}
    if b in width:
        return i + 1 + width[b]
    if b in (0xD4, 0xD5, 0xD6, 0xD7, 0xD8):  # fixext 1..16
        return i + 2 + (1 << (b - 0xD4))
    sized = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4, 0xC7: 1, 0xC8: 2, 0xC9: 4}
    if b in sized:  # bin, str, ext (+1 type byte)
        w = sized[b]
        n = int.from_bytes(data[i + 1 : i + 1 + w], "big")
        return i + 1 + w + n + (1 if b in (0xC7, 0xC8, 0xC9) else 0)
    if b in (0xDC, 0xDD, 0xDE, 0xDF):  # array16/32, map16/32
        w = 2 if b in (0xDC, 0xDE) else 4
        n = int.from_bytes(data[i + 1 : i + 1 + w], "big") * (2 if b >= 0xDE else 1)
        i += 1 + w
        for _ in range(n):
            i = _skip(data, i, depth + 1)
        return i
    raise DecodeError(f"not msgpack (byte 0x{b:02x})")


def _map(data: bytes | memoryview, i: int) -> tuple[int, int]:
    """(entries, offset of the first key) of the msgpack map at `i`."""
    b = data[i]
    if 0x80 <= b <= 0x8F:
        return b & 0x0F, i + 1
    if b == 0xDE:
        return int.from_bytes(data[i + 1 : i + 3], "big"), i + 3
    if b == 0xDF:
        return int.from_bytes(data[i + 1 : i + 5], "big"), i + 5
    raise DecodeError("not a msgpack map")


def _key(data: bytes | memoryview, i: int) -> tuple[str | None, int]:
    end = _skip(data, i)
    b = data[i]
    if 0xA0 <= b <= 0xBF:
        return bytes(data[i + 1 : end]).decode("utf-8", "replace"), end
    if b in (0xD9, 0xDA, 0xDB):
        w = {0xD9: 1, 0xDA: 2, 0xDB: 4}[b]
        return bytes(data[i + 1 + w : end]).decode("utf-8", "replace"), end
    return None, end


def channel_lengths(blob: bytes) -> dict[str, int]:
    """Bytes of each entry of a msgpack checkpoint's `channel_values` (lengths only)."""
    data = memoryview(blob)
    try:
        n, i = _map(data, 0)
        for _ in range(n):
            key, i = _key(data, i)
            if key != "channel_values":
                i = _skip(data, i)
                continue
            m, j = _map(data, i)
            out = {}
            for _ in range(m):
                name, j = _key(data, j)
                end = _skip(data, j)
                out[str(name)] = end - j
                j = end
            return out
    except (IndexError, DecodeError):
        raise DecodeError("the checkpoint is not a msgpack map this reader knows") from None
    return {}


# -- the report ------------------------------------------------------------------------------
def store_size(source: Source, limit: int | None = 20) -> StoreSize:
    """The store's parts and its largest threads (by bytes; `limit` of them, None: all)."""
    return source.storage(limit)  # (a server: one line, it does not say)


def thread_channels(source: Source, thread_id: str) -> ThreadChannels:
    """A thread's bytes by channel across its root checkpoints, and its size per step."""
    if (per_channel := source.channel_storage(thread_id)) is not None:  # (Postgres: from its blob table)
        return per_channel
    records = source.checkpoints(thread_id, "")
    channels: dict[str, ChannelSize] = {}
    steps: list[tuple[int | None, int]] = []
    for n, rec in enumerate(reversed(records)):  # oldest first
        type_, blob = source.raw_checkpoint(thread_id, "", rec.checkpoint_id)
        blob = blob or b""
        steps.append((rec.step, len(blob)))
        if type_ != "msgpack":
            continue
        for name, size in channel_lengths(blob).items():
            c = channels.setdefault(name, ChannelSize(name, 0, 0))
            c.history += size
            c.stored += 1
            if n == len(records) - 1:
                c.latest = size
    for rec in records:
        for w in source.writes(thread_id, "", rec.checkpoint_id):
            c = channels.setdefault(w.channel, ChannelSize(w.channel, 0, 0))
            c.writes += len(w.blob or b"")
    ordered = sorted(channels.values(), key=lambda c: (-(c.history + c.writes), c.channel))
    return ThreadChannels(
        thread_id,
        len(records),
        ordered,
        steps,
        "every checkpoint re-stores every channel: history counts each copy",
        max(0, sum(b for _, b in steps) - sum(c.history for c in ordered)),
    )
