"""The reducers statectl knows, applied to decoded (tagged) values.

The database does not say which reducer a channel uses; these are the ones LangGraph,
LangChain and deepagents use for the channels statectl must rebuild (delta channels and
`Command(update=...)` input writes).
"""

from __future__ import annotations

from typing import Any

from statectl.codec.decode import Tagged

MESSAGE_PREFIX = "langchain_core.messages."
REMOVE_ALL_MESSAGES = "__remove_all__"


def is_message(value: Any) -> bool:
    return isinstance(value, dict) and str(value.get("$type", "")).startswith(MESSAGE_PREFIX)


def message_data(value: Any) -> dict[str, Any]:
    data = value.get("data") if isinstance(value, dict) else None
    return data if isinstance(data, dict) else {}


def is_remove(value: Any) -> bool:
    return is_message(value) and (
        value["$type"].endswith(".RemoveMessage") or message_data(value).get("type") == "remove"
    )


def _overwrite(value: Any) -> tuple[bool, Any]:
    if isinstance(value, dict) and value.get("$type") == "langgraph.types.Overwrite":
        return True, message_data(value).get("value")
    return False, value


def add_messages(left: list[Any] | None, right: Any) -> list[Any]:
    """`add_messages`: replace by id, `RemoveMessage` deletes, `__remove_all__` resets."""
    right = right if isinstance(right, list) else [right]
    merged = left[:] if isinstance(left, list) else [] if left is None else [left]
    for i in range(len(right) - 1, -1, -1):
        if is_remove(right[i]) and message_data(right[i]).get("id") == REMOVE_ALL_MESSAGES:
            merged, right = [], right[i + 1 :]
            break
    index = {message_data(m).get("id"): i for i, m in enumerate(merged)}
    removed: set[int] = set()
    for m in right:
        mid = message_data(m).get("id")
        if mid is not None and mid in index:
            if is_remove(m):
                removed.add(index[mid])
            else:
                merged[index[mid]] = m
        elif not is_remove(m):
            index[mid] = len(merged)
            merged.append(m)
    return [m for i, m in enumerate(merged) if i not in removed]


def merge_dict(left: dict[str, Any] | None, right: Any) -> dict[str, Any]:
    """deepagents' files reducer: a dict merge in which a None value deletes the key."""
    out = dict(left) if isinstance(left, dict) else {}
    if isinstance(right, dict):
        for k, v in right.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = v
    return out


def concat(left: list[Any] | None, right: Any) -> list[Any]:
    """`operator.add` on lists."""
    base = left if isinstance(left, list) else [] if left is None else [left]  # (corrupt data: kept)
    return base + (right if isinstance(right, list) else [right])


def add(left: Any, right: Any) -> Any:
    """`operator.add` as a graph names it: lists concatenate, numbers and strings add."""
    if isinstance(left, (int, float, str)) and not isinstance(left, bool) and type(left) is type(right):
        return left + right  # type: ignore[operator]  # (the same type)
    if isinstance(left, (int, float)) and isinstance(right, (int, float)) and not isinstance(left, bool):
        return left + right
    return concat(left, right)


BY_NAME = {"add_messages": add_messages, "operator.add": add}
"""The reducers a compiled graph names (`graphspec`) that statectl applies itself; any other
is a function of the app's, never called."""


def reducer_for(values: list[Any]) -> Any:
    """Pick the reducer a channel's written values call for."""
    for v in values:
        _, v = _overwrite(v)
        items = v if isinstance(v, list) else [v]
        if any(is_message(x) for x in items):
            return add_messages
        if isinstance(v, dict) and not isinstance(v, Tagged) and "$type" not in v:
            return merge_dict  # (a user's dict; a uuid, a date or a set is a value, not a merge)
        if isinstance(v, list):
            return concat
    return None


def apply(reducer: Any, base: Any, value: Any) -> Any:
    """Apply one write with `reducer` (None = last value wins); `Overwrite` resets the base."""
    is_over, value = _overwrite(value)
    if is_over or reducer is None:
        return value
    return reducer(base, value)


def empty_like(value: Any) -> Any:
    """The empty value a reducer channel of this type starts with (`typ()`)."""
    if isinstance(value, list):
        return []
    if isinstance(value, dict) and len(value) == 1 and ("$set" in value or "$frozenset" in value):
        return Tagged({next(iter(value)): []})
    if isinstance(value, dict) and not isinstance(value, Tagged) and "$type" not in value:
        return {}  # (a user's dict; a tagged value — a uuid, a date, a typed object — has no empty form)
    return None
