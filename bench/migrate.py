"""`statectl migrate` against `statectl copy` of the same store: whole-process time, best of
`--runs`, each run on a fresh copy of the store (in place rewrites it).

    python bench/migrate.py STORE.sqlite [--runs 3] [--rename-key OLD=NEW] [--rename-class OLD=NEW]

Measured: `copy --all --to NEW`, `migrate --all ... --in-place --yes` and `migrate --all ... --to
NEW`, and the ratio of each to copy. Goal (issue 57): in place within 1.5x of copy.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STATECTL = [sys.executable, "-m", "statectl"]


def timed(args: list[str]) -> float:
    began = time.perf_counter()
    r = subprocess.run([*STATECTL, *args], capture_output=True, text=True)
    took = time.perf_counter() - began
    if r.returncode != 0:
        sys.exit(f"{' '.join(args)}: {r.stderr.strip()}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("store", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rename-key", action="append", default=[])
    parser.add_argument("--rename-class", action="append", default=[])
    ns = parser.parse_args()
    renames = [a for k in ns.rename_key for a in ("--rename-key", k)]
    renames += [a for c in ns.rename_class for a in ("--rename-class", c)]
    if not renames:
        sys.exit("give --rename-key or --rename-class")
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="statectl-bench-migrate-") as tmp:
        for _ in range(ns.runs):
            for name in ("copy", "in place", "to a copy"):
                work = Path(tmp) / "store.sqlite"
                shutil.copy(ns.store, work)
                out = Path(tmp) / "out.sqlite"
                out.unlink(missing_ok=True)
                if name == "copy":
                    args = ["copy", "--all", "--db", str(work), "--to", str(out)]
                elif name == "in place":
                    args = ["migrate", "--all", "--db", str(work), *renames, "--in-place", "--yes"]
                else:
                    args = ["migrate", "--all", "--db", str(work), *renames, "--to", str(out)]
                took = timed(args)
                best[name] = min(best.get(name, took), took)
    size = ns.store.stat().st_size / 1e6
    for name, took in best.items():
        print(f"{name:10} {took:7.2f} s  {size / took:6.1f} MB/s  {took / best['copy']:.2f}x copy")


if __name__ == "__main__":
    main()
