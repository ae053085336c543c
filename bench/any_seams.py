"""Count `Any` at statectl's module boundaries: the parameters and returns of public functions and
methods (names without a leading underscore, in modules and public classes) annotated `Any`.

    python bench/any_seams.py            # the total, and how many are a store, view or source
    python bench/any_seams.py --list     # each one: file:line function parameter

What mypy cannot check where one room hands a value to another (issue 55): a `store: Any` is a
seam where a typo in a method name is found only when the line runs."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "statectl"
FACADES = ("store", "view", "source")


def _public_functions(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
            yield node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    not item.name.startswith("_") or item.name == "__init__"
                ):
                    yield item


def seams(root: Path = ROOT) -> Iterator[tuple[str, int, str, str]]:
    """(file, line, function, parameter or 'return') of every public annotation that is `Any`."""
    for path in sorted(root.rglob("*.py")):
        if path.name.startswith("_") and path.name != "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in _public_functions(tree):
            a = fn.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                if arg.annotation is not None and ast.unparse(arg.annotation) in ("Any", "typing.Any"):
                    yield str(path.relative_to(root.parent)), fn.lineno, fn.name, arg.arg
            if fn.returns is not None and ast.unparse(fn.returns) in ("Any", "typing.Any"):
                yield str(path.relative_to(root.parent)), fn.lineno, fn.name, "return"


def main(argv: list[str]) -> None:
    found = list(seams())
    if "--list" in argv:
        for file, line, fn, name in found:
            print(f"{file}:{line} {fn} {name}")
    facades = sum(1 for *_, name in found if name in FACADES)
    print(f"Any at module boundaries: {len(found)} (of them store/view/source: {facades})")


if __name__ == "__main__":
    main(sys.argv[1:])
