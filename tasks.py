"""Developer tasks, with nothing but Python 3.11 needed: `python3 tasks.py TASK` (see TASKS below).

Each task creates `.venv` (once) and installs statectl with its development extras.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".statectl-installed"


def sh(*args: str | Path) -> None:
    print("+", " ".join(map(str, args)), flush=True)
    code = subprocess.call([str(a) for a in args], cwd=ROOT)
    if code:
        sys.exit(code)


def setup() -> None:
    deps = ROOT / "pyproject.toml"
    if STAMP.exists() and STAMP.stat().st_mtime >= deps.stat().st_mtime:
        return
    if not (BIN / "python").exists():
        venv.create(VENV, with_pip=True)
    sh(BIN / "python", "-m", "pip", "install", "-q", "--upgrade", "pip")
    sh(BIN / "python", "-m", "pip", "install", "-q", "-e", ".[dev]")
    STAMP.touch()


def demo() -> None:
    """statectl's main job on the bundled sample threads."""
    statectl = BIN / "statectl"
    db = "sample_threads/agent.sqlite"
    sh(statectl, "threads", "--db", db)
    sh(statectl, "log", "bakery-plan", "--db", db)
    sh(statectl, "show", "bakery-plan", "--db", db)
    sh(statectl, "show", "investor-email", "--db", db)
    sh(statectl, "diff", "bakery-plan", "12", "--db", db)


def test() -> None:
    """The whole suite on every core (pytest-xdist); arguments go to pytest (`-n 0`: one process)."""
    # (loadgroup: the tests of one real `langgraph dev` run in one process, beside the rest)
    sh(BIN / "python", "-m", "pytest", "-n", "auto", "--dist", "loadgroup", *sys.argv[2:])


def lint() -> None:
    """Ruff (style, bugs, complexity, format) over the code, tests and benchmarks; mypy and the layers."""
    sh(BIN / "ruff", "check", "statectl", "tests", "bench", "tasks.py")
    sh(BIN / "ruff", "format", "--check", "statectl", "tests", "bench", "tasks.py")
    sh(BIN / "mypy")
    sh(BIN / "lint-imports")


def golden() -> None:
    """Write the golden files of the human output (tests/golden/); read their diff in review."""
    sh(BIN / "python", "tests/golden.py")


def fmt() -> None:
    """ruff format over the code, tests and benchmarks (CI checks it with lint)."""
    sh(BIN / "ruff", "format", "statectl", "tests", "bench", "tasks.py")


def bench() -> None:
    sh(BIN / "python", "bench/bench.py", *sys.argv[2:])
    if "--postgres" not in sys.argv:
        sh(BIN / "python", "bench/tui.py")


def realworld() -> None:
    """Every command on the real-world folders and databases in ../shared/realworld (or DIR)."""
    sh(BIN / "python", "tests/realworld.py", *sys.argv[2:])


def fuzz() -> None:
    """The seeded fuzzer over the decoder, reducers, diff and renderers (default 100,000 inputs)."""
    sh(BIN / "python", "tests/fuzz.py", *sys.argv[2:])


TASKS = {
    "demo": demo,
    "test": test,
    "lint": lint,
    "fmt": fmt,
    "golden": golden,
    "bench": bench,
    "realworld": realworld,
    "fuzz": fuzz,
}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in TASKS:
        sys.exit(f"usage: python3 tasks.py {{{'|'.join(TASKS)}}} [args]")
    setup()
    TASKS[sys.argv[1]]()
