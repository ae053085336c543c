"""statectl's snapshots equal what LangGraph's get_state_history reported for every checkpoint."""

from __future__ import annotations

import orjson
import pytest
from parity import DBS, check, check_keyed, expected

import statectl
from statectl.sources.export import export_threads


def _check(store: statectl.Store, db: str) -> int:
    return check(store, expected(db))


@pytest.mark.parametrize("db", DBS)
def test_sqlite_matches_langgraph(dbs, db):
    with statectl.open(str(dbs[db])) as store:
        assert _check(store, db) > 0


@pytest.mark.parametrize("db", DBS)
def test_export_matches_langgraph(dbs, db, tmp_path):
    with statectl.open(str(dbs[db])) as store:
        doc = export_threads(store.source, [t.thread_id for t in store.threads()])
    path = tmp_path / f"{db}.json"
    path.write_bytes(orjson.dumps(doc))
    with statectl.open(str(path)) as store:
        assert _check(store, db) > 0


@pytest.mark.parametrize("db", DBS)
def test_one_key_matches_langgraph(dbs, db):
    """`show --key K` reads only K (and the bookkeeping channels) and still equals LangGraph."""
    with statectl.open(str(dbs[db])) as store:
        assert check_keyed(store, expected(db)) > 0


def test_history_order_and_lineage(dbs):
    """history() is newest id first (like get_state_history), and parents are real checkpoints."""
    with statectl.open(str(dbs["custom"])) as store:
        history = store.history("notes-edits")
        ids = [s.checkpoint_id for s in history]
        assert ids == sorted(ids, reverse=True)
        assert [s.checkpoint_id for s in history] == [e["checkpoint_id"] for e in expected("custom")
                                                     if e["thread_id"] == "notes-edits"]
        known = set(ids)
        assert all(s.parent_checkpoint_id in known for s in history if s.parent_checkpoint_id)
        sources = {s.metadata["source"] for s in history}
        assert {"input", "loop", "update", "fork"} <= sources


def test_subgraph_namespaces_are_separate_and_linked(dbs):
    with statectl.open(str(dbs["custom"])) as store:
        namespaces = store.namespaces("nested")
        assert namespaces[0] == "" and len(namespaces) == 3
        root = store.history("nested")
        linked = [t.subgraph_ns for s in root for t in s.tasks if t.subgraph_ns]
        assert linked and linked[0] in namespaces
        inner = store.snapshot("nested", None, linked[0])
        assert inner.checkpoint_ns == linked[0]
        assert "gathered sources on why is sourdough sour?" in inner.values["notes"]


def test_deepagents_delta_channels_are_rebuilt(dbs):
    """messages/files are absent from the stored checkpoint; statectl replays the writes."""
    with statectl.open(str(dbs["deep"])) as store:
        view = store.view("deep-research")
        latest = view.checkpoint(view.records[0].checkpoint_id)
        assert "messages" not in latest["channel_values"] and "files" not in latest["channel_values"]
        snap = store.snapshot("deep-research")
        assert set(snap.values["files"]) == {"/plan.md", "/notes/budget.md"}
        assert "Beat Gleba on price" in str(snap.values["files"]["/plan.md"])
        assert snap.values["messages"][-1]["data"]["content"].startswith("The plan is in /plan.md")


@pytest.mark.parametrize("version", [1, 4])
def test_task_ids_are_langgraphs_for_both_hash_versions(version):
    """Checkpoints with v == 1 hash task ids with sha1 (uuid5-like), later ones with xxh3:
    the samples are all v4, so the old branch is checked against LangGraph's own function."""
    from langgraph.pregel._algo import _uuid5_str, _xxhash_str

    from statectl.state import _task_id

    cid = expected("custom")[0]["checkpoint_id"]
    parts = ("", "3", "model", "__pregel_pull", "branch:to:model")
    want = (_uuid5_str if version == 1 else _xxhash_str)(bytes.fromhex(cid.replace("-", "")), *parts)
    assert _task_id(version, cid, *parts) == want


def test_pull_node_reads_a_pull_tasks_path():
    from statectl.state import pull_node, task_path_str

    assert pull_node(task_path_str(("__pregel_pull", "model"))) == "model"
    assert pull_node(task_path_str(("__pregel_pull", "a,b"))) == "a,b"  # a comma is part of the name
    assert pull_node(task_path_str(("__pregel_push", 0, False))) is None
    assert pull_node("~__interrupt__") is None
