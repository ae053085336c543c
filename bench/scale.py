"""Scale (issue 36): whole stores of many threads and one long thread, time and peak memory,
against floors measured in the same run.

The long thread (`--long-turns` turns of an add_messages chat, 3 checkpoints each, every one
holding the whole transcript; 3,334 turns: the issue's 10,000 checkpoints): `show` and `diff` of
its newest step against their floors (its newest checkpoint and writes, and its parent's, read
and decoded by Python's sqlite3 and ormsgpack), `log` against its (every checkpoint's metadata
and every write's row), `log -p` against `log`, and the time to `log -p`'s first step.

The stores (`--sizes`, threads each, `--turns` turns a thread): written by bench/make_large.py
(real LangGraph runs, their rows copied under new thread ids). For each size: wall time and peak
RSS of
- `threads` (the first page of the table),
- `threads --json` of every thread (streamed a chunk at a time),
- `threads --json --limit N` (every thread as one page: how it was listed before streaming),
- `threads -s interrupted --json` (a status filter over every thread, streamed),
- `size`, `prune --keep-last 2 --json` (the plan, streamed) and its table, `export --all` (to a
  file, then deleted), `doctor --json --no-plan`,
- `show` and `log` of one thread (the same thread at every size: its cost must not grow),
and the floor: Python's sqlite3 reading what the listing must (the index grouped by thread, each
thread's newest metadata and its pending writes), nothing kept. Memory is flat when RSS does not
grow with the number of threads (printed: largest / smallest). Each command runs once first, not
counted (a warm page cache for all of them alike).

    python bench/scale.py [--sizes 2000,20000] [--turns 3] [--runs 3] [--long-turns 3334]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
MEASURE = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE); "
    "d = time.perf_counter() - t; "
    "print('%d %.3f %d' % (p.returncode, d, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))"
)
FLOOR = """
import sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = conn.execute("SELECT thread_id, checkpoint_ns, COUNT(*), MAX(checkpoint_id) FROM checkpoints "
                    "GROUP BY thread_id, checkpoint_ns").fetchall()
