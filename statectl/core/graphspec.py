"""The channel specification of the app's compiled graph (`--graph TARGET`), for exact snapshots.

From the data alone some of LangGraph's view must be inferred (state.py): which keys are
reducer channels before their first write, and in which order pull tasks due together are
listed. The compiled graph says both: `statectl.project.spec.extract` turns it into JSON where
the graph is loaded, and `GraphSpec` reads that JSON back here.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from statectl.errors import StatectlError


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
        return {k: self.channels[k].empty for k in keys if k in self.channels and self.channels[k].has_empty}

    def reducer(self, key: str) -> str | None:
        ch = self.channels.get(key)
        if ch is None:
            return None
        return ch.reducer or (
            "last" if ch.kind in ("LastValue", "AnyValue", "EphemeralValue", "UntrackedValue") else None
        )


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
        from statectl.codec.decode import decode_typed

        graphs: dict[str, NsSpec] = {}
        for path, g in (data.get("graphs") or {}).items():
            channels = {}
            for name, c in (g.get("channels") or {}).items():
                empty, has = None, False
                if isinstance(c.get("empty"), list) and len(c["empty"]) == 2:
                    type_, b64 = c["empty"]
                    empty, has = decode_typed(type_, base64.b64decode(b64)), True
                channels[name] = ChannelSpec(
                    kind=str(c.get("kind")), reducer=c.get("reducer"), empty=empty, has_empty=has
                )
            values = g.get("values")
            graphs[path] = NsSpec(
                nodes=tuple(g.get("nodes") or ()),
                values=values if isinstance(values, str) else tuple(values or ()),
                channels=channels,
            )
        found = data.get("drawable")
        drawable: dict[str, Any] = found if isinstance(found, dict) else {}
        return cls(
            target=target,
            graphs=graphs,
            data={"graphs": data.get("graphs") or {}, "drawable": drawable},
            drawable=drawable,
        )

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


def recorded(data: Any, notes: list[str]) -> Any:
    """The graph an export recorded, or None with a note when that section cannot be read (a
    damaged or hand-made file): the threads are then shown from the data alone."""
    try:
        if not isinstance(data, dict) or not isinstance(data.get("graphs"), dict):
            raise ValueError("not an object of graphs")
        return GraphSpec.from_json(str(data.get("target") or "the export's graph"), data)
    except (StatectlError, ValueError, TypeError, AttributeError, KeyError) as exc:
        reason = exc.message if isinstance(exc, StatectlError) else str(exc)
        notes.append(f"the graph this export recorded cannot be read ({reason[:120]}): shown from the data alone")
        return None
