"""Issue 54: `threads --json` writes a large page as it reads it, `--limit` and `--after` or not:
a page given by `--limit` is never held whole (Postgres `--limit 100000` peaked at 351 MB, the
streamed form at 45 MB). The streamed page is the page `threads` lists, byte for byte, on every
source that streams (SQLite, Postgres), with every filter and paging style."""

from __future__ import annotations

import json

import pytest

import statectl
from statectl.cli import threads as cli_threads

OPTIONS = [
    [],
    ["--sort", "id"],
    ["--sort", "recent"],
    ["-s", "error,interrupted"],
    ["-s", "done", "--sort", "id"],
    ["--match", "e"],
    ["--since", "3650d"],
    ["--since", "3650d", "-s", "interrupted,done"],
]


def _pages(run, db: str, monkeypatch) -> int:
    """Each option set, each --limit and --after: the output streamed (a chunk of one thread, so
    every page counts as large; listing a page whole refused) equals the page listed whole."""
    every = {}
    for opts in OPTIONS:
        every[tuple(opts)] = [t["thread_id"] for t in json.loads(run("threads", "--db", db, "--json", *opts).out)]
    checked = 0
    for opts in OPTIONS:
        ids = every[tuple(opts)]
        for limit in ("1", "2", "3", "100000"):
            for after in [None, *ids[:2], ids[-1:] and ids[-1], "no-such-thread"]:
                args = [
                    "threads",
                    "--db",
                    db,
                    "--json",
                    "--limit",
                    limit,
                    *opts,
                    *(["--after", after] if after else []),
                ]
                monkeypatch.setattr(cli_threads, "HELD", 1 << 30)
                whole = run(*args)
                monkeypatch.setattr(cli_threads, "HELD", 0)
                monkeypatch.setattr(statectl, "STREAM_CHUNK", 1)

                def held(*a, **kw):
                    raise AssertionError("a page of threads listed whole")

                monkeypatch.setattr(statectl.Store, "threads", held)
                streamed = run(*args)
                monkeypatch.undo()
                assert (streamed.code, streamed.out, streamed.err) == (whole.code, whole.out, whole.err), (args, whole)
                if after == "no-such-thread":
                    assert streamed.code != 0
                    assert streamed.out == ""
                    assert streamed.err.startswith("statectl: no thread")
                else:
                    checked += len(json.loads(streamed.out))
    return checked


def test_sqlite_pages_are_streamed_as_listed(run, dbs, monkeypatch):
    assert _pages(run, str(dbs["agent"]), monkeypatch) > 20


def test_postgres_pages_are_streamed_as_listed(run, pg_samples, monkeypatch):
    assert _pages(run, pg_samples, monkeypatch) > 20


@pytest.mark.parametrize("limit", ["0", "100000"])
def test_exit_code_of_a_streamed_page(run, dbs, limit):
    r = run("threads", "--db", str(dbs["agent"]), "--json", "--limit", limit, "-s", "error", "--exit-code")
    assert r.code == 1
    assert json.loads(r.out)
