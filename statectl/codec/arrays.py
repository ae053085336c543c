"""A long array decoded once across checkpoints: LangGraph stores a thread's whole transcript in
every checkpoint, so checkpoint N's `messages` are checkpoint N-1's bytes and a few more. An
array whose leading elements are, byte for byte, the elements of one decoded before shares their
values and decodes only what differs. Reading a thread step by step (`log -p`, the TUI) then
costs what each step adds, not the transcript again.

Equal bytes decode to equal values (the decoder calls nothing and reads no setting but the AES
key, applied before these bytes), so sharing is exact. Where the walk below meets anything it
does not expect (a truncated value, a repeated key, a `channel_values` that is not a map of
names), the caller decodes the whole payload as before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

MIN_BLOB = 32 << 10
"""Smaller payloads decode faster than they are walked."""
MIN_ITEMS = 16
"""Shorter arrays are decoded with the rest."""
LIMIT = 16 << 20
"""The element bytes kept, all arrays together. Their values take about 6x that (a transcript of
1.7 MB decodes to 10.8 MB of objects), mostly shared with the memo and with what is shown."""
ENTRIES = 8
"""Arrays kept: a few channels of a few threads read in turn."""
KEY_BYTES = 256
"""An array is found again by its path and its first element's leading bytes."""

_SCALAR, _RAW, _ARRAY, _MAP = 0, 1, 2, 3
_WIDTH = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4}  # bin8-32, str8-32: length bytes
_EXT = {0xC7: 1, 0xC8: 2, 0xC9: 4}  # ext8-32: length bytes (then a type byte)
_FIXEXT = {0xD4: 2, 0xD5: 3, 0xD6: 5, 0xD7: 9, 0xD8: 17}  # type byte + data
_FIXED = {0xC0: 0, 0xC2: 0, 0xC3: 0, 0xCA: 4, 0xCB: 8, 0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}
_FIXED.update({0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8})  # (int8-64)
_COUNT = {0xDC: (_ARRAY, 2), 0xDD: (_ARRAY, 4), 0xDE: (_MAP, 2), 0xDF: (_MAP, 4)}


class _Unexpected(Exception):
    """The walk stops: the caller decodes the whole payload."""


def _head(d: bytes, i: int) -> tuple[int, int, int]:
    """(kind, count or byte length, position after the header) of the value at i."""
    b = d[i]
    if b <= 0x7F or b >= 0xE0:
        return _SCALAR, 0, i + 1
    if b <= 0x8F:
        return _MAP, b & 0x0F, i + 1
    if b <= 0x9F:
        return _ARRAY, b & 0x0F, i + 1
    if b <= 0xBF:
        return _RAW, b & 0x1F, i + 1
    if (w := _FIXED.get(b)) is not None:
        return _RAW, w, i + 1
    if (w := _WIDTH.get(b)) is not None:
        return _RAW, int.from_bytes(d[i + 1 : i + 1 + w], "big"), i + 1 + w
    if (w := _EXT.get(b)) is not None:
        return _RAW, int.from_bytes(d[i + 1 : i + 1 + w], "big") + 1, i + 1 + w
    if (w := _FIXEXT.get(b)) is not None:
        return _RAW, w, i + 1
    if (kw := _COUNT.get(b)) is not None:
        kind, w = kw
        return kind, int.from_bytes(d[i + 1 : i + 1 + w], "big"), i + 1 + w
    raise _Unexpected  # (0xc1: never used)


def _skip(d: bytes, i: int) -> int:
    """The position after the value at i (no recursion: every value takes a byte, so a hostile
    count ends at the end of the data)."""
    todo = 1
    while todo:
        kind, n, i = _head(d, i)
        todo -= 1
        if kind == _RAW:
            i += n
        elif kind == _ARRAY:
            todo += n
        elif kind == _MAP:
            todo += 2 * n
    if i > len(d):
        raise _Unexpected
    return i


def _str(d: bytes, i: int) -> tuple[bytes | None, int]:
    """A map key: its bytes if it is a string, and the position after it."""
    kind, n, j = _head(d, i)
    if kind == _RAW and (d[i] <= 0xBF or d[i] in (0xD9, 0xDA, 0xDB)):
        return d[j : j + n], j + n
    return None, _skip(d, i)


