"""An app with its own types in state (a pydantic model, a dataclass, an enum, nested in lists,
dicts and sets), for `doctor --types`' strict-mode test (test_types.py). Run from tests/ as
`python -c "import sys, strict_app; strict_app.main(sys.argv[1:])" MODE ...`:

    write DB         real LangGraph runs into DB (a SQLite path or postgresql:// URL); prints
                     each thread's final values (repr) as JSON
    load DB SNIPPET  every thread's history read back through the saver, with the serializer
                     SNIPPET defines (`serde`; '-' for the default), as JSON: each checkpoint's
                     values and writes (repr), and the serializer's warnings

Set LANGGRAPH_STRICT_MSGPACK=true (and PYTHONHASHSEED) in the environment for strict mode.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import logging
from pathlib import Path
from typing import Any, TypedDict

from pydantic import BaseModel


class Tier(enum.Enum):
    FREE = "free"
    PRO = "pro"


@dataclasses.dataclass
class Address:
    city: str
    zip: str


class Customer(BaseModel):
    name: str
    tier: str
    visits: int


class State(TypedDict, total=False):
    customer: Customer
    address: Address
    tier: Tier
    history: list[dict[str, Any]]
    answer: str


def enrich(state: State) -> dict:
    c = state["customer"]
    return {
        "address": Address("Porto", "4000"),
        "tier": Tier.PRO if c.visits > 3 else Tier.FREE,
        "history": [{"seen": [Address("Lisbon", "1000")], "tiers": {Tier.FREE}}],
    }


def ask(state: State) -> dict:
    from langgraph.types import interrupt

    answer = interrupt({"question": "upgrade?", "customer": state["customer"]})
    return {"answer": answer}


def build(checkpointer: Any) -> Any:
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(State)
    g.add_node("enrich", enrich)
    g.add_node("ask", ask)
    g.add_edge(START, "enrich")
    g.add_edge("enrich", "ask")
    g.add_edge("ask", END)
    return g.compile(checkpointer=checkpointer)


def _saver(db: str, serde: Any = None) -> Any:
    if db.startswith("postgresql"):
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver

        conn = psycopg.connect(db, autocommit=True, prepare_threshold=0)
        return PostgresSaver(conn, serde=serde)
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    return SqliteSaver(sqlite3.connect(db, check_same_thread=False), serde=serde)


def write(db: str) -> dict[str, str]:
    from langgraph.types import Command

    saver = _saver(db)
    if db.startswith("postgresql"):
        saver.setup()
    graph = build(saver)
    out = {}
    for i, (name, visits, resume) in enumerate([("Ana", 5, "yes"), ("Rui", 1, None), ("Eva", 9, "no")]):
        config = {"configurable": {"thread_id": f"customer-{i}"}}
        graph.invoke({"customer": Customer(name=name, tier="x", visits=visits)}, config)
        if resume is not None:
            graph.invoke(Command(resume=resume), config)
        out[f"customer-{i}"] = repr(sorted(graph.get_state(config).values.items()))
    return out


def load(db: str, snippet: str) -> dict[str, Any]:
    warned: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warned.append(record.getMessage())

    logging.getLogger().addHandler(Catch(logging.WARNING))
    serde = None
    if snippet != "-":
        scope: dict[str, Any] = {}
        exec(Path(snippet).read_text(), scope)  # (statectl's printed allowlist, run as printed)
        serde = scope["serde"]
    saver = _saver(db, serde)
    threads = sorted({c.config["configurable"]["thread_id"] for c in saver.list(None)})
    out: dict[str, Any] = {}
    for t in threads:
        history = []
        for c in saver.list({"configurable": {"thread_id": t}}):
            values = {k: v for k, v in c.checkpoint["channel_values"].items() if not k.startswith("branch:")}
            writes = [(ch, repr(v)) for _task, ch, v in c.pending_writes or ()]
            history.append({"values": repr(sorted(values.items())), "writes": writes})
        out[t] = history
    return {"threads": out, "warnings": warned}


def main(argv: list[str]) -> None:
    """Imported, not run as a script: the app's classes are `strict_app.X`, as an app's are."""
    mode, db = argv[0], argv[1]
    result = write(db) if mode == "write" else load(db, argv[2])
    print(json.dumps(result))


if __name__ == "__main__":  # (run as the program: its classes are `__main__.X`, as a script's are)
    import sys

    main(sys.argv[1:])
