"""One contract every checkpoint source passes, method by method (`sources.Source`): SQLite, an
export file, Postgres, a `langgraph dev` folder and a LangGraph server over HTTP (a real
`langgraph dev`), each holding real LangGraph runs."""

from __future__ import annotations

import operator
import shutil
from typing import Annotated, TypedDict

import orjson
import pytest
from parity import SAMPLES

import statectl
from statectl.codec.formats import checked_checkpoint
from statectl.errors import NotFoundError
from statectl.model import ThreadPage, is_state_key
from statectl.sources.export import export_threads
from statectl.sources.server import ServerSource

BACKENDS = (
    "sqlite",
    "export",
    "postgres",
    "langgraph_dev",
    pytest.param("server", marks=pytest.mark.xdist_group("server")),
)


@pytest.fixture(params=BACKENDS)
def source(request, tmp_path):
    """An open source of each backend (its store closed after the test)."""
    if request.param == "sqlite":
        shutil.copy(SAMPLES / "custom.sqlite", tmp_path / "custom.sqlite")
        where = str(tmp_path / "custom.sqlite")
    elif request.param == "export":
        with statectl.open(str(SAMPLES / "custom.sqlite")) as store:
            doc = export_threads(store.source, [t.thread_id for t in store.threads()])
        (tmp_path / "custom.json").write_bytes(orjson.dumps(doc))
        where = str(tmp_path / "custom.json")
    elif request.param == "postgres":
        where = request.getfixturevalue("pg_samples")
    elif request.param == "server":
        where = request.getfixturevalue("server").url
    else:
        shutil.copytree(SAMPLES / ".langgraph_api", tmp_path / ".langgraph_api")
        where = str(tmp_path / ".langgraph_api")
    store = statectl.open(where)
    yield store.source
    store.close()


def _all_threads(source) -> list:
    return list(source.threads(None, None, "id", None, None))


def test_threads_page_and_filter(source):
    every = _all_threads(source)
    ids = [t.thread_id for t in every]
    assert len(ids) == len(set(ids)) > 2
    assert ids == sorted(ids)
    assert source.default_sort() in ("recent", "id")
    for sort in ("id", "recent"):
        whole = [t.thread_id for t in source.threads(None, None, sort, None, None)]
        paged, after = [], None
        while True:
            page = source.threads(2, after, sort, None, None)
            assert isinstance(page, ThreadPage)
            assert len(page) <= 2
            paged += [t.thread_id for t in page]
            if not page.more:
                break
            after = page[-1].thread_id
        assert paged == whole, sort
    needle = ids[0][1:4].upper()
    assert {t.thread_id for t in source.threads(None, None, "id", needle, None)} == {
        i for i in ids if needle.casefold() in i.casefold()
    }
    for status in {t.status for t in every}:
        got = source.threads(None, None, "id", None, frozenset({status}))
        assert [t.thread_id for t in got] == [t.thread_id for t in every if t.status == status], status


def test_checkpoints_newest_first_and_by_namespace(source):
    for t in _all_threads(source):
        root = source.checkpoints(t.thread_id, "")
        every = source.checkpoints(t.thread_id, None)
        assert root, t.thread_id
        assert [r.checkpoint_id for r in root] == sorted((r.checkpoint_id for r in root), reverse=True)
        assert all(r.checkpoint_ns == "" and r.thread_id == t.thread_id for r in root)
        assert {r.checkpoint_id for r in root} <= {r.checkpoint_id for r in every}
        assert root[0].checkpoint_id == t.latest_checkpoint_id
        assert t.checkpoints in (None, len(every))
        assert t.namespaces in (None, len({r.checkpoint_ns for r in every}))
    if isinstance(source, ServerSource):  # the server itself rejects the id: said, not guessed
        with pytest.raises(NotFoundError, match="no thread 'no such thread'"):
            source.checkpoints("no such thread", None)
    else:
        assert source.checkpoints("no such thread", None) == []