class _Seen:
    """One decoded array: its elements' bytes, where each ends, and their values."""

    __slots__ = ("elems", "ends", "values")

    def __init__(self, elems: bytes, ends: list[int], values: list) -> None:
        self.elems, self.ends, self.values = elems, ends, values


class _Arrays:
    def __init__(self) -> None:
        self.seen: OrderedDict[tuple, _Seen] = OrderedDict()
        self.size = 0
        self.lock = threading.Lock()

    def get(self, key: tuple) -> _Seen | None:
        with self.lock:
            seen = self.seen.get(key)
            if seen is not None:
                self.seen.move_to_end(key)
            return seen

    def put(self, key: tuple, seen: _Seen) -> None:
        if len(seen.elems) > LIMIT:  # (a longer transcript: its messages are found in the memo)
            return
        with self.lock:
            if (old := self.seen.pop(key, None)) is not None:
                self.size -= len(old.elems)
            self.seen[key] = seen
            self.size += len(seen.elems)
            while self.size > LIMIT or len(self.seen) > ENTRIES:
                _, old = self.seen.popitem(last=False)
                self.size -= len(old.elems)


ARRAYS = _Arrays()
_NONE = _Seen(b"", [], [])
"""No array seen under a key: nothing shared."""


def _array(d: bytes, path: tuple, start: int, n: int, unpack: Callable[[bytes], Any]) -> tuple[list, int]:
    """The values of the n elements starting at `start`, and where the array ends."""
    k = getattr(_TAIL, "n", None)
    if k is not None and n > k and (tail := _tail(d, start, n, k, unpack)) is not None:
        return tail
    first = _skip(d, start)
    key = (path, d[start : min(first, start + KEY_BYTES)])
    seen = ARRAYS.get(key) or _NONE
    ends = seen.ends
    k = min(n, len(ends))
    if k and d.startswith(seen.elems[: ends[k - 1]] if k < len(ends) else seen.elems, start):
        shared = k  # (elements equal to the seen array's)
    else:  # the longest equal run of leading elements (a message removed or rewritten; none seen)
        lo, hi = 0, k - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if d.startswith(seen.elems[: ends[mid - 1]], start):
                lo = mid
            else:
                hi = mid - 1
        shared = lo
    i = mark = start + (ends[shared - 1] if shared else 0)
    ends_new = ends[:shared]
    for _ in range(n - shared):
        i = _skip(d, i)
        ends_new.append(i - start)
    values = seen.values[:shared]
    if n > shared:
        more = unpack(_array_head(n - shared) + d[mark:i])
        if type(more) is not list or len(more) != n - shared:
            raise _Unexpected
        values += more
    if shared < n:  # (kept unless it is the seen array or a part of it: read newest first)
        ARRAYS.put(key, _Seen(d[start:i], ends_new, list(values)))
    return values, i


class Tail(list):
    """The newest `len(self)` messages of a transcript of `total` (`tail`: what `show` prints),
    the earlier ones walked and checked to be messages, not decoded. Equal to a list as the
    whole transcript is (compared whole); `whole()` decodes it all."""

    __slots__ = ("_whole", "total")

    def __init__(self, values: list, total: int, whole: Callable[[], list]) -> None:
        super().__init__(values)
        self.total, self._whole = total, whole

    def whole(self) -> list:
        return self._whole()

    def __eq__(self, other: object) -> bool:
        return self.whole() == (other.whole() if isinstance(other, Tail) else other)

    def __ne__(self, other: object) -> bool:
        return not self == other


def whole(value: Any) -> Any:
    """`value`, a `Tail` decoded whole (before a reducer or anything but a view uses it)."""
    return value.whole() if isinstance(value, Tail) else value


_TAIL = threading.local()


class tail:
    """Within it, in this thread, a transcript longer than `n` messages decodes its newest `n`
    (a `Tail`): what `show` prints of it. None: whole."""

    def __init__(self, n: int | None) -> None:
        self.n = n

    def __enter__(self) -> None:
        self.before = getattr(_TAIL, "n", None)
        _TAIL.n = self.n

    def __exit__(self, *exc: object) -> None:
        _TAIL.n = self.before


