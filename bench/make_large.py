"""Write a large SqliteSaver DB for the benchmark from real LangGraph runs.

A chat graph (add_messages) runs `--distinct` real threads of `--turns` turns each (3 checkpoints
per turn, so 20 turns -> 60 checkpoints and 40 messages); their rows are then copied under new
thread ids until the file holds `--threads` threads. Every byte is LangGraph's own output.

    python bench/make_large.py --threads 1000 --turns 20 -o bench/data/large.sqlite
    python bench/make_large.py --threads 1 --distinct 1 --turns 500 -o bench/data/long.sqlite
    python bench/make_large.py --threads 1 --distinct 1 --turns 5 --batch 10000 -o bench/data/wide.sqlite
    python bench/make_large.py --threads 1 --distinct 1 --turns 3334 --text 40 -o bench/data/long-3334x40.sqlite
    python bench/make_large.py --threads 1 --distinct 1 --turns 800 --text 40 --rewrite -o bench/data/r.sqlite

(`long`: 1,500 checkpoints, 1,000 messages; `wide`: 50,005 messages, each turn sending 10,000;
`--rewrite`: the node writes `done = True` every turn too, a key rewritten unchanged.)
"""

from __future__ import annotations

import argparse
import sqlite3
import time
from pathlib import Path
from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph, add_messages

LOREM = (
    "The bakery plan needs a location near the metro, a sourdough starter that survives summer, "
    "and a pricing model that beats the chain stores without losing money on pastries. "
) * 3


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: int


class Flagged(Chat):
    done: bool
    """Written `True` every turn (`--rewrite`): a key rewritten unchanged, as middleware that
    writes a flag or a message back does (issue 54)."""


TEXT = len(LOREM)
"""Characters of each message's text (`--text`): the answers' LOREM, the questions' 120, cut to it."""


def reply(state: Chat):
    n = state.get("turns", 0) + 1
    return {"messages": [AIMessage(f"Answer {n}: {LOREM[:TEXT]}")], "turns": n}


def flagged(state: Flagged):
    return {**reply(state), "done": True}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1000)
    p.add_argument("--distinct", type=int, default=20)
    p.add_argument("--turns", type=int, default=20)
    p.add_argument("--batch", type=int, default=1, help="user messages sent in each turn")
    p.add_argument("--text", type=int, default=len(LOREM), help="characters of each message's text at most")
    p.add_argument(
        "--rewrite",
        action="store_true",
        help="the node writes `done = True` every turn too",
    )
    p.add_argument("-o", "--out", type=Path, default=Path(__file__).parent / "data" / "large.sqlite")
    a = p.parse_args()
    global TEXT
    TEXT = a.text
    a.out.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{a.out}{suffix}").unlink(missing_ok=True)
    t0 = time.time()
    conn = sqlite3.connect(a.out, check_same_thread=False)
    builder = StateGraph(Flagged if a.rewrite else Chat)
    builder.add_node("reply", flagged if a.rewrite else reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    graph = builder.compile(checkpointer=SqliteSaver(conn))
    for t in range(min(a.distinct, a.threads)):
        cfg = {"configurable": {"thread_id": f"real-{t:04d}"}}
        for turn in range(a.turns):
            asked = [
                f"Question {turn}{f'.{i}' * (a.batch > 1)} of thread {t}: {LOREM[: min(120, TEXT)]}"
                for i in range(a.batch)
            ]
            graph.invoke({"messages": [HumanMessage(q) for q in asked]}, cfg)
    for copy in range(a.distinct, a.threads):
        src = f"real-{copy % a.distinct:04d}"
        for table in ("checkpoints", "writes"):
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            sel = ", ".join("?" if c == "thread_id" else c for c in cols)
            conn.execute(
                f"INSERT INTO {table} ({', '.join(cols)}) SELECT {sel} FROM {table} WHERE thread_id = ?",
                (f"copy-{copy:04d}", src),
            )
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode=DELETE")
    n = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
    conn.close()
    print(
        f"{a.out}: {a.threads} threads, {n} checkpoints, {a.out.stat().st_size / 1e6:.0f} MB in {time.time() - t0:.0f}s"
    )


if __name__ == "__main__":
    main()
