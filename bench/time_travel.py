"""`statectl copy` of the long thread (1,500 checkpoints, 1,000 messages) against LangGraph's own
`list` + `put`/`put_writes` loop, the floor any copy through LangGraph's saver pays; and the
start-up of `fork` / `replay --dry-run` against calling LangGraph directly. Whole-process time
and peak memory (the process and its children), best of `--runs`, ratios in the same run.

    python bench/time_travel.py [--runs 3] [--postgres postgresql:///statectl_bench_copy]

Goals (issue 31): copy within 1.5x of LangGraph's loop, at most 200 MB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"
STATECTL = [sys.executable, "-m", "statectl"]

LANGGRAPH_COPY = """
import sqlite3, sys
from langgraph.checkpoint.sqlite import SqliteSaver
src_spec, dest, thread = sys.argv[1:4]
if src_spec.startswith("postgresql:"):
    from langgraph.checkpoint.postgres import PostgresSaver
    cm = PostgresSaver.from_conn_string(src_spec)
    src = cm.__enter__()
else:
    src = SqliteSaver(sqlite3.connect(src_spec, check_same_thread=False))
out = SqliteSaver(sqlite3.connect(dest, check_same_thread=False))
n = 0
for t in reversed(list(src.list({"configurable": {"thread_id": thread}}))):
    conf = t.config["configurable"]
    parent = (t.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": conf["checkpoint_ns"],
                               **({"checkpoint_id": parent} if parent else {})}}
    out.put(config, t.checkpoint, t.metadata, t.checkpoint["channel_versions"])
    by_task = {}
    for task_id, channel, value in t.pending_writes or ():
        by_task.setdefault(task_id, []).append((channel, value))
    for task_id, writes in by_task.items():
        out.put_writes({"configurable": {**conf}}, writes, task_id)
    n += 1
print(n)
"""

LANGGRAPH_STATE = """
import sqlite3, sys
sys.path.insert(0, sys.argv[3])
from langgraph.checkpoint.sqlite import SqliteSaver
from statectl.project.target import compiled, load
saver = SqliteSaver(sqlite3.connect(sys.argv[1], check_same_thread=False))
graph = compiled(load(sys.argv[2])).copy(update={"checkpointer": saver})
print(len(graph.get_state({"configurable": {"thread_id": "notes-edits"}}).values))
"""


def timed(cmd: list[str], runs: int, before: object = None) -> tuple[float, int]:
    """Best whole time (s) and the largest peak RSS of any process of the run (kB)."""
    best, peak = float("inf"), 0
    for _ in range(runs):
        if callable(before):
            before()
        probe = (
            "import resource, subprocess, sys, time; t = time.perf_counter(); "
            "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE); "
            "assert r.returncode == 0, r.stderr.decode()[-2000:]; "
            "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
        )
        out = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True, check=True)
        seconds, rss = out.stdout.split()
        best, peak = min(best, float(seconds)), max(peak, int(rss))
    return best, peak


def ensure_long() -> Path:
    path = DATA / "long.sqlite"
    if not path.exists():
        DATA.mkdir(exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                str(HERE / "make_large.py"),
                "--threads",
                "1",
                "--distinct",
                "1",
                "--turns",
                "500",
                "-o",
                str(path),
            ],
            check=True,
        )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--postgres", help="also copy from this Postgres database (the long thread is written there)")
    args = parser.parse_args()
    long = ensure_long()
    import sqlite3

    (thread,) = sqlite3.connect(long).execute("SELECT DISTINCT thread_id FROM checkpoints").fetchone()
    work = Path(tempfile.mkdtemp(prefix="statectl-bench-copy-"))
    dest = work / "copy.sqlite"

    def fresh() -> None:
        for p in work.glob("copy.sqlite*"):
            p.unlink()

    rows = []
    sources = [("SQLite", str(long))]
    if args.postgres:
        fresh()
        subprocess.run(
            [*STATECTL, "copy", thread, "--db", str(long), "--to", args.postgres, "--replace"],
            check=True,
            env={**os.environ, "STATECTL_PAGER": "cat"},
        )
        sources.append(("Postgres", args.postgres))
    for name, spec in sources:
        ours = timed([*STATECTL, "copy", thread, "--db", spec, "--to", str(dest)], args.runs, fresh)
        floor = timed([sys.executable, "-c", LANGGRAPH_COPY, spec, str(dest), thread], args.runs, fresh)
        rows.append((f"copy {name} -> SQLite", ours, floor))
    # the start-up of fork (a copy into the scratch file, then update_state) and of replay --dry-run
    shutil.copy(ROOT / "sample_threads" / "custom.sqlite", work / "custom.sqlite")
    notes = f"{ROOT / 'sample_threads' / 'custom_app.py'}:notes_builder"

    def no_scratch() -> None:
        for p in work.glob("statectl-scratch.sqlite*"):
            p.unlink()

    os.chdir(work)
    fork = timed(
        [*STATECTL, "fork", "notes-edits", "--db", "custom.sqlite", "--graph", notes, "--set", "count=1"],
        args.runs,
        no_scratch,
    )
    direct = timed([sys.executable, "-c", LANGGRAPH_STATE, "custom.sqlite", notes, str(ROOT)], args.runs)
    rows.append(("fork (copy + update_state)", fork, direct))
    dry = timed([*STATECTL, "replay", "notes-edits", "1", "--db", "custom.sqlite", "--dry-run"], args.runs)
    rows.append(("replay --dry-run", dry, direct))
    print(f"{'command':32} {'statectl':>10} {'peak MB':>8} {'floor':>10} {'ratio':>6}")
    for label, (t, rss), (ft, _frss) in rows:
        print(f"{label:32} {t:9.2f}s {rss / 1024:7.0f} {ft:9.2f}s {t / ft:5.2f}x")
    print("floor: LangGraph's own list + put/put_writes loop (copy); loading the graph and get_state (fork, replay)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
