"""`statectl mcp`: each tool's latency, once the server runs, against the CLI command that gives the
same answer, measured in the same run (goal: a tool call within 1.2x its command).

The server is started once over stdio (as a coding agent starts it) with the official client SDK;
each tool is called --runs times and each command run --runs times in its own process, medians
compared. The store: the 773 MB bench file (`python bench/make_large.py`) or --db.

    python bench/mcp_tools.py [--db bench/data/large.sqlite] [--runs 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL = 1.2


def pairs(thread: str) -> list[tuple[str, dict, list[str]]]:
    """(tool, its arguments, the command that answers the same)."""
    return [
        ("list_threads", {"limit": 100}, ["threads", "--json", "--limit", "100"]),
        ("thread_log", {"thread_id": thread}, ["log", thread, "--oneline"]),
        ("show_state", {"thread_id": thread}, ["show", thread, "--json"]),
        ("diff", {"thread_id": thread}, ["diff", thread, "--json"]),
        ("graph", {"thread_id": thread}, ["graph", "--thread", thread]),
        ("size", {"thread_id": thread}, ["size", thread, "--json"]),
        (
            "prune_plan",
            {"thread_id": thread, "keep_last": 5},
            ["prune", "--thread", thread, "--keep-last", "5", "--json"],
        ),
        ("size", {}, ["size", "--json"]),
    ]


def command_time(db: str, argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "statectl", *argv, "--db", db], capture_output=True, check=True, cwd=ROOT)
    return time.perf_counter() - t


async def main(db: str, runs: int) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    first = json.loads(
        subprocess.run(
            [sys.executable, "-m", "statectl", "threads", "--json", "--limit", "1", "--db", db],
            capture_output=True,
            check=True,
            cwd=ROOT,
        ).stdout
    )[0]["thread_id"]
    params = StdioServerParameters(command=sys.executable, args=["-m", "statectl", "mcp", "--db", db], cwd=str(ROOT))
    print(f"store: {db}  thread: {first}  runs: {runs} (medians)")
    print(f"{'tool':<28} {'MCP call':>10} {'command':>10} {'ratio':>7}")
    worst = 0.0
    async with Client(params, read_timeout_seconds=600) as client:
        for tool, arguments, argv in pairs(first):
            await client.call_tool(tool, arguments)  # (warm: the page cache, as for the command's first run)
            calls = []
            for _ in range(runs):
                t = time.perf_counter()
                result = await client.call_tool(tool, arguments)
                calls.append(time.perf_counter() - t)
                if result.is_error:
                    raise SystemExit(f"{tool}: {result.content[0].text}")
            command_time(db, argv)
            commands = [command_time(db, argv) for _ in range(runs)]
            mcp, cli = statistics.median(calls), statistics.median(commands)
            worst = max(worst, mcp / cli)
            label = tool + ("(store)" if tool == "size" and not arguments else "")
            print(f"{label:<28} {mcp * 1000:>8.0f}ms {cli * 1000:>8.0f}ms {mcp / cli:>6.2f}x")
    print(f"worst ratio {worst:.2f}x (goal <= {GOAL}x): {'met' if worst <= GOAL else 'NOT met'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=str(ROOT / "bench" / "data" / "large.sqlite"))
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    if not Path(args.db).exists() and "://" not in args.db:
        raise SystemExit(f"no {args.db}: python bench/make_large.py makes it")
    asyncio.run(main(args.db, args.runs))
