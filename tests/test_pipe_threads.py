"""`statectl threads` into a pipe is written without Rich (render/pipe.py, issue 55's start-up):
its bytes must be the ones Rich's `PlainTable` printed there, for every sample store, every
paging and filter, hostile thread ids (controls, tabs, wide characters, markup) and notes."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from parity import DBS, SAMPLES
from test_plain import HOSTILE

from statectl.cli import main

ARGS = ([], ["--limit", "1"], ["--limit", "0"], ["--sort", "id"], ["-s", "interrupted,error"], ["-m", "A"])


def _piped(*args: str) -> tuple[int, bytes, bytes]:
    """The CLI in a subprocess, its output a real pipe (the path `plain_pipe` takes)."""
    code = f"import sys\nfrom statectl.cli import main\nmain({list(args)!r})"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60, env=_env())
    return proc.returncode, proc.stdout, proc.stderr


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}


def _through_rich(monkeypatch, capsysbinary, *args: str) -> tuple[int, bytes, bytes]:
    """The same command in-process, laid out by Rich into a captured (not a terminal) stdout."""
    import statectl.cli.output as output
    import statectl.cli.threads as threads

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(threads, "plain_pipe", lambda: False)
    monkeypatch.setattr(output, "plain_pipe", lambda: False)
    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    cap = capsysbinary.readouterr()
    return code, cap.out, cap.err


def _hostile(tmp_path: Path) -> Path:
    """agent.sqlite (real runs) with its threads renamed to hostile ids (hand-written: hostile)."""
    db = tmp_path / "hostile_ids.sqlite"
    shutil.copy(SAMPLES / "agent.sqlite", db)
    with sqlite3.connect(db) as c:
        ids = [r[0] for r in c.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id")]
        names = [h for h in HOSTILE if h.strip() and "\t" not in h] + ["宽 ＡＢＣ\x08\r"]
        for old, new in zip(ids, names, strict=False):
            for table in ("checkpoints", "writes"):
                c.execute(f"UPDATE {table} SET thread_id = ? WHERE thread_id = ?", (new, old))
    return db


@pytest.mark.parametrize("name", [*DBS, "hostile"])
def test_threads_into_a_pipe_are_the_bytes_rich_printed(name, dbs, tmp_path, monkeypatch, capsysbinary):
    db = str(_hostile(tmp_path) if name == "hostile" else dbs[name])
    for args in ARGS:
        piped = _piped("threads", "--db", db, *args)
        assert piped[0] in (0, 1), (args, piped)
        assert piped[1], args
        assert piped == _through_rich(monkeypatch, capsysbinary, "threads", "--db", db, *args), args
    for match in ("\x1b[2J[bold]x[/bold]", "漢"):  # (the title holds the match, escaped)
        piped = _piped("threads", "--db", db, "-m", match)
        assert piped == _through_rich(monkeypatch, capsysbinary, "threads", "--db", db, "-m", match)


def test_a_tab_is_left_to_rich(tmp_path, monkeypatch, capsysbinary):
    """Rich expands a tab to the next stop: a thread id holding one is laid out by Rich, the same."""
    db = tmp_path / "tab.sqlite"
    shutil.copy(SAMPLES / "agent.sqlite", db)
    with sqlite3.connect(db) as c:
        for table in ("checkpoints", "writes"):
            c.execute(f"UPDATE {table} SET thread_id = 'tab\there' WHERE thread_id = 'bakery-plan'")
    piped = _piped("threads", "--db", str(db))
    assert b"tab" in piped[1]
    assert piped == _through_rich(monkeypatch, capsysbinary, "threads", "--db", str(db))


@pytest.mark.parametrize("store", ["thread_ts_00.sqlite", ".langgraph_api"])
def test_notes_and_other_kinds_into_a_pipe(store, monkeypatch, capsysbinary):
    """A store's notes under the table (a legacy `thread_ts` store's) are written plain too, as
    Rich wrote them; a `langgraph dev` folder's table has its server columns."""
    db = str(SAMPLES / store)
    piped = _piped("threads", "--db", db)
    assert (b"\nnote: " in piped[1]) == store.startswith("thread_ts"), piped[1][-300:]
    assert piped == _through_rich(monkeypatch, capsysbinary, "threads", "--db", db)
