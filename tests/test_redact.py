"""`export --redact`: an export to attach to a bug report. Secrets and e-mail addresses in
messages, tool calls, state values, writes and metadata become [REDACTED]; every command still
reads the export; a value that cannot be rewritten (a pickle) is refused and nothing is written.
The threads are real LangGraph runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
GH = "ghp_" + "x" * 36
SECRETS = [KEY, GH, "bob@corp.example", "carol@corp.example", "hunter2-very-private", "Porto"]
SAMPLES = Path(__file__).resolve().parent.parent / "sample_threads"


@pytest.fixture(scope="module")
def leaky_db(tmp_path_factory):
    from conftest import one_node_runs
    from langchain_core.messages import AIMessage, HumanMessage
    from long_chat import Chat

    def reply(state: Chat) -> dict:
        return {
            "messages": [
                AIMessage(
                    f"Use {GH} to push, and mail carol@corp.example in Porto",
                    tool_calls=[{"name": "send", "id": "c1", "args": {"to": "bob@corp.example", "token": KEY}}],
                )
            ],
            "notes": f"db password hunter2-very-private; meet in Porto; key {KEY}",
        }

    given = {"messages": [HumanMessage(f"my key is {KEY}, I am bob@corp.example")]}
    cfg = {"configurable": {"thread_id": "leaky"}, "metadata": {"reporter": "bob@corp.example"}}
    return one_node_runs(tmp_path_factory.mktemp("leaky") / "leaky.sqlite", Chat, reply, [(given, cfg)])


def _everything(run, db: str) -> str:
    """All a reader can get out of a file: every snapshot and step diff, as JSON and as text."""
    return "".join(
        run(*args, "--db", db).out
        for args in (
            ["log", "leaky", "--json"],
            ["log", "leaky", "-p", "--json"],
            ["show", "leaky", "--full"],
            ["log", "leaky", "-p", "--full"],
            ["threads", "--json"],
        )
    )


def test_redacted_export_holds_no_secret_and_reads_back(run, leaky_db, tmp_path):
    before = _everything(run, str(leaky_db))
    assert all(s in before for s in SECRETS)  # the run really holds them
    out = tmp_path / "report.json"
    r = run(
        "export",
        "leaky",
        "--redact",
        "--redact-key",
        "notes",
        "--redact-pattern",
        "Porto",
        "-o",
        str(out),
        "--db",
        str(leaky_db),
    )
    assert r.code == 0, r.err
    summary = r.err.splitlines()[0]
    assert summary.startswith("redacted ")
    assert "API key" in summary
    assert "e-mail address" in summary
    assert "values of --redact-key notes" in summary
    assert "matches of --redact-pattern" in summary
    after = _everything(run, str(out))
    assert not [s for s in SECRETS if s in after], [s for s in SECRETS if s in after]
    assert "[REDACTED]" in after
    shown = json.loads(run("show", "leaky", "--json", "--db", str(out)).out)
    assert shown["values"]["notes"] == "[REDACTED]"
    assert len(shown["values"]["messages"]) == 2
    call = shown["values"]["messages"][1]["data"]["tool_calls"][0]
    assert call["args"] == {"to": "[REDACTED]", "token": "[REDACTED]"}
    assert call["name"] == "send"
    # nothing else changed: the same steps, nodes and next as the database
    assert [json.loads(ln)["next"] for ln in run("log", "leaky", "--json", "--db", str(out)).out.splitlines()] == [
        json.loads(ln)["next"] for ln in run("log", "leaky", "--json", "--db", str(leaky_db)).out.splitlines()
    ]


def test_a_pickled_value_is_refused_and_nothing_written(run, tmp_path):
    out = tmp_path / "x.json"
    r = run("export", "ts-pickled", "--redact", "-o", str(out), "--db", str(SAMPLES / "thread_ts_00.sqlite"))
    assert r.code == 2
    assert "pickled value" in r.err
    assert "cannot rewrite" in r.err
    assert list(tmp_path.iterdir()) == []


def test_a_bad_pattern_is_a_usage_error(run, leaky_db, tmp_path):
    r = run("export", "leaky", "--redact-pattern", "(", "-o", str(tmp_path / "x.json"), "--db", str(leaky_db))
    assert r.code == 2
    assert r.err.startswith("statectl: --redact-pattern '(' is not a regular expression")
