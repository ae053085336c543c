"""A loaded graph as LangGraph draws it: its Mermaid text and its nodes and edges (in the
project's interpreter, or statectl's own where it has LangGraph)."""

from __future__ import annotations

from typing import Any


def mermaid(obj: Any, xray: bool = False) -> tuple[str, list[str]]:
    """LangGraph's own Mermaid text for a loaded graph (`get_graph(xray).draw_mermaid()`), and
    its node names (the escaping is not reversible on its own: `\\2eb` could be `.b` or `⮫`)."""
    from statectl.project.target import compiled

    drawable = compiled(obj).get_graph(xray=xray)
    return drawable.draw_mermaid(), list(drawable.nodes)


def structure(obj: Any, xray: bool = False) -> dict[str, Any]:
    """A loaded graph's nodes and edges as LangGraph's drawable graph holds them (`--json`)."""
    from statectl.project.target import compiled

    drawable = compiled(obj).get_graph(xray=xray)
    return {
        "nodes": [{"id": node_id, "name": node.name} for node_id, node in drawable.nodes.items()],
        "edges": [
            {
                "source": e.source,
                "target": e.target,
                "conditional": bool(e.conditional),
                "label": e.data if isinstance(e.data, str) else None,
            }
            for e in drawable.edges
        ],
    }