MESSAGE = "langchain_core.messages."
"""The classes a message decodes as (`core.reducers.MESSAGE_PREFIX`)."""


def _tail(d: bytes, start: int, n: int, k: int, unpack: Callable[[bytes], Any]) -> tuple[Tail, int] | None:
    """The last k of the n elements from `start` decoded, where every element is a message
    (the n - k before them checked in their bytes, `_messages`), and where the array ends;
    None where not (the array is decoded whole, as without `tail`)."""
    mark = start
    for _ in range(n - k):
        mark = _skip(d, mark)
    end = mark
    for _ in range(k):
        end = _skip(d, end)
    if not _messages(_array_head(n - k) + d[start:mark]):
        return None
    values = unpack(_array_head(k) + d[mark:end])
    if type(values) is not list or len(values) != k or not all(_is_message(m) for m in values):
        return None
    return Tail(values, n, lambda: unpack(_array_head(n) + d[start:end])), end


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and str(value.get("$type", "")).startswith(MESSAGE)


_YES, _NO = object(), object()


def _messages(array: bytes) -> bool:
    """Would every element of this msgpack array decode as a message (`decode._ext_value`:
    an ext of code 0-5 whose payload, decoded without error, is [module, class, ...] naming a
    `langchain_core.messages` class)? Read by the C decoder with nothing made of the payloads:
    no value built, no memo."""
    import ormsgpack

    try:
        items = ormsgpack.unpackb(array, ext_hook=_probe, option=ormsgpack.OPT_NON_STR_KEYS)
    except (ValueError, TypeError, RecursionError):
        return False
    return type(items) is list and all(item is _YES for item in items)


def _probe(code: int, data: bytes) -> object:
    """`_YES` where `decode._ext_value` makes a message of this ext; what it raises, raised."""
    import ormsgpack

    option = ormsgpack.OPT_NON_STR_KEYS
    if code == 7:  # (a DeltaSnapshot: its payload's error is not caught)
        ormsgpack.unpackb(data, ext_hook=_probe, option=option)
        return _NO
    try:
        payload = ormsgpack.unpackb(data, ext_hook=_probe, option=option)
    except (ValueError, TypeError):
        return _NO
    if code > 5 or type(payload) is not list or len(payload) < 3:
        return _NO
    module, name = payload[0], payload[1]
    return _YES if type(module) is str and type(name) is str and f"{module}.{name}".startswith(MESSAGE) else _NO


def _array_head(n: int) -> bytes:
    if n < 16:
        return bytes([0x90 | n])
    if n < 1 << 16:
        return b"\xdc" + n.to_bytes(2, "big")
    return b"\xdd" + n.to_bytes(4, "big")


_Spliced = list[tuple[int, int, str, list]]
"""Arrays taken out of a checkpoint: (start, end, channel, values)."""


def _channels(d: bytes, i: int, m: int, unpack: Callable[[bytes], Any], spliced: _Spliced) -> int:
    """Walk the m entries of `channel_values` from i, decoding its long arrays; where it ends."""
    names: set[bytes] = set()
    for _ in range(m):
        name, i = _str(d, i)
        if name is None or name in names:
            raise _Unexpected  # (a name that is not text, or one given twice)
        names.add(name)
        kind, count, j = _head(d, i)
        if kind == _ARRAY and count >= MIN_ITEMS:
            values, end = _array(d, ("channel_values", name), j, count, unpack)
            spliced.append((i, end, name.decode(), values))
            i = end
        else:
            i = _skip(d, i)
    return i


def _checkpoint(d: bytes, i: int, n: int, unpack: Callable[[bytes], Any]) -> Any:
    """A checkpoint map of n entries from i: its long channel arrays decoded by `_array`, the rest
    with each of them left out (a nil in its place), then put back."""
    spliced: _Spliced = []
    keys: set[bytes] = set()
    for _ in range(n):
        key, i = _str(d, i)
        if key in keys:
            return None
        if key is not None:
            keys.add(key)
        kind, m, j = _head(d, i)
        i = _channels(d, j, m, unpack, spliced) if key == b"channel_values" and kind == _MAP else _skip(d, i)
    if not spliced or i != len(d):
        return None
    parts, at = [], 0
    for start, end, _, _ in spliced:
        parts += [d[at:start], b"\xc0"]
        at = end
    parts.append(d[at:])
    value = unpack(b"".join(parts))
    cv = value.get("channel_values") if type(value) is dict else None
    if type(cv) is not dict:
        return None
    for _, _, channel, values in spliced:
        if channel not in cv or cv[channel] is not None:
            return None
        cv[channel] = values
    return value


