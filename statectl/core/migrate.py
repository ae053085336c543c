"""`statectl migrate`: stored values rewritten so the current code loads them, at the byte level.

A value is never decoded into the objects it names: the msgpack is walked by its framing, and
only what a rename touches is rebuilt — an ext payload's module and class name (`--rename-class`),
a state key where LangGraph keeps one (`--rename-key`, `--drop-key`): a checkpoint's
`channel_values`, `channel_versions`, `versions_seen`, `updated_channels`, the graph input held by
`__start__`, and the channel of a pending write. Every other byte is kept as stored, so an
unchanged value is byte for byte the source's, and nothing the data names is imported.

`Migration` works on one stored checkpoint (SQLite's whole msgpack checkpoint, or Postgres' JSONB
with its blobs) and one pending write at a time; `project.migrate` writes what it returns (a copy
through LangGraph's saver, or in place with UPDATE statements).
"""

from __future__ import annotations

import base64
import json
import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from statectl.errors import StatectlError

START = "__start__"
"""The channel holding the graph's input (a map of state keys) until the first step runs."""
TASKS = "__pregel_tasks"
"""The channel of pending `Send`s (and the writes to it): a Send's argument is the state its node gets."""
EXT_CONSTRUCTOR_POS_ARGS = 1
SEND = ("langgraph.types", "Send")
CLASS_EXTS = frozenset({0, 1, 2, 3, 4, 5})
"""Ext codes whose payload is `[module, name, ...]` (FORMAT.md: LangGraph's `_msgpack_default`)."""
EXT_DELTA_SNAPSHOT = 7
DROP = object()
"""A pending write that goes (it wrote to a dropped key)."""
_WALK = object()
MAX_DEPTH = 512
ARRAY_MIN, ARRAYS, ARRAY_BYTES = 16, 4, 32 << 20
"""Arrays of at least ARRAY_MIN items are remembered (the last ARRAYS, each up to ARRAY_BYTES as
stored and rewritten): a later array that begins with the same bytes reuses their rewrite."""
MEMO_BYTES = 64 << 20
"""At most this many bytes of ext payloads (and their rewrites) are remembered."""
HEADS = 4096
"""At most this many class names (as stored) are remembered with where they go."""
_UNNAMED = object()


class Corrupt(ValueError):
    """msgpack that is not well formed: the value is left as stored and reported."""


# -- msgpack framing ------------------------------------------------------------------------------
def _table() -> list[tuple[str, int, int]]:
    """For each first byte: (kind, count or length, bytes of the length after it). A length of
    -1 is read from the bytes after it; atoms' count is their whole length."""
    t: list[tuple[str, int, int]] = [("bad", 0, 0)] * 256
    for b in range(256):
        if b <= 0x7F or b >= 0xE0 or b in (0xC0, 0xC2, 0xC3):
            t[b] = ("atom", 1, 0)
        elif b <= 0x8F:
            t[b] = ("map", b & 0x0F, 0)
        elif b <= 0x9F:
            t[b] = ("array", b & 0x0F, 0)
        elif b <= 0xBF:
            t[b] = ("str", b & 0x1F, 0)
    for b, size in ((0xD9, 1), (0xDA, 2), (0xDB, 4)):
        t[b] = ("str", -1, size)
    for b, size in ((0xC4, 1), (0xC5, 2), (0xC6, 4)):
        t[b] = ("bin", -1, size)
    for b, size in ((0xCA, 4), (0xCB, 8), (0xCC, 1), (0xCD, 2), (0xCE, 4), (0xCF, 8)):
        t[b] = ("atom", 1 + size, 0)
    for b, size in ((0xD0, 1), (0xD1, 2), (0xD2, 4), (0xD3, 8)):
        t[b] = ("atom", 1 + size, 0)
    for b in range(0xD4, 0xD9):
        t[b] = ("ext", 1 << (b - 0xD4), 0)
    for b, size in ((0xC7, 1), (0xC8, 2), (0xC9, 4)):
        t[b] = ("ext", -1, size)
    for b, kind, size in ((0xDC, "array", 2), (0xDD, "array", 4), (0xDE, "map", 2), (0xDF, "map", 4)):
        t[b] = (kind, -1, size)
    return t


_TABLE = _table()
_WALKED = [("str" if kind == "bin" else kind, n, size) for kind, n, size in _TABLE]
"""`_TABLE` for `Migration._renames`, which steps over a bin as over a str."""


def _head(buf: bytes, at: int) -> tuple[str, int, int]:
    """The item at `at`: (kind, count or length, where its body starts). kind: map, array, ext
    (count: the payload's length; the ext code is the body's first byte), str, or atom (count:
    its whole length from `at`)."""
    try:
        kind, n, size = _TABLE[buf[at]]
    except IndexError:
        raise Corrupt(f"cut short at byte {at}") from None
    if kind == "bad":
        raise Corrupt(f"not msgpack at byte {at}")
    if n >= 0:
        return kind, n, at + 1
    if at + 1 + size > len(buf):
        raise Corrupt(f"cut short at byte {at}")
    n = int.from_bytes(buf[at + 1 : at + 1 + size], "big")
    if kind == "bin":
        return "atom", 1 + size + n, at
    return kind, n, at + 1 + size


def skip(buf: bytes, at: int, known: list[Any] | None = None) -> int:
    """Where the item at `at` ends (a loop, not recursion: any nesting is walked; `_head`
    inlined, this is the hot loop). `known`: `Migration.arrays`, whose items a long array that
    begins with the same bytes is not walked through."""
    remaining, pos, end, table = 1, at, len(buf), _TABLE
    while remaining:
        remaining -= 1
        if pos >= end:
            raise Corrupt("cut short")
        kind, n, size = table[buf[pos]]
        head = 1
        if n < 0:
            head += size
            n = int.from_bytes(buf[pos + 1 : pos + head], "big")
        if kind == "atom":
            pos += n
        elif kind == "str" or kind == "bin":
            pos += head + n
        elif kind == "ext":
            pos += head + 1 + n
        elif kind == "map":
            remaining += 2 * n
            pos += head
        elif kind == "array":
            remaining += n
            pos += head
            if known and n >= ARRAY_MIN:
                for old, _new, k, *_ in known:
                    if k <= n and buf.startswith(old, pos):
                        remaining -= k
                        pos += len(old)
                        break
        else:
            raise Corrupt(f"not msgpack at byte {pos}")
    if pos > end:
        raise Corrupt("cut short")
    return pos


def _length(buf: bytes, at: int, head: int) -> int:
    """The length (or count) written in the `head` bytes of the item at `at`, after its first."""
    if at + head > len(buf):
        raise Corrupt(f"cut short at byte {at}")
    return int.from_bytes(buf[at + 1 : at + head], "big")


