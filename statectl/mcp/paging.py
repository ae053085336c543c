"""Tool results sized for a model's context: JSON text within a character budget, with a cursor to
page on and a note of what was left out.

Three shapes: a list is paged by items (`page_items`), a long text by characters (`page_text`),
any other value is shrunk (`shrink`: long texts and lists cut, each cut named by the JSON pointer
that reads it whole). Nothing is ever cut silently: every result that is not whole says so in
`left_out`, with the `pointer` and `cursor` to ask for the rest.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from statectl.codec.jsonout import json_bytes
from statectl.errors import StatectlError

LIMIT = 20_000
"""Characters per tool result by default (`statectl mcp --max-chars`)."""

_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Characters JSON leaves raw that a terminal or an editor acts on (DEL, the C1 controls with CSI
and OSC, the bidirectional overrides): written as \\u escapes, so the text holds no control
character and still reads back to the exact value."""


def dumps(value: Any) -> str:
    """JSON text with no raw control character (JSON itself escapes those below 0x20)."""
    text = json_bytes(value).decode()
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def size(value: Any) -> int:
    return len(json_bytes(value))


def cursor_of(offset: int) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"o": offset})).decode().rstrip("=")


def offset_of(cursor: str | None) -> int:
    """The offset a cursor names (0 without one); a cursor not made here is a bad argument."""
    if not cursor:
        return 0
    try:
        data = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        offset = data["o"]
    except (ValueError, TypeError, KeyError):
        raise StatectlError(f"cursor {cursor!r} is not one this server gave") from None
    if not isinstance(offset, int) or offset < 0:
        raise StatectlError(f"cursor {cursor!r} is not one this server gave")
    return offset


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
    end = min(len(text), start + limit - 400)
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
        return f"[too large to show in {limit} characters: read parts of it by pointer {at or '/'!r}]", [at or "/"]
    return small, cuts


def _marker(what: str, at: str) -> str:
    return f"[{what}: pointer {at or '/'!r}]"


def _fit(value: Any, budget: int, at: str, cuts: list[str], depth: int) -> Any:
    if size(value) <= budget:
        return value
    if isinstance(value, str):
        cuts.append(at)
        tail = _marker(f"{len(value)} characters in all", at)
        room = budget - size(tail) - 8
        if room <= 20:
            return tail
        head = value[:room]
        while (over := size(head) - room) > 0:  # (JSON escapes: a newline takes two characters)
            head = head[: len(head) - over]
        return head + "…" + tail
    if budget < 80 or depth > 40 or not isinstance(value, (dict, list)):
        cuts.append(at)
        return _marker(f"a {type(value).__name__} of {size(value)} characters", at)
    if isinstance(value, dict):
        left = budget - 2 - sum(size(str(k)) + 2 for k in value)
        fitted: dict[Any, Any] = {}
        order = sorted(value, key=lambda k: size(value[k]))
        for i, k in enumerate(order):  # the smallest first, each within a fair share of what is left
            share = max(left // (len(order) - i), 0)
            fitted[k] = _fit(value[k], share, f"{at}/{_token(k)}", cuts, depth + 1)
            left -= size(fitted[k])
        return {k: fitted[k] for k in value}
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


def _token(key: Any) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def cut_note(cuts: list[str]) -> str:
    shown = ", ".join(repr(c) for c in cuts[:8])
    more = f" and {len(cuts) - 8} more" if len(cuts) > 8 else ""
    return f"shortened to fit: {shown}{more} (pass pointer= to read one whole)"


def resolve_pointer(value: Any, pointer: str) -> Any:
    """RFC 6901: `/values/messages/3/content`; a wrong step is a bad argument naming what is there."""
    if pointer in ("", "/"):
        return value
    if not pointer.startswith("/"):
        raise StatectlError(f"pointer {pointer!r} must start with '/' (a JSON pointer: /values/messages/0)")
    here = value
    for i, raw in enumerate(pointer[1:].split("/")):
        token = raw.replace("~1", "/").replace("~0", "~")
        at = "/" + "/".join(pointer[1:].split("/")[:i])
        if isinstance(here, dict):
            if token not in here:
                keys = ", ".join(sorted(map(str, here))[:20])
                raise StatectlError(f"no {token!r} at pointer {at!r}", f"there: {keys or 'nothing'}")
            here = here[token]
        elif isinstance(here, list):
            if not token.isdigit() or int(token) >= len(here):
                raise StatectlError(f"no item {token!r} at pointer {at!r} (a list of {len(here)})")
            here = here[int(token)]
        else:
            raise StatectlError(f"pointer {pointer!r} goes below a {type(here).__name__} at {at!r}")
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
