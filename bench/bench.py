"""Whole-process time of statectl commands against a raw floor measured in the same run.

The floor is what any tool must do: start Python, run the SQL, and (for `show`) parse one
checkpoint's msgpack (two for `diff`) — no rendering. Goal: every ratio within 3x.

    python bench/bench.py [--db bench/data/large.sqlite] [--runs 7]
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

FLOOR_THREADS = """
import sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = c.execute("SELECT thread_id, COUNT(*), MAX(checkpoint_id) FROM checkpoints GROUP BY thread_id").fetchall()
print(len(rows))
"""
FLOOR_LOG = """
import sqlite3, sys, json
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = c.execute("SELECT checkpoint_id, parent_checkpoint_id, metadata FROM checkpoints WHERE thread_id = ? "
                 "AND checkpoint_ns = '' ORDER BY checkpoint_id DESC", (sys.argv[2],)).fetchall()
print(len([json.loads(m) for _, _, m in rows]))
"""
FLOOR_SHOW = """
import sqlite3, sys, ormsgpack
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
(blob,) = c.execute("SELECT checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
                    "ORDER BY checkpoint_id DESC LIMIT 1", (sys.argv[2],)).fetchone()
def hook(code, data):  # nested ext payloads are msgpack too: parse them, build nothing else
    return ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
value = ormsgpack.unpackb(blob, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
print(len(value["channel_values"]))
"""
FLOOR_DIFF = """
import sqlite3, sys, ormsgpack
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = c.execute("SELECT checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
                 "ORDER BY checkpoint_id DESC LIMIT 2", (sys.argv[2],)).fetchall()
def hook(code, data):
    return ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
a, b = (ormsgpack.unpackb(r[0], ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS) for r in rows)
print(sorted(k for k in b["channel_values"] if a["channel_values"].get(k) != b["channel_values"][k]))
"""

PG_FLOOR_THREADS = """
import sys, psycopg
c = psycopg.connect(sys.argv[1])
rows = c.execute("WITH RECURSIVE t(id) AS ((SELECT thread_id FROM checkpoints ORDER BY thread_id LIMIT 1) "
                 "UNION ALL SELECT (SELECT thread_id FROM checkpoints WHERE thread_id > t.id ORDER BY thread_id "
                 "LIMIT 1) FROM t WHERE t.id IS NOT NULL) SELECT id FROM t WHERE id IS NOT NULL LIMIT 100").fetchall()
print(len(rows))
"""
PG_FLOOR_LATEST = """
import sys, psycopg
c = psycopg.connect(sys.argv[1])
rows = c.execute("SELECT thread_id, max(checkpoint_id) FROM checkpoints GROUP BY thread_id").fetchall()
print(len(rows))
"""
"""What any filter on a thread's last update must read (the table has no index on time): each
thread's newest checkpoint id, one pass over the primary key."""
PG_FLOOR_LOG = """
import sys, json, psycopg
c = psycopg.connect(sys.argv[1])
rows = c.execute("SELECT checkpoint_id, parent_checkpoint_id, metadata::text FROM checkpoints WHERE thread_id = %s "
                 "AND checkpoint_ns = '' ORDER BY checkpoint_id DESC", (sys.argv[2],)).fetchall()
print(len([json.loads(m) for _, _, m in rows]))
"""
PG_FLOOR_SHOW = """
import sys, json, psycopg, ormsgpack
c = psycopg.connect(sys.argv[1])
n = int(sys.argv[3]) if len(sys.argv) > 3 else 1
rows = c.execute("SELECT checkpoint::text FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = '' "
                 "ORDER BY checkpoint_id DESC LIMIT %s", (sys.argv[2], n)).fetchall()
def hook(code, data):
    return ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
for (text,) in rows:
    ck = json.loads(text)
    vs = ck["channel_versions"]
    blobs = c.execute("SELECT b.channel, b.blob FROM unnest(%s::text[], %s::text[]) v(ch, ver) JOIN checkpoint_blobs b "
                      "ON b.thread_id = %s AND b.checkpoint_ns = '' AND b.channel = v.ch AND b.version = v.ver",
                      (list(vs), list(vs.values()), sys.argv[2])).fetchall()
    print(len([ormsgpack.unpackb(b, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS) for _, b in blobs if b]))
"""


STACK = """
import sys, typer
app = typer.Typer(add_completion=False)
@app.callback()
def root() -> None: pass
@app.command()
def floor(args: list[str], rich: bool = False) -> None:
    out = print
    if rich:
        from rich.console import Console
        out = Console(markup=False, emoji=False).print
    sys.argv = ["floor", *args]
    exec(sys.modules["__main__"].FLOOR, {"print": out})
FLOOR = sys.argv.pop(1)
app()
"""
"""The floor's work in the required stack: Typer parses the arguments, and (for human output)
Rich prints the result. No CLI on Typer and Rich can do the floor's work faster than this."""


def stack(floor: list[str], rich: bool) -> list[str]:
    py, _, code, *args = floor
    return [py, "-c", STACK, code, "floor", *args] + (["--rich"] if rich else [])


def timed(cmds: list[list[str]], runs: int) -> list[float]:
    """Best whole-process time of each command. The commands take turns, run by run, so a burst
    of load on this shared machine slows all of them, not whichever one it happened to meet."""
    samples: list[list[float]] = [[] for _ in cmds]
    for _ in range(runs):
        for cmd, out in zip(cmds, samples, strict=True):
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True)
            out.append(time.perf_counter() - t0)
            if proc.returncode != 0:
                raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr.decode()}")
    return [min(s) for s in samples]  # the least-disturbed run of each


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", type=Path, default=HERE / "data" / "large.sqlite")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument(
        "--postgres",
        metavar="URL",
        help="benchmark this PostgresSaver database instead (make one with bench/make_pg.py)",
    )
    a = p.parse_args()
    if a.postgres:
        return postgres(a.postgres, a.runs)
    if not a.db.exists():
        raise SystemExit(f"{a.db} does not exist: run `python bench/make_large.py` first")
    conn = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
    thread = conn.execute(
        "SELECT thread_id FROM checkpoints GROUP BY thread_id ORDER BY COUNT(*) DESC LIMIT 1"
    ).fetchone()[0]
    n_threads, n_ckpt = conn.execute("SELECT COUNT(DISTINCT thread_id), COUNT(*) FROM checkpoints").fetchone()
    conn.close()
    py, db = sys.executable, str(a.db)
    # `pip install` byte-compiles a package; an editable checkout run with PYTHONDONTWRITEBYTECODE
    # (as on these machines) would otherwise compile statectl's sources on every start.
    import compileall

    compileall.compile_dir(str(HERE.parent / "statectl"), quiet=1)
    statectl = [py, "-m", "statectl"]
    cases = [
        ("threads", [*statectl, "threads", "--db", db], [py, "-c", FLOOR_THREADS, db]),
        ("threads --json", [*statectl, "threads", "--db", db, "--json"], [py, "-c", FLOOR_THREADS, db]),
        ("log", [*statectl, "log", thread, "--db", db], [py, "-c", FLOOR_LOG, db, thread]),
        ("show", [*statectl, "show", thread, "--db", db], [py, "-c", FLOOR_SHOW, db, thread]),
        ("show --json", [*statectl, "show", thread, "--db", db, "--json"], [py, "-c", FLOOR_SHOW, db, thread]),
        ("diff", [*statectl, "diff", thread, "--db", db], [py, "-c", FLOOR_DIFF, db, thread]),
        ("diff --json", [*statectl, "diff", thread, "--db", db, "--json"], [py, "-c", FLOOR_DIFF, db, thread]),
        ("log -p", [*statectl, "log", thread, "-p", "--db", db], [py, "-c", FLOOR_LOG, db, thread]),
    ]
    report(
        f"{a.db.name}: {n_threads} threads, {n_ckpt} checkpoints, {a.db.stat().st_size / 1e6:.0f} MB; thread {thread}",
        cases,
        a.runs,
    )


