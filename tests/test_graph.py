"""`statectl graph`: LangGraph's nodes and edges, a thread's path on them, the graph inferred
from history; every text checked with Mermaid's own parser (tests/mermaid/parse.mjs)."""

from __future__ import annotations

import json
import sys

import pytest
from parity import GRAPHS, SAMPLES

import statectl
from statectl.core.mermaid import NO_STEPS
from statectl.project import target

sys.path.insert(0, str(SAMPLES))


def _spec(name: str) -> str:
    return str(SAMPLES / name)


def _structure(parsed: dict) -> tuple[set, list]:
    assert parsed["ok"], parsed.get("error")
    return set(parsed["vertices"]), sorted(map(tuple, parsed["edges"]))


def test_nodes_and_edges_are_langgraphs_own(run, mermaid_parse):
    ours, theirs = [], []
    for name in GRAPHS:
        for xray in (False, True):
            r = run("graph", _spec(name), *(["--xray"] if xray else []))
            assert r.code == 0, r.err
            ours.append(r.out)
            graph = target.compiled(target.load(_spec(name)))
            theirs.append(graph.get_graph(xray=xray).draw_mermaid())
    parsed = mermaid_parse(ours + theirs)
    for i, (a, b) in enumerate(zip(parsed[: len(ours)], parsed[len(ours) :], strict=True)):
        assert _structure(a) == _structure(b), list(GRAPHS)[i // 2]
    # unescaped, the ids are the node names, `parent:child` inside a subgraph
    nested = _structure(parsed[list(GRAPHS).index("custom_app.py:nested_builder") * 2 + 1])[0]
    assert nested == {"__start__", "prepare", "research\\3agather", "research\\3adeep\\3adig", "report", "__end__"}


def test_thread_path_overlay(run, mermaid_parse):
    texts, cases = [], []
    for name, (db, threads) in GRAPHS.items():
        for thread in threads:
            r = run("graph", _spec(name), "--db", str(SAMPLES / f"{db}.sqlite"), "--thread", thread)
            assert r.code == 0, r.err
            texts.append(r.out)
            cases.append((name, db, thread))
    plain = [run("graph", _spec(name)).out for name, _, _ in cases]
    parsed = mermaid_parse(texts + plain)
    for i, (name, db, thread) in enumerate(cases):
        # the path adds labels and styles, never a node or an edge
        assert _structure(parsed[i]) == _structure(parsed[len(cases) + i]), (name, thread)
        text = texts[i]
        assert "classDef visited" in text
        view = statectl.open(str(SAMPLES / f"{db}.sqlite")).view(thread)
        from statectl.core.mermaid import safe_id, thread_path

        path = thread_path(view)
        visited = [n for n in path.visits if n not in ("__start__", "__end__")]
        if thread == "saved-at-exit":  # durability="exit": one checkpoint, no step recorded
            assert not visited
            assert not path.recorded
            assert NO_STEPS in text
            assert " visited\n" not in text
            assert " unvisited\n" not in text
            continue
        assert visited, (name, thread)
        assert path.recorded, (name, thread)
        assert "\tclass " in text, (name, thread)
        for node in visited:  # each visited node is labelled with its visit count
            assert parsed[i]["vertices"][safe_id(node)] == f"{node.split(':')[-1]} ×{path.visits[node]}"


def test_xray_overlay_goes_inside_subgraph_runs(run, mermaid_parse):
    """With --xray the subgraph's own nodes are drawn (`research:gather`): the visits of its
    runs (read from their namespaces) are counted on them, and the edges into and out of the
    subgraph are the ones taken; for every sample, the overlay still adds no node or edge."""
    texts, plain = [], []
    for name, (db, threads) in GRAPHS.items():
        for thread in threads:
            r = run("graph", _spec(name), "--xray", "--db", str(SAMPLES / f"{db}.sqlite"), "--thread", thread)
            assert r.code == 0, r.err
            texts.append(r.out)
            plain.append(run("graph", _spec(name), "--xray").out)
    parsed = mermaid_parse(texts + plain)
    for a, b in zip(parsed[: len(texts)], parsed[len(texts) :], strict=True):
        assert _structure(a) == _structure(b)
    nested = next(i for i, t in enumerate(texts) if "research\\3agather" in t)
    vertices = parsed[nested]["vertices"]
    assert vertices["research\\3agather"] == "gather ×1"
    assert vertices["research\\3adeep\\3adig"] == "dig ×1"
    lines = texts[nested].splitlines()
    assert not any(line.endswith(" unvisited") for line in lines)  # every node ran once
    edges = len(parsed[nested]["edges"])
    taken = next(line for line in lines if line.startswith("\tlinkStyle ")).split()[1].split(",")
    assert sorted(map(int, taken)) == list(range(edges))
    assert edges == 5


def test_overlay_marks_the_interrupted_node_and_dims_the_unvisited(run):
    r = run("graph", _spec("agent_app.py:agent"), "--db", str(SAMPLES / "agent.sqlite"), "--thread", "investor-email")
    lines = r.out.splitlines()
    interrupted = next(line for line in lines if line.endswith(" interrupted"))
    assert "HumanInTheLoopMiddleware\\2eafter_model" in interrupted
    unvisited = next(line for line in lines if line.endswith(" unvisited"))
    assert "tools" in unvisited.split()[1].split(",")
    assert any(line.startswith("\tlinkStyle ") for line in lines)


def _classes(text: str) -> dict[str, set[str]]:
    """Overlay class -> node ids, from the `class a,b name` lines."""
    out: dict[str, set[str]] = {}
    for line in text.splitlines():
        if line.startswith("\tclass "):
            _, ids, cls = line.split()
            out.setdefault(cls, set()).update(ids.split(","))
    return out


def test_overlay_marks_an_interrupt_inside_a_subgraph(run, mermaid_parse):
    """Waiting in the `review` subgraph's `check` node: without --xray the subgraph node is the
    interrupted one, with --xray the node inside it; once resumed, both ran and none waits."""
    spec, db = _spec("interrupts_app.py:subgraph_builder"), str(SAMPLES / "interrupts.sqlite")
    flat = run("graph", spec, "--db", db, "--thread", "subgraph-waiting").out
    deep = run("graph", spec, "--xray", "--db", db, "--thread", "subgraph-waiting").out
    done = run("graph", spec, "--xray", "--db", db, "--thread", "subgraph-resumed").out
    assert all(p["ok"] for p in mermaid_parse([flat, deep, done]))
    assert _classes(flat)["interrupted"] == {"review"}
    assert "review" not in _classes(flat)["unvisited"]
    assert _classes(flat)["visited"] == {"__start__", "plan"}
    assert _classes(deep)["interrupted"] == {"review\\3acheck"}
    assert _classes(deep)["unvisited"] == {"review\\3aapply", "finish", "__end__"}
    assert "interrupted" not in _classes(done)
    assert "unvisited" not in _classes(done)
    assert {"review\\3acheck", "review\\3aapply"} <= _classes(done)["visited"]


def test_inferred_graph_from_history_alone(run, mermaid_parse):
    texts, cases = [], []
    for db, threads in GRAPHS.values():
        for thread in threads:
            r = run("graph", "--db", str(SAMPLES / f"{db}.sqlite"), "--thread", thread)
            assert r.code == 0, r.err
            texts.append(r.out)
            cases.append((db, thread))
    for parsed, text, (db, thread) in zip(mermaid_parse(texts), texts, cases, strict=True):
        vertices, edges = _structure(parsed)
        assert "inferred from the history" in text
        if thread == "saved-at-exit":
            assert NO_STEPS in text
            assert not edges
            continue
        from statectl.core.mermaid import ran_nodes as _ran
        from statectl.core.mermaid import safe_id
        from statectl.core.timeline import entries

        ran = {n for e in entries(statectl.open(str(SAMPLES / f"{db}.sqlite")).view(thread)) for n in _ran(e)}
        assert {safe_id(n) for n in ran} <= vertices, thread
        assert edges
        assert all(a in vertices and b in vertices for a, b, _ in edges)


def test_inferred_edges_are_real_edges_of_the_graph(run, mermaid_parse):
    """What history shows is a subgraph of the real graph (for graphs without Send/Command jumps)."""
    name, db, thread = "custom_app.py:notes_builder", "custom", "notes-edits"
    inferred = run("graph", "--db", str(SAMPLES / f"{db}.sqlite"), "--thread", thread).out
    real = run("graph", _spec(name)).out
    a, b = mermaid_parse([inferred, real])
    assert {(s, t) for s, t, _ in a["edges"]} <= {(s, t) for s, t, _ in b["edges"]}


def test_markdown_fence(run, mermaid_parse):
    r = run("graph", _spec("custom_app.py:notes_builder"), "--format", "md")
    assert r.out.startswith("```mermaid\n")
    assert r.out.endswith("```\n")
    assert mermaid_parse([r.out[len("```mermaid\n") : -len("```\n")]])[0]["ok"]


@pytest.mark.parametrize(
    "spec, message",
    [
        ("agent_app", "is not MODULE:ATTR or path/to/file.py:ATTR"),
        ("nowhere/missing.py:graph", "no such file: nowhere/missing.py"),
        ("no_such_module_xyz:graph", "no module named 'no_such_module_xyz'"),
        ("{samples}/agent_app.py:nothing_here", "has no attribute 'nothing_here'"),
        ("{samples}/agent_app.py:save_business_idea", "not a LangGraph graph"),
        ("{samples}/custom_app.py:make_essay_workflow", "is a callable that needs arguments"),
    ],
)
def test_bad_targets_are_one_line(run, spec, message):
    for command in (["graph"], ["schema"]):
        r = run(*command, spec.format(samples=SAMPLES))
        assert r.code == 2, r.err
        assert r.err.count("\n") == 1, r.err
        assert message in r.err, r.err
        assert "internal error" not in r.err


def test_a_target_that_raises_on_import_is_one_line(run, tmp_path):
    bad = tmp_path / "broken.py"
    bad.write_text("raise RuntimeError('boom at import')\n")
    r = run("graph", f"{bad}:graph")
    assert r.code == 2
    assert r.err == f"statectl: importing {bad} failed: RuntimeError: boom at import\n"


def test_graph_needs_a_target_or_a_thread(run):
    r = run("graph")
    assert r.code == 2
    assert r.err.startswith("statectl: give a TARGET")
    r = run("graph", _spec("custom_app.py:notes_builder"), "--format", "png")
    assert r.code == 2
    assert "unknown --format 'png'" in r.err


def test_graph_json_has_the_mermaid_structure(run, mermaid_parse):
    """--json: the same nodes and edges Mermaid draws (checked by Mermaid's parser), the
    thread's path with its visit counts; the inferred graph as data, marked inferred."""
    names = list(GRAPHS)
    drawn = [run("graph", _spec(name)).out for name in names]
    parsed = mermaid_parse(drawn)
    for name, p in zip(names, parsed, strict=True):
        data = json.loads(run("graph", _spec(name), "--json").out)
        vertices, edges = _structure(p)
        from statectl.core.mermaid import safe_id

        assert {safe_id(n["id"]) for n in data["nodes"]} == vertices, name
        assert sorted((safe_id(e["source"]), safe_id(e["target"])) for e in data["edges"]) == sorted(
            (a, b) for a, b, *_ in edges
        ), name
    name, (db, threads) = next(iter(GRAPHS.items()))
    thread = next(t for t in threads if t != "saved-at-exit")
    db_path = str(SAMPLES / f"{db}.sqlite")
    data = json.loads(run("graph", _spec(name), "--db", db_path, "--thread", thread, "--json").out)
    view = statectl.open(str(SAMPLES / f"{db}.sqlite")).view(thread)
    from statectl.core.mermaid import thread_path

    assert data["path"]["visits"] == dict(thread_path(view).visits)
    assert data["path"]["thread_id"] == thread
    inferred = json.loads(run("graph", "--db", str(SAMPLES / f"{db}.sqlite"), "--thread", thread, "--json").out)
    assert inferred["inferred"] is True
    assert inferred["nodes"][0] == "__start__"
    assert all(e["count"] > 0 for e in inferred["edges"])


def _boxes(lines: list[str]) -> dict[str, tuple[int, int, int, int]]:
    """The boxes of a terminal drawing: label -> (top row, left col, right col, bottom row)."""
    corners = {"┌": "┐", "╭": "╮", "╔": "╗", "┏": "┓"}
    boxes = {}
    for y, line in enumerate(lines):
        for x, ch in enumerate(line):
            if (
                ch in corners
                and y + 2 < len(lines)
                and lines[y + 2][x : x + 1] in ("└", "╰", "╚", "┗")
                and lines[y + 1][x : x + 1] in ("│", "║", "┃")
            ):
                right = line.index(corners[ch], x)
                label = lines[y + 1][x + 1 : right].strip()
                boxes[label] = (y, x, right, y + 2)
    return boxes


def test_term_draws_every_node_once_with_its_edges(run):
    """`graph --format term`: one box per LangGraph node; every node an edge enters has an
    arrowhead over its box, every node an edge leaves a ┬ under it; conditional edges dotted."""
    for name in GRAPHS:
        r = run("graph", _spec(name), "--format", "term")
        assert r.code == 0, (name, r.err)
        lines = r.out.rstrip("\n").splitlines()[1:-1]  # (title, legend)
        graph = target.compiled(target.load(_spec(name))).get_graph()
        boxes = _boxes(lines)
        assert sorted(boxes) == sorted(graph.nodes), name
        for node, (top, left, right, bottom) in boxes.items():
            incoming = any(e.target == node for e in graph.edges)
            outgoing = any(e.source == node for e in graph.edges)
            above = lines[top - 1][left : right + 1] if top else ""
            assert ("▼" in above or "▽" in above) == incoming, (name, node, above)
            assert any(c in lines[bottom][left : right + 1] for c in "┬┳╤") == outgoing, (name, node)
        dotted = any(c in "\n".join(lines) for c in "┄┆▽")
        assert dotted == any(e.conditional for e in graph.edges), name


def test_term_with_a_thread_marks_its_path(run):
    db = str(SAMPLES / "agent.sqlite")
    r = run("graph", _spec("agent_app.py:agent"), "--db", db, "--thread", "investor-email", "--format", "term")
    assert r.code == 0
    assert "\x1b" not in r.out
    lines = r.out.splitlines()
    assert lines[0] == f"graph {_spec('agent_app.py:agent')} — thread investor-email"
    boxes = _boxes(lines)
    assert "HumanInTheLoopMiddleware.after_model ⏸" in boxes
    assert "model ×1" in boxes
    assert "tools" in boxes  # (not run: no count)
    inferred = run(
        "graph", "--db", str(SAMPLES / "interrupts.sqlite"), "--thread", "parallel-waiting", "--format", "term"
    )
    assert inferred.out.startswith("inferred from the history of thread parallel-waiting, not from the graph's code")
    assert "ask ⏸" in _boxes(inferred.out.splitlines())
    assert "__end__" not in inferred.out
    interrupts = str(SAMPLES / "interrupts.sqlite")
    resumed = run("graph", "--db", interrupts, "--thread", "breakpoint-before", "--format", "term")
    top, left, _right, _ = _boxes(resumed.out.splitlines())["second"]
    assert resumed.out.splitlines()[top][left] == "╔"  # next: a double border


def test_term_escapes_node_names_before_drawing_them():
    """A node name from the data with control characters (inferred graphs draw the data's
    names) is drawn escaped, its box measured on the escaped text: nothing raw, edges aligned."""
    from statectl.render.graph_text import term

    evil = "ev\x1b[2Jil"
    lines = term({"nodes": [START_NODE, evil], "edges": [{"source": START_NODE, "target": evil}]}).lines()
    assert not any("\x1b" in line for line in lines)
    box = next(i for i, line in enumerate(lines) if "ev\\x1b[2Jil" in line)
    assert len(lines[box - 1].strip()) == len(lines[box].strip()) == len(lines[box + 1].strip())


START_NODE = "__start__"


def test_a_missing_attribute_lists_the_modules_graphs(run):
    """`graph app.py:nope` listed every import (`AgentMiddleware, AgentState, Annotated, ...`),
    cut mid-word at 300 characters: it now names the graphs the file defines, as TARGETs."""
    r = run("graph", f"{SAMPLES / 'agent_app.py'}:nope")
    assert r.code == 2
    assert r.err.count("\n") == 1
    assert r.err.rstrip().endswith(f"(graphs in it: {SAMPLES / 'agent_app.py'}:agent)")
    assert "HumanMessage" not in r.err
    r = run("graph", f"{SAMPLES / 'custom_app.py'}:nope")
    assert r.err.rstrip().endswith("(and 1 more))")
    assert "custom_app.py:notes_builder" in r.err
