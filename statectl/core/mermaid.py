"""Mermaid flowcharts: a graph as LangGraph draws it, a thread's path drawn on it, or the graph
inferred from a thread's history alone."""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from statectl.core.state import ThreadView
    from statectl.core.timeline import LogEntry

START, END = "__start__", "__end__"
EDGE_LINE = re.compile(r"^\t(\S+?)( --> | -\.-> | -- .*? --> | -\. .*? \.-> )(\S+?);$")
STYLES = """\tclassDef visited fill:#c8efd0,stroke:#1b7f3b,stroke-width:2px
\tclassDef unvisited fill:#f5f5f5,stroke:#c8c8c8,color:#9a9a9a
\tclassDef pending fill:#fff1c2,stroke:#c98a00,stroke-width:3px
\tclassDef interrupted fill:#ffd5d5,stroke:#c62828,stroke-width:3px
"""


def safe_id(name: str) -> str:
    """A node id exactly as LangGraph's draw_mermaid writes it: [a-zA-Z0-9_-] kept, every other
    character as backslash + hex code point (so `parent:child` is `parent\\3achild`)."""
    allowed = string.ascii_letters + string.digits + "_-"
    return "".join(ch if ch in allowed else "\\" + format(ord(ch), "x") for ch in name)


def path_json(path: ThreadPath) -> dict[str, Any]:
    """A thread's path (`graph --thread --json`): visits, transitions with counts, next."""
    return {
        "thread_id": path.thread_id,
        "visits": dict(path.visits),
        "transitions": [{"source": a, "target": b, "count": n} for (a, b), n in path.edges.items()],
        "next": list(path.pending),
        "interrupted": list(path.interrupted),
        "finished": path.finished,
        "recorded": path.recorded,
        **({} if path.recorded else {"note": no_steps(path)}),
    }


def inferred_json(view: ThreadView, path: ThreadPath | None = None) -> dict[str, Any]:
    """The graph a thread's history shows, as data: nodes seen, transitions observed."""
    path = path or thread_path(view, line_only=False)
    return {
        "inferred": True,
        "thread_id": view.thread_id,
        "checkpoint_ns": view.checkpoint_ns,
        "nodes": [START] + [n for n in path.visits if n not in (START, END)] + [END],
        "edges": [{"source": a, "target": b, "count": n} for (a, b), n in path.edges.items()],
        "visits": dict(path.visits),
        "next": list(path.pending),
    }


def inferred_drawable(view: ThreadView, path: ThreadPath) -> dict[str, Any]:
    """`inferred_json` for drawing: the nodes due next joined to the step before them (what
    triggered them, as far as the history shows), END only where a run ended."""
    data = inferred_json(view, path)
    nodes, edges = list(data["nodes"]), list(data["edges"])
    last = next((e for e in reversed(path.order) if e), ())
    for n in path.pending:
        if n not in nodes:
            nodes.insert(-1, n)
            edges += [{"source": a, "target": n} for a in (last or (START,))]
    if not any(e["target"] == END for e in edges):
        nodes.remove(END)
    return {"nodes": nodes, "edges": edges}


def fence(text: str) -> str:
    """For GitHub: a ```mermaid block."""
    return f"```mermaid\n{text.rstrip()}\n```\n"


# -- a thread's path --------------------------------------------------------------------------
@dataclass
class ThreadPath:
    """Where a thread went: along the line of its newest checkpoint, oldest step first."""

    visits: Counter = field(default_factory=Counter)
    """Node -> steps in which it ran."""
    edges: Counter = field(default_factory=Counter)
    """(from, to) -> times that transition happened between consecutive steps."""
    pending: tuple[str, ...] = ()
    """The newest checkpoint's `next`."""
    interrupted: tuple[str, ...] = ()
    """Nodes whose task is waiting at an interrupt (or failed) at the newest checkpoint."""
    failed: tuple[str, ...] = ()
    """Of those, the nodes whose task raised."""
    finished: bool = False
    thread_id: str = ""
    recorded: bool = True
    checkpoints: int = 0
    order: list[tuple[str, ...]] = field(default_factory=list)
    """The nodes that ran at each step of the line, oldest first."""
    """Does the history record any step? Not when only the final checkpoint was saved
    (`durability="exit"`, a shallow saver): then nothing is known to have run, or not run."""