for t, ns, n, cid in rows:
    conn.execute("SELECT metadata FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                 (t, ns, cid)).fetchone()
    conn.execute("SELECT task_id, channel FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                 (t, ns, cid)).fetchall()
"""


def measured(*argv: str) -> tuple[float, int]:
    """(seconds, peak RSS in MB) of a command in its own process."""
    out = subprocess.run([PY, "-c", MEASURE, *argv], capture_output=True, text=True, check=True).stdout.split()
    code, secs, rss = int(out[0]), float(out[1]), int(out[2]) // 1024
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(argv[2:6])}... exited {code}")
    return secs, rss


def _made(name: str, *args: str) -> Path:
    """bench/data/NAME, written by bench/make_large.py with these arguments where missing."""
    path = HERE / "data" / name
    if not path.exists():
        subprocess.run([PY, str(HERE / "make_large.py"), *args, "-o", str(path)], check=True)
    return path


def store(threads: int, turns: int) -> Path:
    return _made(f"scale-{threads}x{turns}.sqlite", "--threads", str(threads), "--turns", str(turns))


FIRST = (
    "import subprocess, sys, time; t = time.perf_counter(); "
    "p = subprocess.Popen(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL); "
    "n = 0\nfor line in p.stdout:\n    n += 1\n"
    "    if n == int(sys.argv[1]): print('%.3f' % (time.perf_counter() - t))\n"
    "p.wait()"
)
"""Seconds to the Nth line of a command's output (`log -p`'s first step)."""

ONE_STEP = """
import sqlite3, sys, ormsgpack, orjson
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
t = sys.argv[2]
cid, parent = conn.execute("SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints WHERE thread_id = ? "
                           "AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1", (t,)).fetchone()
for c in [cid, parent][: int(sys.argv[3])]:
    blob, md = conn.execute("SELECT checkpoint, metadata FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
                            "AND checkpoint_id = ?", (t, c)).fetchone()
    ormsgpack.unpackb(blob, ext_hook=lambda code, data: data); orjson.loads(md)
    for (v,) in conn.execute("SELECT value FROM writes WHERE thread_id = ? AND checkpoint_ns = '' "
                             "AND checkpoint_id = ?", (t, c)):
        ormsgpack.unpackb(v, ext_hook=lambda code, data: data)
"""
"""The floor of `show` (1: the newest checkpoint and its writes, decoded) and `diff` (2: and its
parent's): Python's sqlite3 and ormsgpack, nothing kept, no message rebuilt."""

LOG = """
import sqlite3, sys, orjson
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
for cid, parent, md in conn.execute("SELECT checkpoint_id, parent_checkpoint_id, metadata FROM checkpoints "
                                    "WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id DESC",
                                    (sys.argv[2],)):
    orjson.loads(md)
for row in conn.execute("SELECT checkpoint_id, task_id, task_path, channel FROM writes WHERE thread_id = ? "
                        "AND checkpoint_ns = ''", (sys.argv[2],)):
    pass
"""
"""The floor of `log`: every checkpoint's ids and metadata (parsed), every write's row but its value."""


def long_thread(turns: int, runs: int) -> None:
    """One thread of 3 x `turns` checkpoints (add_messages: each holds the whole transcript):
    `show`/`diff` of its newest step against their floors (goal: within 3x), `log` against its
    floor (2x), `log -p` against `log` (5x) and the time to its first step (1 s)."""
    path = _made(f"long-{turns}.sqlite", "--threads", "1", "--distinct", "1", "--turns", str(turns))
    db, t = str(path), "real-0000"
    print(f"\nlong thread: {3 * turns} checkpoints, {path.stat().st_size / 1e6:.0f} MB: {db}", flush=True)
    statectl = [PY, "-m", "statectl"]
    rows: list[tuple[str, list[str], list[str] | None, float]] = [
        ("show (newest)", [*statectl, "show", t], [PY, "-c", ONE_STEP, db, t, "1"], 3),
        ("diff (newest)", [*statectl, "diff", t], [PY, "-c", ONE_STEP, db, t, "2"], 3),
        ("log", [*statectl, "log", t], [PY, "-c", LOG, db, t], 2),
    ]
    times: dict[str, float] = {}
    for name, argv, floor, goal in rows:
        cmd = [*argv, "--db", db, "--no-pager"] if argv[:3] == statectl else argv
        measured(*cmd)
        mine = [measured(*cmd) for _ in range(runs)]
        measured(*floor)
        base = statistics.median(measured(*floor)[0] for _ in range(runs))
        secs, rss = statistics.median(m[0] for m in mine), max(m[1] for m in mine)
        times[name] = secs
        print(f"{name:<28}{secs:>8.2f} s {rss:>6} MB   floor {base:.2f} s   {secs / base:.2f}x (goal {goal:g}x)")
    argv = [*statectl, "log", "-p", t, "--db", db, "--no-pager"]
    measured(*argv)
    whole = statistics.median(measured(*argv)[0] for _ in range(runs))
    first = statistics.median(
        float(subprocess.run([PY, "-c", FIRST, "3", *argv], capture_output=True, text=True).stdout.split()[0])
        for _ in range(runs)
    )
    print(
        f"{'log -p':<28}{whole:>8.2f} s            {whole / times['log']:.2f}x log (goal 5x); first step {first:.2f} s"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="2000,20000", help="numbers of threads, comma-separated")
    p.add_argument("--turns", type=int, default=3)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument(
        "--long-turns", type=int, default=3334, help="turns of the long thread (3 checkpoints each; 0: none)"
    )
    args = p.parse_args()
    if args.long_turns:
        long_thread(args.long_turns, args.runs)
    sizes = [int(s) for s in args.sizes.split(",")]
    statectl = [PY, "-m", "statectl"]
    commands = {
        "threads": ["threads"],
        "threads --json (all, streamed)": ["threads", "--json"],
        "threads --json --limit N (one page)": ["threads", "--json", "--limit", "100000000"],
        "threads -s interrupted --json": ["threads", "-s", "interrupted", "--json"],
        "size": ["size"],
        "prune --keep-last 2 --json (plan)": ["prune", "--keep-last", "2", "--json"],
        "prune --keep-last 2 (the table)": ["prune", "--keep-last", "2"],
        "show real-0001 (one thread)": ["show", "real-0001"],
        "log real-0001 (one thread)": ["log", "real-0001"],
        "export --all -o FILE": ["export", "--all", "-o", str(HERE / "data" / "scale-export.json")],
        "doctor --json --no-plan": ["doctor", "--json", "--no-plan"],
    }
    results: dict[str, dict[int, tuple[float, int]]] = {name: {} for name in [*commands, "floor (raw SQL)"]}
    for n in sizes:
        db = str(store(n, args.turns))
        size_mb = Path(db).stat().st_size / 1e6
        print(f"{n} threads, {size_mb:.0f} MB: {db}", flush=True)
        for name, argv in commands.items():
            measured(*statectl, *argv, "--db", db, "--no-pager")  # (warm-up, not counted: the page cache)
            runs = [measured(*statectl, *argv, "--db", db, "--no-pager") for _ in range(args.runs)]
            results[name][n] = (statistics.median(r[0] for r in runs), max(r[1] for r in runs))
            (HERE / "data" / "scale-export.json").unlink(missing_ok=True)
        measured(PY, "-c", FLOOR, db)
        runs = [measured(PY, "-c", FLOOR, db) for _ in range(args.runs)]
        results["floor (raw SQL)"][n] = (statistics.median(r[0] for r in runs), max(r[1] for r in runs))
    head = "".join(f"{f'{n} threads':>24}" for n in sizes)
    print(f"\n{'command':<38}{head}   RSS {sizes[-1]}/{sizes[0]}")
    for name, by in results.items():
        cells = "".join(f"{by[n][0]:>9.2f} s {by[n][1]:>6} MB    " for n in sizes)
        print(f"{name:<38}{cells}{by[sizes[-1]][1] / by[sizes[0]][1]:>6.2f}x")
    floor = results["floor (raw SQL)"]
    for name in commands:
        ratios = ", ".join(f"{results[name][n][0] / floor[n][0]:.2f}x" for n in sizes)
        print(f"time / floor, {name}: {ratios}")


if __name__ == "__main__":
    main()
