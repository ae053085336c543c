"""The merged state schema of a loaded graph: one row per field, with its channel, reducer,
visibility and who declared it (for `create_agent`: each middleware, in the order create_agent
merges them). Runs where the graph is loaded (see `statectl.project.target`).
"""

from __future__ import annotations

import dataclasses
import operator
import types
import typing
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

from statectl.core.schema import Field, Schema

CHANNEL_KIND = {
    "LastValue": "last value",
    "LastValueAfterFinish": "last value",
    "AnyValue": "last value",
    "BinaryOperatorAggregate": "reducer",
    "DeltaChannel": "delta",
    "EphemeralValue": "ephemeral",
    "UntrackedValue": "untracked",
    "Topic": "topic",
}
WRAPPERS = tuple(w for w in (typing.Required, typing.NotRequired, getattr(typing, "ReadOnly", None)) if w)
"""Required[...], NotRequired[...], ReadOnly[...] (3.13+): qualifiers around a field's type."""
OPERATORS = {getattr(operator, n): f"operator.{n}" for n in ("add", "or_", "and_", "mul", "concat", "iadd")}


# -- readable types ---------------------------------------------------------------------------
def type_name(tp: Any) -> str:
    """`list[AnyMessage]`, `str | None`, `dict[str, Any]`: annotations as people write them."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in WRAPPERS or origin is typing.Annotated:
        return type_name(args[0] if origin is not typing.Annotated else tp.__origin__)
    if tp is type(None):
        return "None"
    if tp is typing.Any:
        return "Any"
    if _is_any_message(tp):
        return "AnyMessage"
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is typing.Literal:
        return "Literal[" + ", ".join(repr(a) for a in args) + "]"
    if isinstance(tp, typing.TypeVar):
        return tp.__name__
    if origin is not None:
        name = getattr(origin, "__name__", None) or str(origin).replace("typing.", "")
        return f"{name}[{', '.join(type_name(a) for a in args)}]" if args else name
    if isinstance(tp, type):
        return tp.__name__
    if isinstance(tp, str):
        return tp
    return str(tp).replace("typing.", "")


def _is_any_message(tp: Any) -> bool:
    if typing.get_origin(tp) is typing.Annotated:
        tp = tp.__origin__
    if typing.get_origin(tp) is not typing.Union:
        return False
    names = {
        getattr(a.__origin__ if typing.get_origin(a) is typing.Annotated else a, "__name__", "")
        for a in typing.get_args(tp)
    }
    return {"AIMessage", "HumanMessage", "ToolMessage", "SystemMessage"} <= names


def _metadata(tp: Any) -> list[Any]:
    """Annotated metadata, also under Required/NotRequired (as create_agent reads it)."""
    out: list[Any] = []
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            out.extend(tp.__metadata__)
            tp = tp.__origin__
        elif origin in WRAPPERS:
            tp = typing.get_args(tp)[0]
        else:
            return out


def _private(tp: Any) -> list[str]:
    for meta in _metadata(tp):
        if type(meta).__name__ == "OmitFromSchema":
            i, o = bool(getattr(meta, "input", False)), bool(getattr(meta, "output", False))
            return ["PrivateStateAttr"] if i and o else ["OmitFromInput"] if i else ["OmitFromOutput"] if o else []
    return []


def reducer_name(fn: Any) -> str | None:
    if fn is None:
        return None
    if fn in OPERATORS:
        return OPERATORS[fn]
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    if "add_messages" in name:
        return "add_messages"
    return name.split(".<locals>.")[-1]


def _hints(schema: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(schema, include_extras=True)
    except Exception:
        return dict(getattr(schema, "__annotations__", {}))


def _required(schema: Any, name: str, tp: Any) -> bool:
    fields = getattr(schema, "model_fields", None)
    if isinstance(fields, dict) and name in fields:  # pydantic
        return fields[name].is_required()
    if dataclasses.is_dataclass(schema):
        f = next((f for f in dataclasses.fields(schema) if f.name == name), None)
        return f is not None and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    origin = typing.get_origin(tp)
    if origin is typing.NotRequired:
        return False
    if origin is typing.Required:
        return True
    if hasattr(schema, "__required_keys__"):
        return name in schema.__required_keys__
    return True


# -- the schema of a loaded graph ---------------------------------------------------------------
def schema(obj: Any) -> Schema:
    """The merged state schema of a compiled graph or StateGraph builder, with its nodes."""
    from statectl.project.target import parts

    out = _schema(obj)
    graph, builder = parts(obj)
    nodes = builder.nodes if builder is not None else getattr(graph, "nodes", None) or {}
    out.nodes = ["__start__", *(str(n) for n in nodes if n != "__start__")]
    return out


def _schema(obj: Any) -> Schema:
    from statectl.project.target import parts

    graph, builder = parts(obj)
    if builder is None:
        return _functional(graph)
    state = builder.state_schema
    hints = _hints(state)
    input_keys = set(_hints(builder.input_schema)) if builder.input_schema is not None else set(hints)
    output_keys = set(_hints(builder.output_schema)) if builder.output_schema is not None else set(hints)
    middlewares = _middlewares(graph if graph is not None else builder)
    fields: list[Field] = []
    for name, channel in builder.channels.items():
        if name.startswith("__"):
            continue
        tp = hints.get(name)
        kind = CHANNEL_KIND.get(type(channel).__name__, type(channel).__name__)
        reducer = reducer_name(getattr(channel, "operator", None) or getattr(channel, "reducer", None))
        private = _private(tp) if tp is not None else []
        if tp is None:
            private = ["node schema"]  # a channel only a node's own input schema declares
            tp = next((_hints(s)[name] for s in builder.schemas if name in _hints(s)), None)
        fields.append(
            Field(
                name,
                type_name(tp) if tp is not None else "?",
                kind,
                reducer,
                _required(state, name, tp) if name in hints else False,
                name in input_keys,
                name in output_keys,
                private,
            )
        )
    if middlewares is not None:
        sources, notes = _declared_by_middleware(fields, *middlewares, hints)
        return Schema(fields, "create_agent", sources, notes, middlewares[1])
    sources = [_name(state)]
    for label, s in (("input", builder.input_schema), ("output", builder.output_schema)):
        if s is not None and s is not state:
            sources.append(f"{_name(s)} ({label})")
    for f in fields:
        f.declared_by = [_name(state)] if f.name in hints else []
        for label, s in (("input", builder.input_schema), ("output", builder.output_schema)):
            if s is not None and s is not state and f.name in _hints(s):
                f.declared_by.append(f"{_name(s)} ({label})")
        if not f.declared_by:
            f.declared_by = [_name(s) for s in builder.schemas if f.name in _hints(s)]
    return Schema(fields, "StateGraph", sources)


def _name(schema: Any) -> str:
    return getattr(schema, "__name__", str(schema))


def _functional(graph: Any) -> Schema:
    """An @entrypoint: its input and return value are the only state."""
    fields = []
    entry = next((n for n in graph.nodes if not n.startswith("__")), getattr(graph, "name", ""))
    for name, channel in graph.channels.items():
        if name in ("__start__", "__end__", "__previous__"):
            kind = CHANNEL_KIND.get(type(channel).__name__, type(channel).__name__)
            label = {"__start__": "input", "__end__": "return value", "__previous__": "previous"}[name]
            typ = getattr(channel, "typ", None)
            fields.append(
                Field(
                    name,
                    type_name(typ) if typ not in (None, typing.Any) else "Any",
                    kind,
                    None,
                    False,
                    name == "__start__",
                    name == "__end__",
                    [],
                    [f"@entrypoint {entry} ({label})"],
                )
            )
    return Schema(
        fields,
        "functional",
        [f"@entrypoint {entry}"],
        ["the functional API keeps no state schema: the input, the return value and `previous` are its channels"],
    )


_WRAPPED = (
    "__self__",
    "func",
    "afunc",
    "__wrapped__",
    "_func",
    "_afunc",
    "wrap_tool_call",
    "awrap_tool_call",
    "_wrap_tool_call",
    "_awrap_tool_call",
)


def _inner(obj: Any) -> Iterator[Any]:
    """What a callable holds that may be (or hold) a middleware: the items of a container, the
    function a method, partial or wrapper stands for, its closure's cells (`outer` first)."""
    if isinstance(obj, (list, tuple, set)):
        yield from obj
        return
    if isinstance(obj, dict):
        yield from obj.values()
        return
    for attr in _WRAPPED:
        inner = getattr(obj, attr, None) if not isinstance(obj, type) else None
        if inner is not None and inner is not obj:
            yield inner
    code, cells = getattr(obj, "__code__", None), getattr(obj, "__closure__", None) or ()
    names = code.co_freevars if code is not None and len(code.co_freevars) == len(cells) else ()
    for _, cell in sorted(
        zip(names or range(len(cells)), cells, strict=True), key=lambda nc: {"outer": 0, "inner": 1}.get(nc[0], 2)
    ):
        try:
            yield cell.cell_contents
        except ValueError:  # an empty cell
            pass
    if hasattr(obj, "keywords") and hasattr(obj, "args"):  # functools.partial
        yield obj.func


