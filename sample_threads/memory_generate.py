"""Write the sample long-term memory stores by running real LangGraph apps (memory_app.py).

    python sample_threads/memory_generate.py             # memory.sqlite and memory_api/.langgraph_api
    python sample_threads/memory_generate.py --postgres postgresql:///statectl_memory

- `memory.sqlite`: `SqliteStore` with a vector index (sqlite-vec, a deterministic fake embedding)
  beside `SqliteSaver` checkpoints, in one file, as an app that shares one database writes it.
- Postgres: `PostgresStore` (no index: pgvector is not installed here) beside `PostgresSaver`;
  the tests write it afresh with `write_postgres` (no dump is committed).
- `memory_api/.langgraph_api/`: a real `langgraph dev` (`InMemoryStore` persisted to
  `store.pckl`) driven over HTTP: the `remember` graph's run, and items put through the server's
  `/store` API, with a TTL.

Every store gets the same writes: `remember` runs for two users, `shared_items`, and the
deepagents agent with `/memories/` routed to a `StoreBackend`.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
warnings.filterwarnings("ignore")

import memory_app as M  # noqa: E402

USERS = {"alice": ["likes rye", "allergic to walnuts", "bakes on Sundays"], "bob": ["prefers brioche"]}
SQLITE = HERE / "memory.sqlite"
API = HERE / "memory_api"


def write_all(store: Any, checkpointer: Any) -> None:
    """Every sample write, through the graphs and the store itself."""
    graph = M.build_remember(store=store, checkpointer=checkpointer)
    for user, facts in USERS.items():
        graph.invoke({"user": user, "facts": facts}, {"configurable": {"thread_id": f"remember-{user}"}})
    M.shared_items(store)
    agent = M.make_memory_agent(store=store, checkpointer=checkpointer)
    agent.invoke(
        {"messages": [{"role": "user", "content": "Remember my baking preferences."}]},
        {"configurable": {"thread_id": "deep-memories"}},
    )


def write_sqlite(path: Path) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.store.sqlite import SqliteStore

    path.unlink(missing_ok=True)
    vec = sqlite3
    if not hasattr(sqlite3.Connection, "enable_load_extension"):  # (sqlite-vec is a loadable extension)
        try:  # a Python built without extension loading: `pip install pysqlite3-binary` (on PYTHONPATH)
            import pysqlite3.dbapi2 as vec  # type: ignore[no-redef]
        except ImportError:
            raise SystemExit("this Python's sqlite3 cannot load sqlite-vec: pip install pysqlite3-binary") from None
    # (two connections to one file: the saver and the store each run their own transactions)
    conn = vec.connect(path, check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn, index=M.INDEX)  # type: ignore[arg-type]
    store.setup()
    with sqlite3.connect(path) as plain:  # (its setup catches the stdlib's errors only)
        SqliteSaver(plain).setup()
    # one SQLite library for both: two in one process break each other's POSIX locks
    saver_conn = vec.connect(path, check_same_thread=False)
    saver = SqliteSaver(saver_conn)  # type: ignore[arg-type]
    saver.is_setup = True
    write_all(store, saver)
    saver_conn.close()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.close()


def write_postgres(url: str) -> None:
    """The same writes through `PostgresStore` (no index) and `PostgresSaver` into `url`."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.store.postgres import PostgresStore
    from psycopg import Connection
    from psycopg.rows import dict_row

    def connect() -> Connection:
        return Connection.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)

    with connect() as conn, connect() as saver_conn:  # (one each: their pipelines must not meet)
        store = PostgresStore(conn)  # type: ignore[arg-type]
        store.setup()
        saver = PostgresSaver(saver_conn)  # type: ignore[arg-type]
        saver.setup()
        write_all(store, saver)


def write_api(dest: Path) -> None:
    """Run `langgraph dev` on the memory app, drive it over HTTP, stop it: its folder."""
    import serve
    from langgraph_sdk import get_sync_client

    with tempfile.TemporaryDirectory() as tmp:
        app = Path(tmp) / "app"
        app.mkdir()
        for name in ("memory_app.py", "scripted.py"):
            shutil.copy(HERE / name, app / name)
        (app / "langgraph.json").write_text(
            '{"dependencies": ["."], "graphs": {"remember": "./memory_app.py:remember_graph"}}\n'
        )
        with serve.start(app) as srv:
            client = get_sync_client(url=srv.url, api_key=None)
            for user, facts in USERS.items():
                thread = client.threads.create(metadata={"user": user})
                client.runs.wait(thread["thread_id"], "remember", input={"user": user, "facts": facts})
            client.store.put_item(["settings"], "theme", {"text": "dark mode", "contrast": "high"}, index=False)
            client.store.put_item(
                ["settings"], "banner", {"text": "line1\x1b[31mred\x1b[0m [bold]not markup[/bold]\x07 end"}
            )
            client.store.put_item(["app", "kb", "bakery", "recipes"], "rye",
                                  {"text": "Rye loaf", "kind": "recipe", "score": 4.5}, ttl=600)
            client.store.put_item(["app", "kb", "bakery", "recipes"], "brioche",
                                  {"text": "Brioche", "kind": "recipe", "score": 3})
        shutil.rmtree(dest / ".langgraph_api", ignore_errors=True)
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copytree(app / ".langgraph_api", dest / ".langgraph_api")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", help="also write the Postgres sample store into this database")
    parser.add_argument("--no-api", action="store_true", help="skip the langgraph dev folder")
    args = parser.parse_args()
    write_sqlite(SQLITE)
    print(f"wrote {SQLITE.name}")
    if args.postgres:
        write_postgres(args.postgres)
        print(f"wrote {args.postgres}")
    if not args.no_api:
        write_api(API)
        print(f"wrote {API.name}/.langgraph_api")


if __name__ == "__main__":
    main()
