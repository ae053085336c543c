"""A graph drawn in the terminal with box-drawing characters (`graph --format term`, the TUI's
graph view): nodes in layers top to bottom, edges routed orthogonally between them, edges that
go back up (loops) routed in lanes on the right, conditional edges dotted.

A small layered (Sugiyama-style) layout: back edges found by a depth-first walk from START,
layers by longest path, dummy nodes where an edge spans layers, order within a layer by
barycentre sweeps, x by centring over neighbours. The result is a grid of characters and one
semantic tag per cell (`render.graph_text` colours it); nothing here imports Rich.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import pairwise

START, END = "__start__", "__end__"
U, D, L, R = 1, 2, 4, 8
LINES = {
    U | D: "│",
    L | R: "─",
    D | R: "┌",
    D | L: "┐",
    U | R: "└",
    U | L: "┘",
    U | D | R: "├",
    U | D | L: "┤",
    D | L | R: "┬",
    U | L | R: "┴",
    U | D | L | R: "┼",
    U: "│",
    D: "│",
    L: "─",
    R: "─",
}
DOTTED = {"│": "┆", "─": "┄"}
BOXES = {  # corners and sides: ┌ ┐ └ ┘ ─ │
    "plain": "┌┐└┘─│",
    "start": "╭╮╰╯─│",
    "next": "╔╗╚╝═║",
    "selected": "┏┓┗┛━┃",
}
GAP = 3
"""Columns between two nodes of a layer."""


@dataclass
class Mark:
    """How a node is shown: its state on the thread's path, and what the label adds."""

    state: str = "plain"
    """plain (no path given), visited, unvisited, next, interrupted, failed."""
    visits: int = 0
    selected: bool = False
    """It ran at the step selected in the TUI."""


@dataclass
class Drawing:
    """Lines of characters, and per cell a tag (None: blank): `node:STATE`, `selected`,
    `edge`, `edge:taken`, `label`, `legend`."""

    chars: list[list[str]] = field(default_factory=list)
    tags: list[list[str | None]] = field(default_factory=list)

    @property
    def width(self) -> int:
        return max((len(r) for r in self.chars), default=0)

    def lines(self) -> list[str]:
        return ["".join(r).rstrip() for r in self.chars]

    def put(self, x: int, y: int, ch: str, tag: str | None) -> None:
        while len(self.chars) <= y:
            self.chars.append([])
            self.tags.append([])
        row, tags = self.chars[y], self.tags[y]
        if len(row) <= x:
            row.extend(" " * (x + 1 - len(row)))
            tags.extend([None] * (x + 1 - len(tags)))
        row[x], tags[x] = ch, tag

    def text(self, x: int, y: int, text: str, tag: str | None) -> None:
        for i, ch in enumerate(text):
            self.put(x + i, y, ch, tag)


def label(name: str, mark: Mark | None) -> str:
    text = name
    if mark is not None:
        if mark.visits:
            text += f" ×{mark.visits}"
        if mark.state == "interrupted":
            text += " ⏸"
        elif mark.state == "failed":
            text += " ✖"
    return text


LEGEND = "━ ran at this step   ═ next   ×N runs   ⏸ waiting   ✖ failed   ┄ ▽ conditional"


