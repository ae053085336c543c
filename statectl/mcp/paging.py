"""Tool results sized for a model's context: JSON text within a character budget, with a cursor to
page on and a note of what was left out.

Three shapes: a list is paged by items (`page_items`), a long text by characters (`page_text`),
any other value is shrunk (`shrink`: long texts and lists cut, each cut named by the JSON pointer
that reads it whole). Nothing is ever cut silently: every result that is not whole says so in
`left_out`, with the `pointer` and `cursor` to ask for the rest. Every result leaves through
`sent`, which measures its JSON text as it is sent (escapes counted) and bounds what the tools did
not; cursors are opaque (an offset, or the thread to page on after, by its id or its hash).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from typing import Any

import orjson

from statectl.codec.jsonout import json_bytes
from statectl.errors import StatectlError

LIMIT = 20_000
"""Characters per tool result by default (`statectl mcp --max-chars`)."""

_ESCAPES = {
    c: f"\\u{c:04x}"
    for c in [*range(0x7F, 0xA0), 0x61C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
}
"""Characters JSON leaves raw that a terminal or an editor acts on (DEL, the C1 controls with CSI
and OSC, the bidirectional overrides): written as \\u escapes, so the text holds no control
character and still reads back to the exact value."""
_UNSAFE = [chr(c) for c in _ESCAPES]
_UNSAFE_RX = re.compile(f"[{''.join(_UNSAFE)}]")


def dumps(value: Any) -> str:
    """JSON text with no raw control character (JSON itself escapes those below 0x20): the text
    a tool sends."""
    return json_bytes(value).decode().translate(_ESCAPES)


def size(value: Any) -> int:
    """The characters `value` takes as it is sent: its JSON text, every escape counted (a control
    character is six: `\\u001b`; a non-ASCII letter one, the SDK sends UTF-8)."""
    text = json_bytes(value).decode()
    if text.isascii():
        unsafe = text.count("\x7f")
    else:  # (one regex pass where there is none, else str.count: both in C)
        unsafe = sum(map(text.count, _UNSAFE)) if _UNSAFE_RX.search(text) else 0
    return len(text) + 5 * unsafe


def sent(value: dict[str, Any], limit: int) -> str:
    """A tool's result as sent: its JSON text, within `limit` characters whatever it holds. The one
    bound every result passes (the tools page and shorten what they know is long; a part they do
    not, such as a 100,000-character thread id in a heading, is shortened here, its cut named).
    `next_cursor` is kept whole."""
    text = dumps(value)
    if len(text) <= limit:
        return text
    keep = {k: value[k] for k in ("next_cursor",) if k in value}
    rest = {k: v for k, v in value.items() if k not in keep}
    for note in (600, 1200, 1800):  # (room for the note of what was cut)
        small, cuts = shrink(rest, limit - size(keep) - note)
        if isinstance(small, dict):
            said = small.get("left_out")
            notes = [said if isinstance(said, str) else None, cut_note(cuts) if cuts else None]
            small = {**small, **keep, "left_out": "; ".join(n for n in notes if n) or None}
        else:
            small = {"result": small, **keep, "left_out": cut_note(cuts)}
        text = dumps(small)
        if len(text) <= limit:
            return text
    return dumps({"left_out": f"a result too large to show in {limit} characters"})


def cut(text: str, most: int) -> str:
    """`text` at most `most` characters long (an argument or a key echoed in a message)."""
    return text if len(text) <= most else f"{text[: max(most - 24, 1)]}…[{len(text)} characters]"


def cursor_of(offset: int) -> str:
    return _encode({"o": offset})


def _encode(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(data)).decode().rstrip("=")


def _decode(cursor: str, key: str) -> Any:
    """The `key` part of a cursor made here; any other text is a bad argument (never echoed whole)."""
    try:
        return orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))[key]
    except (ValueError, TypeError, KeyError):
        raise StatectlError(f"cursor {cut(cursor, 60)!r} is not one this server gave") from None


def offset_of(cursor: str | None) -> int:
    """The offset a cursor names (0 without one); a cursor not made here is a bad argument."""
    if not cursor:
        return 0
    offset = _decode(cursor, "o")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise StatectlError(f"cursor {cut(cursor, 60)!r} is not one this server gave")
    return offset


ID_IN_CURSOR = 64
"""The longest thread id a cursor holds as it is; a longer one, or one with a secret in it, is
named by its hash (base64 is no redaction)."""


def cursor_after(thread_id: str, shown: str) -> str:
    """The cursor that pages on after thread `thread_id` (its real id: the one `shown` may be
    shortened or redacted). Opaque to the agent; `after_of` reads it back."""
    if thread_id == shown and len(thread_id) <= ID_IN_CURSOR:
        return _encode({"a": thread_id})
    return _encode({"h": _hash(thread_id)})


def after_of(cursor: str | None, ids: Callable[[], Iterable[str]]) -> str | None:
    """The thread id a `cursor_after` cursor pages after (None without a cursor); a hashed one is
    found among `ids()` (read only then: a hostile id's page costs a pass over the ids)."""
    if not cursor:
        return None
    try:
        data = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("a"), str) and len(data) == 1:
        return str(data["a"])
    digest = data.get("h") if isinstance(data, dict) and len(data) == 1 else None
    if not isinstance(digest, str) or not re.fullmatch("[0-9a-f]{32}", digest):
        raise StatectlError(f"cursor {cut(cursor, 60)!r} is not one this server gave")
    for tid in ids():
        if _hash(tid) == digest:
            return tid
    raise StatectlError("the thread this cursor pages after is gone: list again without a cursor")


