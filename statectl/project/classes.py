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
        if spec is None:
            return None, name
        path = spec.submodule_search_locations
        if path is None and i < len(parts) - 1:
            return None, ".".join(parts[: i + 2])
    return spec, None


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


def main() -> None:
    """In the project's interpreter: [[module, name], ...] on stdin -> one answer each."""
    pairs = json.loads(sys.stdin.read())
    out = [check(str(m), str(n)) for m, n in pairs]
    sys.stdout.write(MARK + json.dumps({"python": sys.executable, "answers": out}) + "\n")


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