NO_STEPS = (
    "its history records no steps (only the last checkpoint was saved: durability='exit' "
    "or a shallow saver), so what ran is unknown"
)
NO_WRITES = (
    "its {n} checkpoints record no writes (neither the writes table nor the checkpoints' "
    "metadata holds them), so what ran is unknown"
)


def no_steps(path: ThreadPath) -> str:
    """Why the path is empty: one checkpoint saved, or checkpoints without their writes."""
    return NO_WRITES.format(n=path.checkpoints) if path.checkpoints > 1 else NO_STEPS


def thread_path(view: ThreadView, line_only: bool = True, deep: bool = False) -> ThreadPath:
    """Visits and transitions from the thread's log (writes and rows; one snapshot decoded).
    `deep`: also inside the subgraph runs, named as `--xray` draws them (`parent:child`)."""
    from statectl.core.timeline import entries

    all_entries = list(reversed(entries(view)))  # oldest first
    line = [e for e in all_entries if e.on_latest_line] if line_only else all_entries
    by_id = {e.record.checkpoint_id: e for e in all_entries}
    path = ThreadPath(thread_id=view.thread_id, checkpoints=len(view.records))
    for e in line:
        path.order.append(ran_nodes(e))
        for name in ran_nodes(e):
            path.visits[name] += 1
        parent = by_id.get(e.record.parent_checkpoint_id or "")
        before = ran_nodes(parent) if parent is not None else ()
        if e.record.source == "input":
            for a in before:  # the previous run ended here
                path.edges[(a, END)] += 1
            continue
        if not before and (parent is None or parent.record.source == "input") and START not in ran_nodes(e):
            before = (START,)  # (after update_state or a fork, nothing is known to have led here)
        for a in before:
            for b in ran_nodes(e):
                if a != b or len(ran_nodes(e)) == 1:
                    path.edges[(a, b)] += 1
    path.recorded = any(n not in (START, END) for n in path.visits)
    snap = view.snapshot(view.records[0].checkpoint_id)
    path.pending = tuple(snap.next)
    path.interrupted = tuple(t.name for t in snap.tasks if t.interrupts or t.error is not None)
    path.failed = tuple(t.name for t in snap.tasks if t.error is not None)
    if not snap.next and line and path.recorded:
        path.finished = True
        for a in ran_nodes(line[-1]):
            path.edges[(a, END)] += 1
        path.visits[END] += 1
    if deep:
        _inline_runs(view, path, [ns for e in line for ns in e.subgraphs])
    return path


def _inline_runs(view: ThreadView, path: ThreadPath, runs: list[str]) -> None:
    """Add the subgraph runs' own paths to `path` under their node's name, and route the
    edges into and out of a subgraph node through the nodes its runs began and ended with
    (`--xray` draws no node for the subgraph itself: `prepare --> research:gather`)."""
    from statectl.core.state import ThreadView
    from statectl.core.timeline import run_node

    for ns in runs:
        node = run_node(ns)
        sub = thread_path(ThreadView(view.source, view.thread_id, ns, graph=view.graph), line_only=False, deep=True)
        for name, n in sub.visits.items():
            if name not in (START, END):
                path.visits[f"{node}:{name}"] += n
        firsts, lasts = set(), set()
        for (a, b), n in sub.edges.items():
            if a == START:
                firsts.add(f"{node}:{b}")
            elif b == END:
                lasts.add(f"{node}:{a}")
            else:
                path.edges[(f"{node}:{a}", f"{node}:{b}")] += n
        for (a, b), n in list(path.edges.items()):
            if b == node:
                for first in firsts:
                    path.edges[(a, first)] += n
            if a == node:
                for last in lasts:
                    path.edges[(last, b)] += n
        if node in path.pending:
            path.pending += tuple(f"{node}:{n}" for n in sub.pending)
        if node in path.interrupted:
            path.interrupted += tuple(f"{node}:{n}" for n in sub.interrupted)
        if node in path.failed:
            path.failed += tuple(f"{node}:{n}" for n in sub.failed)


PSEUDO = {"input", "update_state", "fork", "Command(update)", "task", ""}
"""Writers in the log that are not graph nodes (run input, update_state, resume input, tasks)."""


