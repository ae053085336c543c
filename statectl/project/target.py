"""Load a graph named on the command line (`path/file.py:attr`, `package.module:attr`).

This is the only place statectl imports user code, and only for `schema TARGET` and
`graph TARGET`: the database-only paths never come here.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from statectl.errors import StatectlError


class TargetError(StatectlError):
    """A TARGET that cannot be imported or is not a graph."""

    exit_code = 2


def load(spec: str) -> Any:
    """The compiled graph (or StateGraph builder) that `spec` names. A callable with no
    arguments is called. The file's folder goes on sys.path first, as uvicorn does."""
    where, sep, attr = spec.rpartition(":")
    if not sep or not where or not attr:
        raise TargetError(
            f"target {spec!r} is not MODULE:ATTR or path/to/file.py:ATTR",
            "for example agent.py:graph or myapp.agents:agent",
        )
    try:
        module = _import(where)
    except TargetError:
        raise
    except SystemExit as exc:
        raise TargetError(f"importing {where} called sys.exit({exc.code})") from None
    except BaseException as exc:
        raise TargetError(f"importing {where} failed: {type(exc).__name__}: {_first_line(exc)}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise TargetError(f"{where} has no attribute {attr!r}", _graph_like(module, where))
        obj = getattr(obj, part)
    if callable(obj) and not _is_graph(obj):
        try:
            obj = obj()
        except TypeError as exc:
            raise TargetError(
                f"{spec} is a callable that needs arguments: {_first_line(exc)}",
                "point at a compiled graph, a StateGraph, or a function without arguments",
            ) from None
        except BaseException as exc:
            raise TargetError(f"calling {spec} failed: {type(exc).__name__}: {_first_line(exc)}") from None
    if not _is_graph(obj):
        raise TargetError(
            f"{spec} is a {type(obj).__name__}, not a LangGraph graph",
            "point at a compiled graph (create_agent, StateGraph.compile(), @entrypoint) or a StateGraph",
        )
    return obj


def _graph_like(module: Any, where: str, most: int = 8) -> str:
    """What a TARGET in `module` could name: its graphs (compiled, StateGraph builders), else the
    functions it defines that take no arguments (a graph factory); never what it imports."""
    import inspect

    graphs, factories = [], []
    for name, value in sorted(vars(module).items()):
        if name.startswith("_"):
            continue
        if _is_graph(value):
            graphs.append(name)
        elif inspect.isfunction(value) and getattr(value, "__module__", None) == module.__name__:
            try:
                needs = [
                    p
                    for p in inspect.signature(value).parameters.values()
                    if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                ]
            except (TypeError, ValueError):
                continue
            if not needs:
                factories.append(f"{name}()")
    found = graphs or factories
    if not found:
        return f"{where} defines no graph at module level: point at a compiled graph or a StateGraph"
    shown = ", ".join(f"{where}:{n}" for n in found[:most])
    more = f" (and {len(found) - most} more)" if len(found) > most else ""
    return f"{'graphs' if graphs else 'functions without arguments'} in it: {shown}{more}"


def _import(where: str) -> Any:
    path = Path(where)
    if where.endswith(".py") or path.suffix == ".py" or "/" in where or "\\" in where:
        if not path.is_file():
            raise TargetError(f"no such file: {where}")
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        name = path.stem
        if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path.resolve()):
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path.resolve())
        if spec is None or spec.loader is None:
            raise StatectlError(f"{path} cannot be loaded as a Python module", "give a .py file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as exc:
        if exc.name and where.startswith(exc.name):
            raise TargetError(
                f"no module named {where!r}", "run from the project folder, or give path/to/file.py:ATTR"
            ) from None
        raise


def _is_graph(obj: Any) -> bool:
    from langgraph.graph import StateGraph
    from langgraph.pregel import Pregel

    return isinstance(obj, (StateGraph, Pregel))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else ""


def parts(obj: Any) -> tuple[Any, Any]:
    """(compiled graph or None, StateGraph builder or None) of a loaded target."""
    from langgraph.graph import StateGraph

    if isinstance(obj, StateGraph):
        return None, obj
    return obj, getattr(obj, "builder", None)


def compiled(obj: Any) -> Any:
    """A compiled graph for drawing (a builder is compiled without a checkpointer)."""
    graph, builder = parts(obj)
    return graph if graph is not None else builder.compile()
