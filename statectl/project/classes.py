"""Would the project's interpreter find the classes stored values name? Answered without importing
any of them (`doctor`'s load-safety check).

Runs in the project's interpreter (`--python`, the active or ./.venv virtualenv's, as `schema
TARGET` chooses), from the current folder as the app would run. A module named by the data is
never imported: the interpreter's own finders locate its file (`find_spec` with the parent's
path: no parent package runs either), and the class is looked for in the file's syntax tree (a
class, function or assignment at the top of the module, or a name it imports). A module the
interpreter had already loaded at start (the standard library's core) is asked with getattr.
Standard library and statectl's own modules only.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

MARK = "\x1estatectl-classes\x1e"
BOOT = "import sys; sys.path.append(sys.argv.pop(1)); from statectl.project.classes import main; main()"

OK, MISSING_MODULE, MISSING_CLASS, UNKNOWN, MAIN = "ok", "missing module", "missing class", "unknown", "__main__"


def _find(module: str) -> tuple[Any, str | None]:
    """(the module's spec, None), or (None, the first dotted part that is not found)."""
    parts = module.split(".")
    path, spec = None, None
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        loaded = sys.modules.get(name)
        if loaded is not None:
            spec, path = getattr(loaded, "__spec__", None), getattr(loaded, "__path__", None)
            continue
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            try:
                spec = find(name, path)
            except Exception:  # (a finder that fails finds nothing)
                spec = None
            if spec is not None:
                break
        if spec is None and path:  # (Python's path finder fails on a namespace package's child)
            spec = _in_folders(name, path)
        if spec is None:
            return None, name
        # (a namespace package's path recomputes itself from its parent in sys.modules, which is
        # not there: nothing was imported; its folders as a plain list)
        path = None if spec.submodule_search_locations is None else list(spec.submodule_search_locations)
        if path is None and i < len(parts) - 1:
            return None, ".".join(parts[: i + 2])
    return spec, None


def _in_folders(name: str, folders: list[str]) -> Any:
    """The spec of `name` found in `folders` by Python's own file finder (a module, a package or a
    namespace package's folder), without the path finder, which needs the parent imported."""
    from importlib.machinery import (
        BYTECODE_SUFFIXES,
        EXTENSION_SUFFIXES,
        SOURCE_SUFFIXES,
        ExtensionFileLoader,
        FileFinder,
        SourceFileLoader,
        SourcelessFileLoader,
    )

    details = [
        (ExtensionFileLoader, EXTENSION_SUFFIXES),
        (SourceFileLoader, SOURCE_SUFFIXES),
        (SourcelessFileLoader, BYTECODE_SUFFIXES),
    ]
    namespace: Any = None
    for folder in folders:
        try:
            spec = FileFinder(folder, *details).find_spec(name)
        except (OSError, ImportError, ValueError):
            continue
        if spec is not None and spec.loader is not None:
            return spec
        if spec is not None and namespace is None:
            namespace = spec
        elif spec is not None and spec.submodule_search_locations is not None:
            namespace.submodule_search_locations.extend(spec.submodule_search_locations)
    return namespace


def _top_names(tree: ast.Module) -> tuple[dict[str, str], bool]:
    """Names a module defines at its top (inside if/try blocks too), each with what defines it
    (class, function, or other: an assignment or an import), and whether it may define more than
    its text shows (`from x import *`, a module `__getattr__`)."""
    names: dict[str, str] = {}
    open_ended = False
    todo: list[ast.stmt] = list(tree.body)

    def add(name: str, kind: str) -> None:
        # (defined twice, as under `if`/`else`: a class only if always one)
        names[name] = kind if names.get(name, kind) == kind else "other"

    while todo:
        node = todo.pop()
        if isinstance(node, ast.ClassDef):
            add(node.name, "class")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            add(node.name, "function")
            open_ended |= node.name == "__getattr__"
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for n in ast.walk(target):
                    if isinstance(n, ast.Name):
                        add(n.id, "other")
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            add(node.target.id, "other")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    open_ended = True
                else:
                    add(alias.asname or alias.name.split(".")[0], "other")
        elif isinstance(node, ast.If | ast.Try | ast.With):
            todo.extend(node.body)
            todo.extend(getattr(node, "orelse", []))
            todo.extend(getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                todo.extend(handler.body)
    return names, open_ended


def check(module: str, name: str) -> dict[str, Any]:
    """Where LangGraph's loader would find `module.name`: ok, missing module, missing class,
    unknown (only importing could tell), or __main__ (the script that ran as the program); ok
    with its `kind`: class, function (def, or a builtin callable that is no class) or other."""
    if module == "__main__":
        return {"status": MAIN}
    loaded = sys.modules.get(module)
    if loaded is not None:
        if not hasattr(loaded, name):
            return {"status": MISSING_CLASS}
        found = getattr(loaded, name)
        kind = "class" if isinstance(found, type) else "function" if callable(found) else "other"
        return {"status": OK, "kind": kind}
    spec, missing = _find(module)
    if spec is None:
        return {"status": MISSING_MODULE, "missing": missing}
    origin = getattr(spec, "origin", None)
    if not origin or not str(origin).endswith(".py"):
        return {"status": UNKNOWN, "why": "not a Python source file"}
    try:
        tree = ast.parse(Path(origin).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return {"status": UNKNOWN, "why": f"cannot read {origin}"}
    names, open_ended = _top_names(tree)
    if name in names:
        return {"status": OK, "file": origin, "kind": names[name]}
    if open_ended:
        return {"status": UNKNOWN, "why": "the module may define it at import (import * or __getattr__)"}
    return {"status": MISSING_CLASS, "file": origin}


SAFE_MODULE = "langgraph.checkpoint.serde._msgpack"
"""Where LangGraph keeps SAFE_MSGPACK_TYPES: the types strict mode always loads."""


def langgraph_safe() -> dict[str, Any]:
    """The SAFE_MSGPACK_TYPES of the LangGraph this interpreter has, read from its source (the
    literal set, not imported: importing LangGraph costs start-up), with its version; `error`
    where there is none."""
    spec, missing = _find(SAFE_MODULE)
    origin = getattr(spec, "origin", None)
    if spec is None or not origin:
        return {"error": f"no module {missing or SAFE_MODULE}: LangGraph's checkpoint package is not installed"}
    try:
        tree = ast.parse(Path(origin).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return {"error": f"cannot read {origin}"}
    for node in tree.body:
        if not isinstance(node, ast.AnnAssign | ast.Assign) or node.value is None:
            continue
        target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
        if isinstance(target, ast.Name) and target.id == "SAFE_MSGPACK_TYPES":
            value = node.value
            if isinstance(value, ast.Call) and value.args:  # frozenset({...})
                value = value.args[0]
            try:
                pairs = ast.literal_eval(value)
            except ValueError:
                break
            from importlib import metadata

            try:
                version = metadata.version("langgraph-checkpoint")
            except metadata.PackageNotFoundError:
                version = "?"
            return {"safe": sorted([str(p[0]), str(p[1])] for p in pairs), "version": version, "file": origin}
    return {"error": f"no literal SAFE_MSGPACK_TYPES in {origin}"}


def main() -> None:
    """In the project's interpreter: [[module, name], ...] on stdin -> one answer each, and
    LangGraph's safe set there."""
    pairs = json.loads(sys.stdin.read())
    out = [check(str(m), str(n)) for m, n in pairs]
    answer = {"python": sys.executable, "answers": out, "langgraph": langgraph_safe()}
    sys.stdout.write(MARK + json.dumps(answer) + "\n")


def check_there(python: str, pairs: list[tuple[str, str]], timeout: float = 60) -> tuple[str, list[dict[str, Any]]]:
    """`check` of every pair in `python` (one process, from the current folder): (its path, the
    answers)."""
    from statectl.errors import StatectlError
    from statectl.project.introspect import run_python

    here = str(Path(__file__).resolve().parent.parent.parent)
    done = run_python(python, ["-c", BOOT, here], "checking classes", timeout, stdin=json.dumps(pairs))
    if MARK not in done.stdout:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
        raise StatectlError(f"checking classes in {python} failed: {last}")
    answer = json.loads(done.stdout.rpartition(MARK)[2])
    return answer["python"], answer["answers"]


def safe_there(python: str, timeout: float = 60) -> tuple[str, dict[str, Any]]:
    """`langgraph_safe` in `python`: (its path, the answer)."""
    from statectl.errors import StatectlError
    from statectl.project.introspect import run_python

    here = str(Path(__file__).resolve().parent.parent.parent)
    done = run_python(python, ["-c", BOOT, here], "reading LangGraph's safe types", timeout, stdin="[]")
    if MARK not in done.stdout:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
        raise StatectlError(f"reading LangGraph's safe types in {python} failed: {last}")
    answer = json.loads(done.stdout.rpartition(MARK)[2])
    return answer["python"], answer["langgraph"]


def safe_lookup(python: str | None) -> tuple[Any, Any, str]:
    """Which (module, name) pairs the project's LangGraph always loads (its SAFE_MSGPACK_TYPES,
    read from its source: nothing imported), as `core.types.stored_types` asks; the lookup of the
    others in the project's interpreter (`check`); and where the answer comes from. Without a
    project interpreter, None and None (statectl's copy of LangGraph's set); a --python without
    LangGraph is a StatectlError."""
    from statectl.errors import StatectlError
    from statectl.project.introspect import interpreter

    try:
        there = interpreter(python)
    except StatectlError:
        return None, None, "statectl's copy of LangGraph's SAFE_MSGPACK_TYPES (no project interpreter: --python PATH)"
    if there is None:
        exe, answer = sys.executable, langgraph_safe()
    else:
        exe, answer = safe_there(there)
    if "error" in answer:
        if python:
            raise StatectlError(f"--python {python}: {answer['error']}")
        return None, None, f"statectl's copy of LangGraph's SAFE_MSGPACK_TYPES ({answer['error']})"
    pairs = {(str(m), str(n)) for m, n in answer["safe"]}

    def safe(_named: list[tuple[str, str]]) -> set[tuple[str, str]]:
        return pairs

    def classes(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        return check_there(there or sys.executable, pairs)[1]  # (from the current folder, as the app runs)

    return safe, classes, f"langgraph-checkpoint {answer['version']} in {exe}"
