"""Start-up: the whole CPU time of `statectl threads`, `log` and `show` against the import-only
floor `python -c "import typer, rich"`, run in alternated pairs (A B A B ...: a loaded machine's
drift falls on both), the ratio taken pair by pair; medians printed. Output goes to a pipe, as
for a script (`threads` then writes its table without Rich: render/pipe.py).

    python bench/startup.py [--db sample_threads/agent.sqlite] [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOOR = [sys.executable, "-c", "import typer, rich"]


def cpu(cmd: list[str]) -> float:
    """User + system seconds of one run of `cmd` (its output read through a pipe)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, capture_output=True, check=False, cwd="/", env=ENV)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
ENV.pop("PYTHONDONTWRITEBYTECODE", None)  # (compiling at every start is not start-up)
ENV.pop("COLUMNS", None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=str(ROOT / "sample_threads" / "agent.sqlite"))
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    db = str(Path(args.db).resolve())
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        (thread,) = c.execute("SELECT thread_id FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1").fetchone()
    statectl = [sys.executable, "-m", "statectl"]
    for name, cmd in (
        ("threads", [*statectl, "threads", "--db", db]),
        ("log", [*statectl, "log", thread, "--db", db]),
        ("show", [*statectl, "show", thread, "--db", db]),
    ):
        cpu(cmd), cpu(FLOOR)  # (warm: .pyc written, pages cached)
        pairs = [(cpu(cmd), cpu(FLOOR)) for _ in range(args.runs)]
        a, b = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
        ratio = statistics.median(p[0] / p[1] for p in pairs if p[1])
        print(f"{name:8} {a:.3f} s CPU   floor {b:.3f} s   ratio {ratio:.2f}x (median of {args.runs} pairs)")


if __name__ == "__main__":
    main()
