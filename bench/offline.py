"""`statectl replay --offline` of a long chat (each turn a model call through LangChain, every
answer recorded) against what it replaces: `graph.invoke` of the same turns with a scripted model
on the same copy. Whole-process time and peak memory (the process and its children), best of
`--runs`, the ratio in the same run.

    python bench/offline.py [--turns 500] [--runs 3]

Goal (issue 51): offline replay within 1.5x of graph.invoke with a scripted model.
The chat is written first by real runs (this file's `graph`, with a scripted model), into a
temporary folder; each measured run starts from a fresh copy of it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "sample_threads"))

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage  # noqa: E402
from langgraph.graph import END, START, StateGraph, add_messages  # noqa: E402
from scripted import ScriptedChatModel  # noqa: E402

LOREM = "The bakery plan needs a location near the metro and a starter that survives summer. " * 3


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def make_graph(turns: int) -> Any:
    model = ScriptedChatModel(script=[AIMessage(f"Answer {n}: {LOREM}") for n in range(turns)])

    def reply(state: Chat) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(Chat)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder


graph = make_graph(0)
"""The user's code on the replay side (its model is never called offline)."""


def question(turn: int) -> str:
    return f"Question {turn}: {LOREM[:120]}"


def write(path: Path, turns: int) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    saver = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
    g = make_graph(turns).compile(checkpointer=saver)
    for turn in range(turns):
        g.invoke({"messages": [HumanMessage(question(turn))]}, {"configurable": {"thread_id": "chat"}})
    saver.conn.close()


INVOKE = """
import sqlite3, sys
sys.path.insert(0, sys.argv[3])
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from offline import make_graph, question
turns = int(sys.argv[2])
saver = SqliteSaver(sqlite3.connect(sys.argv[1], check_same_thread=False))
g = make_graph(turns).compile(checkpointer=saver)
for turn in range(turns):
    g.invoke({"messages": [HumanMessage(question(turn))]}, {"configurable": {"thread_id": "again"}})
"""


def measure(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Seconds and the peak memory (MB) of the process and its children."""
    script = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter(); r = subprocess.run(sys.argv[1:]); d = time.perf_counter() - t\n"
        "m = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(d, m / 1024); sys.exit(r.returncode)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, *argv], cwd=cwd, capture_output=True, text=True, env=os.environ, check=False
    )
    if out.returncode not in (0,):
        raise SystemExit(f"{argv[:4]} exited {out.returncode}: {out.stderr[-500:]}")
    seconds, mb = out.stdout.strip().splitlines()[-1].split()
    return float(seconds), float(mb)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--turns", type=int, default=500)
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        src = folder / "long-chat.sqlite"
        t = time.perf_counter()
        write(src, a.turns)
        print(f"wrote {a.turns} turns ({3 * a.turns} checkpoints) in {time.perf_counter() - t:.1f}s")
        best: dict[str, tuple[float, float]] = {}
        for _ in range(a.runs):
            for name in ("statectl replay --offline", "graph.invoke (scripted)"):
                copy = folder / "copy.sqlite"
                shutil.copy(src, copy)
                scratch = folder / "statectl-scratch.sqlite"
                scratch.unlink(missing_ok=True)
                if name.startswith("statectl"):
                    argv = [sys.executable, "-m", "statectl", "replay", "chat", "--db", str(copy)]
                    argv += ["--graph", f"{HERE / 'offline.py'}:graph", "--offline", "--check", "--in-place", "--yes"]
                    argv += ["--json"]
                else:
                    argv = [sys.executable, "-c", INVOKE, str(copy), str(a.turns), str(HERE)]
                got = measure(argv, folder)
                if name not in best or got[0] < best[name][0]:
                    best[name] = got
        for name, (seconds, mb) in best.items():
            print(f"{name:28} {seconds:7.2f} s  {mb:7.0f} MB peak")
        ratio = best["statectl replay --offline"][0] / best["graph.invoke (scripted)"][0]
        print(f"ratio {ratio:.2f}x (goal <= 1.5x)")


if __name__ == "__main__":
    main()