def draw(
    nodes: list[str],
    edges: list[tuple[str, str, bool]],
    marks: dict[str, Mark] | None = None,
    taken: set[tuple[str, str]] | frozenset = frozenset(),
    names: dict[str, str] | None = None,
) -> Drawing:
    """Lay out and draw. `edges`: (source, target, conditional); `marks`: per node; `taken`:
    the (source, target) pairs the thread's path went along; `names`: a shorter label per node."""
    marks = marks or {}
    names = names or {}
    order = list(dict.fromkeys([*nodes, *(e[0] for e in edges), *(e[1] for e in edges)]))
    cond: dict[tuple[str, str], bool] = {}
    for a, b, c in edges:
        cond[(a, b)] = cond.get((a, b), True) and bool(c)
    succ: dict[str, list[str]] = defaultdict(list)
    for a, b in cond:
        succ[a].append(b)
    back = _back_edges(order, succ)
    forward = [(a, b) for a, b in cond if (a, b) not in back]
    layer = _layers(order, forward)
    segments, dummies = _segments(forward, layer)
    layers = _order(order, layer, segments, dummies)
    text = {n: label(names.get(n, n), marks.get(n)) for n in order}
    width = {n: 1 if n in dummies else len(text[n]) + 4 for n in layer}
    x = _place(layers, segments, width)

    def center(n: str) -> int:
        return x[n] + width[n] // 2

    # vertical space: each layer's boxes (3 rows), then a gap with one track per source that
    # turns, the back edges leaving or arriving, and a row for the arrowheads
    tracks: dict[int, list[tuple[str, str]]] = defaultdict(list)  # gap index (layer below) -> owners
    for u, v, _e in segments:
        if center(u) != center(v) and ("f", u) not in tracks[layer[v]]:
            tracks[layer[v]].append(("f", u))
    loops = sorted(back, key=lambda e: (layer[e[0]], x[e[0]]))
    for i, (a, b) in enumerate(loops):
        tracks[layer[a] + 1].append(("out", f"{i}"))
        tracks[layer[b]].insert(0, ("in", f"{i}"))
    top, gap_rows = _rows(len(layers), tracks)
    lines = _Lines(cond, taken)
    for u, v, edge in segments:
        arrow_row = top[layer[v]] - 1
        sx, tx = center(u), center(v)
        y0 = top[layer[u]] + 2  # (a box's bottom border: the box is drawn over it)
        if u in dummies:
            lines.line(u, sx, top[layer[u]], sx, top[layer[u]] + 2, edge)
        if sx == tx:
            lines.line(u, sx, y0, sx, arrow_row, edge)
        else:  # down to its source's track, along it, down to the target
            row = gap_rows[layer[v]] + tracks[layer[v]].index(("f", u))
            lines.line(u, sx, y0, sx, row, edge)
            lines.line(u, sx, row, tx, row, edge)
            lines.line(u, tx, row, tx, arrow_row, edge)
        if v in dummies:
            lines.line(u, tx, arrow_row, tx, top[layer[v]], edge)
        else:
            lines.arrived[(tx, arrow_row)].append(edge)
    right = max((x[n] + width[n] for n in layer), default=0) + 2
    for i, (a, b) in enumerate(loops):  # back edges: out to a lane right of everything, and up
        lane = right + 2 * i
        out_row = gap_rows[layer[a] + 1] + tracks[layer[a] + 1].index(("out", f"{i}"))
        in_row = gap_rows[layer[b]] + tracks[layer[b]].index(("in", f"{i}"))
        sx, tx = center(a), center(b) + (1 if width[b] > 2 else 0)
        lines.path(
            ("back", i),
            [
                (sx, top[layer[a]] + 2),
                (sx, out_row),
                (lane, out_row),
                (lane, in_row),
                (tx, in_row),
                (tx, top[layer[b]] - 1),
            ],
            (a, b),
        )
        lines.arrived[(tx, top[layer[b]] - 1)].append((a, b))
    out = Drawing()
    lines.paint(out)
    leaving = {u for u, _v, _e in segments} | {a for a, _b in back}
    for n in layer:
        if n not in dummies:
            _box(
                out,
                x[n],
                top[layer[n]],
                width[n],
                text[n],
                marks.get(n),
                n in (START, END),
                center(n) if n in leaving else None,
            )
    return out


def _segments(
    forward: list[tuple[str, str]], layer: dict[str, int]
) -> tuple[list[tuple[str, str, tuple[str, str]]], set[str]]:
    """Forward edges cut into segments between adjacent layers, with a dummy node (added to
    `layer`) in each layer an edge spans."""
    segments: list[tuple[str, str, tuple[str, str]]] = []
    dummies: set[str] = set()
    for a, b in forward:
        prev = a
        for i in range(layer[a] + 1, layer[b]):
            d = f"\0{a}\0{b}\0{i}"
            layer[d] = i
            dummies.add(d)
            segments.append((prev, d, (a, b)))
            prev = d
        segments.append((prev, b, (a, b)))
    return segments, dummies


