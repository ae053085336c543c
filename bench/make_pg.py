"""A large PostgresSaver database for the benchmark: ~1M checkpoint rows of real LangGraph output.

Restores sample_threads/postgres.sql (what PostgresSaver wrote for the sample threads) and copies
its rows under new thread ids until the `checkpoints` table holds `--rows` rows. Every byte is
real LangGraph output; only the thread ids are new.

    python bench/make_pg.py [--url postgresql:///statectl_bench] [--rows 1000000]
"""

from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
TABLES = {
    "checkpoints": "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata",
    "checkpoint_blobs": "thread_id, checkpoint_ns, channel, version, type, blob",
    "checkpoint_writes": "thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob, task_path",
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="postgresql:///statectl_bench")
    p.add_argument("--rows", type=int, default=1_000_000)
    a = p.parse_args()
    name = a.url.rsplit("/", 1)[1]
    with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    subprocess.run(
        ["psql", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(ROOT / "sample_threads" / "postgres.sql"), a.url],
        check=True,
        capture_output=True,
    )
    t0 = time.perf_counter()
    with psycopg.connect(a.url, autocommit=True) as conn:
        per_copy = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        copies = max(1, a.rows // per_copy - 1)
        for table, cols in TABLES.items():
            conn.execute(f"CREATE TEMP TABLE src_{table} AS SELECT {cols} FROM {table}")
        batch = 500
        for start in range(0, copies, batch):
            n = min(batch, copies - start)
            for table, cols in TABLES.items():
                rest = cols.split(", ", 1)[1]
                conn.execute(
                    f"INSERT INTO {table} ({cols}) SELECT 'copy-' || lpad(g::text, 6, '0') || '-' "
                    f"|| thread_id, {rest} FROM src_{table}, generate_series(%s::int, %s::int) g",
                    (start, start + n - 1),
                )
            print(f"  {start + n}/{copies} copies, {time.perf_counter() - t0:.0f}s", flush=True)
        conn.execute("VACUUM ANALYZE")  # (what autovacuum does to a table in use: index-only scans work)
        rows, threads = conn.execute("SELECT count(*), count(DISTINCT thread_id) FROM checkpoints").fetchone()
        size = conn.execute("SELECT pg_size_pretty(pg_database_size(current_database()))").fetchone()[0]
    print(f"{a.url}: {rows} checkpoints in {threads} threads, {size}")


if __name__ == "__main__":
    main()
