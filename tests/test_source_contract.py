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
from statectl.codec.formats import SERVER_TYPE, checked_checkpoint
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


# -- every declared duty (sources/base.py `Source`), of every kind of store ------------------------
KINDS = (*BACKENDS, "js_sqlite", "js_postgres")


def _restored_js() -> str:
    import os
    import subprocess

    import psycopg

    name = f"statectl_contract_js_{os.getpid()}"
    with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = f"postgresql:///{name}"
    dump = str(SAMPLES / "js_postgres.sql")
    subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", "-f", dump, url], check=True, capture_output=True)
    return url


@pytest.fixture(scope="module")
def js_postgres(pg_server):
    import psycopg

    url = _restored_js()
    yield url
    with psycopg.connect("postgresql:///postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')


@pytest.fixture
def store_of(request, tmp_path):
    """(where, an open source) of the kind the test's `kind` parameter names."""
    kind = request.node.callspec.params["kind"]
    if kind in ("sqlite", "js_sqlite"):
        name = "custom.sqlite" if kind == "sqlite" else "js.sqlite"
        shutil.copy(SAMPLES / name, tmp_path / name)
        where = str(tmp_path / name)
    elif kind == "export":
        with statectl.open(str(SAMPLES / "custom.sqlite")) as store:
            doc = export_threads(store.source, [t.thread_id for t in store.threads()])
        (tmp_path / "custom.json").write_bytes(orjson.dumps(doc))
        where = str(tmp_path / "custom.json")
    elif kind == "postgres":
        where = request.getfixturevalue("pg_samples")
    elif kind == "js_postgres":
        where = request.getfixturevalue("js_postgres")
    elif kind == "server":
        where = request.getfixturevalue("server").url
    else:
        shutil.copytree(SAMPLES / ".langgraph_api", tmp_path / ".langgraph_api")
        where = str(tmp_path / ".langgraph_api")
    store = statectl.open(where)
    yield where, store.source
    store.close()


def _thread(source):
    """The thread with the most checkpoints (subgraphs, writes: the most for a duty to answer)."""
    every = _all_threads(source)
    return max(every, key=lambda t: (len(source.checkpoints(t.thread_id, None)), t.thread_id)).thread_id


def _writes_key(ws):
    return [(w.task_id, w.channel, w.idx, w.blob) for w in ws]


def _required(where, source):
    t = _thread(source)
    rows = source.checkpoints(t, None)
    assert rows
    assert rows == sorted(rows, key=lambda r: r.checkpoint_id, reverse=True)
    return t, rows


def _duty_threads(where, source):
    page = source.threads()
    assert isinstance(page, ThreadPage)
    assert page
    assert all(isinstance(s.thread_id, str) for s in page)


def _duty_default_sort(where, source):
    assert source.default_sort() in ("recent", "id")


def _duty_checkpoints(where, source):
    t, rows = _required(where, source)
    ids = [r.checkpoint_id for r in source.checkpoints(t, "")]
    assert ids == [r.checkpoint_id for r in rows if r.checkpoint_ns == ""]
    try:
        assert source.checkpoints("no-such-thread-9f2c", None) == []
    except NotFoundError:  # (a server that rejects the id)
        assert source.kind == "server"


def _duty_raw_checkpoint(where, source):
    t, rows = _required(where, source)
    type_, blob = source.raw_checkpoint(t, rows[0].checkpoint_ns, rows[0].checkpoint_id)
    assert isinstance(type_, str)
    assert isinstance(blob, bytes)
    assert blob


def _duty_checkpoint(where, source):
    t, rows = _required(where, source)
    assert source.checkpoint(t, rows[0].checkpoint_ns, rows[0].checkpoint_id)["id"] == rows[0].checkpoint_id


def _duty_writes(where, source):
    t, rows = _required(where, source)
    for r in rows:
        ws = source.writes(t, r.checkpoint_ns, r.checkpoint_id)
        assert [w.sort_key for w in ws] == sorted(w.sort_key for w in ws)


def _duty_channel_writes(where, source):
    t, rows = _required(where, source)
    for cid, by in source.channel_writes(t, "", "messages").items():
        assert cid in {r.checkpoint_id for r in rows}
        assert all(w.channel == "messages" for w in by)


def _duty_task_paths(where, source):
    t, _rows = _required(where, source)
    assert all(isinstance(p, str) for p in source.task_paths(t, ""))


def _duty_locate(where, source):
    t, rows = _required(where, source)
    assert (t, rows[-1].checkpoint_ns) in source.locate(rows[-1].checkpoint_id)


def _duty_close(where, source):
    other = statectl.open(where)
    assert other.source.close() is None


def _duty_notes(where, source):
    assert all(isinstance(n, str) for n in source.notes)


def _duty_recorded_graph(where, source):
    assert source.recorded_graph is None or isinstance(source.recorded_graph, dict)


def _duty_capabilities(where, source):
    for flag in ("has_index", "reads_many", "batches_threads", "reads_row_together", "shallow"):
        assert isinstance(getattr(source, flag), bool), flag
    assert isinstance(source.era, str)
    assert source.origin is None or isinstance(source.origin, str)
    assert isinstance(source.as_stored, bool)
    t, rows = _required(where, source)  # (as stored: the serializer's type; else the server's JSON)
    type_, _ = source.raw_checkpoint(t, rows[0].checkpoint_ns, rows[0].checkpoint_id)
    assert (type_ != SERVER_TYPE) == source.as_stored, type_
    if source.batches_threads:  # (what `Ahead` reads a batch of threads with)
        assert all(callable(getattr(source, m)) for m in ("checkpoints_of", "raw_checkpoints_of", "thread_writes_of"))


def _ids(source):
    return sorted(t.thread_id for t in _all_threads(source))


def _duty_thread_ids(where, source):
    every = _ids(source)
    prefix = every[0][:3]
    got = source.thread_ids(prefix, 1000)
    assert {i for i in every if i.startswith(prefix)} <= set(got) <= set(every)
    assert all(prefix.lower() in i.lower() for i in got)


def _duty_thread_ids_after(where, source):
    got, after = [], None
    while ids := source.thread_ids_after(after, 2):
        got += ids
        after = ids[-1]
    assert sorted(got) == _ids(source)
    assert len(set(got)) == len(got)


def _duty_count_threads(where, source):
    assert source.count_threads() == len(_ids(source))


def _duty_suggest_ids(where, source):
    got = source.suggest_ids(3)
    assert 0 < len(got) <= 3
    assert set(got) <= set(_ids(source))


def _duty_namespace_names(where, source):
    t, rows = _required(where, source)
    assert source.namespace_names(t) == {r.checkpoint_ns for r in rows}


def _duty_stream_threads(where, source):
    chunks = source.stream_threads("id")
    if chunks is None:
        assert not source.has_index  # (a source with an index streams)
        return
    assert [s.thread_id for c in chunks for s in c] == [s.thread_id for s in source.threads(None, None, "id")]


def _duty_threads_where(where, source):
    from statectl.sources.status import ThreadFilter

    keep = ThreadFilter(meta=(("source", "loop"),))
    want = {s.thread_id for s in _all_threads(source) if keep.matches(s, lambda s: set())}
    got = {s.thread_id for s in source.threads_where(keep) if keep.matches(s, lambda s: set())}
    assert got == want


def _duty_first_checkpoints(where, source):
    t, _rows = _required(where, source)
    assert source.first_checkpoints([t])[t].checkpoint_id == source.checkpoints(t, "")[-1].checkpoint_id


def _duty_writes_of(where, source):
    t, rows = _required(where, source)
    keys = [(t, r.checkpoint_ns, r.checkpoint_id) for r in rows]
    got = source.writes_of(keys)
    assert {k: _writes_key(got.get(k, [])) for k in keys} == {k: _writes_key(source.writes(*k)) for k in keys}


def _duty_raw_row(where, source):
    t, rows = _required(where, source)
    for r in rows[:3]:
        type_, blob, metadata = source.raw_row(t, r.checkpoint_ns, r.checkpoint_id)
        assert (type_, blob) == source.raw_checkpoint(t, r.checkpoint_ns, r.checkpoint_id)
        assert metadata == (r.metadata or {})


def _same_row(a, b) -> bool:
    """Two raw checkpoints alike: byte for byte, or (Postgres' envelope of the JSONB and its blob
    rows) the same checkpoint with the same blob rows, in whatever order the query gave them."""
    if a == b:
        return True
    if a[0] != b[0] or not str(a[0]).startswith("statectl+pg"):
        return False
    x, y = orjson.loads(a[1]), orjson.loads(b[1])
    return x["checkpoint"] == y["checkpoint"] and sorted(x["blobs"]) == sorted(y["blobs"])


def _duty_raw_checkpoints(where, source):
    t, _rows = _required(where, source)
    for (ns, cid), raw in source.raw_checkpoints(t).items():
        assert _same_row(tuple(raw), source.raw_checkpoint(t, ns, cid)), (ns, cid)


def _duty_empty_channels(where, source):
    t, _rows = _required(where, source)
    assert all(isinstance(k, str) for k in source.empty_channels(t))


def _duty_storage(where, source):
    from statectl.errors import StatectlError

    try:
        size = source.storage(5)
    except StatectlError as exc:  # (a server does not say how it stores a thread)
        assert source.kind == "server", exc
        return
    assert size.total > 0
    assert size.thread_count == len(_ids(source))
    assert len(size.threads) <= 5


def _duty_channel_storage(where, source):
    t, _rows = _required(where, source)
    got = source.channel_storage(t)
    assert got is None or (got.thread_id == t and got.channels)


def _duty_orphans(where, source):
    got = source.orphans()
    assert got is None or isinstance(got, dict)


def _duty_drop_bytes(where, source):
    t, rows = _required(where, source)
    assert source.drop_bytes(t, [(rows[0].checkpoint_ns, rows[0].checkpoint_id)]) > 0
    assert source.drop_bytes(t, []) == 0


def _duty_channel_keys(where, source):
    t, rows = _required(where, source)
    assert set(source.channel_keys(t)) <= {(r.checkpoint_ns, r.checkpoint_id) for r in rows}


def _duty_channel_keys_of(where, source):
    t, _rows = _required(where, source)
    assert set(source.channel_keys_of([t])) <= {t}


def _duty_write_tasks(where, source):
    t, _rows = _required(where, source)
    got = source.write_tasks(t)
    if got is None:
        return
    for (ns, cid), tasks in got.items():
        assert tasks <= {w.task_id for w in source.writes(t, ns, cid)}


def _duty_simple_plans_of(where, source):
    t, _rows = _required(where, source)
    assert set(source.simple_plans_of([t], 1, None)) <= {t}


def _duty_beside(where, source):
    other = source.beside()
    if other is not None:
        assert other.kind == source.kind
        assert _ids(other) == _ids(source)
        other.close()


def _duty_abandon(where, source):
    other = statectl.open(where)
    other.source.abandon()
    other.close()


DUTIES = {name[len("_duty_") :]: fn for name, fn in dict(globals()).items() if name.startswith("_duty_")}


def test_every_duty_the_contract_declares_is_checked():
    """A duty added to `Source` without a check here fails: the list below is the contract's."""
    from statectl.sources.base import Source

    declared = {
        n for n, v in vars(Source).items() if not n.startswith("_") and (callable(v) or isinstance(v, property))
    }
    declared.discard("recorded_graph")
    assert declared - {"capabilities"} <= set(DUTIES), sorted(declared - set(DUTIES))


@pytest.mark.parametrize("duty", sorted(DUTIES))
@pytest.mark.parametrize("kind", KINDS)
def test_every_source_does_every_duty(store_of, kind, duty):
    where, source = store_of
    DUTIES[duty](where, source)
