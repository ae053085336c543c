"""Values as one line of plain text (thread previews, labels): no styling, no terminal."""

from __future__ import annotations

from typing import Any

from statectl.codec.values import b64_size

FOLD = 400


def fold(text: str, limit: int = FOLD) -> str:
    """Long text cut to `limit` characters with a note of what was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (+{len(text) - limit} chars)"


def scalar_text(value: Any) -> str | None:
    """A leaf value as one line (the text `render.values.scalar` styles), or None for a value
    with structure."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((tag, inner),) = value.items()
        if tag in ("$datetime", "$date", "$uuid", "$decimal", "$float"):
            return f"{inner}  {tag[1:]}"
        if tag == "$bytes":
            return f"<{b64_size(inner)} bytes, base64 {fold(inner, 40)}>"
        if tag == "$undecoded":
            from statectl.codec.decode import undecoded_text

            return f"<{undecoded_text(inner)}>"
    if isinstance(value, dict) and set(value) <= {"$type", "arg", "args", "method"} and "$type" in value:
        args = value.get("arg", value.get("args"))
        if not isinstance(args, (dict, list)) or (
            isinstance(args, list) and all(not isinstance(a, (dict, list)) for a in args)
        ):
            shown = (
                f"({args!r})"
                if "arg" in value or not isinstance(args, list)
                else "(" + ", ".join(map(repr, args)) + ")"
            )
            return str(value["$type"]).rsplit(".", 1)[-1] + shown
    return None


def summary(value: Any, limit: int = 80) -> str:
    """A one-line description of any value."""
    s = scalar_text(value)
    if s is not None:
        return fold(s, limit)
    if isinstance(value, list):
        return f"[{len(value)} items]"
    if isinstance(value, dict):
        if "$type" in value:
            return f"{value['$type'].rsplit('.', 1)[-1]}{{…}}"
        for tag in ("$set", "$frozenset"):
            if tag in value:
                return f"{tag[1:]} of {len(value[tag])}"
        return f"{{{len(value)} keys}}"
    return fold(str(value), limit)
