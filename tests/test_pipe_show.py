"""`statectl show` into a pipe is written without Rich (render/pipe_show.py, issue 55's start-up):
its bytes must be the ones Rich printed there, for every checkpoint kind of every sample store
(SQLite, an export, a `langgraph dev` folder, LangGraph.js, legacy): the header box, transcripts
with tool calls, todos, file trees, value trees, interrupts, errors, inferred values, `--key`,
`--full`, the count of shortened values, and hostile data; where it cannot (a tab), Rich lays it
out, the same bytes."""

from __future__ import annotations

import json
import re

from test_pipe_log import TAB_THREAD, both, hostile_store, stores, threads_of

from statectl.render import pipe_show


def views(monkeypatch) -> list[bool]:
    """Whether each `show` since wrote its view plain (`render.pipe_show.show_text` made it)."""
    made: list[bool] = []
    real = pipe_show.show_text

    def spy(*args, **kw):
        text = real(*args, **kw)
        made.append(text is not None)
        return text

    monkeypatch.setattr(pipe_show, "show_text", spy)
    return made


def _checkpoints(db: str, thread: str, capsysbinary, monkeypatch) -> list[str]:
    """The thread's checkpoints to show: the newest, the oldest and one in between."""
    plain, _, _ = both(monkeypatch, capsysbinary, "log", thread, "--db", db, "--json")
    ids = [json.loads(line)["checkpoint_id"] for line in plain[1].splitlines()]
    return sorted({ids[0], ids[len(ids) // 2], ids[-1]}) if ids else []


def test_show_into_a_pipe_is_the_bytes_rich_printed(dbs, tmp_path, monkeypatch, capsysbinary):
    runs = plain_runs = 0
    made = views(monkeypatch)
    for db in [*stores(tmp_path, dbs, capsysbinary), str(hostile_store(tmp_path, tabs=False))]:
        for thread in threads_of(db, capsysbinary):
            checkpoints = _checkpoints(db, thread, capsysbinary, monkeypatch)
            for args in ([], ["--full"], *([c] for c in checkpoints), ["--key", "messages"]):
                before = len(made)
                plain, rich, _ = both(monkeypatch, capsysbinary, "show", thread, "--db", db, *args)
                assert plain == rich, (db, thread, args)
                assert plain[1] or plain[0] != 0, (db, thread, args, plain[2][-300:])
                runs += 1
                wrote = any(made[before:])
                plain_runs += wrote
                if (
                    plain[0] == 0
                    and db.endswith("hostile_values.sqlite")
                    and thread != TAB_THREAD
                    and "--key" not in args
                ):
                    assert wrote, (thread, args)  # (hostile data, no tab: written plain)
    assert runs > 400
    assert plain_runs > 0.8 * runs, (plain_runs, runs)  # (the test compares two ways, not Rich with itself)


def test_tabs_expanded_as_rich_expands_them(tmp_path, monkeypatch, capsysbinary):
    """A tab in a value tree is expanded to Rich's stops, written plain; one in a box (the
    transcript's messages) is left to Rich, which measures it before
    expanding it: the same bytes both ways."""
    db = str(hostile_store(tmp_path, tabs=True))
    for thread in threads_of(db, capsysbinary):
        for args, written in (([], False), (["--key", "msgs"], True)):
            made = views(monkeypatch)
            plain, rich, _ = both(monkeypatch, capsysbinary, "show", thread, "--db", db, *args)
            assert plain == rich, (thread, args)
            assert b"\t" not in plain[1]
            assert re.search(rb"tab {2,8}here", plain[1])  # ("tab\there" in the msgs tree)
            assert made == [written], (thread, args)


def test_a_long_tool_call_is_counted_as_rich_counts_it(tmp_path, monkeypatch, capsysbinary):
    """A tool call whose arguments are shortened: Rich's ToolCall shortens them each time it is
    measured or drawn (three times here), and the note under the view says so; written plain, the
    same count and the same bytes. With --full nothing is shortened."""
    from typing import Annotated, TypedDict

    from conftest import one_node_runs
    from langchain_core.messages import AIMessage
    from langgraph.graph.message import add_messages

    State = TypedDict("State", {"messages": Annotated[list, add_messages]})  # type: ignore[misc]  # noqa: UP013 (a local class's annotations are read at module level)

    def call(state: dict) -> dict:
        return {"messages": [AIMessage("", tool_calls=[{"name": "write", "args": {"text": "x" * 400}, "id": "w1"}])]}

    db = str(
        one_node_runs(
            tmp_path / "long_call.sqlite", State, call, [({"messages": []}, {"configurable": {"thread_id": "t"}})]
        )
    )
    made = views(monkeypatch)
    plain, rich, _ = both(monkeypatch, capsysbinary, "show", "t", "--db", db)
    assert plain == rich
    assert b"note: 3 long values were shortened" in plain[1]  # (Rich counts each time it measures it)
    assert made == [True]
    plain, rich, _ = both(monkeypatch, capsysbinary, "show", "t", "--db", db, "--full")
    assert plain == rich
    assert b"x" * 400 in plain[1]
    assert made == [True, True]
