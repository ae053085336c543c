"""`langgraph dev` folders and LangGraph servers: whole-process time against a floor measured in
the same run.

Folder: the largest `.langgraph_api` folder under ../shared/realworld/langgraph_api (or --folder);
the floor starts Python, reads the four files and unpickles them with statectl's inert unpickler
(the least a reader that runs nothing can do), no rendering.
Server: a real `langgraph dev` serving the sample folder; the floor starts Python and sends the
same HTTP requests with httpx (a page of threads: the search and each thread's state; a history;
one state), no rendering.

    python bench/api.py [--folder PATH] [--runs 5]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "sample_threads"))

FLOOR_FOLDER = """
import sys
from pathlib import Path
from statectl.codec.unpickle import loads
for name in (".langgraph_checkpoint.1.pckl", ".langgraph_checkpoint.2.pckl", ".langgraph_checkpoint.3.pckl",
             ".langgraph_ops.pckl"):
    p = Path(sys.argv[1]) / name
    if p.exists() and p.stat().st_size:
        loads(p.read_bytes())
"""
FLOOR_HTTP_THREADS = """
import sys, httpx
c = httpx.Client(base_url=sys.argv[1])
rows = c.post("/threads/search", json={"limit": 20, "offset": 0, "sort_by": "updated_at", "sort_order": "desc"}).json()
print(len([c.get(f"/threads/{r['thread_id']}/state").json() for r in rows]))
"""
FLOOR_HTTP_LOG = """
import sys, httpx
c = httpx.Client(base_url=sys.argv[1])
print(len(c.post(f"/threads/{sys.argv[2]}/history", json={"limit": 100}).json()))
"""
FLOOR_HTTP_SHOW = """
import sys, httpx
c = httpx.Client(base_url=sys.argv[1])
print(len(c.get(f"/threads/{sys.argv[2]}/state").json()))
"""


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, env={"COLUMNS": "160", "PATH": "/usr/bin:/bin"}, cwd=ROOT)
    elapsed = time.perf_counter() - start
    if out.returncode:
        raise SystemExit(f"{' '.join(argv)} failed: {out.stderr.decode()[-500:]}")
    return elapsed


def best(pairs: dict[str, tuple[list[str], list[str]]], runs: int) -> dict[str, tuple[float, float]]:
    """Best of `runs` for each command and its floor, taking turns (load falls on all alike)."""
    times = {name: ([], []) for name in pairs}
    for _ in range(runs):
        for name, (cmd, floor) in pairs.items():
            times[name][0].append(timed(cmd))
            times[name][1].append(timed(floor))
    return {name: (min(a), min(b)) for name, (a, b) in times.items()}


def report(title: str, results: dict[str, tuple[float, float]]) -> None:
    print(title)
    print(f"{'command':<22}{'statectl':>10}{'floor':>9}{'ratio':>8}")
    for name, (got, floor) in results.items():
        print(f"{name:<22}{got * 1000:>8.0f}ms{floor * 1000:>7.0f}ms{got / floor:>7.2f}x")
    print()


def largest_folder() -> Path:
    found = sorted(
        (ROOT.parent / "shared" / "realworld" / "langgraph_api").glob("*/files/**/.langgraph_api"),
        key=lambda p: sum(f.stat().st_size for f in p.iterdir() if f.is_file()),
    )
    return found[-1] if found else ROOT / "sample_threads" / ".langgraph_api"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--folder", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    py = sys.executable
    statectl = [py, "-m", "statectl"]

    folder = (args.folder or largest_folder()).resolve()
    size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
    import statectl as api

    with api.open(str(folder)) as store:
        threads = store.threads()
        tid = max(threads, key=lambda t: t.checkpoints or 0).thread_id
    floor = [py, "-c", FLOOR_FOLDER, str(folder)]
    report(
        f"folder {folder.relative_to(ROOT.parent) if folder.is_relative_to(ROOT.parent) else folder}: "
        f"{len(threads)} threads, {size / 1e6:.1f} MB; thread {tid}; best of {args.runs} runs",
        best(
            {
                "threads": ([*statectl, "threads", "--db", str(folder)], floor),
                "threads --json": ([*statectl, "threads", "--json", "--db", str(folder)], floor),
                "log": ([*statectl, "log", tid, "--db", str(folder)], floor),
                "show": ([*statectl, "show", tid, "--db", str(folder)], floor),
            },
            args.runs,
        ),
    )

    import serve

    with tempfile.TemporaryDirectory() as tmp:
        app = serve.copy_app(Path(tmp) / "app")
        shutil.copytree(ROOT / "sample_threads" / ".langgraph_api", app / ".langgraph_api")
        with serve.start(app) as server:
            url = server.url
            tid = serve.thread_id("email-approved")
            report(
                f"langgraph dev at {url} (the sample folder: 9 threads); thread email-approved "
                f"(13 checkpoints); best of {args.runs} runs",
                best(
                    {
                        "threads (a page)": (
                            [*statectl, "threads", "--limit", "20", "--db", url],
                            [py, "-c", FLOOR_HTTP_THREADS, url],
                        ),
                        "log (history)": ([*statectl, "log", tid, "--db", url], [py, "-c", FLOOR_HTTP_LOG, url, tid]),
                        "show": ([*statectl, "show", tid, "--db", url], [py, "-c", FLOOR_HTTP_SHOW, url, tid]),
                    },
                    args.runs,
                ),
            )


if __name__ == "__main__":
    main()
