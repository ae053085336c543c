"""`schema TARGET` and `graph TARGET` in the project's own interpreter (`--python PATH`).

statectl does not depend on LangGraph: installed on its own (pipx, `uv tool`), it cannot import
the user's graph. Then it runs this module in the project's interpreter, as mypy's
`--python-executable` does: the module loads TARGET there, with the project's LangGraph, and
prints what `schema` and `graph` need as JSON on stdout. It imports only the standard library,
LangGraph and statectl's own pure-Python modules (schema, graph, target), which are put at the
*end* of that interpreter's path so that none of statectl's dependencies can shadow the project's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from statectl.core.graphspec import GraphSpec
    from statectl.core.schema import Schema

MARK = "\x1estatectl-introspect\x1e"
"""Precedes the JSON on stdout (the project's modules may print while they load)."""
BOOT = (
    "import sys; sys.path.append(sys.argv.pop(1)); "
    "from statectl.project.introspect import run_here; run_here(sys.argv[1:])"
)


def run_here(argv: list[str]) -> None:
    """In the project's interpreter: `schema TARGET`, `spec TARGET` or `graph TARGET XRAY` ->
    one JSON object."""
    from statectl.errors import StatectlError

    what, target = argv[0], argv[1]
    try:
        from statectl.project.target import load

        obj = load(target)
        if what == "schema":
            from statectl.project.schema import schema

            out: dict[str, Any] = schema(obj).to_json()
        elif what == "spec":
            from statectl.project.spec import extract

            out = extract(obj)
        else:
            from statectl.project import drawn_graph as graph

            xray = argv[2] == "1"
            text, nodes = graph.mermaid(obj, xray)
            out = {"mermaid": text, "nodes": nodes, "structure": graph.structure(obj, xray)}
    except StatectlError as exc:
        out = {"error": exc.message, "hint": exc.hint}
    except ImportError as exc:  # the project's interpreter has no LangGraph
        out = {
            "error": f"{sys.executable} cannot import {exc.name or 'langgraph'}",
            "hint": "give the interpreter of the project that builds the graph",
        }
    sys.stdout.write("\n" + MARK + json.dumps(out) + "\n")


def interpreter(python: str | None) -> str | None:
    """The interpreter to load TARGET in: `--python`, else None when statectl's own can import
    LangGraph, else the active virtualenv's or ./.venv's (an isolated install: pipx, uv tool)."""
    if python:
        return python
    import importlib.util

    if importlib.util.find_spec("langgraph") is not None:
        return None
    for env in (os.environ.get("VIRTUAL_ENV"), ".venv"):
        if not env:
            continue
        for exe in (Path(env) / "bin" / "python", Path(env) / "Scripts" / "python.exe"):
            if exe.is_file() and Path(env).resolve() != Path(sys.prefix).resolve():
                return str(exe)
    from statectl.errors import StatectlError

    raise StatectlError(
        "loading a TARGET needs LangGraph, and statectl's own environment has none (an isolated install)",
        "give the project's interpreter with --python PATH, or run from a folder "
        "with its .venv, or with its virtualenv active",
    )


def schema_of(data: dict) -> Schema:
    """A `schema.Schema` from `run_here`'s JSON."""
    from statectl.core.schema import Field, Schema

    return Schema(
        fields=[Field(**f) for f in data["fields"]],
        kind=data["kind"],
        sources=data["sources"],
        notes=data.get("notes", []),
        order_open=data.get("order_open", []),
        nodes=data.get("nodes", []),
    )


def run_python(python: str, argv: list[str], doing: str, timeout: float, stdin: str | None = None) -> Any:
    """`python ARGV` in the project's interpreter, from the current folder; its CompletedProcess
    (text). One line (StatectlError) where the interpreter is not there or runs past `timeout`;
    `doing` names the work in it."""
    from statectl.errors import StatectlError

    try:
        return subprocess.run(
            [python, *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
        )
    except FileNotFoundError:
        raise StatectlError(f"--python {python}: no such interpreter") from None
    except PermissionError:
        raise StatectlError(f"--python {python}: not an executable") from None
    except subprocess.TimeoutExpired:
        raise StatectlError(f"{doing} in {python} took more than {timeout:.0f} s") from None


def run_there(python: str, what: str, target: str, xray: bool = False, timeout: float = 120) -> dict:
    """Run `run_here` in `python` (from the current folder, as the user would import TARGET)."""
    from statectl.errors import StatectlError

    here = str(Path(__file__).resolve().parent.parent.parent)  # the folder holding the package (as launch.HERE)
    done = run_python(python, ["-c", BOOT, here, what, target, "1" if xray else "0"], f"loading {target}", timeout)
    try:
        out = json.loads(done.stdout.rpartition(MARK)[2]) if MARK in done.stdout else None
    except json.JSONDecodeError:
        out = None
    if not isinstance(out, dict):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
        raise StatectlError(f"loading {target} in {python} failed: {last}")
    if "error" in out:
        raise StatectlError(out["error"], out.get("hint"))
    return out


def load_schema(target: str, python: str | None = None) -> Schema:
    """TARGET's schema: loaded here when statectl's environment has LangGraph, else in the
    project's interpreter."""
    there = interpreter(python)
    if there is None:
        from statectl.project.schema import schema
        from statectl.project.target import load

        return schema(load(target))
    return schema_of(run_there(there, "schema", target))


def load_drawing(target: str, python: str | None, xray: bool, structure: bool = True) -> tuple[Any, str, list]:
    """TARGET's graph as LangGraph draws it: (its structure, None where not asked and it would be
    made here; its Mermaid; the nodes Mermaid names), loaded as `load_schema` loads it."""
    there = interpreter(python)
    if there is None:
        from statectl.project import drawn_graph as drawn
        from statectl.project.target import load

        obj = load(target)
        text, nodes = drawn.mermaid(obj, xray)
        return (drawn.structure(obj, xray) if structure else None), text, nodes
    out = run_there(there, "graph", target, xray)
    return out["structure"], out["mermaid"], out["nodes"]


def graph_spec(target: str, python: str | None = None) -> GraphSpec:
    """TARGET's channel specification (`graphspec.GraphSpec`, for `--graph`): read here when
    statectl's environment has LangGraph, else in the project's interpreter."""
    from statectl.core.graphspec import GraphSpec

    there = interpreter(python)
    if there is None:
        from statectl.project.spec import extract
        from statectl.project.target import load

        return GraphSpec.from_json(target, json.loads(json.dumps(extract(load(target)))))
    return GraphSpec.from_json(target, run_there(there, "spec", target))
