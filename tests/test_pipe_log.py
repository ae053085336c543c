"""`statectl log` (and `--oneline`) into a pipe is written without Rich (render/pipe.py, issue
55's start-up): its bytes must be the ones Rich printed there, for every thread of every sample
store (SQLite, an export, a `langgraph dev` folder), every option that changes its lines, and
hostile data (ids, node names, keys, errors and interrupts with controls, markup, wide
characters, tabs), the notes and the namespaces line under it."""

from __future__ import annotations

import json
import operator
import shutil
import sqlite3
from pathlib import Path
from typing import Annotated, TypedDict

from parity import DBS, SAMPLES
from test_plain import HOSTILE

import statectl.cli.history as history
import statectl.cli.output as output
from statectl.cli import main
from statectl.render.columns import PlainTable

TAB_THREAD = "its interrupt holds a tab"
LOG_ARGS = ([], ["--oneline"], ["--local"], ["-n", "2"], ["--full"], ["--oneline", "--full"], ["--node", "tools"])


def _run(capsysbinary, *args: str) -> tuple[int, bytes, bytes]:
    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    cap = capsysbinary.readouterr()
    return code, cap.out, cap.err


def both(monkeypatch, capsysbinary, *args: str) -> tuple[tuple, tuple, int]:
    """(written plain, laid out by Rich, how many times the plain path wrote) of one command, its
    stdout captured (not a terminal: what a pipe is to `plain_pipe`)."""
    for var in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(var, raising=False)
    wrote = []
    real = output.write_plain

    def spy(text: str) -> None:
        wrote.append(text)
        real(text)

    with monkeypatch.context() as m:
        m.setattr(history, "write_plain", spy)
        m.setattr(output, "write_plain", spy)  # (the notes)
        plain = _run(capsysbinary, *args)
    with monkeypatch.context() as m:
        m.setattr(history, "plain_pipe", lambda: False)
        m.setattr(output, "plain_pipe", lambda: False)
        m.setattr(PlainTable, "PLAIN", False)  # (each row laid out by Rich, not joined as text)
        rich = _run(capsysbinary, *args)
    return plain, rich, len(wrote)


def threads_of(db: str, capsysbinary) -> list[str]:
    code, out, err = _run(capsysbinary, "threads", "--db", db, "--json", "--limit", "0")
    assert code == 0, err
    return [t["thread_id"] for t in json.loads(out)]


