"""Issue 54: `export` of a SQLite thread reads each checkpoint row once, its blob and its
metadata together. SQLite keeps the metadata after the blob: read apart (every row's metadata
listed first, then each blob), a long thread's file was read twice (three times for a thread
named: once more to look it up) and its export took 3x as long. The export is the same, byte
for byte, on every sample store."""

from __future__ import annotations

import pytest
from parity import DBS

from statectl.sources import sqlite


def _export(run, db, out, *threads: str) -> bytes:
    r = run("export", *threads, "--db", str(db), "-o", str(out))
    assert r.code == 0, r.err
    return out.read_bytes()


@pytest.mark.parametrize("name", DBS)
@pytest.mark.parametrize("named", [False, True])
def test_export_reads_each_row_once(run, dbs, tmp_path, monkeypatch, name, named):
    import sqlite3

    conn = sqlite3.connect(dbs[name])
    threads = [t for (t,) in conn.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY 1")]
    conn.close()
    which = threads if named else ["--all"]
    monkeypatch.delattr(sqlite.SqliteSource, "raw_row")
    before = _export(run, dbs[name], tmp_path / "apart.json", *which)  # (rows read as before)
    monkeypatch.undo()
    queries: list[str] = []
    query = sqlite.SqliteSource._query

    def counted(self, sql, *args, **kwargs):
        queries.append(sql)
        return query(self, sql, *args, **kwargs)

    monkeypatch.setattr(sqlite.SqliteSource, "_query", counted)
    assert _export(run, dbs[name], tmp_path / "together.json", *which) == before
    rows = [q for q in queries if "{md}" in q]
    assert rows
    assert all("checkpoint, {md}" in q for q in rows), [q for q in rows if "checkpoint, {md}" not in q]
