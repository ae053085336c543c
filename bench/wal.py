"""A database committed with its -wal file and no writer: what reading it from a private folder
costs, against the same database read in place (no -wal: `immutable`) in the same run.

The benchmark DB (bench/data/large.sqlite, `python bench/make_large.py`) is copied, one more
thread is written by a real LangGraph run with the WAL kept (as an app's folder looks while it
runs), and the files are taken as a commit would take them. `statectl threads` and `show` of the
new thread then run on: the file alone (in place, immutable), the file with its -wal (a private
folder of hard links), and the same with hard links refused (a private copy: another file system).

    python bench/wal.py [--db bench/data/large.sqlite] [--runs 5]
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "sample_threads"))

NO_LINKS = (
    "import os, sys; os.link = lambda *a, **k: (_ for _ in ()).throw(OSError(18, 'EXDEV'))\n"
    "from statectl.cli import main; main(sys.argv[1:])"
)


def timed(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run(argv, capture_output=True, cwd=ROOT, env={"COLUMNS": "160", "PATH": "/usr/bin:/bin"})
        times.append(time.perf_counter() - start)
        if out.returncode:
            sys.exit(f"{argv} failed: {out.stderr.decode()[-400:]}")
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--db", type=Path, default=HERE / "data" / "large.sqlite")
    p.add_argument("--runs", type=int, default=5)
    a = p.parse_args()
    if not a.db.exists():
        sys.exit(f"no {a.db}: run `python bench/make_large.py` first")
    from custom_app import notes_builder
    from langgraph.checkpoint.sqlite import SqliteSaver

    with tempfile.TemporaryDirectory(dir=HERE / "data") as tmp:
        live = Path(tmp) / "live" / "app.sqlite"
        live.parent.mkdir()
        shutil.copyfile(a.db, live)
        writer = sqlite3.connect(live, check_same_thread=False)
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")
        notes_builder.compile(checkpointer=SqliteSaver(writer)).invoke(
            {"topic": "wal", "count": 0}, {"configurable": {"thread_id": "in-the-wal"}}
        )
        repo = Path(tmp) / "repo"
        repo.mkdir()
        for suffix in ("", "-wal"):
            shutil.copyfile(f"{live}{suffix}", repo / f"app.sqlite{suffix}")
        writer.close()
        alone = Path(tmp) / "alone"
        alone.mkdir()
        shutil.copyfile(repo / "app.sqlite", alone / "app.sqlite")
        size = (repo / "app.sqlite").stat().st_size / 1e6
        wal = (repo / "app.sqlite-wal").stat().st_size / 1e3
        py = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv").exists() else sys.executable
        print(f"{size:.0f} MB database, {wal:.0f} kB -wal; median of {a.runs} runs, whole process")
        for cmd in (["threads"], ["show", "in-the-wal"]):
            base = (
                timed([py, "-m", "statectl", *cmd, "--db", str(alone / "app.sqlite")], a.runs)
                if cmd == ["threads"]
                else None
            )
            linked = timed([py, "-m", "statectl", *cmd, "--db", str(repo / "app.sqlite")], a.runs)
            copied = timed([py, "-c", NO_LINKS, *cmd, "--db", str(repo / "app.sqlite")], a.runs)
            floor = (
                f"; in place without the -wal {base * 1e3:.0f} ms: links {linked / base:.2f}×, "
                f"copy {copied / base:.2f}×"
                if base
                else ""
            )
            print(
                f"  {' '.join(cmd):<18} private links {linked * 1e3:.0f} ms, private copy {copied * 1e3:.0f} ms{floor}"
            )
        leftovers = sorted(p.name for p in repo.iterdir())
        print(f"  files beside the database afterwards: {leftovers}")


if __name__ == "__main__":
    main()
