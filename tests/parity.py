"""Helpers to hold statectl to what LangGraph recorded (sample_threads/expected/*.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

SAMPLES = Path(__file__).resolve().parent.parent / "sample_threads"
DBS = ("agent", "deep", "orchestrator", "custom", "interrupts", "flow")


GRAPHS = {
    "agent_app.py:agent": ("agent", ["bakery-plan", "hola-panaderia", "investor-email", "market-lookup-fails"]),
    "deep_app.py:deep_agent": ("deep", ["deep-research"]),
    "orchestrator_app.py:orchestrator": ("orchestrator", ["orchestrate-bakery"]),
    "orchestrator_app.py:builder": ("orchestrator", []),
    "custom_app.py:notes_builder": ("custom", ["notes-edits"]),
    "custom_app.py:fanout_builder": ("custom", ["fanout"]),
    "custom_app.py:nested_builder": ("custom", ["nested"]),
    "custom_app.py:approval_builder": ("custom", ["approval-waiting", "approval-resumed"]),
    "custom_app.py:failing_builder": ("custom", ["parse-fails"]),
    "custom_app.py:types_builder": ("custom", ["many-types"]),
    "custom_app.py:essay_workflow": ("custom", ["functional-essay"]),
    "interrupts_app.py:subgraph_builder": ("interrupts", ["subgraph-waiting", "subgraph-resumed"]),
    "interrupts_app.py:parallel_builder": ("interrupts", ["parallel-waiting", "parallel-resumed"]),
    "interrupts_app.py:steps_builder": ("interrupts", ["breakpoint-before", "breakpoint-after", "breakpoint-resumed"]),
    "flow_app.py:jump_builder": ("flow", ["parent-jump"]),
    "flow_app.py:defer_builder": ("flow", ["deferred", "saved-at-exit"]),
}
"""Every sample graph (TARGET in sample_threads/), and the database and threads it wrote."""

EXACT = {
    **{t: v for t, v in GRAPHS.items() if v[1]},
    "flow_app.py:retry_builder": ("flow", ["retried"]),
    "legacy_app.py:graph": ("legacy", ["legacy-done", "legacy-resumed", "legacy-waiting", "legacy-updated"]),
}
"""The graph of every thread of the sample databases (`--graph`): with it, every recorded
checkpoint is LangGraph's, the UNPROVABLE keys included (LangGraph 0.2's `legacy` history is
held to the current LangGraph's compile of the same app: the channel specs did not change)."""

UNPROVABLE = {
    ("parallel-waiting", "", "answers"): 0,
    ("subgraph-waiting", "", "log"): 0,
    ("subgraph-waiting", "review", "log"): -1,
    ("breakpoint-before", "", "log"): 0,
    ("breakpoint-after", "", "log"): 0,
    ("parent-jump", "inner", "log"): -1,
    # subgraph-waiting again, run by langgraph dev (sample_threads/serve.py)
    ("e9412084-5c6c-5829-8394-6548acca26fe", "", "log"): 0,
    ("e9412084-5c6c-5829-8394-6548acca26fe", "review", "log"): -1,
    # an `Annotated[int, operator.add]` counter, run by LangGraph 0.2 (legacy_app.py)
    ("legacy-done", "", "calls"): 1,
    ("legacy-resumed", "", "calls"): 1,
    ("legacy-waiting", "", "calls"): 1,
    ("legacy-updated", "", "calls"): 1,
    # the run killed mid-step (tests/crash_mid_step.py): its input checkpoint
    ("crashed-mid-step", "", "log"): -1,
}
"""(thread, subgraph node path, key): the last step before the key's first write there. These
histories cannot show that the keys are reducer channels: every write so far equals the value it
left, and no step had two writers. Before its first write LangGraph shows such a key as its
type's empty value (`[]`, `0`), known from the graph's code; statectl, reading the database alone,
leaves it out (README, "Known limits"). Pinned both ways: if statectl starts showing them, the
comparison fails and this list must shrink."""


