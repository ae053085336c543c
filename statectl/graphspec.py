"""The channel specification of the app's compiled graph (`--graph TARGET`), for exact snapshots.

From the data alone some of LangGraph's view must be inferred (state.py): which keys are
reducer channels before their first write, and in which order pull tasks due together are
listed. The compiled graph says both. `extract` runs where the graph is loaded (the project's
interpreter, `introspect`) and turns it into plain JSON: every channel's kind, reducer and
initial value (encoded there by LangGraph's own serializer, decoded here by statectl's decoder:
nothing of the graph runs in statectl), the keys a snapshot's `values` hold, the node order, and
the same for every subgraph by its node path. `GraphSpec` reads that JSON back.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any


# -- in the project's interpreter ------------------------------------------------------------
def extract(obj: Any) -> dict[str, Any]:
    """The JSON form of a loaded TARGET: {"graphs": {node path: one graph's spec}}; the root is
    '' and a subgraph is its node path (`review`, `outer|inner`), as `get_subgraphs` names it."""
    from statectl.target import compiled

    graph = compiled(obj)
    graphs = {"": _one(graph)}
    try:
        subgraphs = list(graph.get_subgraphs(recurse=True))
    except Exception:
        subgraphs = []
    for path, sub in subgraphs:
        graphs.setdefault(path, _one(sub))
    from statectl.graph import structure

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
    return {"nodes": list(graph.nodes),
            "values": values if isinstance(values, str) else list(values),
            "channels": channels}


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


# -- in statectl -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ChannelSpec:
    kind: str
    """LangGraph's channel class: LastValue, BinaryOperatorAggregate, DeltaChannel, Topic, ..."""
    reducer: str | None = None
    """`add_messages`, `operator.add`, or the function's module.qualname."""
    empty: Any = None
    """The value before any write (`typ()` of a reducer channel), decoded by statectl."""
    has_empty: bool = False


@dataclass(frozen=True)
class NsSpec:
    """One graph of TARGET: the root or a subgraph."""

    nodes: tuple[str, ...]
    """In definition order: the order `get_state` lists pull tasks due together."""
    values: tuple[str, ...] | str
    """The channels a snapshot's `values` hold (`stream_channels_asis`); a str: one channel's
    value is the whole state (a functional graph)."""
    channels: dict[str, ChannelSpec] = field(default_factory=dict)

    @property
    def order(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.nodes)}

    def shown(self, key: str) -> bool | None:
        """Does `values` hold `key`? None: the graph has no such channel."""
        if key not in self.channels:
            return None
        return key in self.values if isinstance(self.values, tuple) else key == self.values

    def empties(self) -> dict[str, Any]:
        """The keys `values` shows before their first write, with the value shown."""
        keys = self.values if isinstance(self.values, tuple) else ()
        return {k: self.channels[k].empty for k in keys
                if k in self.channels and self.channels[k].has_empty}

    def reducer(self, key: str) -> str | None:
        ch = self.channels.get(key)
        if ch is None:
            return None
        return ch.reducer or ("last" if ch.kind in ("LastValue", "AnyValue", "EphemeralValue",
                                                     "UntrackedValue") else None)


@dataclass(frozen=True)
class GraphSpec:
    """TARGET's graphs by node path ('' the root)."""

    target: str
    graphs: dict[str, NsSpec]
    data: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The JSON it was read from (an export records it)."""
    drawable: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The root graph's nodes and edges (`graph.structure`): "plain", and "xray" with its
    subgraphs inline."""

    @classmethod
    def from_json(cls, target: str, data: dict[str, Any]) -> GraphSpec:
        from statectl.decode import decode_typed

        graphs: dict[str, NsSpec] = {}
        for path, g in (data.get("graphs") or {}).items():
            channels = {}
            for name, c in (g.get("channels") or {}).items():
                empty, has = None, False
                if isinstance(c.get("empty"), list) and len(c["empty"]) == 2:
                    type_, b64 = c["empty"]
                    empty, has = decode_typed(type_, base64.b64decode(b64)), True
                channels[name] = ChannelSpec(kind=str(c.get("kind")), reducer=c.get("reducer"),
                                             empty=empty, has_empty=has)
            values = g.get("values")
            graphs[path] = NsSpec(nodes=tuple(g.get("nodes") or ()),
                                  values=values if isinstance(values, str) else tuple(values or ()),
                                  channels=channels)
        found = data.get("drawable")
        drawable: dict[str, Any] = found if isinstance(found, dict) else {}
        return cls(target=target, graphs=graphs, data={"graphs": data.get("graphs") or {}, "drawable": drawable},
                   drawable=drawable)

    def for_ns(self, checkpoint_ns: str) -> NsSpec | None:
        """The graph a namespace's checkpoints belong to (`review:<task id>|check:<id>` is the
        subgraph at node path `review|check`); None when TARGET has no such subgraph (a graph
        called from inside a node's code, which `get_subgraphs` cannot see)."""
        return self.graphs.get(node_path(checkpoint_ns))


def node_path(checkpoint_ns: str) -> str:
    return "|".join(part.split(":", 1)[0] for part in checkpoint_ns.split("|")) if checkpoint_ns else ""


def mismatch(spec: NsSpec, keys: set[str], nodes: set[str]) -> str | None:
    """What the data holds that the graph lacks, in one phrase (None: they agree)."""
    lacked_keys = sorted(k for k in keys if k not in spec.channels)
    lacked_nodes = sorted(n for n in nodes if n not in spec.nodes)
    parts = []
    if lacked_keys:
        parts.append(f"keys it lacks: {', '.join(lacked_keys[:8])}" + (" ..." if len(lacked_keys) > 8 else ""))
    if lacked_nodes:
        parts.append(f"nodes it lacks: {', '.join(lacked_nodes[:8])}" + (" ..." if len(lacked_nodes) > 8 else ""))
    return "; ".join(parts) or None