def _str_at(buf: bytes, at: int) -> tuple[str | None, int]:
    """The string at `at` (None if the item is not a string) and where the item ends."""
    kind, n, body = _head(buf, at)
    if kind != "str":
        return None, skip(buf, at)
    try:
        return buf[body : body + n].decode("utf-8"), body + n
    except UnicodeDecodeError:
        return None, body + n


def pack_str(text: str) -> bytes:
    data = text.encode("utf-8")
    n = len(data)
    if n < 32:
        return bytes([0xA0 | n]) + data
    if n < 1 << 8:
        return b"\xd9" + bytes([n]) + data
    if n < 1 << 16:
        return b"\xda" + struct.pack(">H", n) + data
    return b"\xdb" + struct.pack(">I", n) + data


def _container(kind: str, n: int) -> bytes:
    if n < 16:
        return bytes([(0x80 if kind == "map" else 0x90) | n])
    if n < 1 << 16:
        return (b"\xde" if kind == "map" else b"\xdc") + struct.pack(">H", n)
    return (b"\xdf" if kind == "map" else b"\xdd") + struct.pack(">I", n)


def _ext(code: int, payload: bytes) -> bytes:
    n = len(payload)
    fixed = {1: 0xD4, 2: 0xD5, 4: 0xD6, 8: 0xD7, 16: 0xD8}
    if n in fixed:  # (as ormsgpack packs it)
        return bytes([fixed[n], code & 0xFF]) + payload
    if n < 1 << 8:
        return b"\xc7" + bytes([n, code & 0xFF]) + payload
    if n < 1 << 16:
        return b"\xc8" + struct.pack(">H", n) + bytes([code & 0xFF]) + payload
    return b"\xc9" + struct.pack(">I", n) + bytes([code & 0xFF]) + payload


def items(
    buf: bytes, at: int = 0, known: list[Any] | None = None, remember: bool = False
) -> tuple[list[tuple[bytes, str | None, bytes]], int]:
    """A map's entries as (key's bytes, key as text or None, value's bytes), and where it ends
    (`known`: as `skip`'s). `remember`: a value that is a long array (a message list) is added to
    `known`, unchanged (its rewrite the same bytes: only when no class is renamed), so that the
    next checkpoint's, which begins with the same items, is not walked through again."""
    kind, n, body = _head(buf, at)
    if kind != "map":
        raise Corrupt("not a map")
    out = []
    pos = body
    for _ in range(n):
        key, kend = _str_at(buf, pos)
        vend = skip(buf, kend, known)
        out.append((buf[pos:kend], key, buf[kend:vend]))
        if remember and known is not None and vend - kend > ARRAY_MIN:
            vkind, count, vbody = _head(buf, kend)
            if vkind == "array" and count >= ARRAY_MIN and vend - vbody <= ARRAY_BYTES:
                seen = buf[vbody:vend]
                if not known or known[0][0] != seen:
                    known.insert(0, (seen, seen, count, [], []))
                    del known[ARRAYS:]
        pos = vend
    return out, pos


def _spliced(buf: bytes, start: int, end: int, reps: list[tuple[int, int, bytes]]) -> bytes:
    """`buf[start:end]` with each (from, to, new) of `reps` (in order, within it) put in."""
    parts = []
    pos = start
    for at, stop, new in reps:
        parts.append(buf[pos:at])
        parts.append(new)
        pos = stop
    parts.append(buf[pos:end])
    return b"".join(parts)


def pack_map(entries: list[tuple[bytes, bytes]]) -> bytes:
    return _container("map", len(entries)) + b"".join(k + v for k, v in entries)


# -- the renames ----------------------------------------------------------------------------------
@dataclass
class Counts:
    """What a migration changed in one thread (or would change: a dry run)."""

    checkpoints: int = 0
    writes: int = 0
    dropped_writes: int = 0
    classes: Counter[str] = field(default_factory=Counter)
    """`old -> new` and how many ext values were renamed."""
    keys: Counter[str] = field(default_factory=Counter)
    """`old -> new` or `-old` and how many checkpoints or writes named it."""
    unreadable: int = 0
    """Values left as stored because their bytes are not well-formed msgpack."""
    pickled: int = 0
    """Pickled values (not rewritten: `--rename-class` renames msgpack values)."""

    def add(self, other: Counts) -> None:
        self.checkpoints += other.checkpoints
        self.writes += other.writes
        self.dropped_writes += other.dropped_writes
        if other.classes:
            self.classes.update(other.classes)
        if other.keys:
            self.keys.update(other.keys)
        self.unreadable += other.unreadable
        self.pickled += other.pickled

    @property
    def changed(self) -> bool:
        return bool(self.checkpoints or self.writes or self.dropped_writes)

    def to_json(self) -> dict[str, Any]:
        return {
            "checkpoints": self.checkpoints,
            "writes": self.writes,
            "dropped_writes": self.dropped_writes,
            "classes": dict(self.classes),
            "keys": dict(self.keys),
            "unreadable": self.unreadable,
            "pickled": self.pickled,
        }


def parse_renames(pairs: list[str], what: str) -> dict[str, str]:
    """`OLD=NEW` options as a map; one line for a malformed one."""
    out: dict[str, str] = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        old, new = old.strip(), new.strip()
        if not sep or not old or not new:
            raise StatectlError(f"{what} {pair!r}: give OLD=NEW")
        if old in out:
            raise StatectlError(f"{what} {old!r} is given twice")
        if old == new:
            raise StatectlError(f"{what} {pair!r} renames to the same name")
        out[old] = new
    return out


