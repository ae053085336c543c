"""`doctor --types`: the types a store's values name, and the allowlist that makes LangGraph's
strict mode (LANGGRAPH_STRICT_MSGPACK=true) load every thread: checked by LangGraph itself, in
strict mode, in a subprocess, through its own savers."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import ormsgpack
import pytest
from conftest import digest
from parity import SAMPLES
from test_serde import serde_db  # noqa: F401  (a fixture: real pickle_fallback and encrypted runs)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
APP = "import sys, strict_app; strict_app.main(sys.argv[1:])"
BLOCKED = ("Blocked deserialization", "Deserializing unregistered", "Could not reconstruct")


def _py(mode: str, *args: str, strict: bool, cwd: Path = HERE) -> dict:
    """strict_app in LangGraph's interpreter (the app's classes are `strict_app.X`, imported)."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": f"{HERE}{os.pathsep}{cwd}"}
    env.pop("LANGGRAPH_STRICT_MSGPACK", None)
    if strict:
        env["LANGGRAPH_STRICT_MSGPACK"] = "true"
    done = subprocess.run(
        [sys.executable, "-c", APP, mode, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def _allowlist(run, db: str, tmp_path: Path, cwd: Path = HERE) -> Path:
    with contextlib.chdir(cwd):  # (as the app runs: its classes are looked up from its folder)
        r = run("doctor", "--types", "--format", "python", "--db", db)
    assert r.code == 0, r.err
    snippet = tmp_path / "allow.py"
    snippet.write_text(r.out)
    return snippet


def _types(run, db: str, *extra: str, cwd: Path = HERE) -> dict:
    with contextlib.chdir(cwd):
        r = run("doctor", "--types", "--json", "--db", db, *extra)
    assert r.code == 0, r.err
    return json.loads(r.out)


@pytest.fixture(params=["sqlite", "postgres"])
def app_store(request, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "app.sqlite")
    return request.getfixturevalue("pg_empty")


def test_strict_mode_loads_every_thread_with_the_printed_allowlist(run, app_store, tmp_path):
    """An app with its own pydantic model, dataclass and enum (nested in lists, dicts, sets)
    writes threads; statectl's printed serializer loads every checkpoint and write of every
    thread in strict mode with no warning, each value equal to the original; without it, the
    listed types are blocked and come back as raw data."""
    finals = _py("write", app_store, strict=False)
    report = _types(run, app_store)
    listed = {tuple(p) for p in report["allowed_msgpack_modules"]}
    assert listed == {("strict_app", "Address"), ("strict_app", "Customer"), ("strict_app", "Tier")}
    by_name = {f"{t['module']}.{t['name']}": t for t in report["types"]}
    assert by_name["strict_app.Customer"]["how"] == ["msgpack-pydantic"]
    assert by_name["strict_app.Tier"]["verdict"] == "allow"
    assert by_name["builtins.set"]["verdict"] == "safe"  # (a set of Tier: the nested class is found)
    assert by_name["strict_app.Address"]["threads"] == 3
    assert by_name["strict_app.Address"]["thread_ids"] == ["customer-0", "customer-1", "customer-2"]
    assert by_name["strict_app.Customer"]["values"] > by_name["strict_app.Customer"]["threads"]
    assert "langgraph-checkpoint" in report["safe_set"]
    assert report["encrypted_values"] == 0
    assert report["values"] > report["checkpoints"]  # (every checkpoint's channel values, each counted)
    assert by_name["strict_app.Tier"]["values"] >= report["checkpoints"] - 3  # (all but each thread's first)

    original = _py("load", app_store, "-", strict=False)  # (LangGraph's default: imports whatever is named)
    assert any("Deserializing unregistered type strict_app.Customer" in w for w in original["warnings"])
    snippet = _allowlist(run, app_store, tmp_path)
    strict = _py("load", app_store, str(snippet), strict=True)
    assert strict["warnings"] == []
    assert strict["threads"] == original["threads"]
    assert set(strict["threads"]) == set(finals)
    for thread, history in strict["threads"].items():
        assert history[0]["values"] == finals[thread]  # (the newest checkpoint holds the final state)
        assert "Customer(name=" in history[0]["values"]
    assert any(h["writes"] for history in strict["threads"].values() for h in history)  # (writes read too)

    bare = _py("load", app_store, "-", strict=True)
    blocked = " ".join(bare["warnings"])
    for module, name in listed:
        assert f"Blocked deserialization of {module}.{name}" in blocked
    assert bare["threads"] != original["threads"]
    assert "'customer', {'name': 'Ana'" in bare["threads"]["customer-0"][0]["values"]  # (a dict, not the model)


SQLITE_SAMPLES = ["custom", "agent", "deep", "flow", "interrupts", "orchestrator", "legacy", "json_rows"]


@pytest.mark.parametrize("name", SQLITE_SAMPLES)
def test_the_sample_stores_load_in_strict_mode_with_their_allowlist(run, name, tmp_path):
    db = tmp_path / f"{name}.sqlite"
    shutil.copy(SAMPLES / f"{name}.sqlite", db)
    before = digest(db)
    snippet = _allowlist(run, str(db), tmp_path, SAMPLES)
    assert digest(db) == before  # (reading leaves the file as it was)
    compile(snippet.read_text(), "allow.py", "exec")
    original = _py("load", str(db), "-", strict=False, cwd=SAMPLES)
    strict = _py("load", str(db), str(snippet), strict=True, cwd=SAMPLES)
    assert not [w for w in strict["warnings"] if w.startswith(BLOCKED)], strict["warnings"]
    assert strict["threads"] == original["threads"]
    report = _types(run, str(db), cwd=SAMPLES)
    if name == "custom":
        assert {tuple(p) for p in report["allowed_msgpack_modules"]} == {
            ("custom_app", n) for n in ("Colour", "Customer", "Level", "Point", "Receipt")
        }
        bare = _py("load", str(db), "-", strict=True, cwd=SAMPLES)
        assert any(w.startswith("Blocked deserialization of custom_app.") for w in bare["warnings"])
        assert bare["threads"] != original["threads"]


def test_the_postgres_samples_load_in_strict_mode(run, pg_samples, tmp_path):
    snippet = _allowlist(run, pg_samples, tmp_path, SAMPLES)
    original = _py("load", pg_samples, "-", strict=False, cwd=SAMPLES)
    strict = _py("load", pg_samples, str(snippet), strict=True, cwd=SAMPLES)
    assert not [w for w in strict["warnings"] if w.startswith(BLOCKED)], strict["warnings"]
    assert strict["threads"] == original["threads"]
    assert ("custom_app", "Customer") in {
        tuple(p) for p in _types(run, pg_samples, cwd=SAMPLES)["allowed_msgpack_modules"]
    }


def test_every_source_kind_names_the_same_types(run, dbs, tmp_path, pg_empty):
    """SQLite, its export, a langgraph dev folder; LangGraph.js stores: their types, not Python's."""
    sqlite = _types(run, str(dbs["custom"]))
    exported = tmp_path / "all.json"
    assert run("export", "--all", "-o", str(exported), "--db", str(dbs["custom"])).code == 0
    export = _types(run, str(exported))
    assert export["types"] == sqlite["types"]
    assert export["serializer"] == sqlite["serializer"]
    folder = tmp_path / "app"
    shutil.copytree(SAMPLES / ".langgraph_api", folder / ".langgraph_api")
    dev = _types(run, str(folder))
    assert dev["source"] == "folder"
    assert dev["threads"] > 0
    assert dev["types"]
    assert dev["values"] > dev["checkpoints"]
    assert dev["server_records"] == 0
    # langgraph dev without its checkpoint files: only the server's record of each thread, as data
    for pckl in (folder / ".langgraph_api").glob(".langgraph_checkpoint.*.pckl"):
        pckl.unlink()
    records = _types(run, str(folder))
    assert records["server_records"] == records["threads"] == dev["threads"]
    assert records["types"] == []
    assert "no checkpoint saved" in records["notes"][0]
    assert "plain data" not in run("doctor", "--types", "--db", str(folder)).out
    for js_store in (str(SAMPLES / "js.sqlite"), _restored_js(pg_empty)):
        js = _types(run, js_store)
        assert js["js_threads"] == js["threads"] > 0
        assert {t["verdict"] for t in js["types"]} == {"js"}
        assert js["allowed_msgpack_modules"] == []
        assert "LangGraph.js" in js["notes"][0]


def _restored_js(url: str) -> str:
    subprocess.run(
        ["psql", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(SAMPLES / "js_postgres.sql"), url],
        check=True,
        capture_output=True,
    )
    return url


def test_hostile_names_are_never_listed_and_cannot_break_out_of_the_snippet(run, dbs, tmp_path):
    """Hand-written writes (deliberately hostile): a callable that runs code, a name holding a
    newline and Python code, a pickle naming os.system. None is listed; the snippet compiles,
    its comments hold every name as a literal; nothing runs."""
    db = dbs["custom"]
    bad = "x\nimport os; os.system('touch /tmp/statectl-types-pwned')\n#"
    payloads = [
        ormsgpack.packb(ormsgpack.Ext(0, ormsgpack.packb(["os", "system", "touch /tmp/statectl-types-pwned"]))),
        ormsgpack.packb(ormsgpack.Ext(2, ormsgpack.packb([bad, "Thing", {}]))),
        ormsgpack.packb(ormsgpack.Ext(0, ormsgpack.packb(["json", "dumps", "x"]))),
    ]
    evil = b"cos\nsystem\n(S'touch /tmp/statectl-types-pwned'\ntR."
    with sqlite3.connect(db) as conn:
        (cid,) = conn.execute("SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = 'fanout'").fetchone()
        rows = [("msgpack", p) for p in payloads] + [("pickle", evil)]
        for idx, (type_, value) in enumerate(rows):
            conn.execute(
                "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) "
                "VALUES ('fanout', '', ?, 't', ?, 'x', ?, ?)",
                (cid, 100 + idx, type_, value),
            )
    report = _types(run, str(db))
    verdicts = {f"{t['module']}.{t['name']}": t["verdict"] for t in report["types"]}
    assert verdicts["os.system"] == "runs-code"
    assert verdicts[f"{bad}.Thing"] == "bad-name"
    assert verdicts["json.dumps"] == "not-a-class"  # (a function: loading would call it)
    listed = {tuple(p) for p in report["allowed_msgpack_modules"]}
    assert ("os", "system") not in listed
    assert ("json", "dumps") not in listed
    assert all(m.isascii() and "\n" not in m for m, _ in listed)
    assert "pickle_fallback" not in report["serializer"]  # (the only pickle names os.system)
    snippet = run("doctor", "--types", "--format", "python", "--db", str(db)).out
    code = compile(snippet, "allow.py", "exec")
    assert "os" not in code.co_names  # (the snippet's statements: an import, two assignments)
    assert snippet.count("\n#") >= 2
    assert "\nimport os" not in snippet
    text = run("doctor", "--types", "--db", str(db))
    assert text.code == 0
    assert "\\n" in text.out
    assert "import os; os.system" in text.out.replace("\\n", " ")
    assert "\nimport os" not in text.out
    assert not Path("/tmp/statectl-types-pwned").exists()


def test_a_pickled_class_asks_for_pickle_fallback(run, dbs):
    db = dbs["custom"]
    import pickle
    from datetime import timedelta
    from fractions import Fraction

    with sqlite3.connect(db) as conn:
        (cid,) = conn.execute("SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = 'fanout'").fetchone()
        conn.execute(
            "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) "
            "VALUES ('fanout', '', ?, 't', 100, 'x', 'pickle', ?)",
            (cid, pickle.dumps({"wait": timedelta(1), "share": Fraction(1, 3)})),
        )
    report = _types(run, str(db))
    pickled = [t for t in report["types"] if t["verdict"] == "pickle"]
    assert [f"{t['module']}.{t['name']}" for t in pickled] == ["fractions.Fraction"]
    timedelta_ = next(t for t in report["types"] if t["name"] == "timedelta")
    assert timedelta_["how"] == ["msgpack-ctor", "pickle"]  # (stored both ways: msgpack's verdict)
    assert timedelta_["verdict"] == "safe"
    assert report["pickle_fallback"] is True
    assert report["serializer"].endswith("pickle_fallback=True)")


@pytest.mark.parametrize(
    "args",
    [
        ["--format", "python"],
        ["--types", "--format", "yaml"],
        ["--types", "--json", "--format", "python"],
        ["--types", "--python", "/nonexistent/python"],
    ],
)
def test_bad_input_is_one_line(run, dbs, args):
    before = digest(dbs["custom"])
    r = run("doctor", *args, "--db", str(dbs["custom"]))
    assert r.code == 2, (r.code, r.err)
    assert len(r.err.strip().splitlines()) == 1
    assert r.err.startswith("statectl: ")
    assert r.out == ""
    assert digest(dbs["custom"]) == before


def test_the_safe_set_is_the_project_interpreters(run, dbs, tmp_path):
    """--python: LangGraph's safe set as that interpreter's LangGraph has it (read from its
    source); an interpreter without LangGraph is said in one line."""
    report = _types(run, str(dbs["custom"]), "--python", sys.executable)
    assert sys.executable in report["safe_set"]
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    r = run("doctor", "--types", "--db", str(dbs["custom"]), "--python", str(venv / "bin" / "python"))
    assert r.code == 2
    assert "LangGraph" in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_a_missing_class_names_the_migrate_line(run, dbs, tmp_path):
    """doctor's load finding for a class that no longer imports names the `statectl migrate`
    line that repairs its rows."""
    r = run("doctor", "--json", "--no-plan", "--db", str(dbs["custom"]))
    missing = [f for f in json.loads(r.out)["findings"] if f["kind"] == "class-missing"]
    assert missing
    for f in missing:
        old = f["message"].split(":")[0]
        assert f"statectl migrate {' '.join(f['threads'])} --rename-class {old}=" in f["fix"]


def test_a_class_in_a_namespace_package_is_found_without_importing_it(tmp_path, monkeypatch):
    """A module inside namespace packages (folders without __init__.py, as langgraph.checkpoint
    is): doctor's lookup finds its file; nothing is imported. (Python's path finder needs the
    parent imported: it said "no module" before.)"""
    from statectl.project.classes import check

    folder = tmp_path / "nsapp" / "inner"
    folder.mkdir(parents=True)
    imported = tmp_path / "IMPORTED"
    (folder / "models.py").write_text(f"open({str(imported)!r}, 'w').close()\nclass Thing:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert check("nsapp.inner.models", "Thing")["status"] == "ok"
    assert check("nsapp.inner.models", "Gone")["status"] == "missing class"
    assert check("nsapp.inner.nothing", "Thing") == {"status": "missing module", "missing": "nsapp.inner.nothing"}
    assert check("langgraph.checkpoint.serde.types", "ChannelProtocol")["status"] == "ok"
    assert not imported.exists()
    assert "nsapp" not in sys.modules


def test_pickled_and_encrypted_values_of_real_runs(run, serde_db, monkeypatch):  # noqa: F811 (the fixture)
    """Real runs (test_serde's store): a class pickled by pickle_fallback asks for
    pickle_fallback=True; encrypted values are counted and said, their types unread; past
    MAX_TYPES, values are counted, not listed, and the report says the allowlist is incomplete."""
    from statectl.core import types

    db, _ = serde_db
    before = digest(db)
    report = _types(run, str(db))
    verdicts = {f"{t['module']}.{t['name']}": t["verdict"] for t in report["types"]}
    assert verdicts["test_serde.Reading"] == "pickle"
    assert report["pickle_fallback"] is True
    assert report["serializer"].endswith(", pickle_fallback=True)")
    assert report["encrypted_values"] > 0
    assert any("encrypted" in n for n in report["notes"])
    assert digest(db) == before
    monkeypatch.setattr(types, "MAX_TYPES", 1)
    cut = _types(run, str(db))
    assert len(cut["types"]) == 1
    assert cut["values_naming_unlisted_types"] > 0
    assert any("incomplete" in n for n in cut["notes"])


@pytest.mark.xdist_group("server")  # (one worker, one server: conftest.server)
def test_a_server_says_its_types_are_not_visible(run, server):
    """A LangGraph server gives values as JSON: the types its store holds are gone; the report
    says so and lists none (and the allowlist it would print is not claimed complete)."""
    report = _types(run, server.url)
    assert report["source"] == "server"
    assert report["types"] == []
    assert "not visible" in report["notes"][0]
    r = run("doctor", "--types", "--format", "python", "--db", server.url)
    assert r.code == 0
    assert "# note: " in r.out
    assert "not visible" in r.out
    text = run("doctor", "--types", "--db", server.url).out
    assert "not visible" in text
    assert "no type but plain data" not in text


def test_a_main_class_is_listed_with_a_comment_that_says_where_it_loads(tmp_path):
    """A class a script wrote as `__main__.X` (real run: the app run as the program) is listed
    as stored, and the snippet says it loads only where that script is the program."""
    from statectl import open as open_store
    from statectl.core.types import stored_types

    db = tmp_path / "main.sqlite"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [sys.executable, str(HERE / "strict_app.py"), "write", str(db)], capture_output=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    with open_store(str(db)) as store:
        report = stored_types(store)
    assert ("__main__", "Customer") in report.allowed_msgpack_modules()
    snippet = report.python()
    assert "# '__main__.Customer' was written by a script run as the program" in snippet
    compile(snippet, "allow.py", "exec")


def test_classes_the_project_no_longer_has_are_said_not_listed(run, dbs, tmp_path):
    """From a folder without the app (its module gone, as after a move), every class of it is
    `missing`: not listed (strict mode or not, the values load as raw data), each named with the
    way back (restore it, or migrate); from the app's folder, each is listed."""
    gone = _types(run, str(dbs["custom"]), cwd=tmp_path)
    missing = sorted(f"{t['module']}.{t['name']}" for t in gone["types"] if t["verdict"] == "missing")
    assert missing == [f"custom_app.{n}" for n in ("Colour", "Customer", "Level", "Point", "Receipt")]
    assert gone["allowed_msgpack_modules"] == []
    with contextlib.chdir(tmp_path):
        snippet = run("doctor", "--types", "--format", "python", "--db", str(dbs["custom"])).out
        text = run("doctor", "--types", "--db", str(dbs["custom"])).out
    assert "# not listed (the project has no such class" in snippet
    assert "statectl migrate" in text
    here = _types(run, str(dbs["custom"]), cwd=SAMPLES)
    assert len(here["allowed_msgpack_modules"]) == 5