def hostile_store(tmp_path: Path, tabs: bool = True) -> Path:
    """Real LangGraph runs whose thread ids, node name, state keys, values, interrupt and error
    hold controls, markup, wide characters and trailing blanks (a tab: the interrupt of `TAB_THREAD`,
    and with `tabs` a value), and a chat with tool calls whose names and texts are as hostile."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.types import interrupt

    key, node_name = "[red]k[/red]\x1b[2J", "no\x1bde [x] 漢"
    State = TypedDict(  # type: ignore[misc]
        "State",
        {
            key: str,
            "n": int,
            "msgs": Annotated[list, operator.add],
            "wide 漢字": list,
            "why": str,
            "messages": Annotated[list, add_messages],
        },
    )
    texts = [h for h in HOSTILE if tabs or "\t" not in h]
    chat = [
        HumanMessage(" / ".join(texts)),
        AIMessage("", tool_calls=[{"name": "look\x1bup [b]", "args": {"q": "x\x07y [i]"}, "id": "c1"}]),
        ToolMessage("found\x1b[2J\n  two lines  ", name="look\x1bup [b]", tool_call_id="c1"),
        AIMessage("done: 漢字 ＡＢＣ\u200b\u202e", tool_calls=[{"name": "note", "args": {}, "id": "c2"}]),
        ToolMessage("ok", name="note", tool_call_id="c2", status="error"),
    ]

    def node(s: dict) -> dict:
        if s["n"] == 3:
            raise ValueError("boom \x1b[31mred\x07 [bold]x[/bold] 漢字\r\n" + "long " * 30)
        if s["n"] == 2:
            interrupt(s["why"] + "question\x1b]52;c;Y2xp\x07 [i]?[/i] 漢 \r\n next line   " + "x" * 80)
        return {key: texts[s["n"]], "n": s["n"] + 1, "msgs": texts, "wide 漢字": texts, "messages": chat[: 2 + s["n"]]}

    g = StateGraph(State)
    g.add_node(node_name, node)
    g.add_edge(START, node_name)
    g.add_edge(node_name, END)
    db = tmp_path / f"hostile_values{'_tabs' * tabs}.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    graph = g.compile(checkpointer=SqliteSaver(conn))
    for tid in ("hostile \x1b[2J [b]x[/b]\x08", "wide 漢字 ＡＢＣ", "trailing   ", "new\nline", "plain", TAB_THREAD):
        why = "a\ttab" if tid == TAB_THREAD else ""
        for n in (0, 1, 2, 3):
            given = {"n": n, key: "", "msgs": [], "wide 漢字": [], "why": why}
            try:
                graph.invoke(given, {"configurable": {"thread_id": tid}})
            except ValueError:
                pass
    conn.close()
    return db


def renamed(tmp_path: Path, names: list[str]) -> Path:
    """agent.sqlite (real runs) with its threads renamed (hand-written: hostile ids)."""
    db = tmp_path / "renamed.sqlite"
    shutil.copy(SAMPLES / "agent.sqlite", db)
    with sqlite3.connect(db) as c:
        ids = [r[0] for r in c.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id")]
        for old, new in zip(ids, names, strict=False):
            for table in ("checkpoints", "writes"):
                c.execute(f"UPDATE {table} SET thread_id = ? WHERE thread_id = ?", (new, old))
    return db


def stores(tmp_path: Path, dbs: dict[str, Path], capsysbinary) -> list[str]:
    """Every sample store kind: each SQLite sample, an export of one, a `langgraph dev` folder,
    and the hostile ones."""
    export = tmp_path / "export.json"
    code, _, err = _run(capsysbinary, "export", "--all", "--db", str(dbs["custom"]), "-o", str(export))
    assert code == 0, err
    hostile_ids = [h for h in HOSTILE if h.strip() and "\t" not in h]
    return [
        *(str(dbs[name]) for name in DBS),
        *(str(SAMPLES / f) for f in ("js.sqlite", "legacy.sqlite", "thread_ts_00.sqlite", ".langgraph_api")),
        str(export),
        str(hostile_store(tmp_path)),
        str(renamed(tmp_path, hostile_ids)),
    ]


def test_log_into_a_pipe_is_the_bytes_rich_printed(dbs, tmp_path, monkeypatch, capsysbinary):
    runs = 0
    for db in stores(tmp_path, dbs, capsysbinary):
        for thread in threads_of(db, capsysbinary):
            for args in LOG_ARGS:
                plain, rich, wrote = both(monkeypatch, capsysbinary, "log", thread, "--db", db, *args)
                assert plain == rich, (db, thread, args)
                assert plain[0] in (0, 1), (db, thread, args, plain[2][-300:])
                assert plain[1], (db, thread, args)
                runs += 1
                if plain[0] == 0 and thread != TAB_THREAD:
                    assert wrote, (db, thread, args)  # (the plain path wrote it: the test compares two)
    assert runs > 300


def test_a_tab_is_left_to_rich(tmp_path, monkeypatch, capsysbinary):
    """Rich expands a tab to the next stop: a log whose lines hold one (a thread id, an error) is
    laid out by Rich, the same bytes."""
    db = str(renamed(tmp_path, ["tab\there"]))
    assert "tab\there" in threads_of(db, capsysbinary)
    plain, rich, wrote = both(monkeypatch, capsysbinary, "log", "tab\there", "--db", db)
    assert plain == rich
    assert b"thread tab      here" in plain[1]
    assert not wrote
    db = str(hostile_store(tmp_path))
    for args in ([], ["--oneline"]):
        plain, rich, wrote = both(monkeypatch, capsysbinary, "log", TAB_THREAD, "--db", db, *args)
        assert plain == rich
        assert b"interrupt: a " in plain[1]
        assert b"\t" not in plain[1]
        assert not wrote


def test_the_other_namespaces_line_and_notes(monkeypatch, capsysbinary, tmp_path):
    """The line naming a thread's other namespaces and a store's notes are written plain too."""
    seen = set()
    for db, thread in ((SAMPLES / "interrupts.sqlite", "subgraph-waiting"), (SAMPLES / "thread_ts_00.sqlite", None)):
        thread = thread or threads_of(str(db), capsysbinary)[0]
        plain, rich, wrote = both(monkeypatch, capsysbinary, "log", thread, "--db", str(db))
        assert plain == rich
        seen |= {w.split(" ", 1)[0] for w in [plain[1].decode().splitlines()[-1]]}
        assert wrote >= 2
    assert seen == {"other", "note:"}, seen
