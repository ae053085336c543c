"""Scale (issues 36, 54): whole stores of many threads and one long thread, time and peak memory,
against floors measured in the same run.

The long thread (`--long-turns` turns of an add_messages chat, 3 checkpoints each, every one
holding the whole transcript; 3,334 turns: the issue's 10,000 checkpoints; its node writes
`done = True` every turn, a key rewritten unchanged, unless `--long-plain`): `show` and `diff` of
its newest step against their floors (its newest checkpoint and writes, and its parent's, read
and decoded by Python's sqlite3 and ormsgpack), `log` against its (every checkpoint's metadata
and every write's row), `export` against its bytes (every row read once, its blobs base64'd and
written), `log -p` against `log`, and the time to `log -p`'s first step. Each figure and its floor
run in alternated pairs; the ratio printed is the median of the pairs' ratios (a drift in a shared
machine's speed falls on both). `--long-turns 2000 --long-text 40`: 4,000 messages in the newest
checkpoint, of which `show` prints 200.

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

With `--pg-rows`, PostgresSaver databases of that many checkpoint rows (bench/make_pg.py:
the sample threads' real rows copied under new ids), each command against the hand-written SQL
it is held to (`PG_FLOORS`: goal 2x) and its peak memory by size.

    python bench/scale.py [--sizes 2000,20000] [--turns 3] [--runs 3] [--long-turns 3334]
                          [--long-text 40] [--long-plain] [--pg-rows 100000,1000000] [--pg-commands threads,size,prune]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"
"""Where the stores are made and kept (`--data`)."""
PG_PREFIX = "statectl_scale"
"""The Postgres stores' database names: PREFIX_ROWS (`--pg-prefix`)."""
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
    path = DATA / name
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

EXPORT = """
import base64, sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
with open(sys.argv[3], "wb") as out:
    for row in conn.execute("SELECT checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
                            "WHERE thread_id = ?", (sys.argv[2],)):
        out.write(row[0].encode() + (row[1] or "").encode() + row[4] + base64.b64encode(row[3]))
    for row in conn.execute("SELECT checkpoint_id, task_id, task_path, idx, channel, type, value FROM writes "
                            "WHERE thread_id = ?", (sys.argv[2],)):
        out.write(base64.b64encode(row[6] or b""))
"""
"""The floor of `export` (its bytes): every row of the thread read once by Python's sqlite3, its
blobs base64-encoded and written to a file (no JSON around them)."""


def long_thread(turns: int, runs: int, text: int | None = None, rewrite: bool = True) -> None:
    """One thread of 3 x `turns` checkpoints (add_messages: each holds the whole transcript;
    `rewrite`: the node writes `done = True` every turn too, a key rewritten unchanged, issue 54):
    `show`/`diff` of its newest step against their floors (goal: within 3x), `log` against its
    floor (2x), `export` against its bytes read and written (1.2x), `log -p` against `log` (5x)
    and the time to its first step (1 s). `text`: each message's characters at most (default
    ~500: 3,334 turns would be tens of GB)."""
    name, more = (f"long-{turns}", []) if text is None else (f"long-{turns}x{text}", ["--text", str(text)])
    name, more = (f"{name}r.sqlite", [*more, "--rewrite"]) if rewrite else (f"{name}.sqlite", more)
    path = _made(name, "--threads", "1", "--distinct", "1", "--turns", str(turns), *more)
    db, t = str(path), "real-0000"
    print(f"\nlong thread: {3 * turns} checkpoints, {path.stat().st_size / 1e6:.0f} MB: {db}", flush=True)
    statectl = [PY, "-m", "statectl"]
    rows: list[tuple[str, list[str], list[str] | None, float]] = [
        ("show (newest)", [*statectl, "show", t], [PY, "-c", ONE_STEP, db, t, "1"], 3),
        ("diff (newest)", [*statectl, "diff", t], [PY, "-c", ONE_STEP, db, t, "2"], 3),
        ("log", [*statectl, "log", t], [PY, "-c", LOG, db, t], 2),
        (
            "export",
            [*statectl, "export", t, "-o", str(DATA / "long-export.json")],
            [PY, "-c", EXPORT, db, t, str(DATA / "long-export.floor")],
            1.2,
        ),
    ]
    times: dict[str, float] = {}
    for name, argv, floor, goal in rows:
        cmd = [*argv, "--db", db, *(["--no-pager"] if argv[3] != "export" else [])] if argv[:3] == statectl else argv
        measured(*cmd)
        measured(*floor)
        mine, floors = [], []
        for _ in range(runs):  # (alternated: a drift in the machine's speed falls on both)
            mine.append(measured(*cmd))
            floors.append(measured(*floor)[0])
        ratio = statistics.median(m[0] / f for m, f in zip(mine, floors, strict=True))
        secs, rss = statistics.median(m[0] for m in mine), max(m[1] for m in mine)
        base = statistics.median(floors)
        times[name] = secs
        print(
            f"{name:<28}{secs:>8.2f} s {rss:>6} MB   floor {base:.2f} s   {ratio:.2f}x (goal {goal:g}x; paired)"
            f"   over the floor {secs - base:+.2f} s"
        )
    for leftover in ("long-export.json", "long-export.floor"):
        (DATA / leftover).unlink(missing_ok=True)
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


