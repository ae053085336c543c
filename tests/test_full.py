"""`--full` means full, and a long text's diff shows its change: a text changed at its end
(300 words + "end") was shown as a unified hunk whose lines were cut before the change; `show
--full` still cut the interrupt line (`… (+124 chars)`), `diff --full` a value (`… (+40 chars)`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

WORDS = " ".join(f"word{i}" for i in range(300))
QUESTION = "Publish this draft? " + "It says: " + "the bakery opens at dawn and " * 12 + "END-OF-QUESTION"


@pytest.fixture
def texts(tmp_path) -> Path:
    """A real LangGraph run: `write` sets a 300-word text and 20 lines, `edit` adds 'end' to the
    text and renames one line, `ask` waits at an interrupt whose question is ~400 characters."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt
    from typing_extensions import TypedDict

    class S(TypedDict):
        text: str
        lines: str
        answer: str

    def write(s: S) -> dict:
        return {"text": WORDS, "lines": "\n".join(f"line {i} " + "x" * 50 for i in range(20))}

    def edit(s: S) -> dict:
        return {"text": s["text"] + " end", "lines": s["lines"].replace("line 10 ", "line ten ")}

    def ask(s: S) -> dict:
        return {"answer": interrupt(QUESTION)}

    g = StateGraph(S)
    for node in (write, edit, ask):
        g.add_node(node.__name__, node)
    g.add_edge(START, "write")
    g.add_edge("write", "edit")
    g.add_edge("edit", "ask")
    g.add_edge("ask", END)
    db = tmp_path / "texts.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    g.compile(checkpointer=SqliteSaver(conn)).invoke(
        {"text": "", "lines": "", "answer": ""}, {"configurable": {"thread_id": "t"}}
    )
    conn.close()
    return db


def test_a_text_changed_at_its_end_shows_the_change(run, texts):
    out = run("diff", "t", "2", "--db", str(texts))
    assert out.code == 0, out.err
    assert "word299{+ end+}" in out.out  # the change, with the words before it
    assert "word0 " not in out.out  # not the text's first screen
    assert "[-line 10-]{+line ten+}" not in out.out  # short lines: a unified hunk, whole
    assert "-line 10 " + "x" * 50 in out.out
    assert "+line ten " + "x" * 50 in out.out
    assert "note: 1 long value was shortened" in out.out  # the interrupt, shown cut: nothing else


def test_full_shows_every_value_whole(run, texts):
    shown = run("show", "t", "--db", str(texts))
    assert "END-OF-QUESTION" not in shown.out
    assert "chars)" in shown.out
    assert "long values were shortened: --full" in shown.out
    full = run("show", "t", "--db", str(texts), "--full")
    assert "END-OF-QUESTION" in full.out.replace("\n", "").replace("│", "").replace(" ", "")
    assert "chars)" not in full.out
    assert "shortened" not in full.out
    for args in (("diff", "t", "1"), ("diff", "t", "2"), ("log", "-p", "t")):
        out = run(*args, "--db", str(texts), "--full")
        assert out.code == 0, out.err
        assert "chars)" not in out.out, args
        assert "shortened" not in out.out, args