def ran_nodes(e: LogEntry) -> tuple[str, ...]:
    return tuple(n for n in e.ran if n not in PSEUDO and "→" not in n and not n.startswith("send["))


def overlay(text: str, nodes: list[str], path: ThreadPath) -> str:
    """LangGraph's Mermaid text with the path drawn on it: visited nodes (with visit counts)
    and edges taken highlighted, unvisited nodes dimmed, `next` and interrupted nodes marked.
    Nodes and edges are LangGraph's own; only labels and styles are added."""
    names = {safe_id(n): n for n in nodes}
    edges = [(names.get(m.group(1)), names.get(m.group(3))) for m in map(EDGE_LINE.match, text.splitlines()) if m]
    out = text.rstrip("\n") + "\n"
    for name in nodes:
        if name in path.visits and name not in (START, END):
            label = f"{name.split(':')[-1]} ×{path.visits[name]}"
            out += f'\t{safe_id(name)}("{label}")\n'
    out += STYLES
    if not path.recorded:
        out = _titled(out, f"thread {path.thread_id}: {no_steps(path)}")
    groups = {
        "visited": [n for n in nodes if n in path.visits or (n == START and path.visits)],
        "unvisited": [
            n
            for n in nodes
            if n not in path.visits
            and not (n == START and path.visits)
            and n not in path.pending
            and n not in path.interrupted
        ],  # one class each
        "pending": [n for n in nodes if n in path.pending and n not in path.interrupted],
        "interrupted": [n for n in nodes if n in path.interrupted],
    }
    if not path.recorded:  # neither visited nor unvisited is known
        del groups["visited"], groups["unvisited"]
    for cls, members in groups.items():
        if members:
            out += f"\tclass {','.join(safe_id(n) for n in members)} {cls}\n"
    taken = [i for i, e in enumerate(edges) if e in path.edges]
    if taken:
        out += f"\tlinkStyle {','.join(map(str, taken))} stroke:#1b7f3b,stroke-width:3px\n"
    return out


def _titled(text: str, title: str) -> str:
    """Mermaid text with a front-matter title (added to LangGraph's front matter, if any)."""
    line = f"title: {json.dumps(title)}\n"
    if text.startswith("---\n"):
        return "---\n" + line + text[4:]
    return "---\n" + line + "---\n" + text


# -- inferred from history ------------------------------------------------------------------------
def inferred(view: ThreadView) -> str:
    """The graph a thread's history shows (every branch): nodes seen running, and the
    transitions observed between supersteps, with how often; labelled as inferred."""
    path = thread_path(view, line_only=False)
    nodes = [START] + [n for n in path.visits if n not in (START, END)] + [END]
    title = (
        f"inferred from the history of thread {view.thread_id}"
        + (f" (ns {view.checkpoint_ns})" if view.checkpoint_ns else "")
        + ", not from the graph's code"
        + ("" if path.recorded else f"; {no_steps(path)}")
    )
    lines = ["---", f"title: {json.dumps(title)}", "---", "graph TD;"]
    for name in nodes:
        if name in (START, END):
            lines.append(f"\t{safe_id(name)}([<p>{name}</p>]):::{'first' if name == START else 'last'}")
        else:
            lines.append(f'\t{safe_id(name)}("{name} ×{path.visits[name]}")')
    for (a, b), n in path.edges.items():
        lines.append(f'\t{safe_id(a)} -- "{n}×" --> {safe_id(b)};')
    lines += [
        "\tclassDef default fill:#f2f0ff,line-height:1.2",
        "\tclassDef first fill-opacity:0",
        "\tclassDef last fill:#bfb6fc",
    ]
    pending = [n for n in path.pending if n in nodes]
    text = "\n".join(lines) + "\n" + STYLES
    if pending:
        text += f"\tclass {','.join(safe_id(n) for n in pending)} pending\n"
    return text


def term_title(target: str | None, view: ThreadView | None = None) -> str:
    if target is not None:
        return f"graph {target}" + (f" — thread {view.thread_id}" if view is not None else "")
    assert view is not None, "an inferred graph is a thread's"
    return (
        f"inferred from the history of thread {view.thread_id}"
        + (f" (ns {view.checkpoint_ns})" if view.checkpoint_ns else "")
        + ", not from the graph's code"
    )
