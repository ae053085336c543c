"""The house's layers, held by import-linter (the contracts in pyproject.toml, which `tasks.py lint`
also runs) and checked for import cycles, counting imports made inside functions."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).parent / "lint-imports"


def _lint(cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(pythonpath), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [str(LINT), "--config", str(cwd / "pyproject.toml"), "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_contracts_hold():
    done = _lint(ROOT, ROOT)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "5 kept, 0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("core/history.py", "    import statectl.render.tables", "layers"),
        ("sources/sqlite.py", "    import statectl.core.state", "layers"),
        ("codec/decode.py", "    import statectl.sources.base", "layers"),
        ("core/state.py", "    import rich.text", "the core never imports Rich"),
        ("render/tables.py", "    import textual.app", "render is Rich only"),
        ("sources/export.py", "    import statectl.sources.sqlite", "no source imports another"),
    ],
)
def test_a_broken_rule_is_caught(tmp_path, module, line, contract):
    """Each contract fails on a copy of the package with one import that breaks it, made inside a
    function (where the old import-once test could not see it)."""
    shutil.copytree(ROOT / "statectl", tmp_path / "statectl", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / "statectl" / module
    path.write_text(path.read_text() + f"\n\ndef _broken() -> None:\n{line}\n")
    done = _lint(tmp_path, tmp_path)
    assert done.returncode != 0
    assert f"{contract}" in done.stdout
    assert "BROKEN" in done.stdout


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), iteratively."""
    modules = sorted(graph.modules)
    edges = {m: sorted(x for x in graph.find_modules_directly_imported_by(m) if x in graph.modules) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for start in modules:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on.add(v)
            if i < len(edges[v]):
                work.append((v, i + 1))
                w = edges[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    out.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def test_no_import_cycle():
    graph = grimp.build_graph("statectl", exclude_type_checking_imports=True)
    assert len(graph.modules) > 60
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_one():
    graph = grimp.ImportGraph()
    for m in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(m)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.z")
    graph.add_import(importer="a.z", imported="a.x")
    assert _cycles(graph) == [["a.x", "a.y", "a.z"]]