def _hash(thread_id: str) -> str:
    import hashlib

    return hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def page_items(
    items: Sequence[Any],
    cursor: str | None,
    limit: int,
    noun: str,
    shape: Callable[[list[Any]], dict[str, Any]],
    at: str = "",
) -> dict[str, Any]:
    """`shape(page)` for the items from the cursor on that fit in `limit` characters (at least one,
    shrunk if it alone is larger), with `next_cursor` and a `left_out` note when more follow."""
    start = offset_of(cursor)
    if start > len(items):
        raise StatectlError(f"cursor past the end ({len(items)} {noun})")
    budget = limit - size(shape([])) - 300  # (the envelope and the note)
    page: list[Any] = []
    used = 0
    cuts: list[str] = []
    for item in items[start:]:
        n = size(item) + 1
        if page and used + n > budget:
            break
        if not page and n > budget:
            item, cuts = shrink(item, budget, f"{at}/{start}")
            n = size(item)
        page.append(item)
        used += n
    out = shape(page)
    end = start + len(page)
    out["next_cursor"] = cursor_of(end) if end < len(items) else None
    notes = []
    if end < len(items):
        notes.append(f"{len(items) - end} more {noun} after these {len(page)} (from {start}): call again with cursor")
    if cuts:
        notes.append(cut_note(cuts))
    out["left_out"] = "; ".join(notes) or None
    return out


def page_text(text: str, cursor: str | None, limit: int) -> dict[str, Any]:
    """A long text by characters, cut at a line end where one is near."""
    start = offset_of(cursor)
    if start > len(text):
        raise StatectlError(f"cursor past the end ({len(text)} characters)")
    end = start + max(len(prefix(text[start : start + limit], limit - 400)), 1)
    if end < len(text):
        nl = text.rfind("\n", start, end)
        if nl > start + (end - start) // 2:
            end = nl + 1
    more = end < len(text)
    return {
        "text": text[start:end],
        "next_cursor": cursor_of(end) if more else None,
        "left_out": f"characters {end}..{len(text)} of {len(text)}: call again with cursor" if more else None,
    }


def shrink(value: Any, limit: int, at: str = "") -> tuple[Any, list[str]]:
    """The value within `limit` characters: small parts kept whole (ids, next, step), the large ones
    cut to a fair share of what is left: a text to its beginning, a list to its newest items (the
    end: the newest messages). Each cut is marked in place and listed as a JSON pointer."""
    if size(value) <= limit:
        return value, []
    budget = limit
    for _ in range(6):  # (a marker can outgrow its share: fit again in what is left)
        cuts: list[str] = []
        small = _fit(value, budget, at, cuts, 0)
        if (over := size(small) - limit) <= 0:
            return small, cuts
        budget -= over + 100
    if size(small) > limit:  # (only where markers outgrow a tiny budget)
        return f"[too large to show in {limit} characters: read parts of it by pointer {_pointer(at)}]", [at or "/"]
    return small, cuts


def prefix(text: str, room: int) -> str:
    """The longest beginning of `text` that takes at most `room` characters as sent (a newline
    takes two, a control character six)."""
    hi = min(len(text), max(room, 0))
    if size(text[:hi]) - 2 <= room:
        return text[:hi]
    lo = 0
    while lo < hi:  # (by halves: each character takes one to six)
        mid = (lo + hi + 1) // 2
        if size(text[:mid]) - 2 <= room:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def _marker(what: str, at: str) -> str:
    return f"[{what}: pointer {_pointer(at)}]"


def _pointer(at: str) -> str:
    """A pointer as a note shows it: a key of thousands of characters makes no pointer to read."""
    return repr(cut(at or "/", 120))


