"""Control characters in data, written out: `\\x1b`, `\\x9b`, `\\u202e` (as git and less show them).

Messages come from users, web pages and models; thread ids from request headers. A value holding
`ESC ] 52` (writes the clipboard), `ESC [ 2 J` (clears the screen), a C1 `\\x9b` (a one-byte CSI)
or U+202E (makes text read backwards) must never reach the terminal as it is. No Rich here: error
lines use it on the fast path; statectl.render.safe applies it to everything Rich prints.
"""

from __future__ import annotations

import re
from functools import cache

# C0 except tab and newline, DEL, C1, and the invisible / direction-changing format characters
_CONTROLS = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]"


@cache
def _controls() -> re.Pattern[str]:
    return re.compile(_CONTROLS)


def __getattr__(name: str) -> re.Pattern[str]:
    """`CONTROLS`, the pattern, compiled on first use (0.7 ms of every start that needs none:
    a printable text holds no control character, `str.isprintable` says it first)."""
    if name == "CONTROLS":
        return _controls()
    raise AttributeError(f"module 'statectl.escape' has no attribute {name!r}")


def _shown(m: re.Match) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str) -> str:
    """`text` with every control character written out."""
    if text.isprintable():  # (every character of CONTROLS is unprintable: the common case, at once)
        return text
    controls = _controls()
    return controls.sub(_shown, text) if controls.search(text) else text
