"""The channel specification of the app's compiled graph, extracted where the graph is loaded.

`extract` runs in the project's interpreter (`introspect`) and turns a compiled graph into plain
JSON: every channel's kind, reducer and initial value (encoded there by LangGraph's own
serializer, decoded by statectl's decoder: nothing of the graph runs in statectl), the keys a
snapshot's `values` hold, the node order, and the same for every subgraph by its node path.
`statectl.core.graphspec.GraphSpec` reads that JSON back.
"""

from __future__ import annotations

import base64
from functools import lru_cache
from typing import Any


def extract(obj: Any) -> dict[str, Any]:
    """The JSON form of a loaded TARGET: {"graphs": {node path: one graph's spec}}; the root is
    '' and a subgraph is its node path (`review`, `outer|inner`), as `get_subgraphs` names it."""
    from statectl.project.target import compiled

    graph = compiled(obj)
    graphs = {"": _one(graph)}
    try:
        subgraphs = list(graph.get_subgraphs(recurse=True))
    except Exception:
        subgraphs = []
    for path, sub in subgraphs:
        graphs.setdefault(path, _one(sub))
    from statectl.project.drawn_graph import structure

    drawable = {}
    for xray in (False, True):  # (what the graph view draws: folded and with subgraphs inline)
        try:
            drawable["xray" if xray else "plain"] = structure(graph, xray)
        except Exception:
            pass
    return {"graphs": graphs, "drawable": drawable}


def _one(graph: Any) -> dict[str, Any]:
    channels = {name: _channel(ch) for name, ch in graph.channels.items()}
    values = graph.stream_channels_asis
    return {
        "nodes": list(graph.nodes),
        "values": values if isinstance(values, str) else list(values),
        "channels": channels,
    }


def _channel(ch: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": type(ch).__name__}
    fn = getattr(ch, "operator", None) or getattr(ch, "reducer", None)
    if fn is not None:
        out["reducer"] = _reducer_name(fn)
    empty = _initial(ch)
    if empty is not _NONE:
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

        try:
            type_, data = JsonPlusSerializer().dumps_typed(empty)
            out["empty"] = [type_, base64.b64encode(data).decode()]
        except Exception:
            out["empty_repr"] = repr(empty)[:200]
    return out


_NONE = object()


@lru_cache(maxsize=1)
def _missing() -> Any:
    """LangGraph's "no checkpoint value" sentinel where this version has one, else None (what
    older versions pass to `from_checkpoint`)."""
    for where in ("langgraph._internal._typing", "langgraph.constants", "langgraph.channels.base"):
        try:
            return __import__(where, fromlist=["MISSING"]).MISSING
        except (ImportError, AttributeError):
            continue
    return None


def _initial(ch: Any) -> Any:
    """What a fresh channel holds before any write (`from_checkpoint` of nothing): a reducer
    channel's `typ()`, else _NONE (the key is absent from `values`)."""
    try:
        fresh = ch.from_checkpoint(_missing())
        return fresh.get()
    except Exception:
        return _NONE


def _reducer_name(fn: Any) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    module = getattr(fn, "__module__", "") or ""
    if "add_messages" in name:
        return "add_messages"
    if module in ("_operator", "operator") and name in ("add", "concat", "iadd"):
        return "operator.add"
    return f"{module}.{name}" if module else name
