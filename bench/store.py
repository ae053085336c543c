"""The long-term memory store at scale (issue 56): `store ls` (its first page), `store` (the tree)
and `store grep --filter` on SQLite and Postgres stores of `--items` items, written by LangGraph's
own SqliteStore / PostgresStore (`batch` of PutOps, in chunks), against a hand-written SQL floor in
the same run (goal: at most 2x), with peak RSS at each size (flat: it does not grow with the store).

    python bench/store.py [--items 100000,1000000] [--pg] [--runs 3]

Items: `--namespaces` namespaces `users.uN.memories` (one of them, `users.u0.memories`, holds
1/10 of the items: the one listed), each value `{"text": ..., "kind": kN, "score": i % 100}`.
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
PY = sys.executable
sys.path.insert(0, str(HERE))

from scale import measured  # noqa: E402

FLOORS = {
    "ls": """
import sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
conn.execute("SELECT DISTINCT prefix FROM store").fetchall()
conn.execute("SELECT key, substr(value, 1, 200), length(value), created_at, updated_at, expires_at, ttl_minutes "
             "FROM store WHERE prefix = 'users.u0.memories' ORDER BY key LIMIT 101").fetchall()
""",
    "tree": """
import sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
conn.execute("SELECT prefix, count(*), sum(length(value)), max(updated_at), count(expires_at) FROM store "
             "GROUP BY prefix").fetchall()
""",
    "grep": """
import json, sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
n = 0
for prefix, key, value in conn.execute("SELECT prefix, key, value FROM store"):
    if json.loads(value).get("kind") == "k7":
        n += 1
""",
}
PG_FLOORS = {
    "ls": """
import psycopg, sys
with psycopg.connect(sys.argv[1]) as conn:
    conn.execute("SELECT DISTINCT prefix FROM store").fetchall()
    conn.execute("SELECT key, left(value::text, 200), octet_length(value::text), created_at, updated_at, expires_at, "
                 "ttl_minutes FROM store WHERE prefix = 'users.u0.memories' ORDER BY key LIMIT 101").fetchall()
""",
    "tree": """
import psycopg, sys
with psycopg.connect(sys.argv[1]) as conn:
    conn.execute("SELECT prefix, count(*), sum(octet_length(value::text)), max(updated_at), count(expires_at) "
                 "FROM store GROUP BY prefix").fetchall()
""",
    "grep": """
import json, psycopg, sys
with psycopg.connect(sys.argv[1]) as conn:
    n = 0
    with conn.cursor(name="all") as cur:
        cur.itersize = 500
        cur.execute("SELECT prefix, key, value::text FROM store")
        for prefix, key, value in cur:
            if json.loads(value).get("kind") == "k7":
                n += 1
""",
}
COMMANDS = {
    "ls": ["store", "ls", "users.u0.memories"],
    "tree": ["store", "--json"],
    "grep": ["store", "grep", "--filter", "kind=k7", "--json", "--limit", "0"],
}


def write(store: object, items: int, namespaces: int) -> None:
    from langgraph.store.base import PutOp

    chunk: list = []
    for i in range(items):
        ns = 0 if i % 10 == 0 else 1 + i % (namespaces - 1)
        value = {
            "text": f"memory {i}: the user mentioned item {i * 7919 % 100003}",
            "kind": f"k{i % 13}",
            "score": i % 100,
        }
        chunk.append(PutOp(("users", f"u{ns}", "memories"), f"m{i:08d}", value, index=False))
        if len(chunk) == 10_000:
            store.batch(chunk)  # type: ignore[attr-defined]
            chunk = []
    if chunk:
        store.batch(chunk)  # type: ignore[attr-defined]


def sqlite_store(items: int, namespaces: int) -> Path:
    path = DATA / f"store_{items}.sqlite"
    if not path.exists():
        import sqlite3

        from langgraph.store.sqlite import SqliteStore

        DATA.mkdir(exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        conn = sqlite3.connect(tmp, check_same_thread=False, isolation_level=None)
        store = SqliteStore(conn)
        store.setup()
        write(store, items, namespaces)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        tmp.rename(path)
    return path


def pg_store(items: int, namespaces: int) -> str:
    import psycopg
    from langgraph.store.postgres import PostgresStore
    from psycopg.rows import dict_row

    name = f"statectl_store_{items}"
    url = f"postgresql:///{name}"
    with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
    if not exists:
        with psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
            store = PostgresStore(conn)  # type: ignore[arg-type]
            store.setup()
            write(store, items, namespaces)
            conn.execute("VACUUM ANALYZE store")
    return url


def bench(db: str, floors: dict[str, str], runs: int) -> dict[str, tuple[float, float, int, int]]:
    out = {}
    for name, args in COMMANDS.items():
        argv = [PY, "-m", "statectl", *args, "--db", db]
        floor = [PY, "-c", floors[name], db]
        measured(*argv)  # (warm)
        measured(*floor)
        mine = [measured(*argv) for _ in range(runs)]
        base = [measured(*floor) for _ in range(runs)]
        out[name] = (
            statistics.median(s for s, _ in mine),
            statistics.median(s for s, _ in base),
            max(r for _, r in mine),
            max(r for _, r in base),
        )
    return out


def report(kind: str, items: int, results: dict[str, tuple[float, float, int, int]]) -> None:
    for name, (mine, floor, rss, floor_rss) in results.items():
        print(
            f"{kind:8} {items:>9,} {' '.join(COMMANDS[name][:3]):28} {mine:7.2f} s  floor {floor:6.2f} s  "
            f"x{mine / floor:4.1f}  peak {rss:4d} MB (floor {floor_rss} MB)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", default="100000,1000000")
    parser.add_argument("--namespaces", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pg", action="store_true", help="Postgres too (databases statectl_store_N, kept)")
    args = parser.parse_args()
    sizes = [int(n) for n in args.items.split(",")]
    import os

    os.environ["PYTHONPATH"] = str(ROOT)
    for n in sizes:
        report("sqlite", n, bench(str(sqlite_store(n, args.namespaces)), FLOORS, args.runs))
        if args.pg:
            report("postgres", n, bench(pg_store(n, args.namespaces), PG_FLOORS, args.runs))
    subprocess.run([PY, "-c", "pass"], check=True)


if __name__ == "__main__":
    main()