def knowable(exp: dict[str, Any]) -> dict[str, Any]:
    """LangGraph's record of a checkpoint without the UNPROVABLE keys before their first write."""
    values, step = exp["values"], exp["metadata"].get("step")
    if not isinstance(values, dict):
        return exp
    where = "|".join(part.split(":")[0] for part in exp["checkpoint_ns"].split("|")) if exp["checkpoint_ns"] else ""
    drop = {
        k for k, v in values.items() if (v == [] or v == 0) and step <= UNPROVABLE.get((exp["thread_id"], where, k), -2)
    }
    return {**exp, "values": {k: v for k, v in values.items() if k not in drop}} if drop else exp


def expected(db: str, suffix: str = "") -> list[dict[str, Any]]:
    with (SAMPLES / "expected" / f"{db}{suffix}.jsonl").open() as fh:
        return [json.loads(line) for line in fh]


def normal(value: Any) -> Any:
    """Round-trip through JSON (as the CLI does) and sort set members, whose order is not kept."""
    value = orjson.loads(orjson.dumps(value)) if not isinstance(value, (str, int, float)) else value
    return _sort_sets(value)


def _sort_sets(v: Any) -> Any:
    if isinstance(v, list):
        return [_sort_sets(x) for x in v]
    if isinstance(v, dict):
        if len(v) == 1 and ("$set" in v or "$frozenset" in v):
            ((k, items),) = v.items()
            return {k: sorted((_sort_sets(x) for x in items), key=json.dumps)}
        return {k: _sort_sets(x) for k, x in v.items()}
    return v


def snapshot_json(store, exp: dict[str, Any], keys: frozenset[str] | None = None) -> dict[str, Any]:
    """statectl's snapshot of the checkpoint a recorded one names, as JSON, without
    `subgraph_ns` (statectl's addition, not part of LangGraph's view)."""
    got = store.snapshot(exp["thread_id"], exp["checkpoint_id"], exp["checkpoint_ns"], keys).to_json()
    got.pop("inferred", None)  # (which values statectl inferred: they are compared like the rest)
    for task in got["tasks"]:
        task.pop("subgraph_ns", None)
    return got


def check(store, records: list[dict[str, Any]], exact: bool = False, skip: tuple[str, ...] = ()) -> int:
    """Every recorded checkpoint's snapshot equals LangGraph's (`exact`: the UNPROVABLE keys
    too, for a store given the app's graph; `skip`: fields not compared); returns how many
    were held."""
    assert records, "no recorded snapshots"
    for exp in records:
        got, want = normal(snapshot_json(store, exp)), normal(exp if exact else knowable(exp))
        for field in skip:
            got.pop(field, None), want.pop(field, None)
        assert got == want, (exp["thread_id"], exp["checkpoint_ns"], exp["checkpoint_id"])
    return len(records)


def with_graphs(records: list[dict[str, Any]], db: str) -> list[tuple[Any, list[dict[str, Any]]]]:
    """(the app's graph, its threads' records) for every thread of a sample database: each TARGET
    loaded once per session (`graphspec`, as `--graph` loads it)."""
    from statectl.project.introspect import graph_spec

    out, covered = [], set()
    for target, (where, threads) in EXACT.items():
        if where != db.split(".")[0] or not threads:
            continue
        if target not in _SPECS:
            _SPECS[target] = graph_spec(str(SAMPLES / target))
        out.append((_SPECS[target], [r for r in records if r["thread_id"] in threads]))
        covered.update(threads)
    assert {r["thread_id"] for r in records} <= covered, "a sample thread without its graph"
    return out


_SPECS: dict[str, Any] = {}


def check_keyed(store, records: list[dict[str, Any]]) -> int:
    """Every state key read alone (`show --key`) is LangGraph's value of that key, with the
    whole header (next, tasks, interrupts); returns how many (checkpoint, key) pairs were held."""
    n = 0
    for exp in map(knowable, records):
        if not isinstance(exp["values"], dict):
            continue
        for key, value in exp["values"].items():
            got = snapshot_json(store, exp, frozenset({key}))
            assert normal(got) == normal({**exp, "values": {key: value}}), (
                exp["thread_id"],
                exp["checkpoint_ns"],
                exp["checkpoint_id"],
                key,
            )
            n += 1
    return n