def _walk(obj: Any, depth: int, found: list[Any], seen: set[int], middleware: type, opaque: tuple[type, ...]) -> None:
    """Append the middlewares `obj` holds to `found`, in the order they are reached."""
    if depth > 64 or id(obj) in seen or isinstance(obj, opaque):
        return  # (a tool or a graph inside, e.g. a subagent, has middlewares of its own)
    seen.add(id(obj))
    if isinstance(obj, middleware):
        if all(m is not obj for m in found):
            found.append(obj)
        return
    for inner in _inner(obj):
        _walk(inner, depth + 1, found, seen, middleware, opaque)


# -- create_agent: which middleware declared what ------------------------------------------------
def _middlewares(graph: Any) -> tuple[list[Any], list[str]] | None:
    """The AgentMiddleware instances of a create_agent graph in the order create_agent merged
    their state schemas (its `middleware=` order), and the names of those whose place that
    order leaves open.

    The compiled graph keeps the order in three places: hook nodes are added per middleware in
    order; the model node's `wrap_model_call` chain and the tools node's `wrap_tool_call` chain
    nest the first middleware outermost (`compose_two(outer, inner)`). Each gives a sequence;
    their merge is the order, as far as they pin it down."""
    try:
        from langchain.agents.middleware import AgentMiddleware
    except ImportError:
        return None
    builder = getattr(graph, "builder", graph)
    meta = (getattr(graph, "config", None) or {}).get("metadata", {}) if graph is not builder else {}
    nodes = getattr(builder, "nodes", {})
    if meta.get("ls_integration") != "langchain_create_agent" and "model" not in nodes:
        return None

    from langchain_core.tools import BaseTool
    from langgraph.pregel import Pregel

    def walk(obj: Any, depth: int, found: list[Any], seen: set[int]) -> None:
        _walk(obj, depth, found, seen, AgentMiddleware, (BaseTool, Pregel))

    hooks: list[Any] = []
    seen: set[int] = set()
    for name in nodes:
        if "." in name:  # `Middleware.hook` nodes, added middleware by middleware
            walk(nodes[name].runnable, 0, hooks, seen)
    sequences = [hooks]
    for name in nodes:
        if "." not in name:  # the model and tools nodes: their wrapper chains
            chain: list[Any] = []
            walk(nodes[name].runnable, 0, chain, set())
            sequences.append(chain)
    return _merge(sequences)


