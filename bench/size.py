"""Long threads and huge values: time and peak memory of `log`, `log -p`, `show`, `diff` and
`export`, against floors measured in the same run (issue 21 §6).

Two threads written by real LangGraph runs (bench/make_large.py; made here when missing):
`long` (500 turns: 1,500 checkpoints, 1,000 messages, ~400 MB) and `wide` (5 turns of 10,000
messages: 15 checkpoints, 50,005 messages, ~160 MB). Floors: reading every checkpoint blob of
the thread with raw SQL and parsing it with ormsgpack (a walk that is linear in the bytes read
can do no better), and the peak memory of `statectl log` (which decodes no value). Goals: memory
about two checkpoints (ratio to the floor near 1 whatever the thread's length), time linear in
the bytes read (a small multiple of the floor), output starting within a second.

    python bench/size.py [--runs 1]
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
THREADS = {"long": ["--turns", "500"], "wide": ["--turns", "5", "--batch", "10000"]}
MEASURE = """
import os, resource, subprocess, sys, time
t0 = time.perf_counter()
first = None
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
while os.read(p.stdout.fileno(), 1 << 16):
    first = first or time.perf_counter() - t0
p.wait()
print(time.perf_counter() - t0, first or 0, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def measure(cmd: list[str], runs: int) -> tuple[float, float, int]:
    """Best (whole time, time to the first output byte, peak RSS in kB) of `runs` runs."""
    best = (float("inf"), float("inf"), 0)
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", MEASURE, *cmd], capture_output=True, text=True, check=True
        ).stdout.split()
        total, first, rss = float(out[0]), float(out[1]), int(out[2])
        best = (min(best[0], total), min(best[1], first), max(best[2], rss))
    return best


def floor_read(db: Path, thread: str) -> tuple[float, int]:
    """Raw SQL + ormsgpack over every checkpoint blob of the thread: seconds, bytes."""
    import ormsgpack

    def hook(code, data):
        return ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)

    t0 = time.perf_counter()
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    size = 0
    for (blob,) in conn.execute("SELECT checkpoint FROM checkpoints WHERE thread_id = ?", (thread,)):
        size += len(blob)
        ormsgpack.unpackb(blob, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
    conn.close()
    return time.perf_counter() - t0, size


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=1)
    a = p.parse_args()
    statectl = [sys.executable, "-m", "statectl"]
    for name, args in THREADS.items():
        db = DATA / f"{name}.sqlite"
        if not db.exists():
            subprocess.run(
                [
                    sys.executable,
                    str(HERE / "make_large.py"),
                    "--threads",
                    "1",
                    "--distinct",
                    "1",
                    *args,
                    "-o",
                    str(db),
                ],
                check=True,
            )
        read, size = floor_read(db, "real-0000")
        base = measure([*statectl, "log", "real-0000", "--db", str(db)], a.runs)
        print(
            f"\n{name}: {db.stat().st_size / 1e6:.0f} MB file, {size / 1e6:.0f} MB of checkpoints in the "
            f"thread; floor: read + parse {read:.2f} s, `log` peak {base[2] / 1024:.0f} MB"
        )
        print(f"  {'command':<22}{'time':>9}{'÷ read':>8}{'first out':>11}{'peak RSS':>10}{'÷ log':>7}")
        for label, cmd in (
            ("log", ["log"]),
            ("log -p", ["log", "-p"]),
            ("show", ["show"]),
            ("show --full", ["show", "--full"]),
            ("diff", ["diff"]),
            ("export -o -", ["export", "-o", "-"]),
        ):
            total, first, rss = measure([*statectl, *cmd, "real-0000", "--db", str(db)], a.runs)
            print(
                f"  {label:<22}{total:>8.2f}s{total / read:>7.2f}×{first:>10.2f}s{rss / 1024:>8.0f}MB"
                f"{rss / base[2]:>6.2f}×"
            )


if __name__ == "__main__":
    main()