PG_FLOORS = {
    "interrupted": """
import sys, datetime, psycopg
sys.path.insert(0, sys.argv[2])
from statectl.sources.status import id_at
from statectl.sources.postgres import may_plan_tasks
c = psycopg.connect(sys.argv[1])
c.execute("SET jit = off")
cutoff = id_at(datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=1))
rows = c.execute("WITH l AS (SELECT thread_id AS t, max(checkpoint_id) FILTER (WHERE checkpoint_ns = '') AS root "
                 "FROM checkpoints GROUP BY thread_id) SELECT t FROM l WHERE root < %s AND (EXISTS (SELECT 1 FROM "
                 "checkpoint_writes w WHERE w.thread_id = t AND w.checkpoint_ns = '' AND w.checkpoint_id = root "
                 "AND w.channel = '__interrupt__') OR EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = t AND "
                 f"c.checkpoint_ns = '' AND c.checkpoint_id = root AND {may_plan_tasks()})) ORDER BY t",
                 (cutoff,)).fetchall()
print(len(rows))
""",
    "size": """
import sys, psycopg
c = psycopg.connect(sys.argv[1])
c.execute("SET jit = off")
for t in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
    c.execute("SELECT pg_table_size(%s::regclass), pg_indexes_size(%s::regclass)", (t, t)).fetchall()
rows = c.execute("WITH c AS (SELECT thread_id AS t, SUM(pg_column_size(checkpoint) + pg_column_size(metadata)) AS b "
                 "FROM checkpoints GROUP BY 1), b AS (SELECT thread_id AS t, SUM(pg_column_size(blob)) AS b FROM "
                 "checkpoint_blobs GROUP BY 1), w AS (SELECT thread_id AS t, SUM(pg_column_size(blob)) AS b FROM "
                 "checkpoint_writes GROUP BY 1) SELECT c.t, c.b + coalesce(b.b, 0) + coalesce(w.b, 0) FROM c LEFT "
                 "JOIN b USING (t) LEFT JOIN w USING (t) ORDER BY 2 DESC LIMIT 20").fetchall()
print(len(rows))
""",
    "prune": """
import sys, psycopg
c = psycopg.connect(sys.argv[1])
c.execute("SET jit = off")
rows = c.execute("WITH r AS (SELECT thread_id, checkpoint_ns, checkpoint_id, pg_column_size(checkpoint) + "
                 "pg_column_size(metadata) AS b, row_number() OVER (PARTITION BY thread_id, checkpoint_ns ORDER BY "
                 "checkpoint_id DESC) AS rn FROM checkpoints), d AS (SELECT * FROM r WHERE rn > 5), w AS (SELECT "
                 "w.thread_id, sum(length(w.blob)) AS b FROM checkpoint_writes w JOIN d USING (thread_id, "
                 "checkpoint_ns, checkpoint_id) GROUP BY 1) SELECT d.thread_id, array_agg(d.checkpoint_id), "
                 "sum(d.b) + coalesce(max(w.b), 0) FROM d LEFT JOIN w USING (thread_id) GROUP BY d.thread_id "
                 "ORDER BY 1").fetchall()
print(len(rows))
""",
    "rows": """
import sys, psycopg
c = psycopg.connect(sys.argv[1])
n = 0
for sql in ("SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint::text, metadata::text "
            "FROM checkpoints", "SELECT thread_id, checkpoint_ns, channel, version, type, blob FROM checkpoint_blobs",
            "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, channel, type, blob FROM checkpoint_writes"):
    with c.cursor(name="every") as cur:
        cur.itersize = 5000
        cur.execute(sql)
        for _ in cur:
            n += 1
    c.commit()
print(n)
""",
}
"""The hand-written SQL each Postgres command is held to (run by psycopg, rows fetched, nothing
else): threads that may be waiting since over a day (each thread's newest checkpoint id, an
interrupt written on it, or a task it plans: a breakpoint), the largest 20 threads' bytes and
the tables' sizes, a --keep-last 5 plan (the rows past each namespace's fifth, their ids and
bytes per thread: none of prune's other rules), and every row of the three tables streamed
(what `doctor` must read)."""


