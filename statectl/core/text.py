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
            return bytes_text(inner)
        if tag == "$undecoded":
            from statectl.codec.decode import undecoded_text

            return f"<{undecoded_text(inner)}>"
    if call := type_call(value):
        return "".join(call)
    return None


def bytes_text(b64_text: str) -> str:
    """A `$bytes` value: its size and the start of its base64."""
    return f"<{b64_size(b64_text)} bytes, base64 {fold(b64_text, 40)}>"


def type_call(value: Any) -> tuple[str, str] | None:
    """A typed value whose arguments are plain, as a call: (its class name, `(arguments)`); None
    for any other value."""
    if not (isinstance(value, dict) and set(value) <= {"$type", "arg", "args", "method"} and "$type" in value):
        return None
    args = value.get("arg", value.get("args"))
    if isinstance(args, dict) or (isinstance(args, list) and any(isinstance(a, (dict, list)) for a in args)):
        return None
    name = str(value["$type"]).rsplit(".", 1)[-1]
    if "arg" in value or not isinstance(args, list):
        return name, f"({args!r})"
    return name, "(" + ", ".join(map(repr, args)) + ")"


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
