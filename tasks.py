"""Developer tasks, with nothing but Python 3.11 needed: `python3 tasks.py TASK` (see TASKS below).

Each task creates `.venv` (once) and installs statectl with its development extras.
"""

from __future__ import annotations

import os
import shutil
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


NEEDS = {
    "psql": "postgresql",  # a real Postgres server (the tests start the machine's cluster)
    "node": "nodejs",  # Mermaid's parser checks every flowchart; LangGraph.js reads pruned stores
    "npm": "npm",
    "make": "make",  # (better-sqlite3 for LangGraph.js, built where no binary downloads)
    "g++": "g++",
    "tmux": "tmux",  # completion in real interactive shells, the TUI in a real terminal
    "zsh": "zsh",
    "fish": "fish",
    "chromium": "chromium",  # `tui --web` in a real browser
}
"""What the whole suite runs besides Python, by command: the Debian package that brings it
(.ci/run installs them all). Every test that needs one fails, never skips, without it."""

QUICK = (
    "tests/test_units.py",
    "tests/test_cli.py",
    "tests/test_diff.py",
    "tests/test_schema.py",
    "tests/test_plain.py",
    "tests/test_golden.py",
    "tests/test_layers.py",
)
"""`test --quick`: a first check that needs nothing but Python (the CLI, the core, the golden files)."""


def missing() -> list[str]:
    """The packages of NEEDS whose command this machine lacks."""
    found = {cmd: shutil.which(cmd) for cmd in NEEDS}
    found["chromium"] = found["chromium"] or shutil.which("chromium-browser")
    return [NEEDS[cmd] for cmd, where in found.items() if where is None]


def test() -> None:
    """The whole suite on every core (pytest-xdist); arguments go to pytest (`-n 0`: one process).
    `--quick`: a first check in a few minutes, with nothing but Python."""
    args = sys.argv[2:]
    # (loadgroup: the tests of one real `langgraph dev` run in one process, beside the rest)
    if "--quick" in args:
        args.remove("--quick")
        sh(BIN / "python", "-m", "pytest", "-n", "auto", "--dist", "loadgroup", *QUICK, *args)
        return
    sh(BIN / "python", "-m", "pytest", "-n", "auto", "--dist", "loadgroup", *args)


def check_tools() -> None:
    """Before `test` builds anything: the whole suite's tools, or exactly what to install (a test
    file named on the command line, or `--quick`, goes ahead: its own tests say what they need)."""
    args = sys.argv[2:]
    if "--quick" in args or any(a.startswith("tests") for a in args):
        return
    lacking = missing()
    if lacking:
        sys.exit(
            f"tasks.py test: the whole suite also runs {', '.join(lacking)}, which this machine lacks.\n"
            f"  install them: sudo apt-get install -y {' '.join(lacking)}   (.ci/run installs everything)\n"
            "  or a first check with nothing but Python: python3 tasks.py test --quick"
        )


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
    if sys.argv[1] == "test":
        check_tools()
    setup()
    TASKS[sys.argv[1]]()