def postgres(rows: list[int], runs: int, only: list[str] | None = None) -> None:
    """A PostgresSaver database of each size in `rows` (checkpoint rows: bench/make_pg.py copies
    the sample threads' real rows under new ids), made where missing: each command's time and
    peak memory against its hand-written SQL (goal: within 2x), and memory by size. `only`: the
    commands whose names start with one of these (at 10M rows, `doctor` alone takes an hour)."""
    import psycopg

    sys.path.insert(0, str(HERE))
    from bench import PG_FLOOR_THREADS

    statectl = [PY, "-m", "statectl"]
    commands = {
        "threads (first page)": (["threads"], [PG_FLOOR_THREADS]),
        "threads -s interrupted --older-than 1d": (
            ["threads", "-s", "interrupted", "--older-than", "1d"],
            [PG_FLOORS["interrupted"], str(ROOT)],
        ),
        "threads --json (all, streamed)": (["threads", "--json"], None),
        "threads --json --limit 100000": (["threads", "--json", "--limit", "100000"], None),
        "size": (["size"], [PG_FLOORS["size"]]),
        "prune --keep-last 5 --json (plan)": (["prune", "--keep-last", "5", "--json"], [PG_FLOORS["prune"]]),
        "doctor --json --no-plan": (["doctor", "--json", "--no-plan"], [PG_FLOORS["rows"]]),
    }
    if only:
        commands = {name: c for name, c in commands.items() if name.startswith(tuple(only))}
    found: dict[str, dict[int, tuple[float, int, float | None]]] = {name: {} for name in commands}
    for n in rows:
        url = f"postgresql:///{PG_PREFIX}_{n}"
        try:
            with psycopg.connect(url) as conn:
                threads, size = conn.execute(
                    "SELECT count(DISTINCT thread_id), pg_size_pretty(pg_database_size(current_database())) "
                    "FROM checkpoints"
                ).fetchone()
        except psycopg.OperationalError:
            subprocess.run([PY, str(HERE / "make_pg.py"), "--url", url, "--rows", str(n)], check=True)
            with psycopg.connect(url) as conn:
                threads, size = conn.execute(
                    "SELECT count(DISTINCT thread_id), pg_size_pretty(pg_database_size(current_database())) "
                    "FROM checkpoints"
                ).fetchone()
        print(f"\nPostgres: {n:,} checkpoint rows, {threads:,} threads, {size}: {url}", flush=True)
        for name, (argv, floor) in commands.items():
            cmd = [*statectl, *argv, "--db", url, "--no-pager"]
            measured(*cmd)  # (warm-up, not counted: Postgres' cache)
            mine = [measured(*cmd) for _ in range(runs)]
            secs, rss = statistics.median(m[0] for m in mine), max(m[1] for m in mine)
            base = None
            if floor is not None:
                measured(PY, "-c", floor[0], url, *floor[1:])
                base = statistics.median(measured(PY, "-c", floor[0], url, *floor[1:])[0] for _ in range(runs))
            found[name][n] = (secs, rss, base)
            ratio = f"floor {base:.2f} s   {secs / base:.2f}x (goal 2x)" if base else ""
            print(f"{name:<42}{secs:>8.2f} s {rss:>6} MB   {ratio}", flush=True)
    if len(rows) > 1:
        print(f"\nPostgres memory, {rows[-1]:,} rows / {rows[0]:,}:")
        for name, by in found.items():
            print(f"{name:<42}{by[rows[-1]][1] / by[rows[0]][1]:>6.2f}x")


def main() -> None:
    global DATA, PG_PREFIX
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="2000,20000", help="numbers of threads, comma-separated")
    p.add_argument("--turns", type=int, default=3)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument(
        "--long-turns", type=int, default=3334, help="turns of the long thread (3 checkpoints each; 0: none)"
    )
    p.add_argument("--long-text", type=int, default=None, help="characters of each message of the long thread at most")
    p.add_argument("--long-plain", action="store_true", help="a long thread without a key rewritten every turn")
    p.add_argument(
        "--pg-rows",
        default="",
        help="checkpoint rows of each Postgres store, comma-separated (made by bench/make_pg.py where missing; "
        "default: no Postgres)",
    )
    p.add_argument(
        "--pg-commands",
        default="",
        help="only the Postgres commands whose names start with these, comma-separated (default: all)",
    )
    p.add_argument("--data", type=Path, default=HERE / "data", help="folder of the SQLite stores (made where missing)")
    p.add_argument("--pg-prefix", default="statectl_scale", help="the Postgres stores' database names: PREFIX_ROWS")
    args = p.parse_args()
    DATA, PG_PREFIX = args.data, args.pg_prefix
    # `pip install` byte-compiles a package; an editable checkout run with PYTHONDONTWRITEBYTECODE
    # (as on these machines) would otherwise compile every changed module of statectl's on every
    # start, which no installed statectl does (measured: 6 stale modules, 0.08 s of `threads`)
    import compileall

    compileall.compile_dir(str(HERE.parent / "statectl"), quiet=1)
    DATA.mkdir(parents=True, exist_ok=True)
    if args.pg_rows:
        only = [c for c in args.pg_commands.split(",") if c] or None
        postgres([int(n) for n in args.pg_rows.split(",")], args.runs, only)
    if args.long_turns:
        long_thread(args.long_turns, args.runs, args.long_text, not args.long_plain)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if not sizes:
        return
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
        "export --all -o FILE": ["export", "--all", "-o", str(DATA / "scale-export.json")],
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
            (DATA / "scale-export.json").unlink(missing_ok=True)
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
