"""Hold statectl to real data other people's apps wrote: `python3 tasks.py realworld [DIR]`.

DIR (default ../shared/realworld) holds `sqlite/*.sqlite` checkpoint databases (some with their
`-wal`) and `langgraph_api/OWNER__REPO/files/...` folders. For each database, on a copy with its
sidecar files: every command on every thread and namespace, no internal error, no traceback,
nothing created or changed beside it, and the newest checkpoint of every thread and namespace
equal to LangGraph's own reading of the same rows (SqliteSaver.get_tuple on another copy) wherever
LangGraph can read them. For each folder:
every command on every thread and namespace (threads, log, log -p, show, show --json, diff,
export, graph --thread, schema THREAD) on a copy, with no internal error and no traceback, the copy left
byte-identical with nothing created beside it; and where the server recorded a thread's last
state (`.langgraph_ops.pckl`, copied from LangGraph's own StateSnapshot when a run ends), that
the newest root checkpoint's values and interrupts equal it. Prints one line per folder and a
summary; exits 1 if anything failed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def statectl(*args: str) -> tuple[int, str, str]:
    """Run the CLI in-process (as the console script would, with `--debug` so that an internal
    error comes with its traceback): exit code, stdout, stderr."""
    import contextlib
    import io
    import traceback

    from statectl.cli import main

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # with a .buffer, like sys.stdout
    err, code = io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([*args, "--debug"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception:
            code = 99
            err.write("Traceback (internal error):\n" + traceback.format_exc())
    out.flush()
    return code, out.buffer.getvalue().decode(), err.getvalue()


def every_command(db: str, failures: list[str], ok: tuple[int, ...]) -> int:
    """Every command on every thread and namespace of `db` (threads, log, log -p, show, show
    --json, diff, graph --thread, schema, export, size, prune, doctor); an exit outside `ok`, a traceback or an
    internal error is a failure. Returns how many commands ran."""
    import statectl as api

    runs = 0

    def cli(*args: str) -> tuple[int, str, str]:
        nonlocal runs
        runs += 1
        code, out, err = statectl(*args, "--db", db)
        # (--debug adds the traceback to every failure, keeping its exit code: an internal error
        # is exit 70 with "internal error", or an exception main let through, 99)
        if code not in ok or code in (70, 99) or "internal error" in err:
            failures.append(f"{' '.join(args)} -> exit {code}: {err.strip()[-600:]}")
        return code, out, err

    code, out, _ = cli("threads", "--json")
    threads = [t["thread_id"] for t in json.loads(out)] if code == 0 else []
    cli("threads")
    cli("size")
    runs += 1
    code, out, err = statectl("doctor", "--json", "--db", db)  # (1: it found something)
    if code not in (*ok, 1) or "internal error" in err or (code in (0, 1) and not out.startswith("{")):
        failures.append(f"doctor -> exit {code}: {err.strip()[-600:]}")
    if not Path(db).is_dir():  # (prune plans SQLite files and Postgres, not dev folders)
        cli("prune", "--keep-last", "1", "--json")
        cli("prune", "--keep-last", "1", "--sql")
    for tid in threads:
        with api.open(db) as store:
            namespaces = store.namespaces(tid)
        for ns in namespaces:
            for args in (("log",), ("log", "-p"), ("show",), ("show", "--json"), ("diff",)):
                cli(args[0], tid, "--ns", ns, *args[1:])
        cli("graph", "--thread", tid)
        cli("size", tid, "--json")
        cli("schema", tid)
        with tempfile.TemporaryDirectory() as tmp:
            cli("export", tid, "-o", str(Path(tmp) / "x.json"))
    return runs


def _ops_threads(folder: Path) -> dict[str, dict]:
    from statectl.codec.unpickle import loads
    from statectl.sources.langgraph_api import OPS, _uuid_text

    path = folder / OPS
    if not path.exists() or path.stat().st_size == 0:
        return {}
    ops = loads(path.read_bytes())
    return {_uuid_text(t["thread_id"]): t for t in ops.get("threads") or [] if isinstance(t, dict)}


def _normal(v: Any) -> Any:
    from parity import normal

    return normal(v)


def check_folder(app: Path) -> tuple[int, int, int, list[str]]:
    """(commands run, threads compared with the server's record, of which equal, failures)."""
    import statectl as api
    from statectl.codec.unpickle import to_data
    from statectl.sources.langgraph_api import SERVER_RECORD, find_folder

    folder = find_folder(app)
    assert folder is not None, app
    before = digest(app)
    failures: list[str] = []
    runs = every_command(str(app), failures, ok=(0, 1, 3, 4))
    compared = equal = 0
    ops = _ops_threads(folder)
    with api.open(str(app)) as store:
        for tid, op in ops.items():
            values = op.get("values")
            recs = store.source.checkpoints(tid, "")
            # a busy thread's record is from the run before the one in progress
            if values is None or not recs or recs[0].checkpoint_id == SERVER_RECORD or op.get("status") == "busy":
                continue
            compared += 1
            # values only a running server holds (UntrackedValue channels, which langgraph-api
            # records as "<non-pickleable ...>"): never in a checkpoint, so not compared
            want = {
                k: v
                for k, v in _normal(to_data(values)).items()
                if not (isinstance(v, str) and v.startswith("<non-pickleable "))
            }
            try:
                got = _normal(store.snapshot(tid, None, "").values)
                # a thread paused inside a subgraph: the server records the subgraph's state
                subs = (
                    [_normal(store.snapshot(tid, None, ns).values) for ns in sorted(store.namespaces(tid)) if ns]
                    if got != want
                    else []
                )
            except Exception as exc:
                failures.append(f"{tid}: {type(exc).__name__}: {exc}")
                continue
            if got == want or want in subs:
                equal += 1
            else:
                keys = (
                    sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
                    if (isinstance(got, dict) and isinstance(want, dict))
                    else ["(values)"]
                )
                failures.append(f"{tid}: values differ from the server's record in {keys[:5]}")
    runs += check_store(app, failures)
    if digest(app) != before:
        failures.append("the folder changed")
    return runs, compared, equal, failures


STORE_ITEMS = {"folders": 0, "namespaces": 0, "items": 0}
"""What `check_store` read in all: folders with a store item, namespaces, items."""


def check_store(app: Path, failures: list[str]) -> int:
    """The folder's long-term memory store (store.pckl): `store`, `store ls` of every namespace,
    `store get` of every item, each value read and equal to what `store get --json` gives.
    Counts into STORE_ITEMS; returns how many commands ran."""
    from statectl.sources.memory import open_memory
    from statectl.sources.memory.base import NoStore, ns_text

    try:
        memory = open_memory(str(app))
    except NoStore:
        return 0
    runs = 0
    with memory:
        infos = memory.namespaces()
        items = list(memory.scan())
    STORE_ITEMS["folders"] += bool(items)
    STORE_ITEMS["namespaces"] += len(infos)
    STORE_ITEMS["items"] += len(items)
    for args in [["store"], *(["store", "ls", ns_text(i.namespace)] for i in infos)]:
        code, _, err = statectl(*args, "--db", str(app))
        runs += 1
        if code != 0:
            failures.append(f"{' '.join(args)}: exit {code}: {err.strip()[-300:]}")
    for item in items:
        if item.error is not None:
            failures.append(f"store item {ns_text(item.namespace)} {item.key}: {item.error}")
        code, out, err = statectl("store", "get", ns_text(item.namespace), item.key, "--json", "--db", str(app))
        runs += 1
        if code != 0 or json.loads(out)["value"] != item.value:
            failures.append(f"store get {ns_text(item.namespace)} {item.key}: exit {code} {err.strip()[-300:]}")
    return runs


def _langgraph_reading(db: Path) -> dict[tuple[str, str], dict] | None:
    """LangGraph's own reading (the installed langgraph-checkpoint-sqlite) of every checkpoint:
    its state channels, tagged as statectl tags values. None when LangGraph cannot open the file
    (the thread_ts generations, foreign tables)."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    sys.path.insert(0, str(ROOT / "sample_threads"))
    from record import tagged

    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        cols = {r[1] for r in conn.execute("PRAGMA table_info(checkpoints)")}
        if "checkpoint_id" not in cols:
            return None
        saver = SqliteSaver(conn)
        out = {}
        for tid, ns in conn.execute("SELECT DISTINCT thread_id, checkpoint_ns FROM checkpoints").fetchall():
            for got in saver.list({"configurable": {"thread_id": tid, "checkpoint_ns": ns}}):
                cid = got.checkpoint["id"]
                cv = got.checkpoint.get("channel_values") or {}
                try:
                    out[(tid, ns, cid)] = {
                        "values": {
                            k: tagged(v)
                            for k, v in cv.items()
                            # LangGraph's view holds state channels only: not its bookkeeping, nor
                            # (before 0.3) the channel named after each node holding its own name,
                            # start:NODE, branch:SRC:COND:DST
                            if not (k.startswith("__") or k.startswith(("start:", "branch:")) or v == k)
                        }
                    }
                except TypeError as exc:  # a value record.tagged cannot express
                    out[(tid, ns, cid)] = {"skip": str(exc)}
        return out
    except Exception as exc:
        print(f"     (LangGraph cannot read it: {type(exc).__name__}: {str(exc)[:120]})")
        return None
    finally:
        conn.close()


def _same(got: Any, exp: Any) -> bool:
    """statectl's value is LangGraph's, where LangGraph could not import a class the row names
    (an app's own model: it then returns the fields as a plain dict, and statectl keeps the class
    name as `{"$type", "data"}` beside them)."""
    if isinstance(got, dict) and isinstance(exp, dict):
        if "$type" in got and "data" in got and "$type" not in exp and isinstance(got["data"], dict):
            return _same(got["data"], exp)
        return got.keys() == exp.keys() and all(_same(got[k], exp[k]) for k in got)
    if isinstance(got, list) and isinstance(exp, list):
        return len(got) == len(exp) and all(_same(a, b) for a, b in zip(got, exp, strict=True))
    return got == exp


def check_sqlite(db: Path, oracle: dict | None) -> tuple[int, int, int, list[str]]:
    """(commands run, checkpoints compared with LangGraph's reading, of which equal, failures)."""
    import statectl as api

    before = digest(db.parent)
    failures: list[str] = []
    runs = every_command(str(db), failures, ok=(0, 1, 2, 3, 4))
    compared = equal = 0
    if oracle:
        with api.open(str(db)) as store:
            for (tid, ns, cid), want in sorted(oracle.items()):
                if "skip" in want:
                    continue
                compared += 1
                try:
                    snap = store.view(tid, ns).snapshot(cid)
                    got = _normal(snap.values) if isinstance(snap.values, dict) else {}
                except Exception as exc:
                    failures.append(f"{tid} {ns!r}: {type(exc).__name__}: {exc}")
                    continue
                exp = _normal(want["values"])
                # statectl adds what LangGraph's view also shows without a stored value (a reducer's
                # empty default), so keys only statectl has are not a difference
                diff = sorted(k for k in exp if not _same(got.get(k), exp[k]))
                if not diff:
                    equal += 1
                else:
                    failures.append(f"{tid} {ns!r} {cid}: values differ from LangGraph's reading in {diff[:5]}")
    after = digest(db.parent)
    if after != before:
        changed = sorted(set(after) ^ set(before)) + [k for k in before if k in after and after[k] != before[k]]
        failures.append(f"files beside the database changed: {changed}")
    return runs, compared, equal, failures


def check_copy(db: Path, failures: list[str]) -> bool:
    """`statectl copy --all` of the database into a new SQLite file (LangGraph's SqliteSaver writes
    it): statectl reads the copy as it reads the database, every thread's `log --json` the same.
    False when the database is not one statectl copies (no threads, not LangGraph's tables)."""
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "copy.sqlite"
        code, _out, err = statectl("copy", "--all", "--db", str(db), "--to", str(dest))
        if code == 2 and ("did not write" in err or "not a SQLite" in err):
            return False
        if code != 0:
            failures.append(f"copy: exit {code}: {err.strip()[-300:]}")
            return False
        if not dest.exists():  # (no threads: nothing copied)
            return False
        mine = json.loads(statectl("threads", "--json", "--db", str(db))[1])
        theirs = json.loads(statectl("threads", "--json", "--db", str(dest))[1])
        if sorted(map(str, mine)) != sorted(map(str, theirs)):
            failures.append("copy: threads differ from the database's")
            return True
        for t in mine:
            a = statectl("log", t["thread_id"], "--json", "--db", str(db))[1]
            b = statectl("log", t["thread_id"], "--json", "--db", str(dest))[1]
            if a != b:
                failures.append(f"copy: thread {t['thread_id']!r} reads differently from the copy")
    return True


def main_sqlite(base: Path) -> tuple[int, int]:
    """(databases, of which with failures)."""
    dbs = sorted(
        p
        for p in (base / "sqlite").glob("*")
        if p.is_file() and not p.name.endswith(("-wal", "-shm", "-journal", ".json"))
    )
    total_runs = total_cmp = total_eq = bad = 0
    for src in dbs:
        with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as tmp2:
            here, theirs = Path(tmp) / src.name, Path(tmp2) / src.name
            for side in src.parent.glob(src.name + "*"):
                shutil.copyfile(side, Path(tmp) / side.name)
                shutil.copyfile(side, Path(tmp2) / side.name)
            oracle = _langgraph_reading(theirs)
            runs, cmp_, eq, failures = check_sqlite(here, oracle)
            copied = check_copy(here, failures)
        total_runs, total_cmp, total_eq = total_runs + runs, total_cmp + cmp_, total_eq + eq
        bad += bool(failures)
        print(
            f"{'ok ' if not failures else 'FAIL'} sqlite/{src.name}: {runs} commands, "
            f"{eq}/{cmp_} checkpoints equal to LangGraph's reading"
            + ("" if oracle is not None else " (LangGraph cannot read this generation)")
            + ("; copied, and the copy reads the same" if copied else "")
        )
        for f in failures:
            print(f"     {f}")
    print(
        f"{len(dbs)} databases, {total_runs} commands, {total_eq}/{total_cmp} checkpoints equal to "
        f"LangGraph's reading, {bad} with failures"
    )
    return len(dbs), bad


def main() -> int:
    base = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT.parent / "shared" / "realworld")
    n_dbs, bad_dbs = main_sqlite(base) if (base / "sqlite").is_dir() else (0, 0)
    folders = sorted((base / "langgraph_api").glob("*/files"))
    if not folders and not n_dbs:
        print(f"no real-world databases or folders under {base}")
        return 0
    total_runs = total_cmp = total_eq = 0
    bad = bad_dbs
    for files in folders:
        with tempfile.TemporaryDirectory() as tmp:
            app = Path(tmp) / "app"
            shutil.copytree(files, app)
            for p in app.rglob("*"):
                p.chmod(0o755 if p.is_dir() else 0o644)
            roots = sorted({p.parent for p in app.rglob("*.pckl")})
            for root in roots:
                runs, cmp_, eq, failures = check_folder(root)
                total_runs, total_cmp, total_eq = total_runs + runs, total_cmp + cmp_, total_eq + eq
                name = f"{files.parent.name}/{root.relative_to(app)}"
                print(
                    f"{'ok ' if not failures else 'FAIL'} {name}: {runs} commands, "
                    f"{eq}/{cmp_} threads equal to the server's record"
                )
                for f in failures:
                    print(f"     {f}")
                bad += bool(failures)
    print(
        f"{len(folders)} folders, {total_runs} commands, {total_eq}/{total_cmp} threads equal to the "
        f"server's record, {bad - bad_dbs} with failures"
    )
    print(
        f"store: {STORE_ITEMS['items']} items in {STORE_ITEMS['namespaces']} namespaces "
        f"read from {STORE_ITEMS['folders']} folders' store.pckl"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