def _merge(sequences: list[list[Any]]) -> tuple[list[Any], list[str]]:
    """One order consistent with every sequence (Kahn's algorithm; ties broken by first
    appearance), and the names of the items whose place in it the sequences leave open."""
    items: list[Any] = []
    for seq in sequences:
        items += [m for m in seq if all(m is not x for x in items)]
    index = {id(m): i for i, m in enumerate(items)}
    after: dict[int, set[int]] = {i: set() for i in range(len(items))}
    for seq in sequences:
        for a, b in pairwise(seq):
            after[index[id(a)]].add(index[id(b)])
    indegree = {i: 0 for i in after}
    for targets in after.values():
        for b in targets:
            indegree[b] += 1
    order, loose = [], set()
    ready = sorted(i for i, d in indegree.items() if d == 0)
    while ready:
        if len(ready) > 1:
            loose.update(ready)
        i = ready.pop(0)
        order.append(i)
        for b in sorted(after[i]):
            indegree[b] -= 1
            if indegree[b] == 0:
                ready.append(b)
        ready.sort()
    order += [i for i in range(len(items)) if i not in order]  # (a cycle: cannot happen)
    return [items[i] for i in order], [items[i].name for i in sorted(loose)]


def _declared_by_middleware(
    fields: list[Field], middlewares: list[Any], unordered: list[str], merged: dict[str, Any]
) -> tuple[list[str], list[str]]:
    from langchain.agents import AgentState

    base_hints = _hints(AgentState)
    declared: list[tuple[str, dict[str, Any]]] = []
    for m in middlewares:
        hints = _hints(m.state_schema)
        own = {k: v for k, v in hints.items() if k not in base_hints or v != base_hints[k]}
        declared.append((m.name, own))
    declared.append(("AgentState", base_hints))
    caller = False
    notes = []
    for f in fields:
        who = [(name, own[f.name]) for name, own in declared if f.name in own]
        if f.name in merged and (not who or repr(who[-1][1]) != repr(merged[f.name])):
            # nobody we know declared the annotation create_agent kept: the caller's own
            # `state_schema=`, which create_agent merges last (deepagents passes one)
            who.append(("state_schema", merged[f.name]))
            caller = True
        f.declared_by = [name for name, _ in who]
        if len({repr(tp) for _, tp in who}) > 1:
            f.winner = who[-1][0]  # create_agent merges in order; the last annotation wins
    sources = [name for name, _ in declared]
    if unordered:
        notes.append(
            "the compiled graph leaves the relative order of "
            + ", ".join(unordered)
            + " open (their hook nodes and model/tool wrappers do not pin it down); it only "
            "matters where two declarations of a field conflict"
        )
    if caller:  # then the caller's class, not AgentState, was create_agent's base
        sources[-1] = "state_schema"
        for f in fields:
            f.declared_by = list(dict.fromkeys("state_schema" if d == "AgentState" else d for d in f.declared_by))
            if len(f.declared_by) < 2:
                f.winner = None
        notes.append(
            "state_schema: the state class passed to create_agent (its name is not kept "
            "in the compiled graph), or a middleware without hooks or wrappers, which the "
            "compiled graph does not keep"
        )
    return sources, notes


# -- from history alone ---------------------------------------------------------------------------