def _rows(depth: int, tracks: dict[int, list[tuple[str, str]]]) -> tuple[dict[int, int], dict[int, int]]:
    """The top row of each layer's boxes, and of each gap (its tracks, then the arrowheads)."""
    top: dict[int, int] = {}
    gap_rows: dict[int, int] = {}
    y = 0
    for i in range(depth + 1):
        if i in tracks or 0 < i < depth:
            gap_rows[i] = y
            y += len(tracks.get(i, ())) + 1
        if i < depth:
            top[i] = y
            y += 3
    return top, gap_rows


class _Lines:
    """The edges' cells: which line groups pass each cell and how (U/D/L/R bits), the
    (conditional, taken) kinds of the edges there, and the arrowhead cells."""

    def __init__(self, cond: dict[tuple[str, str], bool], taken: set[tuple[str, str]] | frozenset) -> None:
        self.cond, self.taken = cond, taken
        self.cells: dict[tuple[int, int], dict[object, int]] = defaultdict(dict)
        self.kinds: dict[tuple[int, int], list[tuple[bool, bool]]] = defaultdict(list)
        self.arrived: dict[tuple[int, int], list[tuple[str, str]]] = defaultdict(list)
        """Arrowhead cells, and the edges that end there."""

    def line(self, group: object, x0: int, y0: int, x1: int, y1: int, edge: tuple[str, str]) -> None:
        info = (self.cond.get(edge, False), edge in self.taken)
        if x0 == x1:
            lo, hi = sorted((y0, y1))
            cells = [((x0, yy), (U if yy > lo else 0) | (D if yy < hi else 0)) for yy in range(lo, hi + 1)]
        else:
            lo, hi = sorted((x0, x1))
            cells = [((xx, y0), (L if xx > lo else 0) | (R if xx < hi else 0)) for xx in range(lo, hi + 1)]
        for cell, bits in cells:
            self.cells[cell][group] = self.cells[cell].get(group, 0) | bits
            self.kinds[cell].append(info)

    def path(self, group: object, points: list[tuple[int, int]], edge: tuple[str, str]) -> None:
        for (x0, y0), (x1, y1) in pairwise(points):
            self.line(group, x0, y0, x1, y1, edge)

    def paint(self, out: Drawing) -> None:
        for (cx, cy), groups in self.cells.items():
            bits = 0
            through = [g for g, b in groups.items() if b == U | D]
            if len(groups) > 1 and through and any(b == L | R for b in groups.values()):
                bits = U | D  # two edges crossing: the vertical one drawn over, no junction
            else:
                for b in groups.values():
                    bits |= b
            ch = LINES.get(bits, "·")
            infos = self.kinds[(cx, cy)]
            if ch in DOTTED and all(c for c, _ in infos):
                ch = DOTTED[ch]
            out.put(cx, cy, ch, "edge:taken" if any(t for _, t in infos) else "edge")
        for (ax, ay), ends in self.arrived.items():  # (shared: any solid edge makes it solid)
            solid = any(not self.cond.get(e, False) for e in ends)
            out.put(ax, ay, "▼" if solid else "▽", "edge:taken" if any(e in self.taken for e in ends) else "edge")


def _box(
    out: Drawing, bx: int, by: int, w: int, text: str, mark: Mark | None, terminal: bool, leaves_at: int | None
) -> None:
    """A node's box, bordered by its mark (selected, next, ran, waiting) or as START/END."""
    state = mark.state if mark is not None else "plain"
    style = (
        "selected"
        if mark is not None and mark.selected
        else "next"
        if state == "next"
        else "start"
        if terminal
        else "plain"
    )
    tl, tr, bl, br, h, v = list(BOXES[style])
    tag = "selected" if style == "selected" else f"node:{state}"
    out.text(bx, by, tl + h * (w - 2) + tr, tag)
    out.text(bx, by + 1, v + " ", tag)
    out.text(bx + 2, by + 1, text, f"label:{state}" if style != "selected" else "selected")
    out.text(bx + w - 2, by + 1, " " + v, tag)
    out.text(bx, by + 2, bl + h * (w - 2) + br, tag)
    if leaves_at is not None:
        out.put(leaves_at, by + 2, {"━": "┳", "═": "╤"}.get(h, "┬"), tag)