def test_checkpoint_values_and_raw_rows(source):
    for t in _all_threads(source):
        for rec in source.checkpoints(t.thread_id, None):
            ck = source.checkpoint(t.thread_id, rec.checkpoint_ns, rec.checkpoint_id)
            assert ck["id"] == rec.checkpoint_id
            assert isinstance(ck["channel_versions"], dict)
            assert isinstance(ck["channel_values"], dict)
            type_, blob = source.raw_checkpoint(t.thread_id, rec.checkpoint_ns, rec.checkpoint_id)
            assert blob, rec.checkpoint_id
            raw = checked_checkpoint(t.thread_id, rec.checkpoint_id, type_, blob)  # (as an export reads it)
            assert raw["id"] == rec.checkpoint_id
            assert raw["channel_versions"] == ck["channel_versions"]
            assert raw["channel_values"] == ck["channel_values"], rec.checkpoint_id
            some = frozenset(k for k in ck["channel_values"] if is_state_key(k))
            for keys in (frozenset(), frozenset(list(some)[:1])):
                part = source.checkpoint(t.thread_id, rec.checkpoint_ns, rec.checkpoint_id, keys)
                assert keys <= set(part["channel_values"])  # (a source may return more)
                assert all(
                    part["channel_values"][k] == ck["channel_values"][k]
                    for k in part["channel_values"]
                    if k in ck["channel_values"]
                )
                assert part["channel_versions"] == ck["channel_versions"]


def test_writes_in_replay_order_and_by_channel(source):
    for t in _all_threads(source):
        namespaces = sorted({r.checkpoint_ns for r in source.checkpoints(t.thread_id, None)})
        for ns in namespaces:
            records = source.checkpoints(t.thread_id, ns)
            by_channel: dict[str, dict[str, list]] = {}
            paths = []
            for rec in reversed(records):  # oldest first
                ws = source.writes(t.thread_id, ns, rec.checkpoint_id)
                assert [w.sort_key for w in ws] == sorted(w.sort_key for w in ws), rec.checkpoint_id
                assert all(w.checkpoint_id in ("", rec.checkpoint_id) for w in ws)
                for w in ws:
                    by_channel.setdefault(w.channel, {}).setdefault(rec.checkpoint_id, []).append(w)
                paths += sorted(w.task_path for w in ws)
            for channel, want in by_channel.items():
                got = source.channel_writes(t.thread_id, ns, channel)
                if isinstance(source, ServerSource):  # values come whole: nothing to replay
                    assert got == {}
                    continue
                got = {cid: ws for cid, ws in got.items() if cid in {r.checkpoint_id for r in records}}
                assert {cid: [(w.task_id, w.idx, w.blob) for w in ws] for cid, ws in got.items()} == {
                    cid: [(w.task_id, w.idx, w.blob) for w in ws] for cid, ws in want.items()
                }, (t.thread_id, channel)
            assert source.task_paths(t.thread_id, ns) in ([], paths), (t.thread_id, ns)


def test_locate_names_each_checkpoint(source):
    for t in _all_threads(source)[:4]:
        for rec in source.checkpoints(t.thread_id, None)[:3]:
            assert (t.thread_id, rec.checkpoint_ns) in source.locate(rec.checkpoint_id)
    assert source.locate("no-such-checkpoint") == []


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def test_the_read_model_refreshes_when_the_thread_grows(tmp_path):
    """`ThreadHistory.refresh`: False while nothing changed; after a real run adds a step, True,
    with the new checkpoints read and the facts derived from the old ones dropped."""
    from conftest import one_node_runs

    from statectl.core.state import ThreadView
    from statectl.sources import open_source

    def note(state: Log) -> dict:
        return {"log": [f"run {len(state['log'])}"]}

    db = tmp_path / "grows.sqlite"
    config = {"configurable": {"thread_id": "grows"}}
    one_node_runs(db, Log, note, [({"log": []}, config)])
    source = open_source(str(db))
    view = ThreadView(source, "grows")
    before = len(view.records)
    first = view.snapshot(view.records[0].checkpoint_id).values
    assert view.refresh() is False
    assert view.latest["id"] == view.records[0].checkpoint_id  # (a derived fact, cached)
    one_node_runs(db, Log, note, [({"log": []}, config)])
    assert view.refresh() is True
    assert len(view.records) > before
    assert view.latest["id"] == view.records[0].checkpoint_id  # derived again, not kept
    assert view.snapshot(view.records[0].checkpoint_id).values["log"] == [*first["log"], "run 1"]
    assert view.refresh() is False
    source.close()
