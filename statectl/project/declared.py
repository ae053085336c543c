"""What a graph declares it stores: the classes its state annotations reach, and what its
checkpointer's serializer allows by name (`statectl.project.safeload` builds only these).

Runs in the project's interpreter on the loaded graph; reads no stored data.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import Any

Key = tuple[str, str]


def declared(graph: Any) -> list[type]:
    """The classes reachable from the graph's state annotations (its state, input, output and node
    schemas, its channels' types, its subgraphs'), and the classes their fields hold, recursively."""
    found: list[type] = []
    seen: dict[int, Any] = {}  # (each type kept alive: a freed alias's id may be reused by the next)
    for root in _roots(graph, 0):
        _walk(root, found, seen, 0)
    return found


def _roots(graph: Any, depth: int) -> Iterable[Any]:
    if depth > 5:
        return
    builder = getattr(graph, "builder", None)
    for attr in ("state_schema", "input_schema", "output_schema"):
        yield getattr(builder, attr, None)
    yield from list(getattr(builder, "schemas", None) or {})
    for channel in list((getattr(graph, "channels", None) or {}).values()):
        for attr in ("ValueType", "UpdateType"):
            try:
                yield getattr(channel, attr, None)
            except Exception:  # (a channel whose type is not known)
                continue
    for node in list((getattr(graph, "nodes", None) or {}).values()):
        yield from _response_schemas(node)
    try:
        subgraphs = [g for _, g in graph.get_subgraphs()]
    except Exception:  # (a graph that cannot list them declares nothing more)
        subgraphs = []
    for sub in subgraphs:
        yield from _roots(sub, depth + 1)


def _response_schemas(node: Any) -> Iterable[Any]:
    """The structured output a `create_agent` model node parses into `structured_response` (its
    `response_format`, held by the node's function: the state annotates it with a type variable)."""
    import inspect

    func = getattr(getattr(node, "bound", None), "func", None)
    if not callable(func) or not getattr(func, "__closure__", None):
        return
    try:
        fmt = inspect.getclosurevars(func).nonlocals.get("initial_response_format")
    except Exception:  # (a function whose closure cannot be read declares nothing more)
        return
    if fmt is None:
        return
    yield fmt if isinstance(fmt, type) else getattr(fmt, "schema", None)
    for spec in list(getattr(fmt, "schema_specs", None) or []):
        yield getattr(spec, "schema", None)


def _walk(tp: Any, found: list[type], seen: dict[int, Any], depth: int) -> None:
    if tp is None or depth > 40 or len(seen) > 5000 or id(tp) in seen or isinstance(tp, (str, typing.ForwardRef)):
        return
    seen[id(tp)] = tp
    for arg in typing.get_args(tp):  # Annotated, Union, Optional, list[...], dict[...], Literal's values
        _walk(arg, found, seen, depth + 1)
    origin = typing.get_origin(tp)
    if origin is not None:
        _walk(origin, found, seen, depth + 1)
        return
    if isinstance(tp, typing.TypeVar):
        _walk(tp.__bound__, found, seen, depth + 1)
        for c in tp.__constraints__:
            _walk(c, found, seen, depth + 1)
        return
    if not isinstance(tp, type):
        return
    found.append(tp)
    for field_type in _field_types(tp):
        _walk(field_type, found, seen, depth + 1)


def _field_types(cls: type) -> list[Any]:
    """The annotations of a class's fields (TypedDict, dataclass, pydantic, plain annotations)."""
    if cls.__module__ == "builtins":
        return []
    fields = getattr(cls, "model_fields", None)
    if isinstance(fields, dict):
        return [getattr(f, "annotation", None) for f in fields.values()]
    try:
        return list(typing.get_type_hints(cls, include_extras=True).values())
    except Exception:  # (a forward reference that does not resolve: its plain annotations)
        return list(getattr(cls, "__annotations__", {}).values())


def langgraph_declared(graph: Any) -> set[Key]:
    """What LangGraph itself derives from the same schemas for its strict mode (when it can)."""
    try:
        from langgraph._internal._serde import build_serde_allowlist

        builder = getattr(graph, "builder", None)
        schemas = [getattr(builder, a, None) for a in ("state_schema", "input_schema", "output_schema")]
        found = build_serde_allowlist(schemas=[s for s in schemas if s is not None], channels=graph.channels)
    except Exception:  # (another LangGraph version: statectl's own walk stands alone)
        return set()
    return {(k[0], k[1]) for k in found if len(k) == 2}


def serde_allowed(serde: Any) -> set[Key]:
    """What the app's own serializer allows explicitly (`allowed_msgpack_modules`,
    `allowed_json_modules` given as lists; LangGraph's permissive `True` is no one's choice)."""
    out: set[Key] = set()
    inner = getattr(serde, "serde", serde)  # (an EncryptedSerializer's)
    for attr in ("_allowed_msgpack_modules", "_allowed_json_modules"):
        value = getattr(inner, attr, None)
        if not isinstance(value, (set, frozenset, list, tuple)):
            continue
        for item in value:
            if isinstance(item, tuple) and len(item) >= 2 and all(isinstance(p, str) for p in item):
                out.add((item[0], item[1]) if attr == "_allowed_msgpack_modules" else (".".join(item[:-1]), item[-1]))
    return out