def decode_sharing(d: bytes, unpack: Callable[[bytes], Any]) -> Any:
    """`unpack(d)`, with its long arrays sharing the values of arrays decoded before; None where
    this cannot be done (the caller then decodes `d` whole). Looks at a top-level array (a
    Postgres channel blob) and at the arrays in a checkpoint's `channel_values`."""
    if MIN_ITEMS > 15 and b"\xdc" not in d and b"\xdd" not in d:
        return None  # (no array16 or array32 header byte: no array that long anywhere to walk for)
    try:
        kind, n, i = _head(d, 0)
        if kind == _ARRAY and n >= MIN_ITEMS:
            values, end = _array(d, (), i, n, unpack)
            return values if end == len(d) else None
        if kind != _MAP or n == 0 or _str(d, i)[0] != b"v":  # (a checkpoint: LangGraph writes `v` first)
            return None
        return _checkpoint(d, i, n, unpack)
    except (_Unexpected, IndexError, UnicodeDecodeError, ValueError, TypeError, RecursionError):
        return None


_KWARGS = (2, 4, 5)
"""The ext codes whose value holds its payload's third item as its `data` (`decode._ext_value`)."""


def message_ids(type_: str | None, data: bytes | None) -> list[str | None] | None:
    """The ids of the messages of a msgpack write that is a list of messages (`add_messages`'
    writes), as its decoded value gives them (`message_data(m).get("id")`; None: none), read
    without making the value: no message built, no value tagged, nothing kept. None where the
    write is anything else, or where an id is not plain text (then the caller decodes it)."""
    import ormsgpack

    if type_ != "msgpack" or not data:
        return None
    try:
        items = ormsgpack.unpackb(data, ext_hook=_id_of, option=ormsgpack.OPT_NON_STR_KEYS)
    except (ValueError, TypeError, RecursionError):
        return None
    if type(items) is not list or not items or not all(type(i) is _Id for i in items):
        return None
    return [i.id for i in items]


class _Id:
    """A message ext's id (`message_ids`)."""

    __slots__ = ("id",)

    def __init__(self, id_: str | None) -> None:
        self.id = id_


def _id_of(code: int, data: bytes) -> object:
    """`_Id` where `decode._ext_value` makes a message of this ext whose data's id is text or
    absent; `_NO` for any other ext, and for a message this cannot read the id of as the decoder
    would (an id not text, data with keys that are not text or look like statectl's tags: the
    caller decodes the write)."""
    import ormsgpack

    from statectl.codec.values import TAGS

    if code == 7:  # (a DeltaSnapshot: its payload's error is not caught, as in `_probe`)
        ormsgpack.unpackb(data, ext_hook=_probe, option=ormsgpack.OPT_NON_STR_KEYS)
        return _NO
    try:
        payload = ormsgpack.unpackb(data, ext_hook=_probe, option=ormsgpack.OPT_NON_STR_KEYS)
    except (ValueError, TypeError):
        return _NO
    if code > 5 or type(payload) is not list or len(payload) < 3:
        return _NO
    module, name, arg = payload[0], payload[1], payload[2]
    if type(module) is not str or type(name) is not str or not f"{module}.{name}".startswith(MESSAGE):
        return _NO
    if code not in _KWARGS:
        return _Id(None)  # (`arg` or `args`: no data, no id)
    if type(arg) is not dict:
        return _Id(None) if type(arg) in (str, int, bool, float, list, tuple) or arg is None else _NO
    if not all(type(k) is str for k in arg) or TAGS & arg.keys():
        return _NO
    found = arg.get("id")
    return _Id(found) if found is None or type(found) is str else _NO
