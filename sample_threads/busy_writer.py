"""A web app's writer for tests: a real LangGraph graph run turn after turn on one SQLite file,
reconnecting for each request as web apps do (so the -wal and -shm files come and go), until
N turns are done. Prints "ready" after the first turn.

    python sample_threads/busy_writer.py DB TURNS
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

from custom_app import notes_builder  # noqa: E402


def main() -> None:
    db, turns = sys.argv[1], int(sys.argv[2])
    for i in range(turns):
        conn = sqlite3.connect(db, check_same_thread=False)
        graph = notes_builder.compile(checkpointer=SqliteSaver(conn))
        graph.invoke({"topic": f"turn {i}", "count": 0}, {"configurable": {"thread_id": f"busy-{i % 7}"}})
        conn.close()
        if i == 0:
            print("ready", flush=True)


if __name__ == "__main__":
    main()
