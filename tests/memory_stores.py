"""The sample memory stores of every kind, each with LangGraph's own reader of the same data (the
oracle): `SqliteStore`, `PostgresStore`, the server's `/store` API through langgraph-sdk, and for
a `langgraph dev` folder an `InMemoryStore` filled from the file the server itself loads."""

from __future__ import annotations

import os
import pickle
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

SAMPLES = Path(__file__).resolve().parent.parent / "sample_threads"
MEMORY_SQLITE = SAMPLES / "memory.sqlite"
MEMORY_API = SAMPLES / "memory_api"


class SdkOracle:
    """The server's store through langgraph-sdk, shaped as BaseStore's `search`/`get`/`list_namespaces`."""

    def __init__(self, url: str) -> None:
        from langgraph_sdk import get_sync_client

        self.client = get_sync_client(url=url, api_key=None)

    def _asked(self, call: Any) -> Any:
        """`call()`, once more on a transport error: the server closes a kept-alive connection
        after an error answer (a filter its store raises on), and the SDK may send the next
        request on it before it has seen the close ("Connection reset by peer" under load) —
        that is the network, not LangGraph's answer. An error status is LangGraph's: raised."""
        import httpx

        try:
            return call()
        except httpx.TransportError:
            return call()

    def list_namespaces(self, limit: int = 1000) -> list[tuple[str, ...]]:
        got = self._asked(lambda: self.client.store.list_namespaces(limit=limit))["namespaces"]
        return [tuple(n) for n in got]

    def search(self, prefix: tuple[str, ...], filter: dict | None = None, limit: int = 1000) -> list[Any]:  # noqa: A002
        got = self._asked(
            lambda: self.client.store.search_items(list(prefix), filter=filter, limit=limit, refresh_ttl=False)
        )
        return [_Item(i) for i in got["items"]]

    def get(self, namespace: tuple[str, ...], key: str) -> Any:
        import httpx

        try:
            return _Item(self._asked(lambda: self.client.store.get_item(list(namespace), key, refresh_ttl=False)))
        except httpx.HTTPStatusError:
            return None


class _Item:
    def __init__(self, raw: dict) -> None:
        self.namespace, self.key, self.value = tuple(raw["namespace"]), raw["key"], raw["value"]
        self.created_at, self.updated_at = raw["created_at"], raw["updated_at"]


def sqlite_copy(dest: Path) -> Path:
    path = dest / "memory.sqlite"
    shutil.copy(MEMORY_SQLITE, path)
    return path


def folder_copy(dest: Path) -> Path:
    shutil.copytree(MEMORY_API, dest / "memory_api")
    return dest / "memory_api"


@contextmanager
def sqlite_oracle(path: Path) -> Iterator[Any]:
    """SqliteStore on a copy (no index: reading needs no embedding; nothing is set up)."""
    from langgraph.store.sqlite import SqliteStore

    copy = path.parent / "oracle.sqlite"
    shutil.copy(path, copy)
    conn = sqlite3.connect(copy, check_same_thread=False, isolation_level=None)
    try:
        yield SqliteStore(conn)
    finally:
        conn.close()


@contextmanager
def postgres_oracle(url: str) -> Iterator[Any]:
    from langgraph.store.postgres import PostgresStore
    from psycopg import Connection
    from psycopg.rows import dict_row

    with Connection.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
        yield PostgresStore(conn)  # type: ignore[arg-type]


@contextmanager
def folder_oracle(folder: Path) -> Iterator[Any]:
    """An InMemoryStore holding what `langgraph dev` loads from store.pckl (it unpickles it: here
    the test's own sample file, in the test process, as the server would)."""
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore()
    data = pickle.loads((folder / ".langgraph_api" / "store.pckl").read_bytes())
    for ns, items in data.items():
        store._data[ns].update(items)
    yield store


@pytest.fixture(scope="session")
def pg_memory(pg_server) -> Iterator[str]:
    """The Postgres sample store, written afresh by the generator's real runs; dropped after."""
    import psycopg

    name = f"statectl_memory_{os.getpid()}"
    with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = f"postgresql:///{name}"
    write_postgres(url)
    yield url
    with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def memory_server(tmp_path_factory) -> Iterator[Any]:
    """A real `langgraph dev` serving the sample folder's store (it loads store.pckl)."""
    sys.path.insert(0, str(SAMPLES))
    import serve

    app = tmp_path_factory.mktemp("memory-server") / "app"
    app.mkdir()
    for name in ("memory_app.py", "scripted.py"):
        shutil.copy(SAMPLES / name, app / name)
    (app / "langgraph.json").write_text(
        '{"dependencies": ["."], "graphs": {"remember": "./memory_app.py:remember_graph"}}\n'
    )
    shutil.copytree(SAMPLES / "memory_api" / ".langgraph_api", app / ".langgraph_api")
    with serve.start(app) as srv:
        yield srv


def write_postgres(url: str) -> None:
    """The Postgres sample store, written by the generator's real runs."""
    sys.path.insert(0, str(SAMPLES))
    import memory_generate

    memory_generate.write_postgres(url)