def report(title: str, cases: list, runs: int) -> None:
    print(
        f"{title}; best of {runs} runs\n"
        "stack: the floor's work run by Typer (+ printed by Rich for human output), the least a\n"
        "CLI built on them can take; over: what statectl spends beyond it\n"
    )
    w = max(16, *(len(name) + 2 for name, _, _ in cases))
    print(f"{'command':<{w}}{'statectl':>10}{'floor':>8}{'ratio':>8}{'stack':>8}{'ratio':>8}{'over':>8}")
    for name, cmd, floor in cases:
        t, f, s = timed([cmd, floor, stack(floor, "--json" not in name)], runs)
        print(
            f"{name:<{w}}{t * 1000:>8.0f}ms{f * 1000:>6.0f}ms{t / f:>7.2f}x{s * 1000:>6.0f}ms{s / f:>7.2f}x"
            f"{(t - s) * 1000:>6.0f}ms{'' if t / f <= 3 else '  (over 3x)'}"
        )


def postgres(url: str, runs: int) -> None:
    import compileall

    import psycopg

    compileall.compile_dir(str(HERE.parent / "statectl"), quiet=1)
    with psycopg.connect(url) as conn:
        rows, size = conn.execute(
            "SELECT (SELECT reltuples::bigint FROM pg_class WHERE relname = 'checkpoints'), "
            "pg_size_pretty(pg_database_size(current_database()))"
        ).fetchone()
        thread = conn.execute(
            "SELECT thread_id FROM checkpoints WHERE thread_id LIKE 'copy-003%%bakery-plan' LIMIT 1"
        ).fetchone()[0]
    py = sys.executable
    st = [py, "-m", "statectl"]
    cases = [
        ("threads", [*st, "threads", "--db", url], [py, "-c", PG_FLOOR_THREADS, url]),
        (
            "threads --json",
            [*st, "threads", "--db", url, "--json", "--limit", "100"],
            [py, "-c", PG_FLOOR_THREADS, url],
        ),
        ("log", [*st, "log", thread, "--db", url], [py, "-c", PG_FLOOR_LOG, url, thread]),
        ("show", [*st, "show", thread, "--db", url], [py, "-c", PG_FLOOR_SHOW, url, thread]),
        ("show --json", [*st, "show", thread, "--db", url, "--json"], [py, "-c", PG_FLOOR_SHOW, url, thread]),
        ("diff", [*st, "diff", thread, "--db", url], [py, "-c", PG_FLOOR_SHOW, url, thread, "2"]),
        ("diff --json", [*st, "diff", thread, "--db", url, "--json"], [py, "-c", PG_FLOOR_SHOW, url, thread, "2"]),
    ]
    latest = [py, "-c", PG_FLOOR_LATEST, url]
    cases += [
        (f"threads {' '.join(args)}", [*st, "threads", *args, "--db", url], latest)
        for args in (["--since", "1h"], ["-s", "interrupted", "--older-than", "2h"], ["--meta", "user_id=nobody"])
    ]
    report(f"Postgres {url}: ~{rows} checkpoint rows, {size}; thread {thread}", cases, runs)


if __name__ == "__main__":
    main()
