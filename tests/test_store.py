"""`statectl store`: the commands on every source kind (CliRunner-style, in process), typed
namespaces, errors with exact exit codes and text, hostile values, older store schemas."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import SAMPLES, digest
from memory_stores import (
    folder_copy,
    folder_oracle,
    postgres_oracle,
    sqlite_copy,
    sqlite_oracle,
)

pytestmark = pytest.mark.xdist_group("memory")


@pytest.fixture
def mem_db(tmp_path) -> str:
    return str(sqlite_copy(tmp_path))


@pytest.fixture(params=["sqlite", "folder", "postgres"])
def any_db(request, tmp_path) -> str:
    if request.param == "sqlite":
        return str(sqlite_copy(tmp_path))
    if request.param == "folder":
        return str(folder_copy(tmp_path))
    return request.getfixturevalue("pg_memory")


def _json(run, *args: str):
    r = run(*args)
    assert r.code == 0, r.err
    return json.loads(r.out)


# -- the commands, equal to LangGraph ------------------------------------------------------------
def test_store_ls_get_grep_json_equal_langgraph_sqlite_and_postgres(run, mem_db, pg_memory):
    oracles = ((mem_db, lambda: sqlite_oracle(Path(mem_db))), (pg_memory, lambda: postgres_oracle(pg_memory)))
    for db, oracle_of in oracles:
        with oracle_of() as oracle:
            namespaces = sorted(oracle.list_namespaces(limit=1000))
            assert [tuple(n["namespace"]) for n in _json(run, "store", "--db", db, "--json")] == namespaces
            for ns in namespaces:
                want = sorted(i.key for i in oracle.search(ns, limit=1000) if i.namespace == ns)
                got = _json(run, "store", "ls", ".".join(ns), "--db", db, "--json")
                assert [i["key"] for i in got["items"]] == want
                for key in want:
                    item = _json(run, "store", "get", ".".join(ns), key, "--db", db, "--json")
                    assert item["value"] == oracle.get(ns, key).value
            found = _json(run, "store", "grep", "--filter", "kind=recipe", "--db", db, "--json")
            assert sorted((tuple(i["namespace"]), i["key"]) for i in found) == sorted(
                (i.namespace, i.key) for i in oracle.search((), filter={"kind": "recipe"}, limit=100)
            )


def test_every_kind_shows_the_tree_and_items(run, any_db):
    r = run("store", "--db", any_db)
    assert r.code == 0, r.err
    assert "users.alice.sessions" in r.out
    assert "app.kb.bakery.recipes" in r.out
    r = run("store", "ls", "users.alice.facts", "--db", any_db)
    assert r.code == 0, r.err
    assert "fact-0" in r.out
    assert "likes rye" in r.out
    r = run("store", "get", "users.alice", "profile", "--db", any_db)
    assert r.code == 0, r.err
    assert "plan: team" in r.out  # (the updated value)


def test_ls_pages_by_key_like_threads(run, mem_db):
    first = run("store", "ls", "users.alice.facts", "--limit", "2", "--db", mem_db)
    assert first.code == 0
    assert "next page: --after fact-1" in first.out
    keys = []
    after: list[str] = []
    while True:
        page = _json(run, "store", "ls", "users.alice.facts", "--limit", "1", *after, "--db", mem_db, "--json")
        if not page["items"]:
            break
        keys += [i["key"] for i in page["items"]]
        after = ["--after", keys[-1]]
    assert keys == ["fact-0", "fact-1", "fact-2"]


# -- namespaces typed like threads -----------------------------------------------------------------
def test_a_unique_beginning_names_a_namespace_and_a_prefix_lists_those_under_it(run, mem_db):
    r = run("store", "ls", "users.alice.se", "--db", mem_db)
    assert r.code == 0, r.err
    assert "items in namespace users.alice.sessions" in r.out
    r = run("store", "ls", "users.al", "--db", mem_db)  # users.alice, with namespaces under it
    assert "in namespace users.alice in" in r.out
    assert "users.alice.facts" in r.out
    r = run("store", "ls", "users", "--db", mem_db)  # no items of its own: the namespaces under it
    assert r.code == 0
    assert "6 namespaces under users" in r.out
    r = run("store", "ls", "users/bob/facts", "--db", mem_db)
    assert "fact-0" in r.out
    r = run("store", "get", "filesystem", "/pref", "--db", mem_db)  # a key's unique beginning
    assert "- bakes on Sundays" in r.out


def test_unknown_namespace_or_key_is_one_line_with_close_ones(run, mem_db):
    r = run("store", "ls", "userz.alice", "--db", mem_db)
    assert r.code == 3
    assert r.out == ""
    assert r.err.startswith("statectl: no namespace 'userz.alice' in ")
    assert "close: users.alice" in r.err
    assert len(r.err.splitlines()) == 1
    r = run("store", "get", "users.alice.facts", "fact-9", "--db", mem_db)
    assert r.code == 3
    assert r.err == "statectl: no key 'fact-9' in namespace users.alice.facts; close: fact-0, fact-1, fact-2\n"
    r = run("store", "get", "users.alice.facts", "fact-", "--db", mem_db)
    assert r.code == 3
    assert "begins several keys" in r.err
    r = run("store", "get", "users", "profile", "--db", mem_db)
    assert r.code == 3
    assert "no items in namespace 'users' itself" in r.err


def test_namespaces_are_never_shortened_on_screen(run, mem_db, monkeypatch):
    monkeypatch.setenv("COLUMNS", "50")  # (the other columns give way, or fold; a namespace is whole)
    for args in (["store"], ["store", "ls", "app.kb.bakery.recipes"], ["store", "grep", "rye"]):
        r = run(*args, "--db", mem_db)
        assert r.code == 0, r.err
        assert "app.kb.bakery.recipes" in r.out, (args, r.out)
        assert "…" not in r.out.split("left out")[0].replace("…)", ""), (args, r.out)


def test_no_store_is_one_line(run, tmp_path, pg_samples):
    for db in (str(SAMPLES / "agent.sqlite"), pg_samples):
        r = run("store", "--db", db)
        assert r.code == 2
        assert r.err.startswith("statectl: no store in ")
        assert len(r.err.splitlines()) == 1
    r = run("store", "--db", str(tmp_path / "missing.sqlite"))
    assert r.code == 2
    assert not (tmp_path / "missing.sqlite").exists()


def test_grep_bad_input_is_a_usage_error(run, mem_db):
    for args, text in (
        ([], "store grep wants TEXT or --filter KEY=VALUE"),
        (["--filter", "novalue"], "--filter wants KEY=VALUE, not 'novalue'"),
        (["--filter", 'score={"$near": 3}'], "unknown operator '$near'"),
        (["rye", "--limit", "-1"], "--limit must be 0 (all) or more"),
    ):
        r = run("store", "grep", *args, "--db", mem_db)
        assert r.code == 2, args
        assert text in r.err
        assert len(r.err.splitlines()) == 1


def test_grep_text_and_filters(run, mem_db):
    found = _json(run, "store", "grep", "RYE", "--db", mem_db, "--json")  # (ignoring case)
    keys = {(".".join(i["namespace"]), i["key"]) for i in found}
    assert keys == {
        ("app.chats", "greeting"),
        ("app.kb.bakery.recipes", "rye"),
        ("filesystem", "/preferences.md"),
        ("users.alice.facts", "fact-0"),
    }
    found = _json(run, "store", "grep", "rye", "-f", "kind=recipe", "-n", "app", "--db", mem_db, "--json")
    assert [i["key"] for i in found] == ["rye"]
    found = _json(run, "store", "grep", "-f", 'score={"$gte": 1}', "-f", "kind=fact", "--db", mem_db, "--json")
    assert sorted(i["key"] for i in found) == ["fact-1", "fact-2"]
    r = run("store", "grep", "--help")
    assert "Vector" in r.out
    assert "out of scope" in r.out


# -- values as `show` renders state ----------------------------------------------------------------
def test_values_render_as_state_does(run, mem_db):
    r = run("store", "get", "app.chats", "greeting", "--db", mem_db)
    assert "messages (2)" in r.out
    assert "user      Remember that I like rye." in r.out
    assert "assistant Noted: you like rye bread." in r.out
    r = run("store", "get", "users.alice.sessions", "last", "--db", mem_db)
    assert "expires" in r.out
    assert "(ttl 1440 min)" in r.out
    r = run("store", "get", "settings", "banner", "--db", mem_db)
    assert "indexed   1 field(s): $ (8 dims)" in r.out
    item = _json(run, "store", "get", "settings", "banner", "--db", mem_db, "--json")
    assert item["indexed"] == [{"field": "$", "dims": 8}]


def test_deepagents_files_show_as_files(run, mem_db):
    r = run("store", "ls", "filesystem", "--db", mem_db)
    assert "filesystem: 2 files (deepagents StoreBackend)" in r.out
    assert "preferences.md  3 lines" in r.out
    assert "projects/" in r.out
    r = run("store", "get", "filesystem", "/projects/bakery.md", "--db", mem_db)
    assert "(deepagents file)" in r.out
    assert "Open in spring." in r.out


def test_control_characters_are_escaped_never_markup(run, any_db):
    for args in (["get", "settings", "banner"], ["ls", "settings"], ["grep", "markup"]):
        r = run("store", *args, "--db", any_db)
        assert r.code == 0, r.err
        assert "\x1b" not in r.out
        assert "[bold]not markup[/bold]" in r.out
        assert "\\x1b[31m" in r.out or "\\u001b[31m" in r.out
        assert "\\x07" in r.out or "\\u0007" in r.out  # (a bell: shown, not dropped)
    item = _json(run, "store", "get", "settings", "banner", "--db", any_db, "--json")
    assert item["value"]["text"].startswith("line1\x1b[31mred")  # --json keeps the exact value


def test_long_and_deep_values_are_folded_and_bounded(run, tmp_path):
    """Values written by SqliteStore itself: a long text (folded; --full whole) and a value
    nested 200 levels deep (shown, bounded)."""
    from langgraph.store.sqlite import SqliteStore

    db = tmp_path / "long.sqlite"
    with sqlite3.connect(db, check_same_thread=False, isolation_level=None) as conn:
        store = SqliteStore(conn)
        store.setup()
        store.put(("notes",), "long", {"text": "x" * 5000 + "END"})
        deep: dict = {"leaf": "bottom"}
        for _ in range(200):
            deep = {"d": deep}
        store.put(("notes",), "deep", deep)
    r = run("store", "get", "notes", "long", "--db", str(db))
    assert r.code == 0
    assert "END" not in r.out
    assert "--full" in r.out + r.err
    r = run("store", "get", "notes", "long", "--full", "--db", str(db))
    assert "END" in r.out
    r = run("store", "get", "notes", "deep", "--db", str(db))
    assert r.code == 0, r.err
    r = run("store", "grep", "bottom", "--db", str(db))
    assert r.code == 0, r.err


def test_a_value_that_does_not_decode_is_said(run, mem_db):
    with sqlite3.connect(mem_db) as conn:  # (a deliberately broken row)
        conn.execute("UPDATE store SET value = ? WHERE prefix = 'settings' AND key = 'theme'", (b"{not json",))
    r = run("store", "get", "settings", "theme", "--db", mem_db)
    assert r.code == 0
    assert "value does not decode: not JSON" in r.out
    assert _json(run, "store", "get", "settings", "theme", "--db", mem_db, "--json")["error"].startswith("not JSON")
    assert run("store", "ls", "settings", "--db", mem_db).code == 0


# -- read-only, older schemas ---------------------------------------------------------------------
def test_reading_leaves_the_files_byte_identical(run, tmp_path):
    db, folder = sqlite_copy(tmp_path), folder_copy(tmp_path)
    store_file = folder / ".langgraph_api" / "store.pckl"
    before = (digest(db), digest(store_file))
    for target in (db, folder):
        for args in (
            ["store"],
            ["store", "--json"],
            ["store", "ls", "users.alice.facts"],
            ["store", "get", "settings", "banner"],
            ["store", "get", "settings", "banner", "--json"],
            ["store", "grep", "rye", "-f", "kind=recipe"],
        ):
            assert run(*args, "--db", str(target)).code == 0
    assert (digest(db), digest(store_file)) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.sqlite", "memory_api"]


def _old_sqlite(tmp_path: Path, upto: int) -> Path:
    """A store table as SqliteStore's first `upto` migrations made it, holding the sample's rows
    (copied column by column: the rows SqliteStore wrote)."""
    from langgraph.store.sqlite.base import MIGRATIONS

    db = tmp_path / f"old{upto}.sqlite"
    with sqlite3.connect(db) as conn:
        for sql in MIGRATIONS[:upto]:
            conn.executescript(sql)
        cols = [r[1] for r in conn.execute("PRAGMA table_info(store)")]
        conn.execute(f"ATTACH DATABASE '{SAMPLES / 'memory.sqlite'}' AS sample")
        conn.execute(f"INSERT INTO store ({', '.join(cols)}) SELECT {', '.join(cols)} FROM sample.store")
        conn.commit()
        conn.execute("DETACH DATABASE sample")
    return db


def test_every_sqlite_store_schema_reads(run, tmp_path):
    from langgraph.store.sqlite.base import MIGRATIONS

    for upto in range(1, len(MIGRATIONS) + 1):
        db = str(_old_sqlite(tmp_path, upto))
        assert len(_json(run, "store", "--db", db, "--json")) == 10, upto
        item = _json(run, "store", "get", "users.alice.sessions", "last", "--db", db, "--json")
        assert item["value"] == {"text": "alice asked about sourdough"}
        assert (item["expires_at"] is not None) == (upto >= 3), upto
        assert (item["ttl_minutes"] is not None) == (upto >= 4), upto
        assert run("store", "ls", "users.alice.sessions", "--db", db).code == 0


def test_every_postgres_store_schema_reads(run, pg_memory, pg_empty):
    import psycopg
    from langgraph.store.postgres.base import MIGRATIONS

    with psycopg.connect(pg_memory) as src:
        rows = src.execute("SELECT prefix, key, value::text, created_at, updated_at FROM store").fetchall()
    for upto in range(1, len(MIGRATIONS) + 1):
        with psycopg.connect(pg_empty, autocommit=True) as conn:
            conn.execute("DROP TABLE IF EXISTS store")
            for sql in MIGRATIONS[:upto]:
                conn.execute(sql)
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO store (prefix, key, value, created_at, updated_at) VALUES (%s, %s, %s::jsonb, %s, %s)",
                    rows,
                )
        assert len(_json(run, "store", "--db", pg_empty, "--json")) == 10, upto
        item = _json(run, "store", "get", "users.bob", "profile", "--db", pg_empty, "--json")
        assert item["value"]["plan"] == "team"
        assert item["expires_at"] is None


@pytest.mark.parametrize(
    "args",
    [
        ["store"],
        ["store", "ls", "users.alice.facts"],
        ["store", "get", "app.chats", "greeting"],
        ["store", "grep", "rye"],
    ],
)
def test_store_commands_do_not_import_heavy_packages(args):
    import subprocess
    import sys

    from test_safety import HEAVY

    heavy = (*HEAVY, "langgraph_sdk", "httpx")
    code = (
        "import sys\nfrom statectl.cli import main\n"
        f"try:\n    main({[*args, '--db', str(SAMPLES / 'memory.sqlite')]!r})\nexcept SystemExit:\n    pass\n"
        f"print('HEAVY', sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip().splitlines()[-1] == "HEAVY []", proc.stdout[-500:] + proc.stderr


def test_bash_completes_namespaces():
    from test_completion import _complete

    db = str(SAMPLES / "memory.sqlite")
    assert _complete("statectl store ls users.alice.", db) == ["users.alice.facts", "users.alice.sessions"]
    assert _complete("statectl store get app.k", db) == ["app.kb.bakery.recipes"]
    assert _complete("statectl store ls users", "/nonexistent/db.sqlite") == []


def test_grep_json_of_every_match_is_streamed_and_equal_to_the_pages(run, mem_db):
    """`--json` without --limit writes each match as the scan finds it (the store's order);
    the same items as a page sorted by namespace and key."""
    streamed = _json(run, "store", "grep", "-f", "kind=recipe", "--db", mem_db, "--json")
    paged = _json(run, "store", "grep", "-f", "kind=recipe", "--limit", "10", "--db", mem_db, "--json")
    assert [i["key"] for i in streamed] == ["rye", "brioche"]  # (as SqliteStore wrote them)
    assert [i["key"] for i in paged] == ["brioche", "rye"]
    assert sorted(streamed, key=lambda i: i["key"]) == paged
    assert _json(run, "store", "grep", "nothing-matches-this", "--db", mem_db, "--json") == []


def test_an_empty_key_is_an_item_like_any_other(run, tmp_path):
    """SqliteStore accepts `put(ns, "", value)`: the listing starts at it, `get` reads it."""
    from langgraph.store.sqlite import SqliteStore

    db = tmp_path / "empty.sqlite"
    with sqlite3.connect(db, check_same_thread=False, isolation_level=None) as conn:
        store = SqliteStore(conn)
        store.setup()
        store.put(("ns",), "", {"text": "empty key"})
        store.put(("ns",), "a", {"text": "a key"})
    listed = _json(run, "store", "ls", "ns", "--db", str(db), "--json")
    assert [i["key"] for i in listed["items"]] == ["", "a"]
    assert _json(run, "store", "get", "ns", "", "--db", str(db), "--json")["value"] == {"text": "empty key"}


# -- export --store: the store in the export file, read back by every store command --------------
def _export_store(run, db: str, out: Path, *extra: str) -> str:
    r = run("export", "--all", "--store", "--db", db, "-o", str(out), *extra)
    assert r.code == 0, r.err
    assert "and the memory store" in r.err
    return str(out)


@pytest.mark.parametrize(
    "args",
    [
        ("store",),
        ("store", "--json"),
        ("store", "ls", "users.alice.facts"),
        ("store", "ls", "users", "--json"),
        ("store", "ls", "users.alice.facts", "--limit", "1", "--after", "fact-0", "--json"),
        ("store", "get", "settings", "banner"),
        ("store", "get", "app.chats", "greeting", "--json"),
        ("store", "get", "filesystem", "/preferences.md"),
        ("store", "grep", "rye"),
        ("store", "grep", "--filter", "kind=recipe", "--json"),
        ("store", "grep", "--filter", 'score={"$gt": 4}', "--limit", "0"),
    ],
    ids=lambda a: " ".join(a[1:]) or "tree",
)
def test_every_store_command_reads_an_export_as_the_store_it_came_from(run, any_db, tmp_path, args):
    exported = _export_store(run, any_db, tmp_path / "with-store.json")
    want, got = run(*args, "--db", any_db), run(*args, "--db", exported)
    assert got.code == want.code, got.err
    if want.code:  # (the folder's sample has no app.chats: the same "not found", the same line)
        assert got.err.replace(exported, "DB") == _as_db(want.err, any_db)
        return
    if args[-1] == "--json" and args[1] == "grep":  # (every match streamed in the store's order)
        assert sorted(json.loads(got.out), key=_where) == sorted(json.loads(want.out), key=_where)
        return
    assert got.out.replace(exported, "DB") == _as_db(want.out, any_db)


def _as_db(text: str, db: str) -> str:
    return text.replace(db + "/.langgraph_api", "DB").replace(db, "DB")


def _where(item: dict) -> tuple:
    return item["namespace"], item["key"]


def test_store_commands_on_an_export_without_the_store_say_so(run, mem_db, tmp_path):
    out = tmp_path / "threads.json"
    assert run("export", "--all", "--db", mem_db, "-o", str(out)).code == 0
    r = run("store", "--db", str(out))
    assert r.code == 2
    assert r.err.startswith("statectl: no store in ")
    assert "export --store" in r.err
    assert len(r.err.splitlines()) == 1


def test_export_store_of_a_database_without_one_is_one_line_and_writes_nothing(run, tmp_path):
    shutil.copy(SAMPLES / "agent.sqlite", tmp_path / "agent.sqlite")
    out = tmp_path / "out.json"
    r = run("export", "--all", "--store", "--db", str(tmp_path / "agent.sqlite"), "-o", str(out))
    assert r.code == 2
    assert r.err.startswith("statectl: no store in ")
    assert len(r.err.splitlines()) == 1
    assert not out.exists()


def test_export_store_redact_is_export_redact(run, tmp_path):
    """--redact rewrites the store's values, keys and namespace labels as it rewrites the
    threads' state and ids: the same placeholders."""
    from langgraph.store.sqlite import SqliteStore

    db = sqlite_copy(tmp_path)
    secret, mail = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2, "carol@example.com"
    with SqliteStore.from_conn_string(str(db)) as store:
        store.setup()
        store.put(("users", "carol"), mail, {"api_key": secret, "note": f"write to {mail}"}, index=False)
        store.put(("keys", secret), "plain", {"plain": "nothing secret"}, index=False)
    out = tmp_path / "redacted.json"
    r = run("export", "--all", "--store", "--redact", "--db", str(db), "-o", str(out))
    assert r.code == 0, r.err
    text = out.read_text()
    assert secret not in text
    assert mail not in text
    items = _json(run, "store", "grep", "--filter", "plain=nothing secret", "--db", str(out), "--json")
    assert [i["namespace"][0] for i in items] == ["keys"]
    assert items[0]["namespace"][1].startswith("[REDACTED]")  # (a label: as a thread id is)
    got = _json(run, "store", "grep", "write to", "--db", str(out), "--json")
    assert [g["key"][: len("[REDACTED]")] for g in got] == ["[REDACTED]"]
    assert [g["value"]["note"] for g in got] == ["write to [REDACTED]"]
    assert got[0]["value"]["api_key"] == "[REDACTED]"
    # the rest of the store is as it was
    want = _json(run, "store", "get", "app.chats", "greeting", "--json", "--db", str(db))
    assert _json(run, "store", "get", "app.chats", "greeting", "--json", "--db", str(out)) == want


# -- show: a deepagents thread's files kept in the store -----------------------------------------
@pytest.fixture(params=["sqlite", "postgres", "export"])
def deep_db(request, tmp_path, run) -> str:
    """A database (or an `export --store` of one) holding the deepagents thread `deep-memories`,
    whose `/memories/` CompositeBackend routes to a StoreBackend, and the store it wrote."""
    if request.param == "postgres":
        return request.getfixturevalue("pg_memory")
    db = str(sqlite_copy(tmp_path))
    return _export_store(run, db, tmp_path / "deep.json") if request.param == "export" else db


def test_show_names_the_paths_a_deepagents_thread_keeps_in_the_store(run, deep_db):
    with _oracle_of(deep_db) as store:  # LangGraph's own reader: where StoreBackend put the files
        keys = sorted(i.key for i in store.search(("filesystem",), limit=100))
    assert keys == ["/preferences.md", "/projects/bakery.md"]
    r = run("show", "deep-memories", "--db", deep_db)
    assert r.code == 0, r.err
    assert "files in the store: /memories/ → namespace filesystem (statectl store ls filesystem)" in r.out
    listed = r.out.split("files in the store:", 1)[1].splitlines()[1:3]
    assert [p.strip() for p in listed] == ["/memories" + k for k in keys]
    assert "/draft.md" not in r.out.split("files in the store:", 1)[1]  # (in state, not in the store)
    assert "files in the store" not in run("show", "remember-alice", "--db", deep_db).out
    assert json.loads(run("show", "deep-memories", "--db", deep_db, "--json").out)  # (--json: as it was)


def _oracle_of(db: str):
    if db.startswith("postgresql"):
        return postgres_oracle(db)
    if db.endswith(".json"):  # (the export's source: the sqlite file beside it)
        return sqlite_oracle(Path(db).parent / "memory.sqlite")
    return sqlite_oracle(Path(db))


def test_show_on_a_deepagents_thread_without_a_store_says_nothing_of_it(run, tmp_path):
    shutil.copy(SAMPLES / "deep.sqlite", tmp_path / "deep.sqlite")
    r = run("show", "deep-research", "--db", str(tmp_path / "deep.sqlite"))
    assert r.code == 0, r.err
    assert "files in the store" not in r.out


# -- a folder's items under the empty namespace () ----------------------------------------------
def test_items_under_the_empty_namespace_are_listed_as_in_memory_store_search_lists_them(run, tmp_path):
    """InMemoryStore refuses `put((), ...)` but a PutOp through `batch` keeps it, and the server
    persists it in store.pckl: `search(())` returns those items, `list_namespaces` names `()`."""
    import pickle

    from langgraph.store.base import PutOp

    folder = folder_copy(tmp_path)
    with folder_oracle(folder) as store:
        store.batch([PutOp((), "top", {"kind": "root"}), PutOp((), "other", {"n": 1})])
        (folder / ".langgraph_api" / "store.pckl").write_bytes(pickle.dumps(store._data))  # (as the server does)
        want_ns = sorted(store.list_namespaces(limit=1000))
        want = sorted((tuple(i.namespace), i.key) for i in store.search((), limit=1000))
    assert () in want_ns
    db = str(folder)
    tree = _json(run, "store", "--json", "--db", db)
    assert sorted(tuple(n["namespace"]) for n in tree) == want_ns
    r = run("store", "--db", db)
    assert f"{len(want)} items in {len(want_ns)} namespaces" in r.out
    assert [line.split()[:2] for line in r.out.splitlines() if line.startswith("()")] == [["()", "2"]]
    got = _json(run, "store", "grep", "--filter", "kind=root", "--db", db, "--json")
    assert [(tuple(i["namespace"]), i["key"]) for i in got] == [((), "top")]
    listed = _json(run, "store", "ls", "()", "--db", db, "--json")
    assert [i["key"] for i in listed["items"]] == ["other", "top"]
    r = run("store", "get", "()", "top", "--db", db)
    assert r.code == 0, r.err
    assert "namespace ()" in r.out


def test_control_characters_in_keys_and_namespaces_are_escaped_on_one_line(run, tmp_path):
    """A bell in a key was dropped by Rich (the key shown is not the key) and a newline in a key
    or a namespace label forged a row: both are written out (`\\x07`, `\\n`) in every table."""
    from langgraph.store.sqlite import SqliteStore

    db = tmp_path / "keys.sqlite"
    with sqlite3.connect(db, check_same_thread=False, isolation_level=None) as conn:
        store = SqliteStore(conn)
        store.setup()
        store.put(("evil\x07bell", "x\ny"), "k\x07\nforged  2026-01-01 00:00:00", {"text": "findme"})
    for args, where in (
        (["ls", "evil\x07bell.x\ny"], "ls"),
        (["get", "evil\x07bell.x\ny", "k\x07\nforged  2026-01-01 00:00:00"], "get"),
        (["grep", "findme"], "grep"),
        ([], "tree"),
    ):
        r = run("store", *args, "--db", str(db))
        assert r.code == 0, (where, r.err)
        assert "evil\\x07bell" in r.out, where
        for raw in ("\x07", "\nforged", "\ny"):
            assert raw not in r.out, (where, raw)
        if where != "tree":
            assert "k\\x07\\nforged" in r.out, where


def test_a_store_pckl_whose_items_share_one_huge_tree_is_read_once_not_once_an_item(tmp_path, monkeypatch):
    """Hand-written (hostile): 50 items of a `langgraph dev` store.pckl all name one list of 2**40
    shared leaves. The first says it does not decode; the others fail at once (they named a tree
    already known too big) instead of each walking the values' limit again; real items still read."""
    import copy
    import pickle

    from statectl.codec import unpickle
    from statectl.sources.memory.folder import FolderMemory

    folder = folder_copy(tmp_path) / ".langgraph_api"
    path = folder / "store.pckl"
    store = pickle.loads(path.read_bytes())  # (the sample statectl wrote: trusted here)
    ns = ("users", "alice", "facts")
    item = store[ns]["fact-1"]
    tree: list = ["x"]
    for _ in range(40):
        tree = [tree, tree]
    for n in range(50):
        bomb = copy.copy(item)
        bomb.key, bomb.value = f"bomb-{n}", {"tree": tree}
        store[ns][f"bomb-{n}"] = bomb
    path.write_bytes(pickle.dumps(store))
    monkeypatch.setenv("STATECTL_MAX_PICKLE_VALUES", "1000")
    calls = [0]
    real = unpickle.to_data

    def counted(obj, depth=0):
        calls[0] += 1
        return real(obj, depth)

    monkeypatch.setattr(unpickle, "to_data", counted)  # (the walk's own calls: each value read)
    memory = FolderMemory(folder)
    assert calls[0] < 3 * 1000  # (without: 50 items x the limit)
    bombs = [memory.item(ns, f"bomb-{n}") for n in range(50)]
    assert all(b is not None and "expands to more than" in (b.error or "") for b in bombs)
    fact = memory.item(ns, "fact-1")
    assert fact is not None
    assert fact.error is None
    assert fact.value["text"] == "allergic to walnuts"


def test_export_store_of_a_value_nested_deeper_than_orjson_writes_says_so(run, tmp_path):
    """A hand-written row (hostile): a value nested 300 levels deep, which reads (orjson reads
    1024) but orjson writes at most 254: `export --store` wrote nothing but an internal error. The
    item is exported as a value that does not decode, the others whole."""
    db = sqlite_copy(tmp_path)
    deep: dict = {"leaf": 1}
    for _ in range(300):
        deep = {"a": deep}
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO store (prefix, key, value) VALUES ('deep', 'k', ?)", (json.dumps(deep),))
    out = tmp_path / "out.json"
    r = run("export", "--all", "--store", "--db", str(db), "-o", str(out))
    assert r.code == 0, r.err
    item = _json(run, "store", "get", "deep", "k", "--db", str(out), "--json")
    assert "nested too deeply" in item["error"]
    assert _json(run, "store", "get", "users.alice.facts", "fact-1", "--db", str(out), "--json")["value"]["score"] == 1