class Migration:
    """The renames and drops of one `migrate`, applied to stored rows; `seen_*` collects what the
    data names (for checking the options against the store)."""

    def __init__(
        self, classes: dict[str, str] | None = None, keys: dict[str, str] | None = None, drop: list[str] | None = None
    ) -> None:
        self.classes = dict(classes or {})
        self.keys = dict(keys or {})
        self.drop = set(drop or ())
        for name, new in self.classes.items():
            for part in (name, new):
                if not all(p.isidentifier() for p in part.split(".")):
                    raise StatectlError(f"--rename-class {name}={new}: {part!r} is not a dotted Python name")
        for name in sorted({*self.keys, *self.keys.values(), *self.drop}):
            if name.startswith(("__", "branch:", "join:")):
                raise StatectlError(
                    f"{name!r} is a channel of LangGraph's own (the graph's input, interrupts, tasks, branches): "
                    "--rename-key and --drop-key take the state's keys"
                )
        onto: dict[str, str] = {}
        for name, new in sorted(self.keys.items()):
            if new in onto:
                raise StatectlError(f"--rename-key {onto[new]!r} and {name!r} both rename to {new!r}: choose one")
            onto[new] = name
        both = self.drop & set(self.keys)
        if both:
            raise StatectlError(f"--drop-key {sorted(both)[0]!r} is also renamed: choose one")
        self.needles = sorted({(o.rpartition(".")[0] or o).encode() for o in self.classes})
        """Bytes every value naming a renamed class holds (its module's name, or a prefix of it):
        a value or an ext payload without any is not walked."""
        self.memo: dict[tuple[int, bytes], tuple[bytes | None, list[str]]] = {}
        self.memo_bytes = 0
        """Ext payloads already rewritten (a message is stored again in every later checkpoint)."""
        self.arrays: list[tuple[bytes, bytes, int, list[str], list[tuple[str, str]]]] = []
        """The last long arrays walked: (items as stored, rewritten — the same object when
        unchanged —, how many, the label of each class renamed and each class seen in them);
        most recent first."""
        self.heads: dict[bytes, tuple[Any, ...] | object] = {}
        """A class ext's names as stored (module and name, packed) -> `_target` of them."""
        self.walked = 0
        """Items the Python framing loop has been through (a measure of the work, for tests)."""
        self.seen_keys: set[str] = set()
        self.seen_classes: Counter[tuple[str, str]] = Counter()
        self.renamed_to: set[tuple[str, str]] = set()
        """The (module, name) pairs the rewritten values name: each must exist in the project."""

    @property
    def empty(self) -> bool:
        return not (self.classes or self.keys or self.drop)

    def class_target(self, module: str, name: str) -> tuple[str, str] | None:
        """Where `module.name` goes: an exact class rename first, else the longest module prefix."""
        full = f"{module}.{name}"
        if full in self.classes:
            new = self.classes[full]
            mod, _, cls = new.rpartition(".")
            return (mod, cls) if mod else None
        best = None
        for old, new in self.classes.items():
            if (module == old or module.startswith(old + ".")) and (best is None or len(old) > len(best[0])):
                best = (old, new)
        if best is None:
            return None
        return best[1] + module[len(best[0]) :], name

    # -- values
    def value(self, data: bytes, counts: Counts) -> bytes | None:
        """A msgpack value with its classes renamed; None when nothing in it changes."""
        if not self.classes or not self._named(data, 0, len(data)):
            return None
        try:
            out, _end = self._walk(data, 0, counts, 0, top=True)
        except Corrupt:
            counts.unreadable += 1
            return None
        return out

    def _named(self, buf: bytes, start: int, end: int) -> bool:
        for needle in self.needles:  # noqa: SIM110  (a loop: `any` of a generator costs more, per ext)
            if buf.find(needle, start, end) >= 0:
                return True
        return False

    def _walk(self, buf: bytes, at: int, counts: Counts, depth: int, top: bool = False) -> tuple[bytes | None, int]:
        """The item at `at` with its classes renamed (None: unchanged), and where it ends. The
        classes renamed are counted only when the whole item is well formed (a value left as
        stored renames nothing)."""
        labels: list[str] = []
        seen: list[tuple[str, str]] = []
        try:
            reps, end = self._renames(buf, at, 1, depth, labels, seen, top)
        finally:
            if seen:
                self.seen_classes.update(seen)
        if labels:
            counts.classes.update(labels)
        return (_spliced(buf, at, end, reps) if reps else None), end

    def _renames(
        self,
        buf: bytes,
        at: int,
        count: int,
        depth: int,
        labels: list[str],
        seen: list[tuple[str, str]],
        top: bool = False,
    ) -> tuple[list[tuple[int, int, bytes]], int]:
        """Where the `count` items from `at` change — (start, end, new bytes) of each ext value
        rewritten, in order — and where they end: `skip`'s loop over the framing (no call per
        item, no copy of what stays), which never descends into an ext payload holding no renamed
        module. A class renamed adds its label to `labels`; every class ext read, (module, name)
        to `seen`. A long array that begins with the bytes of one walked before (the same items)
        takes that one's rewrite for them (`arrays`); `top`: an array that is the walked value
        itself (a channel's message list) is remembered from 2 items on."""
        table, end = _WALKED, len(buf)
        reps: list[tuple[int, int, bytes]] = []
        stack: list[tuple[int, tuple[int, int, int, int, int] | None]] = []
        remaining, pos, d, walked = count, at, depth, count
        while True:
            if not remaining:
                if not stack:
                    break
                remaining, frame = stack.pop()
                d -= 1
                if frame is not None:
                    self._remember(buf, frame, pos, reps, labels, seen)
                continue
            remaining -= 1
            if d > MAX_DEPTH:
                raise Corrupt("nested too deep")
            if pos >= end:
                raise Corrupt("cut short")
            kind, n, size = table[buf[pos]]
            head = 1
            if n < 0:
                head += size
                n = _length(buf, pos, head)
            if kind == "atom":
                pos += n
            elif kind == "str":  # (and bin: `_WALKED`)
                pos += head + n
            elif kind == "ext":
                pos = self._ext_at(buf, pos, pos + head, n, d, reps, labels, seen)
            elif kind == "bad":
                raise Corrupt(f"not msgpack at byte {pos}")
            else:  # (a map or an array)
                pos += head
                frame = None
                if kind == "map":
                    n *= 2
                elif n >= ARRAY_MIN or (top and n >= 2 and not stack):
                    pos, n, frame = self._array_at(buf, pos, n, reps, labels, seen)
                stack.append((remaining, frame))
                remaining = n
                walked += n
                d += 1
        if pos > end:
            raise Corrupt("cut short")
        self.walked += walked
        return reps, pos

    def _ext_at(
        self,
        buf: bytes,
        at: int,
        body: int,
        n: int,
        depth: int,
        reps: list[tuple[int, int, bytes]],
        labels: list[str],
        seen: list[tuple[str, str]],
    ) -> int:
        """The ext value at `at` (its code at `body`, `n` bytes of payload after it): its rewrite
        added to `reps` when its payload holds a renamed module's name; where it ends."""
        stop = body + 1 + n
        if stop > len(buf):
            raise Corrupt("cut short")
        if self._named(buf, body + 1, stop):
            new = self._ext_item(buf, body, stop, depth, labels, seen)
            if new is not None:
                reps.append((at, stop, new))
        return stop

    def _array_at(
        self,
        buf: bytes,
        body: int,
        n: int,
        reps: list[tuple[int, int, bytes]],
        labels: list[str],
        seen: list[tuple[str, str]],
    ) -> tuple[int, int, tuple[int, int, int, int, int]]:
        """An array to remember (its `n` items at `body`): when it begins with the bytes of one
        remembered, that one's rewrite put in `reps` for them. Where the walk goes on, how many
        items are left, and its frame for `_remember` once walked."""
        frame = (body, n, len(reps), len(labels), len(seen))
        for i, (old, new, k, classes, seen_there) in enumerate(self.arrays):
            if k <= n and buf.startswith(old, body):
                if new is not old:
                    reps.append((body, body + len(old), new))
                labels += classes
                seen += seen_there
                if i:
                    self.arrays.insert(0, self.arrays.pop(i))
                return body + len(old), n - k, frame
        return body, n, frame

    def _remember(
        self,
        buf: bytes,
        frame: tuple[int, int, int, int, int],
        stop: int,
        reps: list[tuple[int, int, bytes]],
        labels: list[str],
        seen: list[tuple[str, str]],
    ) -> None:
        """An array walked to its end (`frame`: where its items begin, how many, and how long
        `reps`, `labels` and `seen` were there) remembered, first in `arrays`."""
        if stop > len(buf):  # (its last item cut short: not a whole array)
            raise Corrupt("cut short")
        body, n, r, li, si = frame
        old = buf[body:stop]
        new = _spliced(buf, body, stop, reps[r:]) if len(reps) > r else old
        if len(old) + len(new) <= ARRAY_BYTES:
            self.arrays.insert(0, (old, new, n, labels[li:], seen[si:]))
            del self.arrays[ARRAYS:]

    def _ext_item(
        self, buf: bytes, body: int, end: int, depth: int, labels: list[str], seen: list[tuple[str, str]]
    ) -> bytes | None:
        """The ext value whose code is at `body` (its payload up to `end` holds a renamed module's
        name) rewritten whole, header and all; None: unchanged."""
        code = buf[body]
        if code in CLASS_EXTS:
            fast = self._class_ext(buf, body + 1, end, labels, seen)
            if fast is not _WALK:
                return None if fast is None else _ext(code, fast)  # type: ignore[arg-type]
        payload = buf[body + 1 : end]
        key = (code, payload)
        if key in self.memo:
            new, renamed = self.memo[key]
            labels += renamed
            return None if new is None else _ext(code, new)
        inner: list[str] = []
        new = self._ext_payload(code, payload, depth, inner, seen)
        labels += inner
        if self.memo_bytes + len(payload) <= MEMO_BYTES:
            self.memo[key] = (new, inner)
            self.memo_bytes += len(payload) + len(new or b"")
        return None if new is None else _ext(code, new)

    def _class_ext(
        self, buf: bytes, start: int, end: int, labels: list[str], seen: list[tuple[str, str]]
    ) -> bytes | object | None:
        """The fast path of a class ext's payload `buf[start:end]`, read where it lies (no copy, no
        walk): when nothing after its module and class names holds a renamed module's name, the
        payload with only its names renamed (None: unchanged); else `_WALK` (walk it). The names'
        bytes as stored are looked up first (`heads`): a class met before is not decoded again."""
        b = buf[start]
        if 0x92 <= b <= 0x9F and start + 3 < end:  # (the usual framing: a short array, short strings)
            body = start + 1
            m = buf[body]
            if 0xA0 <= m <= 0xBF:
                mend = body + 1 + (m & 0x1F)
            elif m == 0xD9:
                mend = body + 2 + buf[body + 1]
            else:
                mend = end
            if mend < end:
                c = buf[mend]
                if 0xA0 <= c <= 0xBF:
                    nend = mend + 1 + (c & 0x1F)
                elif c == 0xD9 and mend + 1 < end:
                    nend = mend + 2 + buf[mend + 1]
                else:
                    nend = end + 1
                if nend <= end:
                    found = self.heads.get(buf[body:nend])
                    if found is None:
                        found = self._head_of(buf, body, mend, nend)
                    if found is _UNNAMED:
                        return None
                    return self._class_renamed(buf, start, body, nend, end, found, labels, seen)  # type: ignore[arg-type]
        kind, n, body = _head(buf, start)
        if kind != "array" or n < 2:
            return None
        module, mend = _str_at(buf, body)
        name, nend = _str_at(buf, mend)
        if module is None or name is None or nend > end:
            return None
        return self._class_renamed(buf, start, body, nend, end, self._target(module, name), labels, seen)

    def _head_of(self, buf: bytes, body: int, mend: int, nend: int) -> tuple[Any, ...] | object:
        """`_target` of the names packed in `buf[body:nend]` (the module's ending at `mend`),
        remembered in `heads` (a bounded map: hostile data may name any number of classes);
        `_UNNAMED` when either is not text."""
        try:
            module = buf[body + (1 if buf[body] < 0xD9 else 2) : mend].decode("utf-8")
            name = buf[mend + (1 if buf[mend] < 0xD9 else 2) : nend].decode("utf-8")
        except UnicodeDecodeError:
            found: tuple[Any, ...] | object = _UNNAMED
        else:
            found = self._target(module, name)
        if len(self.heads) >= HEADS:
            self.heads.clear()
        self.heads[buf[body:nend]] = found
        return found

    def _target(self, module: str, name: str) -> tuple[Any, ...]:
        """((module, name), where it goes or None, its label in `Counts.classes`, its new names packed)."""
        target = self.class_target(module, name)
        if target is None:
            return ((module, name), None, "", b"")
        label = f"{module}.{name} -> {target[0]}.{target[1]}"
        return ((module, name), target, label, pack_str(target[0]) + pack_str(target[1]))

    def _class_renamed(
        self,
        buf: bytes,
        start: int,
        body: int,
        nend: int,
        end: int,
        found: tuple[Any, ...],
        labels: list[str],
        seen: list[tuple[str, str]],
    ) -> bytes | object | None:
        if self._named(buf, nend, end):
            return _WALK
        pair, target, label, packed = found
        seen.append(pair)
        if target is None:
            return None
        labels.append(label)
        self.renamed_to.add(target)
        return buf[start:body] + packed + buf[nend:end]

    def _ext_payload(
        self, code: int, payload: bytes, depth: int, labels: list[str], seen: list[tuple[str, str]]
    ) -> bytes | None:
        if code == EXT_DELTA_SNAPSHOT:
            reps, end = self._renames(payload, 0, 1, depth + 1, labels, seen)
            return _spliced(payload, 0, end, reps) if reps else None
        if code not in CLASS_EXTS:
            return None
        kind, n, body = _head(payload, 0)
        if kind != "array" or n < 2:
            return None
        module, mend = _str_at(payload, body)
        name, nend = _str_at(payload, mend)
        if module is None or name is None:
            return None
        seen.append((module, name))
        target = self.class_target(module, name)
        reps, end = self._renames(payload, nend, n - 2, depth + 1, labels, seen)
        if target is None and not reps:
            return None
        head = payload[body:nend]
        if target is not None:
            labels.append(f"{module}.{name} -> {target[0]}.{target[1]}")
            self.renamed_to.add(target)
            head = pack_str(target[0]) + pack_str(target[1])
        return payload[:body] + head + _spliced(payload, nend, end, reps)

    def typed(self, type_: str | None, data: bytes | None, counts: Counts, channel: str | None = None) -> bytes | None:
        """A stored (type, bytes) value rewritten, or None when unchanged. `channel`: the channel
        it is the value of (or a write to): `__start__`'s input and the Sends `__pregel_tasks`
        holds are maps of state keys, renamed too."""
        if data is None:
            return None
        if type_ == "msgpack":
            if channel == START:
                return self._input(data, counts)
            new = self.value(data, counts)
            if channel == TASKS:
                sent = self.sends(data if new is None else new)
                new = new if sent is None else sent
            return new
        if type_ == "json":
            return self.json_value(data, counts, channel)
        if type_ == "pickle":
            return self.pickle(data, counts)
        return None

    # -- Sends
    def sends(self, data: bytes) -> bytes | None:
        """A msgpack value holding `Send`s (a write to `__pregel_tasks`, that channel's list, an old
        checkpoint's `pending_sends`) with the state keys of each Send's argument renamed and
        dropped (the argument is the state the node gets); None when unchanged."""
        if not (self.keys or self.drop) or b"\xa4Send" not in data:
            return None
        try:
            return self._send_walk(data, 0, 0)[0]
        except Corrupt:
            return None

    def _send_walk(self, buf: bytes, at: int, depth: int) -> tuple[bytes | None, int]:
        if depth > MAX_DEPTH:
            raise Corrupt("nested too deep")
        kind, n, body = _head(buf, at)
        if kind == "array":
            parts: list[bytes] = []
            changed, pos = False, body
            for _ in range(n):
                new, nxt = self._send_walk(buf, pos, depth + 1)
                parts.append(buf[pos:nxt] if new is None else new)
                changed |= new is not None
                pos = nxt
            return (buf[at:body] + b"".join(parts) if changed else None), pos
        if kind != "ext":
            return None, skip(buf, at)
        end = body + 1 + n
        if end > len(buf):
            raise Corrupt("cut short")
        code = buf[body]
        payload = buf[body + 1 : end]
        if code == EXT_DELTA_SNAPSHOT:
            new = self._send_walk(payload, 0, depth + 1)[0]
        elif code == EXT_CONSTRUCTOR_POS_ARGS:
            new = self._send(payload)
        else:
            new = None
        return (None if new is None else _ext(code, new)), end

    def _send(self, payload: bytes) -> bytes | None:
        """`[module, name, [node, arg, ...]]`: a Send's arg (a map) with its keys renamed."""
        kind, n, body = _head(payload, 0)
        if kind != "array" or n < 3:
            return None
        module, mend = _str_at(payload, body)
        name, nend = _str_at(payload, mend)
        if (module, name) != SEND:
            return None
        kind, n, args = _head(payload, nend)
        if kind != "array" or n < 2:
            return None
        arg = skip(payload, args)
        end = skip(payload, arg)
        if _head(payload, arg)[0] != "map":
            return None
        entries, _ = items(payload[arg:end])
        if not self._keyed_map(entries, None):
            return None
        return payload[:arg] + pack_map([(k, v) for k, _, v in entries]) + payload[end:]

    # -- JSON-typed values (LangChain's `lc` constructors)
    def json_value(self, data: bytes, counts: Counts, channel: str | None = None) -> bytes | None:
        """A `json`-typed value (langgraph-checkpoint before 2.0) with the classes its LangChain
        `lc` constructor ids name renamed, and the state keys of the graph input (`__start__`)
        and of a Send's argument (`__pregel_tasks`); None when unchanged."""
        if not self.classes and not (channel in (START, TASKS) and (self.keys or self.drop)):
            return None
        try:
            value = json.loads(data)
            new, changed = self._json_walk(value, counts, 0, keyed=channel == START, tasks=channel == TASKS)
        except (ValueError, RecursionError, Corrupt):
            counts.unreadable += 1
            return None
        return json.dumps(new).encode() if changed else None

    def _json_walk(self, obj: Any, counts: Counts, depth: int, *, keyed: bool = False, tasks: bool = False) -> Any:
        """(obj rewritten, whether it changed): `keyed`, a map of state keys; `tasks`, Sends."""
        if depth > MAX_DEPTH:
            raise Corrupt("nested too deep")
        if isinstance(obj, list):
            walked = [self._json_walk(v, counts, depth + 1, tasks=tasks) for v in obj]
            return [v for v, _ in walked], any(c for _, c in walked)
        if not isinstance(obj, dict):
            return obj, False
        changed = False
        if keyed:
            obj, changed = self._json_keyed(obj)
        ids = obj.get("id")
        if (
            obj.get("type") == "constructor"
            and isinstance(ids, list)
            and len(ids) > 1
            and all(isinstance(i, str) for i in ids)
        ):
            module, name = ".".join(ids[:-1]), ids[-1]
            self.seen_classes[(module, name)] += 1
            target = self.class_target(module, name) if self.classes else None
            if target is not None:
                counts.classes[f"{module}.{name} -> {target[0]}.{target[1]}"] += 1
                self.renamed_to.add(target)
                obj, changed = {**obj, "id": [*target[0].split("."), target[1]]}, True
            kwargs = obj.get("kwargs")
            if tasks and name == "Send" and isinstance(kwargs, dict) and isinstance(kwargs.get("arg"), dict):
                arg, hit = self._json_keyed(kwargs["arg"])
                if hit:
                    obj, changed = {**obj, "kwargs": {**kwargs, "arg": arg}}, True
        out = {}
        for k, v in obj.items():
            out[k], hit = self._json_walk(v, counts, depth + 1)
            changed |= hit
        return out, changed

    def _json_keyed(self, d: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """A JSON map of state keys renamed and dropped; whether any was."""
        out: dict[str, Any] = {}
        changed = False
        for k, v in d.items():
            self.seen_keys.add(k)
            to = self._key(k)
            if to is DROP:
                changed = True
                continue
            if isinstance(to, str):
                if to in d and to not in self.keys and to not in self.drop:
                    raise StatectlError(f"--rename-key to {to!r}: the threads already have a key {to!r}")
                k, changed = to, True
            out[k] = v
        return out, changed

    def json_checkpoint(self, data: bytes, counts: Counts) -> bytes | None:
        """A whole `json`-typed checkpoint (langgraph-checkpoint before 2.0): its keys renamed as a
        Postgres checkpoint's, its values' classes, its input and its Sends as `json_value`'s."""
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            counts.unreadable += 1
            return None
        if not isinstance(doc, dict):
            return None
        self.hits = set(doc.get("channel_versions") or {})
        done = self.pg_checkpoint(doc, [], counts)
        cp = doc if done is None else done[0]
        changed = done is not None
        try:
            if isinstance(cp.get("channel_values"), dict):
                values = {}
                for k, v in cp["channel_values"].items():
                    values[k], hit = self._json_walk(v, counts, 0, keyed=k == START, tasks=k == TASKS)
                    changed |= hit
                cp = {**cp, "channel_values": values}
            if isinstance(cp.get("pending_sends"), list):
                sends, hit = self._json_walk(cp["pending_sends"], counts, 0, tasks=True)
                changed |= hit
                cp = {**cp, "pending_sends": sends}
        except (RecursionError, Corrupt):
            counts.unreadable += 1
            return None
        return json.dumps(cp).encode() if changed else None

    # -- metadata
    def metadata(self, md: object) -> dict[str, Any] | None:
        """Checkpoint metadata with the state keys of its `writes` renamed and dropped (LangGraph
        before 0.6 kept what each node returned there: `{node: {key: value}}`, a list of them for
        a node run by several Sends; an input checkpoint's `{"__start__": {...}}`, or with
        langgraph 0.2.0 the input itself); None when unchanged."""
        if not (self.keys or self.drop) or not isinstance(md, dict) or not isinstance(md.get("writes"), dict):
            return None
        writes = md["writes"]
        if md.get("source") == "input" and START not in writes:
            new, changed = self._json_keyed(writes)
        else:
            new, changed = {}, False
            for node, value in writes.items():
                if isinstance(value, dict):
                    value, hit = self._json_keyed(value)
                    changed |= hit
                elif isinstance(value, list):
                    done = [self._json_keyed(v) if isinstance(v, dict) else (v, False) for v in value]
                    value = [v for v, _ in done]
                    changed |= any(hit for _, hit in done)
                new[node] = value
        return {**md, "writes": new} if changed else None

    def pickle(self, data: bytes, counts: Counts) -> bytes | None:
        """A pickle with the classes it names renamed, read by its opcodes (`pickletools`, which
        runs nothing); None when unchanged. `pickled` counts the ones that name a renamed class
        and cannot be rewritten (a module name shared by classes renamed apart)."""
        if not self.classes or not self._named(data, 0, len(data)):
            return None
        inner = Counts()
        try:
            new = _repickled(data, self, inner)
        except (ValueError, EOFError, Corrupt):
            counts.pickled += 1
            return None
        counts.classes.update(inner.classes)
        return new

    # -- keys
    def _key(self, key: str | None) -> str | object | None:
        """A state key renamed (its new name), dropped (DROP), or None: unchanged."""
        if key is None:
            return None
        if key in self.drop:
            return DROP
        return self.keys.get(key)

    def _keyed_map(self, entries: list[tuple[bytes, str | None, bytes]], counts: Counts | None) -> bool:
        """`entries` (a map keyed by state keys) renamed and dropped in place; whether any was."""
        if not (self.keys or self.drop):
            return False
        changed = False
        for i in range(len(entries) - 1, -1, -1):
            _kb, key, vb = entries[i]
            if key is not None:
                self.seen_keys.add(key)
            to = self._key(key)
            if to is None:
                continue
            changed = True
            if to is DROP:
                del entries[i]
            else:
                assert isinstance(to, str)
                entries[i] = (pack_str(to), to, vb)
        names = [k for _, k, _ in entries]
        if len(set(names)) != len(names):
            dup = next(k for k in names if names.count(k) > 1)
            raise StatectlError(f"--rename-key to {dup!r}: the threads already have a key {dup!r}")
        return changed

    def _input(self, data: bytes, counts: Counts) -> bytes | None:
        """The graph input (`__start__`'s value, or a write to it): a map of state keys."""
        try:
            kind, _, _ = _head(data, 0)
            if kind != "map":
                return self.value(data, counts)
            entries, _ = items(data)
        except Corrupt:
            counts.unreadable += 1
            return None
        changed = self._keyed_map(entries, counts)
        out = []
        for kb, _key, vb in entries:
            new = self.value(vb, counts)
            changed |= new is not None
            out.append((kb, vb if new is None else new))
        return pack_map(out) if changed else None

    def _top(self, data: bytes) -> list[tuple[bytes, str | None, bytes, Any]]:
        """A SQLite checkpoint's entries, the two maps of state keys (`channel_values`,
        `channel_versions`) parsed as the checkpoint is walked: each byte walked once."""
        remember = not self.classes  # (a key renamed: the arrays it walks are left as they are)
        kind, n, pos = _head(data, 0)
        if kind != "map":
            raise Corrupt("not a map")
        top = []
        for _ in range(n):
            key, kend = _str_at(data, pos)
            parsed: Any = None
            if key in ("channel_values", "channel_versions"):
                parsed, vend = items(data, kend, self.arrays, remember)
            else:
                vend = skip(data, kend, self.arrays)
            top.append((data[pos:kend], key, data[kend:vend], parsed))
            pos = vend
        return top

    def sqlite_checkpoint(self, data: bytes, counts: Counts) -> bytes | None:
        """A whole SQLite checkpoint (msgpack) migrated; None when unchanged."""
        if not (self.keys or self.drop):
            return self._classes_checkpoint(data, counts)
        try:
            top = self._top(data)
        except Corrupt:
            counts.unreadable += 1
            return None
        changed = False
        out: list[tuple[bytes, bytes]] = []
        for kb, key, vb, parsed in top:
            new: bytes | None = None
            try:
                if parsed is not None:
                    entries = parsed
                    if key == "channel_versions":
                        self.hits = {k for _, k, _ in entries if k is not None}
                    hit = self._keyed_map(entries, counts)
                    rows = []
                    for ekb, ekey, evb in entries:
                        ev = self.typed("msgpack", evb, counts, ekey) if key == "channel_values" else None
                        hit |= ev is not None
                        rows.append((ekb, evb if ev is None else ev))
                    new = pack_map(rows) if hit else None
                elif key == "versions_seen":
                    nodes, _ = items(vb)
                    hit = False
                    rows = []
                    for nkb, _nkey, nvb in nodes:
                        entries, _ = items(nvb)
                        if self._keyed_map(entries, counts):
                            hit = True
                            nvb = pack_map([(a, c) for a, _, c in entries])
                        rows.append((nkb, nvb))
                    new = pack_map(rows) if hit else None
                elif key == "updated_channels":
                    new = self._names_array(vb)
                elif key == "pending_sends":  # (before checkpoint format 4)
                    new = self.typed("msgpack", vb, counts, TASKS)
                else:
                    new = self.value(vb, counts)
            except Corrupt:
                counts.unreadable += 1
                new = None
            changed |= new is not None
            out.append((kb, vb if new is None else new))
        if not changed:
            return None
        return pack_map(out)

    def _classes_checkpoint(self, data: bytes, counts: Counts) -> bytes | None:
        """`sqlite_checkpoint` when only classes are renamed: no map of state keys parsed, only
        the values that hold a renamed module's name walked (`channel_values`' one by one, the
        graph input and Sends among them), the rest framed by `skip` alone (a malformed
        checkpoint is left as stored, as `sqlite_checkpoint` leaves it)."""
        try:
            kind, n, pos = _head(data, 0)
            if kind != "map":
                raise Corrupt("not a map")
            top: list[tuple[int, str | None, int, int, list[tuple[int, str | None, int, int]] | None]] = []
            for _ in range(n):
                key, kend = _str_at(data, pos)
                if key == "channel_values" or key == "channel_versions":
                    kind, count, vpos = _head(data, kend)
                    if kind != "map":
                        raise Corrupt("not a map")
                    if key == "channel_values":
                        entries = []
                        for _ in range(count):
                            ekey, ekend = _str_at(data, vpos)
                            evend = skip(data, ekend, self.arrays)
                            entries.append((vpos, ekey, ekend, evend))
                            vpos = evend
                        top.append((pos, key, kend, vpos, entries))
                        pos = vpos
                        continue
                vend = skip(data, kend, self.arrays)
                top.append((pos, key, kend, vend, None))
                pos = vend
        except Corrupt:
            counts.unreadable += 1
            return None
        changed = False
        out: list[tuple[bytes, bytes]] = []
        for at, key, kend, vend, parsed in top:
            new: bytes | None = None
            if parsed is not None:
                rows, hit = [], False
                for eat, ekey, ekend, evend in parsed:
                    ev = None
                    if self._named(data, ekend, evend):
                        ev = self.typed("msgpack", data[ekend:evend], counts, ekey)  # (Corrupt: caught within)
                        hit |= ev is not None
                    rows.append((data[eat:ekend], data[ekend:evend] if ev is None else ev))
                new = pack_map(rows) if hit else None
            elif key == "versions_seen":
                if not self._maps_of_maps(data, kend):
                    counts.unreadable += 1
            elif key != "channel_versions" and key != "updated_channels" and self._named(data, kend, vend):
                new = self.typed("msgpack", data[kend:vend], counts, TASKS if key == "pending_sends" else None)
            changed |= new is not None
            out.append((data[at:kend], data[kend:vend] if new is None else new))
        return pack_map(out) if changed else None

    @staticmethod
    def _maps_of_maps(buf: bytes, at: int) -> bool:
        """Whether the item at `at` (framed already) is a map whose every value is a map."""
        kind, n, pos = _head(buf, at)
        if kind != "map":
            return False
        for _ in range(n):
            pos = skip(buf, pos)
            if _head(buf, pos)[0] != "map":
                return False
            pos = skip(buf, pos)
        return True

    def _names_array(self, vb: bytes) -> bytes | None:
        kind, n, body = _head(vb, 0)
        if kind != "array":
            return None
        names: list[bytes] = []
        changed = False
        pos = body
        for _ in range(n):
            name, nxt = _str_at(vb, pos)
            if name is not None:
                self.seen_keys.add(name)
            to = self._key(name)
            if to is DROP:
                changed = True
            elif isinstance(to, str):
                changed = True
                names.append(pack_str(to))
            else:
                names.append(vb[pos:nxt])
            pos = nxt
        return _container("array", len(names)) + b"".join(names) if changed else None

    def _names(self, names: list[Any]) -> list[Any]:
        """A list of channel names renamed, the dropped ones left out."""
        out = []
        for k in names:
            to = self._key(k) if isinstance(k, str) else None
            if to is not DROP:
                out.append(to if isinstance(to, str) else k)
        return out

    def pg_checkpoint(
        self, checkpoint: dict[str, Any], blobs: list[list[Any]], counts: Counts
    ) -> tuple[dict[str, Any], list[list[Any]]] | None:
        """Postgres' JSONB checkpoint and its blobs `[channel, version, type, bytes]` migrated;
        None when unchanged."""
        changed = False

        def keyed(d: Any) -> Any:
            nonlocal changed
            if not isinstance(d, dict):
                return d
            out, hit = self._json_keyed(d)
            changed |= hit
            return out

        cp = dict(checkpoint)
        for name in ("channel_values", "channel_versions"):
            if name in cp:
                cp[name] = keyed(cp[name])
        if isinstance(cp.get("versions_seen"), dict):
            cp["versions_seen"] = {n: keyed(seen) for n, seen in cp["versions_seen"].items()}
        if isinstance(cp.get("updated_channels"), list):
            names = self._names(cp["updated_channels"])
            changed |= names != cp["updated_channels"]
            cp["updated_channels"] = names
        out_blobs = []
        for channel, version, type_, data in blobs:
            self.seen_keys.add(channel)
            done = self.blob(channel, type_, data, counts)
            if done is DROP:
                changed = True
                continue
            if done is not None:
                assert isinstance(done, tuple)
                changed = True
                channel, data = done
            out_blobs.append([channel, version, type_, data])
        return (cp, out_blobs) if changed else None

    def blob(self, channel: str, type_: str | None, data: bytes | None, counts: Counts) -> Any:
        """A Postgres blob (one channel's value at one version) migrated: (channel, bytes), DROP,
        or None when unchanged."""
        to = self._key(channel)
        if to is DROP:
            return DROP
        new_channel = to if isinstance(to, str) else channel
        new = self.typed(type_, data, counts, channel)
        if new is None and new_channel == channel:
            return None
        return new_channel, data if new is None else new

    def write(
        self, channel: str, type_: str | None, data: bytes | None, counts: Counts
    ) -> tuple[str, bytes | None] | object | None:
        """A pending write migrated: (channel, bytes), DROP, or None when unchanged."""
        self.seen_keys.add(channel)
        to = self._key(channel)
        if to is DROP:
            counts.dropped_writes += 1
            counts.keys[f"-{channel}"] += 1
            return DROP
        new_channel = to if isinstance(to, str) else channel
        if new_channel != channel:
            counts.keys[f"{channel} -> {new_channel}"] += 1
        new = self.typed(type_, data, counts, channel)
        if new is None and new_channel == channel:
            return None
        counts.writes += 1
        return new_channel, data if new is None else new

    def checkpoint_row(self, type_: str | None, data: bytes | None, counts: Counts) -> bytes | None:
        """A checkpoint as statectl's sources give it raw (SQLite's msgpack, or Postgres' JSONB and
        blobs as `PG_TYPE` JSON) migrated, in the same form; None when unchanged."""
        from statectl.codec.formats import PG_TYPE

        if data is None:
            return None
        if type_ == "msgpack":
            self.hits = set()
            new = self.sqlite_checkpoint(data, counts)
            hits = self.hits
        elif type_ == PG_TYPE:
            doc = json.loads(data)
            blobs = [[c, v, t, None if b is None else base64.b64decode(b)] for c, v, t, b in doc["blobs"]]
            done = self.pg_checkpoint(doc["checkpoint"], blobs, counts)
            hits = set(doc["checkpoint"].get("channel_versions") or {}) | {c for c, *_ in doc["blobs"]}
            if done is None:
                new = None
            else:
                cp, out = done
                packed = [[c, v, t, None if b is None else base64.b64encode(b).decode()] for c, v, t, b in out]
                new = json.dumps({"checkpoint": cp, "blobs": packed}).encode()
        elif type_ == "json":  # (a whole checkpoint, langgraph-checkpoint before 2.0)
            new = self.json_checkpoint(data, counts)
            hits = self.hits
        elif type_ == "pickle":  # (a whole SQLite checkpoint, pickled by `pickle_fallback`)
            if self.keys or self.drop:
                raise StatectlError(
                    "a checkpoint of these threads is pickled (pickle_fallback): its keys cannot be renamed",
                    "--rename-class renames the classes its pickle names",
                )
            new = self.pickle(data, counts)
            if new is not None:
                counts.checkpoints += 1
            return new
        else:
            return None
        for key in hits:
            to = self._key(key)
            if to is DROP:
                counts.keys[f"-{key}"] += 1
            elif isinstance(to, str):
                counts.keys[f"{key} -> {to}"] += 1
        if new is not None:
            counts.checkpoints += 1
        return new

    hits: set[str] = set()
    """The keys of the last SQLite checkpoint's `channel_versions` (what a key rename counts)."""


_STR_OPS = frozenset({"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "SHORT_BINSTRING", "BINSTRING"})
_GET_OPS = frozenset({"BINGET", "LONG_BINGET", "GET"})
_PUT_OPS = frozenset({"BINPUT", "LONG_BINPUT", "PUT"})


def _pickle_str(text: str) -> bytes:
    data = text.encode("utf-8")
    if len(data) < 256:
        return b"\x8c" + bytes([len(data)]) + data  # SHORT_BINUNICODE
    return b"X" + struct.pack("<I", len(data)) + data  # BINUNICODE


def _stack_global(
    migration: Migration,
    counts: Counts,
    at: tuple[int, int],
    strings: dict[int, str],
    required: dict[int, str],
    replace: dict[int, bytes],
) -> bool:
    """A STACK_GLOBAL of the strings pushed by ops `at` (module, name): the new strings noted in
    `replace` when renamed; whether it was. A string op shared (through the memo) by a class
    renamed and one that is not, or renamed apart, raises ValueError."""
    mi, ni = at
    if mi < 0 or ni < 0:
        raise ValueError("a STACK_GLOBAL of strings not found")
    module, cls = strings[mi], strings[ni]
    migration.seen_classes[(module, cls)] += 1
    target = migration.class_target(module, cls)
    for i, text in zip(at, target or (module, cls), strict=True):
        if required.setdefault(i, text) != text:
            raise ValueError("a string shared by classes renamed apart")
        if text != strings[i]:
            replace[i] = _pickle_str(text)
    if target is None:
        return False
    counts.classes[f"{module}.{cls} -> {target[0]}.{target[1]}"] += 1
    migration.renamed_to.add(target)
    return True


def _repickled(data: bytes, migration: Migration, counts: Counts) -> bytes | None:
    """The pickle's GLOBAL and STACK_GLOBAL class names renamed: the module and name strings a
    STACK_GLOBAL takes (pushed, or fetched from the memo) replaced, FRAME opcodes left out (their
    lengths would change; framing is optional). Raises ValueError when a string is shared by
    classes renamed apart."""
    import pickletools

    ops = list(pickletools.genops(data))
    ends = [pos for _, _, pos in ops[1:]] + [len(data)]
    memo: dict[Any, int] = {}
    replace: dict[int, bytes] = {}
    required: dict[int, str] = {}  # (what each string a class name is made of must read)
    strings: dict[int, str] = {}
    pushes: list[int | None] = []  # (the op that pushed each recent item: a string op, or None)
    changed = False
    for i, (op, arg, _pos) in enumerate(ops):
        name = op.name
        if name in _STR_OPS:
            strings[i] = arg if isinstance(arg, str) else str(arg)
            pushes.append(i)
        elif name == "MEMOIZE" or name in _PUT_OPS:
            if pushes:
                memo[len(memo) if name == "MEMOIZE" else arg] = -1 if pushes[-1] is None else pushes[-1]
        elif name in _GET_OPS:
            pushes.append(memo.get(arg))
        elif name == "STACK_GLOBAL":
            if len(pushes) < 2 or pushes[-2] is None or pushes[-1] is None:
                raise ValueError("a STACK_GLOBAL of strings not found")
            mi, ni = pushes[-2], pushes[-1]
            pushes[-2:] = [None]
            changed |= _stack_global(migration, counts, (mi, ni), strings, required, replace)
        elif name in ("GLOBAL", "INST"):
            pushes.append(None)
            module, _, cls = str(arg).partition(" ")
            target = migration.class_target(module, cls)
            migration.seen_classes[(module, cls)] += 1
            if target is not None:  # (the opcode, then "module\nname\n")
                replace[i] = bytes([data[_pos or 0]]) + f"{target[0]}\n{target[1]}\n".encode()
                counts.classes[f"{module}.{cls} -> {target[0]}.{target[1]}"] += 1
                migration.renamed_to.add(target)
                changed = True
        elif name not in ("FRAME", "PROTO"):
            pushes.append(None)  # (what it pushes or pops is not a string the renames need)
    if not changed:
        return None
    out = []
    for i, (op, _arg, pos) in enumerate(ops):
        if op.name == "FRAME":
            continue
        out.append(replace.get(i, data[pos : ends[i]]))
    return b"".join(out)


def close_names(name: str, names: set[str]) -> str:
    import difflib

    near = difflib.get_close_matches(name, sorted(names), n=3)
    return f" (did you mean {', '.join(near)}?)" if near else ""
