"""`doctor` on stored values that name a callable that runs code (issue 50 item 9): an error at
the checkpoint that holds one, whatever the payload kind (msgpack ext 0/1/2/3/5, a LangChain `lc`
constructor, a pickle); a function that is not a class is a warning; neither is ever advised for
`allowed_msgpack_modules`; nothing runs and nothing is imported."""

from __future__ import annotations

import json
import pickle
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import ormsgpack
from parity import SAMPLES

STATECTL = [sys.executable, "-m", "statectl"]


def _ext(code: int, *payload) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, ormsgpack.packb(list(payload)))


class _Pickled:
    """Pickles as `os.system(command)`: the classic payload (pickled here, never loaded)."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        import os

        return (os.system, (self.command,))


def _plant(db: Path, thread: str, marker: Path) -> str:
    """Into the newest checkpoint of `thread` (real LangGraph rows): channel values naming
    callables that run code, each as another payload kind, and writes with an `lc` constructor and
    a pickle. Returns the checkpoint id."""
    with sqlite3.connect(db) as conn:
        cid, blob = conn.execute(
            "SELECT checkpoint_id, checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
            "ORDER BY checkpoint_id DESC LIMIT 1",
            (thread,),
        ).fetchone()
        ck = ormsgpack.unpackb(blob, ext_hook=ormsgpack.Ext, option=ormsgpack.OPT_NON_STR_KEYS)
        planted = {
            "p_system": _ext(0, "os", "system", f"touch {marker}"),
            "p_call": _ext(1, "subprocess", "call", [["touch", str(marker)]]),
            "p_exec": _ext(2, "builtins", "exec", {"source": f"open({str(marker)!r}, 'w')"}),
            "p_method": _ext(3, "importlib", "import_module", "antigravity", "__call__"),
            "p_model": _ext(5, "pty", "spawn", {"argv": ["sh"]}, "model_validate_json"),
            "p_nested": [{"deep": _ext(0, "shutil", "rmtree", "/")}],
            "p_function": _ext(0, "json", "loads", "[]"),
        }
        ck["channel_values"].update(planted)
        ck["channel_versions"].update({k: "1" for k in planted})
        conn.execute("UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?", (ormsgpack.packb(ck), cid))
        lc = {"lc": 2, "type": "constructor", "id": ["builtins", "eval"], "args": [f"open({str(marker)!r}, 'w')"]}
        rows = [("json", json.dumps(lc).encode()), ("pickle", pickle.dumps(_Pickled(f"touch {marker}")))]
        for idx, (type_, value) in enumerate(rows):
            conn.execute(
                "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) "
                "VALUES (?, '', ?, 'planted', ?, 'p_write', ?, ?)",
                (thread, cid, 100 + idx, type_, value),
            )
    return cid


def test_values_naming_callables_that_run_code_are_errors_never_advised(tmp_path):
    marker = tmp_path / "pwned"
    db = tmp_path / "custom.sqlite"
    shutil.copy(SAMPLES / "custom.sqlite", db)
    cid = _plant(db, "notes-edits", marker)
    r = subprocess.run(
        [*STATECTL, "doctor", "--json", "--no-plan", "--db", str(db)], capture_output=True, text=True, cwd=SAMPLES
    )
    assert r.returncode == 1, r.stderr
    findings = json.loads(r.stdout)["findings"]
    runs = {
        f["message"].split(", a callable")[0].removeprefix("a stored value names "): f
        for f in findings
        if f["kind"] == "runs-code"
    }
    assert set(runs) == {
        "os.system",
        "posix.system",  # (the pickle's global: os.system pickles under its module's real name)
        "subprocess.call",
        "builtins.exec",
        "importlib.import_module",
        "pty.spawn",
        "shutil.rmtree",
        "builtins.eval",
    }
    for f in runs.values():
        assert (f["severity"], f["thread_id"], f["checkpoint_id"]) == ("error", "notes-edits", cid)
        assert "this checkpoint tries to run code when LangGraph loads it" in f["message"]
        assert "never list the name in allowed_msgpack_modules" in f["fix"]
    assert "(1 row(s) in all name it)" in runs["os.system"]["message"]
    (function,) = [f for f in findings if f["kind"] == "not-a-class"]
    assert function["severity"] == "warning"
    assert function["message"].startswith("json.loads is a function, not a class")
    assert function["threads"] == ["notes-edits"]
    advice = " ".join(f["message"] for f in findings if f["kind"] == "strict-msgpack")
    assert advice  # (the app's own classes: custom_app.Colour...)
    for name in [*runs, "json.loads"]:
        assert name not in advice
    # the rest of the store as before: no other finding at warning or above
    assert {f["kind"] for f in findings if f["severity"] != "info"} == {"runs-code", "not-a-class", "pickled"}
    assert not marker.exists()


def test_runs_code_is_decided_from_the_name():
    from statectl.codec.classes import is_safe, runs_code

    for module, name in [
        ("os", "system"),
        ("posix", "system"),
        ("subprocess", "Popen"),
        ("os.path", "join"),
        ("builtins", "__import__"),
        ("builtins", "compile"),
        ("importlib.util", "spec_from_file_location"),
        ("runpy", "run_path"),
        ("ctypes", "CDLL"),
        ("pickle", "loads"),
        ("marshal", "loads"),
        ("code", "InteractiveInterpreter"),
        ("webbrowser", "open"),
        ("antigravity", "geohash"),
    ]:
        assert runs_code(module, name), (module, name)
    for module, name in [
        ("builtins", "set"),
        ("datetime", "datetime"),
        ("re", "compile"),
        ("langgraph.types", "Send"),
        ("custom_app", "Customer"),
        ("ossify", "system"),  # (a module whose name begins like one: not it)
        ("subprocessing", "call"),
    ]:
        assert not runs_code(module, name), (module, name)
        assert not (is_safe(module, name) and runs_code(module, name))


def test_a_postgres_blob_naming_a_callable_that_runs_code_is_an_error(run, pg_scratch, tmp_path):
    """The same on Postgres: a blob version (real PostgresSaver rows) rewritten to a list holding
    an ext naming `subprocess.Popen`, and a write naming `os.system`: errors at a checkpoint that
    names each, exit 1."""
    import psycopg

    marker = tmp_path / "pwned"
    with psycopg.connect(pg_scratch, autocommit=True) as conn:
        t, version, cid = conn.execute(
            "SELECT c.thread_id, b.version, max(c.checkpoint_id) FROM checkpoints c JOIN checkpoint_blobs b ON "
            "b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = 'messages' AND "
            "b.version = c.checkpoint->'channel_versions'->>'messages' WHERE c.thread_id = 'bakery-plan' "
            "AND c.checkpoint_ns = '' GROUP BY 1, 2 ORDER BY 2 DESC LIMIT 1"
        ).fetchone()
        evil = ormsgpack.packb([_ext(2, "subprocess", "Popen", {"args": ["touch", str(marker)]})])
        conn.execute(
            "UPDATE checkpoint_blobs SET blob = %s WHERE thread_id = %s AND channel = 'messages' AND version = %s",
            (evil, t, version),
        )
        conn.execute(
            "UPDATE checkpoint_writes SET type = 'msgpack', blob = %s WHERE (thread_id, checkpoint_id, task_id, idx) "
            "= (SELECT thread_id, checkpoint_id, task_id, idx FROM checkpoint_writes WHERE thread_id = 'notes-edits' "
            "ORDER BY checkpoint_id DESC, task_id, idx LIMIT 1)",
            (ormsgpack.packb(_ext(0, "os", "system", f"touch {marker}")),),
        )
    r = run("doctor", "--json", "--no-plan", "--db", pg_scratch)
    assert r.code == 1, r.err
    runs = {f["message"].split(", a callable")[0]: f for f in json.loads(r.out)["findings"] if f["kind"] == "runs-code"}
    assert set(runs) == {"a stored value names subprocess.Popen", "a stored value names os.system"}
    popen = runs["a stored value names subprocess.Popen"]
    assert (popen["severity"], popen["thread_id"], popen["checkpoint_id"]) == ("error", t, cid)
    assert runs["a stored value names os.system"]["thread_id"] == "notes-edits"
    assert not marker.exists()
