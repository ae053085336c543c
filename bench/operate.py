"""Operating a store at size: `prune --apply` and `doctor`, against floors measured in the same run.

SQLite: the 773 MB bench file (`python bench/make_large.py`), pruned on a copy. Postgres: the
~1M-row bench database (`python bench/make_pg.py`), pruned on a copy made from it as a template.
For each: wall time, peak memory (the process's max RSS) and, for `prune --apply`, the longest a
thread's transaction held the write lock (SQLite) or its rows (Postgres).

Floors: for `prune --apply`, the SQL `prune --sql` prints for the same plan, run as one script (what
a DBA would run by hand after reviewing it; its planning is not counted); for `doctor`, reading
every checkpoint and write row and parsing it (msgpack or JSON, no ext decoded): the least a
check of every row can cost.

    python bench/operate.py [--sqlite bench/data/large.sqlite] [--postgres postgresql:///statectl_bench]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
MEASURE = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE); "
    "d = time.perf_counter() - t; sys.stderr.buffer.write(p.stderr); "
    "sys.stdout.buffer.write(p.stdout); "
    "print('\\x1e%d %.3f %d' % (p.returncode, d, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))"
)


def measured(*argv: str) -> tuple[int, float, int, str]:
    """(exit code, seconds, peak RSS in MB, stdout) of a command run in its own process."""
    done = subprocess.run([PY, "-c", MEASURE, *argv], capture_output=True, text=True)
    out, _, tail = done.stdout.rpartition("\x1e")
    code, secs, rss = tail.split()
    if int(code) not in (0, 1):
        raise SystemExit(f"{' '.join(argv[:4])}... failed: {done.stderr.strip()[-400:]}")
    return int(code), float(secs), int(rss) // 1024, out


STATECTL = [PY, "-m", "statectl"]

SQLITE_FLOOR = """
import sqlite3, sys, ormsgpack, orjson
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
def parse(t, b):
    if t == "msgpack" and b: ormsgpack.unpackb(b, ext_hook=lambda c, d: None, option=ormsgpack.OPT_NON_STR_KEYS)
    elif t == "json" and b: orjson.loads(b)
for t, b in conn.execute("SELECT type, checkpoint FROM checkpoints"): parse(t, b)
for t, b in conn.execute("SELECT type, value FROM writes"): parse(t, b)
"""

PG_FLOOR = """
import sys, psycopg, ormsgpack, orjson
with psycopg.connect(sys.argv[1]) as conn:
    def parse(t, b):
        if t == "msgpack" and b:
            ormsgpack.unpackb(bytes(b), ext_hook=lambda c, d: None, option=ormsgpack.OPT_NON_STR_KEYS)
    with conn.cursor(name="c") as cur:
        cur.execute("SELECT checkpoint::text FROM checkpoints")
        for (text,) in cur: orjson.loads(text)
    for table, col in (("checkpoint_blobs", "blob"), ("checkpoint_writes", "blob")):
        with conn.cursor(name="c") as cur:
            cur.execute(f"SELECT type, {col} FROM {table}")
            for t, b in cur: parse(t, b)
