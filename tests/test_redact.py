"""`export --redact`: an export to attach to a bug report. Secrets and e-mail addresses in
messages, tool calls, state values, writes and metadata become [REDACTED]; every command still
reads the export; a value that cannot be rewritten (a pickle) is refused and nothing is written.
The threads are real LangGraph runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict

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


# -- every secret kind, in every place an export writes ----------------------------------------
URL_PW = "S3cret-db-pass"
PLANTED = {
    "api key": "sk-proj-" + "Z9y8X7w6V5u4T3s2R1q0P9o8",
    "e-mail": "dave@corp.example",
    "url password": URL_PW,
    "bytes key": "sk-ant-" + "B1n4ryS3cr3tK3yInsideBytes00",
}


class Leaky(TypedDict, total=False):
    notes: dict
    blob: bytes
    dsn: str
    answer: str


def _leaky_everywhere(db: Path) -> list[str]:
    """Real runs that put each secret kind in each place: a thread id, a subgraph's namespace (its
    node's name), a dict key, a bytes value, a URL in state and in metadata, an interrupt's
    question, an error's message. The thread ids."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    key, mail, bkey = PLANTED["api key"], PLANTED["e-mail"], PLANTED["bytes key"]
    url = f"postgresql://app:{URL_PW}@db.internal:5432/prod"

    def fill(state: Leaky) -> dict:
        return {"notes": {mail: key}, "blob": f"binary \x00 {bkey} \xff".encode("latin-1"), "dsn": url}

    def ask(state: Leaky) -> dict:
        return {"answer": interrupt(f"send {key} to {mail}?")}

    inner = StateGraph(Leaky)
    inner.add_node("fill", fill)
    inner.add_edge(START, "fill")
    inner.add_edge("fill", END)
    outer = StateGraph(Leaky)
    outer.add_node(f"sub for {mail}", inner.compile())
    outer.add_node("ask", ask)
    outer.add_edge(START, f"sub for {mail}")
    outer.add_edge(f"sub for {mail}", "ask")
    outer.add_edge("ask", END)

    def boom(state: Leaky) -> dict:
        raise ValueError(f"cannot reach {url} with {key}")

    failing = StateGraph(Leaky)
    failing.add_node("boom", boom)
    failing.add_edge(START, "boom")
    failing.add_edge("boom", END)
    conn = sqlite3.connect(db, check_same_thread=False)
    saver = SqliteSaver(conn)
    waiting, failed = f"chat for {mail}", f"job {key}"
    outer.compile(checkpointer=saver).invoke({}, {"configurable": {"thread_id": waiting}, "metadata": {"dsn": url}})
    try:
        failing.compile(checkpointer=saver).invoke({}, {"configurable": {"thread_id": failed}})
    except ValueError:
        pass
    conn.close()
    return [waiting, failed]


def _texts(doc: object) -> list[str]:
    """Every string in the export, and every base64 value in it decoded (as latin-1 text)."""
    import base64
    import binascii

    out: list[str] = []

    def walk(v: object) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                out.append(str(k))
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str):
            out.append(v)
            try:
                raw = base64.b64decode(v, validate=True)
            except (binascii.Error, ValueError):
                return
            out.append(raw.decode("latin-1"))
            if raw[:1] in (b"{", b"["):  # (a Postgres or langgraph dev envelope: base64 inside again)
                try:
                    walk(json.loads(raw))
                except ValueError:
                    pass

    walk(doc)
    return out


def test_redact_leaves_no_secret_anywhere_and_ids_stay_consistent(run, tmp_path):
    db = tmp_path / "leaky.sqlite"
    _leaky_everywhere(db)
    plain = tmp_path / "plain.json"
    assert run("export", "--all", "--db", str(db), "-o", str(plain)).code == 0
    before = "\n".join(_texts(json.loads(plain.read_text())))
    assert all(secret in before for secret in PLANTED.values())  # (the data really holds them)
    out = tmp_path / "report.json"
    r = run("export", "--all", "--db", str(db), "-o", str(out), "--redact")
    assert r.code == 0, r.err
    raw = out.read_text()
    everything = "\n".join([raw, *_texts(json.loads(raw))])
    for kind, secret in PLANTED.items():
        assert secret not in everything, kind
    # the export still reads as the same threads: ids rewritten the same way everywhere
    rows = json.loads(run("threads", "--json", "--db", str(out)).out)
    assert sorted(t["status"] for t in rows) == ["error", "interrupted"]
    ids = sorted(t["thread_id"] for t in rows)
    assert ids == sorted(["chat for [REDACTED]", "job [REDACTED]"])
    r = run("log", "chat for [REDACTED]", "--db", str(out), "--json")
    assert r.code == 0, r.err
    namespaces = {
        json.loads(x)["checkpoint_ns"]
        for x in run(
            "log", "chat for [REDACTED]", "--db", str(out), "--json", "--ns", "sub for [REDACTED]"
        ).out.splitlines()
    }
    assert namespaces  # (the subgraph's checkpoints, under its redacted node name)
    assert all(ns.startswith("sub for [REDACTED]:") for ns in namespaces)
    shown = run("show", "chat for [REDACTED]", "--db", str(out)).out
    assert "send [REDACTED] to [REDACTED]?" in shown
    assert (
        "postgresql://app:[REDACTED]@db.internal"
        in run("show", "chat for [REDACTED]", "--db", str(out), "--ns", "sub for [REDACTED]").out
    )


def test_one_redaction_for_keys_in_any_case_and_never_onto_another_key():
    """The redaction `export --redact` and `statectl mcp` share: a secret key matched in any case,
    a secret as a key rewritten without overwriting a key that reads `[REDACTED]` already, and
    only the rewritten identifiers remembered (a server sees every key of every state)."""
    from statectl.core.redact import MARK, Redactor

    r = Redactor(keys=("Session",))
    key = "sk-live-" + "Z9y8X7w6V5u4T3s2R1q0"
    got = r.value({"Authorization": "Basic dXNlcjpwYXNz", "SESSION": "abc", key: 1, MARK: 2, "bob@corp.example": 3})
    assert got["Authorization"] == MARK
    assert got["SESSION"] == MARK
    assert sorted(got.values(), key=str) == [1, 2, 3, MARK, MARK]  # (five keys: none lost)
    assert got[MARK] == 2
    assert len(got) == 5
    assert r.value({"plain": {"id": "thread-1"}}) == {"plain": {"id": "thread-1"}}
    assert set(r.ids) == {key, "bob@corp.example"}
