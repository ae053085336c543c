"""The long-term memory store at scale (issue 56): `store ls` (its first page), `store` (the tree)
and `store grep --filter` on SQLite and Postgres stores of `--items` items, written by LangGraph's
own SqliteStore / PostgresStore (`batch` of PutOps, in chunks), against a hand-written SQL floor in
the same run (goal: at most 2x), with peak RSS at each size (flat: it does not grow with the store).

    python bench/store.py [--items 100000,1000000] [--pg [--keep]] [--runs 3]
    python bench/store.py --items 0 --tree 100000,1000000     # the tree of many namespaces

Items: `--namespaces` namespaces `users.uN.memories` (one of them, `users.u0.memories`, holds
1/10 of the items: the one listed), each value `{"text": ..., "kind": kN, "score": i % 100}`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"
PY = sys.executable
sys.path.insert(0, str(HERE))

from scale import measured  # noqa: E402

# The floors: what a hand-written script reads to give the same facts, with the store's own
# indexes and LangGraph's own SQL for a filter (SqliteStore's json_extract, PostgresStore's
# `value->key = jsonb`), each value of the result decoded.
FLOORS = {
    "ls": """
import sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
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
for row in conn.execute("SELECT prefix, key, value, created_at, updated_at, expires_at, ttl_minutes FROM store "
                        "WHERE json_extract(value, '$.kind') = ?", ("k7",)):
    json.loads(row[2])
    n += 1
""",
}
PG_FLOORS = {
    "ls": """
import psycopg, sys
with psycopg.connect(sys.argv[1]) as conn:
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
        cur.execute("SELECT prefix, key, value::text, created_at, updated_at, expires_at, ttl_minutes FROM store "
                    "WHERE value->%s = %s::jsonb", ("kind", '"k7"'))
        for row in cur:
            json.loads(row[2])
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


def wide_store(spaces: int) -> Path:
    """`spaces` distinct namespaces `org.tN.uM` (one item each), written by SqliteStore's batch."""
    path = DATA / f"store_ns_{spaces}.sqlite"
    if not path.exists():
        import sqlite3

        from langgraph.store.base import PutOp
        from langgraph.store.sqlite import SqliteStore

        DATA.mkdir(exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        conn = sqlite3.connect(tmp, check_same_thread=False, isolation_level=None)
        store = SqliteStore(conn)
        store.setup()
        for start in range(0, spaces, 10_000):
            store.batch(
                [
                    PutOp(("org", f"t{i % 1000}", f"u{i:08d}"), "profile", {"n": i}, index=False)
                    for i in range(start, min(spaces, start + 10_000))
                ]
            )
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        tmp.rename(path)
    return path


def tree_bench(spaces: int, runs: int) -> None:
    """`store` (the tree) and `store --json` on a store of `spaces` distinct namespaces: peak RSS
    (flat: the tree holds TREE_NODES labels, the JSON is written as read) and time against the
    GROUP BY floor."""
    db = str(wide_store(spaces))
    floor = [PY, "-c", FLOORS["tree"], db]
    base = statistics.median(measured(*floor)[0] for _ in range(runs))
    for args in (["store"], ["store", "--json"]):
        got = [measured(PY, "-m", "statectl", *args, "--db", db) for _ in range(runs)]
        secs = statistics.median(s for s, _ in got)
        print(
            f"sqlite   {spaces:>9,} namespaces {' '.join(args):14} {secs:7.2f} s  floor {base:6.2f} s  "
            f"x{secs / base:4.1f}  peak {max(r for _, r in got):4d} MB"
        )


def drop(url: str) -> None:
    import psycopg

    with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}"')


def pg_store(items: int, namespaces: int) -> tuple[str, bool]:
    """(its URL, whether it was made now: dropped after the run unless --keep)."""
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
    return url, not exists


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


def startup(runs: int) -> float:
    """statectl's own start-up for a store command (`store ls --help`: its imports, no store read)."""
    argv = [PY, "-m", "statectl", "store", "ls", "--help"]
    measured(*argv)
    return statistics.median(measured(*argv)[0] for _ in range(runs))


def report(kind: str, items: int, results: dict[str, tuple[float, float, int, int]], start: float) -> None:
    for name, (mine, floor, rss, floor_rss) in results.items():
        print(
            f"{kind:8} {items:>9,} {' '.join(COMMANDS[name][:3]):28} {mine:7.2f} s  floor {floor:6.2f} s  "
            f"x{mine / floor:4.1f} (x{(mine - start) / floor:4.1f} start-up apart)  peak {rss:4d} MB "
            f"(floor {floor_rss} MB)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", default="100000,1000000")
    parser.add_argument("--namespaces", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pg", action="store_true", help="Postgres too (a database statectl_store_N each)")
    parser.add_argument("--keep", action="store_true", help="keep the Postgres databases it made (else dropped)")
    parser.add_argument("--tree", default="", help="N,M: `store` on SQLite stores of N, M distinct namespaces")
    args = parser.parse_args()
    sizes = [int(n) for n in args.items.split(",")]
    import os

    os.environ["PYTHONPATH"] = str(ROOT)
    for spaces in [int(n) for n in args.tree.split(",") if n]:
        tree_bench(spaces, args.runs)
    if args.tree and args.items == "0":
        return
    start = startup(args.runs)
    print(f"statectl start-up (store ls --help): {start:.2f} s")
    for n in sizes:
        report("sqlite", n, bench(str(sqlite_store(n, args.namespaces)), FLOORS, args.runs), start)
        if args.pg:
            url, made = pg_store(n, args.namespaces)
            try:
                report("postgres", n, bench(url, PG_FLOORS, args.runs), start)
            finally:
                if made and not args.keep:
                    drop(url)


if __name__ == "__main__":
    main()