"""


def row(what: str, secs: float, rss: int, floor: float | None, extra: str = "") -> None:
    ratio = f"{secs / floor:5.2f}x" if floor else "     -"
    base = f"{floor:8.1f}s" if floor else "        -"
    print(f"{what:<28}{secs:8.1f}s{base}  {ratio}{rss:7d} MB  {extra}")


def applied(out: str, secs: float, rss: int, floor: float) -> None:
    report = json.loads(out)
    longest = report["longest_transaction_s"] * 1000
    row("prune --apply", secs, rss, floor, f"{report['dropped']:,} checkpoints, longest transaction {longest:.0f} ms")


def sqlite_bench(db: Path) -> None:
    size = db.stat().st_size
    print(f"\nSQLite {db} ({size / 1e6:.0f} MB); prune --keep-last 10")
    print(f"{'command':<28}{'statectl':>9}{'floor':>9}  {'ratio':>6}{'peak':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a.sqlite", Path(tmp) / "b.sqlite"
        shutil.copy(db, a)
        shutil.copy(db, b)
        script = subprocess.run(
            [*STATECTL, "prune", "--keep-last", "10", "--sql", "--db", str(b)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        (Path(tmp) / "p.sql").write_text(script)
        floor_code = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(open(sys.argv[2]).read())"
        _, floor, _, _ = measured(PY, "-c", floor_code, str(b), str(Path(tmp) / "p.sql"))
        _, secs, rss, out = measured(
            *STATECTL, "prune", "--keep-last", "10", "--apply", "--yes", "--json", "--db", str(a)
        )
        applied(out, secs, rss, floor)
        shutil.copy(db, a)  # (again whole: --vacuum after the same prune)
        _, vsecs, vrss, vout = measured(
            *STATECTL, "prune", "--keep-last", "10", "--apply", "--yes", "--vacuum", "--json", "--db", str(a)
        )
        v = json.loads(vout)["vacuum"]
        row("prune --apply --vacuum", vsecs, vrss, None, f"VACUUM gave back {v['given_back'] / 1e6:.0f} MB")
    _, floor, _, _ = measured(PY, "-c", SQLITE_FLOOR, str(db))
    _, secs, rss, out = measured(*STATECTL, "doctor", "--json", "--db", str(db))
    d = json.loads(out)
    row("doctor", secs, rss, floor, f"{d['threads']:,} threads, {d['checkpoints']:,} checkpoints, {d['counts']}")


def postgres_bench(url: str, doctor: bool = True) -> None:
    import psycopg

    base, _, name = url.rpartition("/")
    copy = f"{name}_prune"
    admin = f"{base}/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{copy}"')
        t = time.perf_counter()
        conn.execute(f'CREATE DATABASE "{copy}" TEMPLATE "{name}"')
        made = time.perf_counter() - t
    target = f"{base}/{copy}"
    with psycopg.connect(target) as conn:
        rows = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    print(
        f"\nPostgres {url}: {rows:,} checkpoint rows, {size / 1e9:.1f} GB (copy made in {made:.0f} s); "
        "prune --keep-last 2"
    )
    print(f"{'command':<28}{'statectl':>9}{'floor':>9}  {'ratio':>6}{'peak':>10}")
    try:
        if doctor:
            _, floor, _, _ = measured(PY, "-c", PG_FLOOR, url)
            _, secs, rss, out = measured(*STATECTL, "doctor", "--json", "--no-plan", "--db", url)
            d = json.loads(out)
            found = f"{d['threads']:,} threads, {d['checkpoints']:,} checkpoints, {d['counts']}"
            row("doctor --no-plan", secs, rss, floor, found)
        _, psecs, prss, script = measured(*STATECTL, "prune", "--keep-last", "2", "--sql", "--db", target)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}_floor"')
            conn.execute(f'CREATE DATABASE "{name}_floor" TEMPLATE "{name}"')
        with tempfile.NamedTemporaryFile("w", suffix=".sql") as fh:
            fh.write(script)
            fh.flush()
            run_sql = (
                "import psycopg, sys; c = psycopg.connect(sys.argv[1], autocommit=True); "
                "c.execute(open(sys.argv[2]).read())"
            )
            _, floor, _, _ = measured(PY, "-c", run_sql, f"{base}/{name}_floor", fh.name)
        row("prune --sql (the plan)", psecs, prss, None, "")
        _, secs, rss, out = measured(
            *STATECTL, "prune", "--keep-last", "2", "--apply", "--yes", "--json", "--db", target
        )
        applied(out, secs, rss, floor)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{copy}"')
            conn.execute(f'DROP DATABASE IF EXISTS "{name}_floor"')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sqlite", type=Path, default=ROOT / "bench" / "data" / "large.sqlite")
    ap.add_argument("--postgres", default=None, help="the bench database (python bench/make_pg.py)")
    ap.add_argument("--no-doctor", action="store_true", help="Postgres: prune only (doctor takes ~10 min)")
    ap.add_argument("--no-sqlite", action="store_true")
    args = ap.parse_args()
    if args.no_sqlite:
        pass
    elif args.sqlite.exists():
        sqlite_bench(args.sqlite)
    else:
        print(f"no {args.sqlite}: python bench/make_large.py --threads 1000 --turns 20 -o {args.sqlite}")
    if args.postgres:
        postgres_bench(args.postgres, doctor=not args.no_doctor)


if __name__ == "__main__":
    main()