def _fit(value: Any, budget: int, at: str, cuts: list[str], depth: int) -> Any:
    if size(value) <= budget:
        return value
    if isinstance(value, str):
        cuts.append(at)
        tail = _marker(f"{len(value)} characters in all", at)
        room = budget - size(tail) - 8
        if room <= 20:
            return tail
        return prefix(value, room - 2) + "…" + tail
    if budget < 80 or depth > 40 or not isinstance(value, (dict, list)):
        cuts.append(at)
        return _marker(f"a {type(value).__name__} of {size(value)} characters", at)
    if isinstance(value, dict):
        return _fit_dict(value, budget, at, cuts, depth)
    head = _marker(f"{len(value)} items, the earliest {len(value)} left out", at)  # (its longest form)
    left = budget - 2 - size(head)
    kept: list[Any] = []
    for i in range(len(value) - 1, -1, -1):  # the newest first
        n = size(value[i]) + 1
        if n <= left:
            kept.append(value[i])
            left -= n
        else:  # the next newest, shortened where there is room for it
            if not kept or left > 200:
                kept.append(_fit(value[i], left - 1, f"{at}/{i}", cuts, depth + 1))
            break
    kept.reverse()
    if len(kept) < len(value):
        cuts.append(at)
        return [_marker(f"{len(value)} items, the earliest {len(value) - len(kept)} left out", at), *kept]
    return kept


def _fit_dict(value: dict, budget: int, at: str, cuts: list[str], depth: int) -> dict:
    """A mapping within `budget`: its keys (a key of thousands of characters shortened, and where
    the keys alone take half the budget, the later ones left out and counted), each value within
    a fair share of what is left, the smallest first."""
    names: dict[Any, Any] = {}
    room = budget // 2
    for i, k in enumerate(value):
        name = cut(k, 120) if isinstance(k, str) and len(k) > 120 else k
        if name != k:  # (two long keys alike: each its own name)
            name = f"{name} #{i}"
            cuts.append(f"{at}/{_token(k)}")
        room -= size(str(name)) + 4
        if room < 0:
            break
        names[k] = name
    left = budget - 2 - sum(size(str(n)) + 2 for n in names.values())
    dropped = len(value) - len(names)
    if dropped:
        cuts.append(at)
        note = _marker(f"{dropped} more keys left out", at)
        left -= size(note) + 10
    fitted: dict[Any, Any] = {}
    order = sorted(names, key=lambda k: size(value[k]))
    for i, k in enumerate(order):  # the smallest first, each within a fair share of what is left
        share = max(left // (len(order) - i), 0)
        fitted[k] = _fit(value[k], share, f"{at}/{_token(k)}", cuts, depth + 1)
        left -= size(fitted[k])
    out = {names[k]: fitted[k] for k in names}
    if dropped:
        out["…"] = note
    return out


def _token(key: Any) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def cut_note(cuts: list[str]) -> str:
    shown = ", ".join(_pointer(c) for c in cuts[:8])
    more = f" and {len(cuts) - 8} more" if len(cuts) > 8 else ""
    return f"shortened to fit: {cut(shown, 400)}{more} (pass pointer= to read one whole)"


def resolve_pointer(value: Any, pointer: str) -> Any:
    """RFC 6901: `/values/messages/3/content`; a wrong step is a bad argument naming what is there."""
    if pointer in ("", "/"):
        return value
    if not pointer.startswith("/"):
        raise StatectlError(f"pointer {cut(pointer, 200)!r} must start with '/' (a JSON pointer: /values/messages/0)")
    here = value
    for i, raw in enumerate(pointer[1:].split("/")):
        token = raw.replace("~1", "/").replace("~0", "~")
        at = cut("/" + "/".join(pointer[1:].split("/")[:i]), 200)
        if isinstance(here, dict):
            if token not in here:  # (what is there, a few keys of it, each shortened)
                keys = ", ".join(repr(cut(str(k), 60)) for k in islice(here, 20))
                more = f" and {len(here) - 20} more" if len(here) > 20 else ""
                raise StatectlError(f"no {cut(token, 200)!r} at pointer {at!r}", f"there: {keys or 'nothing'}{more}")
            here = here[token]
        elif isinstance(here, list):
            if not (token.isascii() and token.isdigit()) or len(token) > 18 or int(token) >= len(here):
                raise StatectlError(f"no item {cut(token, 200)!r} at pointer {at!r} (a list of {len(here)})")
            here = here[int(token)]
        else:
            raise StatectlError(f"pointer {cut(pointer, 200)!r} goes below a {type(here).__name__} at {at!r}")
    return here


def bound(value: Any, cursor: str | None, limit: int, at: str = "", name: str = "value") -> dict[str, Any]:
    """Any value as a result: whole when it fits; a list paged, a text paged, anything else shrunk."""
    if isinstance(value, list) and (cursor or size(value) > limit):
        return page_items(value, cursor, limit, "items", lambda page: {name: page}, at)
    if isinstance(value, str) and (cursor or size(value) > limit):
        return page_text(value, cursor, limit)
    if cursor:
        raise StatectlError("this result is whole: no cursor needed")
    small, cuts = shrink(value, limit - 400, at)
    return {name: small, "next_cursor": None, "left_out": cut_note(cuts) if cuts else None}