def _back_edges(order: list[str], succ: dict[str, list[str]]) -> set[tuple[str, str]]:
    """Edges to a node still on the depth-first stack (START first, then the rest in order)."""
    state: dict[str, int] = {}
    back: set[tuple[str, str]] = set()
    rank = {n: i for i, n in enumerate(order)}

    def after(v: str) -> list[str]:  # (successors in the given order, END last)
        return sorted(succ.get(v, ()), key=lambda n: (n == END, rank[n]))

    roots = [START] if START in order else []
    for root in [*roots, *order]:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(after(root)))]
        while stack:
            v, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[v] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                back.add((v, nxt))
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(after(nxt))))
    return back


def _layers(order: list[str], forward: list[tuple[str, str]]) -> dict[str, int]:
    """Longest path from the sources; END alone on the last layer."""
    preds: dict[str, list[str]] = defaultdict(list)
    for a, b in forward:
        preds[b].append(a)
    layer: dict[str, int] = {}

    def depth(n: str, seen: frozenset = frozenset()) -> int:
        if n not in layer:
            layer[n] = 1 + max((depth(p, seen | {n}) for p in preds[n] if p not in seen), default=-1)
        return layer[n]

    for n in order:
        depth(n)
    if END in layer and len(layer) > 1:
        layer[END] = max(v for k, v in layer.items() if k != END) + 1
    return layer


def _order(
    order: list[str], layer: dict[str, int], segments: list[tuple[str, str, tuple[str, str]]], dummies: set[str]
) -> list[list[str]]:
    """Nodes per layer, ordered by barycentre sweeps (first seen order to start)."""
    depth = max(layer.values(), default=-1) + 1
    layers: list[list[str]] = [[] for _ in range(depth)]
    rank = {n: i for i, n in enumerate(order)}
    for n in sorted(layer, key=lambda n: rank.get(n, len(rank))):
        layers[layer[n]].append(n)
    up: dict[str, list[str]] = defaultdict(list)
    down: dict[str, list[str]] = defaultdict(list)
    for u, v, _e in segments:
        down[u].append(v)
        up[v].append(u)
    for _ in range(4):
        for i in range(1, depth):
            _sweep(layers[i], layers[i - 1], up)
        for i in range(depth - 2, -1, -1):
            _sweep(layers[i], layers[i + 1], down)
    return layers


def _sweep(row: list[str], other: list[str], nbrs: dict[str, list[str]]) -> None:
    """Sort `row` by the mean position of each node's neighbours in `other` (a node without
    any keeps its place)."""
    pos = {n: j for j, n in enumerate(other)}
    here = {n: j for j, n in enumerate(row)}

    def bary(n: str) -> float:
        got = [pos[m] for m in nbrs.get(n, ()) if m in pos]
        return sum(got) / len(got) if got else float(here[n])

    row.sort(key=bary)


def _place(
    layers: list[list[str]], segments: list[tuple[str, str, tuple[str, str]]], width: dict[str, int]
) -> dict[str, int]:
    """x of each node's left edge: packed, then centred over its neighbours (down, then up),
    never overlapping, never left of 0."""
    x: dict[str, int] = {}
    for row in layers:
        at = 0
        for n in row:
            x[n] = at
            at += width[n] + GAP
    up: dict[str, list[str]] = defaultdict(list)
    down: dict[str, list[str]] = defaultdict(list)
    for u, v, _e in segments:
        down[u].append(v)
        up[v].append(u)

    def settle(row: list[str], nbrs: dict[str, list[str]]) -> None:
        """Each node where its neighbours' mean centre wants it, pushed right of the previous
        one; then the row moved back left by the push it took on average."""
        want = {}
        for n in row:
            cs = [x[m] + width[m] // 2 for m in nbrs.get(n, ()) if m in x]
            want[n] = round(sum(cs) / len(cs)) - width[n] // 2 if cs else x[n]
        at = -(10**9)
        for n in row:
            x[n] = max(want[n], at)
            at = x[n] + width[n] + GAP
        shift = round(sum(x[n] - want[n] for n in row) / len(row)) if row else 0
        for n in row:
            x[n] -= shift

    for _ in range(3):
        for row in layers[1:]:
            settle(row, up)
        for row in reversed(layers[:-1]):
            settle(row, down)
    low = min(x.values(), default=0)
    return {n: v - low for n, v in x.items()}
