"""Apps that write LangGraph's long-term memory store (`BaseStore`), for `statectl store`.

`remember` is a plain graph whose node writes through `runtime.store`: profiles at several
namespace depths, an updated item, TTL items, a value with control characters, a chat transcript
kept as a memory. `make_memory_agent` is a deepagents agent whose `/memories/` folder is routed
to a `StoreBackend` (`CompositeBackend`); its scripted model writes and edits a file there.
"""

from __future__ import annotations

import hashlib
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from scripted import ScriptedChatModel, call, say

DIMS = 8
"""The fake embedding's dimensions (sqlite-vec stores them as float32 blobs)."""


def fake_embed(texts: list[str]) -> list[list[float]]:
    """A deterministic embedding: the first bytes of each text's SHA-256, scaled to [0, 1)."""
    return [[b / 256 for b in hashlib.sha256(t.encode()).digest()[:DIMS]] for t in texts]


INDEX = {"dims": DIMS, "embed": fake_embed, "fields": ["text"]}
"""The vector index the SQLite sample store is written with."""


class Notes(TypedDict, total=False):
    user: str
    facts: list[str]
    done: bool


def remember(state: Notes, runtime: Runtime) -> dict[str, Any]:
    """Write what a memory-keeping agent writes: per-user facts, profiles, settings, TTL items."""
    store = runtime.store
    assert store is not None
    user = state["user"]
    for i, fact in enumerate(state.get("facts", [])):
        store.put(("users", user, "facts"), f"fact-{i}", {"text": fact, "kind": "fact", "score": i})
    store.put(("users", user), "profile", {"name": user.title(), "plan": "pro", "age": 30 + len(user)})
    store.put(("users", user), "profile", {"name": user.title(), "plan": "team", "age": 31 + len(user)})  # updated
    store.put(("users", user, "sessions"), "last", {"text": f"{user} asked about sourdough"}, ttl=60 * 24)
    store.put(("users", user, "sessions"), "scratch", {"text": "short-lived note"}, ttl=5)
    return {"done": True}


def build_remember(store: Any = None, checkpointer: Any = None) -> Any:
    builder = StateGraph(Notes)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    return builder.compile(store=store, checkpointer=checkpointer)


remember_graph = build_remember()
"""For `langgraph dev` (the server gives the graph its store)."""


def shared_items(store: Any) -> None:
    """Items written with `store.put` directly (an app's setup code): one namespace deep, deep,
    a hostile value, a transcript, a filterable catalogue."""
    store.put(("settings",), "theme", {"text": "dark mode", "contrast": "high"}, index=False)
    store.put(
        ("settings",),
        "banner",
        {"text": "line1\x1b[31mred\x1b[0m [bold]not markup[/bold]\x07 end", "kind": "hostile"},
    )
    store.put(
        ("app", "kb", "bakery", "recipes"),
        "rye",
        {"text": "Rye loaf: 500 g rye, 10 g salt", "kind": "recipe", "score": 4.5, "tags": ["bread", "rye"]},
    )
    store.put(
        ("app", "kb", "bakery", "recipes"),
        "brioche",
        {"text": "Brioche: butter, eggs, flour", "kind": "recipe", "score": 3, "tags": ["sweet"]},
    )
    store.put(
        ("app", "chats"),
        "greeting",
        {
            "messages": [
                {"type": "human", "content": "Remember that I like rye."},
                {"type": "ai", "content": "Noted: you like rye bread."},
            ]
        },
    )


def make_memory_agent(store: Any = None, checkpointer: Any = None) -> Any:
    """deepagents with `/memories/` in the store (namespace `("filesystem",)`), the rest in state."""
    from deepagents import create_deep_agent
    from deepagents.backends import CompositeBackend, StateBackend, StoreBackend

    script = [
        call(("write_file", {"file_path": "/memories/preferences.md", "content": "# Preferences\n- likes rye\n"})),
        call(("write_file", {"file_path": "/draft.md", "content": "scratch in state\n"})),
        call(
            (
                "edit_file",
                {
                    "file_path": "/memories/preferences.md",
                    "old_string": "- likes rye\n",
                    "new_string": "- likes rye\n- bakes on Sundays\n",
                },
            )
        ),
        call(("write_file", {"file_path": "/memories/projects/bakery.md", "content": "Open in spring.\n"})),
        say("Saved your preferences to /memories/."),
    ]
    return create_deep_agent(
        model=ScriptedChatModel(script=script),
        system_prompt="You keep long-term notes under /memories/.",
        backend=CompositeBackend(
            default=StateBackend(),
            routes={"/memories/": StoreBackend(namespace=lambda _rt: ("filesystem",))},
        ),
        store=store,
        checkpointer=checkpointer,
    )
