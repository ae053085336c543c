"""What a re-run would do, from the data alone (`replay --dry-run`): which tasks run first, which
saved results LangGraph hands back instead, which interrupt is answered, where the branch starts.

LangGraph (1.x) re-runs every task of an addressed checkpoint when it time-travels (input None),
re-firing their interrupts; a `Command(resume=...)` at the thread's newest checkpoint hands the
finished tasks' saved writes back and re-runs only the ones that did not finish (those waiting
at an interrupt get the answer); at an older checkpoint a resume re-runs them all. A subgraph
checkpoint is re-run through its parent graph's task (langgraph#8458).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from statectl.core.state import ThreadView
from statectl.core.text import summary
from statectl.errors import StatectlError
from statectl.model import CheckpointRecord, Interrupt


@dataclass(frozen=True)
class PlannedTask:
    name: str
    id: str
    path: tuple[Any, ...]
    reused: bool = False
    """Its saved result is handed back: it does not run again."""
    interrupts: tuple[Interrupt, ...] = ()
    """The interrupts it waits at (answered by --resume, else raised again)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "id": self.id,
            "path": list(self.path),
            "runs": not self.reused,
            "interrupts": [i.to_json() for i in self.interrupts],
        }


@dataclass(frozen=True)
class Plan:
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    """The checkpoint asked for."""
    start_ns: str
    start_checkpoint_id: str
    """The checkpoint LangGraph runs from: the new branch's first checkpoint is its child."""
    resuming: bool
    newest: bool
    until: tuple[str, ...]
    tasks: tuple[PlannedTask, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def runs(self) -> list[PlannedTask]:
        return [t for t in self.tasks if not t.reused]

    def to_json(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "checkpoint_ns": self.checkpoint_ns,
            "checkpoint_id": self.checkpoint_id,
            "start": {"checkpoint_ns": self.start_ns, "checkpoint_id": self.start_checkpoint_id},
            "resuming": self.resuming,
            "newest": self.newest,
            "until": list(self.until),
            "tasks": [t.to_json() for t in self.tasks],
            "notes": list(self.notes),
        }


UNSEEN_NODE = "no checkpoint of this thread names a node"
"""A plan's note on an --until node the history never shows (replay, with the graph loaded, knows better)."""


def plan(
    view: ThreadView, rec: CheckpointRecord, resuming: bool, until: list[str], root: ThreadView | None = None
) -> Plan:
    """The plan of `replay` from `rec` (`root`: the thread's root view, for a subgraph checkpoint)."""
    notes: list[str] = []
    asked_ns, asked_id = view.checkpoint_ns, rec.checkpoint_id
    if view.checkpoint_ns:
        parents = rec.metadata.get("parents") if isinstance(rec.metadata.get("parents"), dict) else {}
        parent_id = parents.get("") if parents else None
        if root is None or parent_id is None or parent_id not in root.by_id:
            raise StatectlError(
                f"checkpoint {rec.checkpoint_id} is in subgraph {view.checkpoint_ns!r}, and its "
                "parent graph's checkpoint is not in the store",
                "replay from a checkpoint of the root graph (statectl log THREAD)",
            )
        node = view.checkpoint_ns.split("|")[0].split(":")[0]
        notes.append(
            f"LangGraph re-runs a subgraph through its parent graph: the run starts from root "
            f"checkpoint {parent_id}, where task {node} re-runs the subgraph whole, not from "
            f"step {rec.step} of {view.checkpoint_ns} (langgraph#8458)"
        )
        view, rec = root, root.record(parent_id)
    snap = view.snapshot(rec.checkpoint_id)
    newest = rec.checkpoint_id == view.records[0].checkpoint_id
    waiting = [i for t in snap.tasks for i in t.interrupts]
    if resuming and not waiting:
        raise StatectlError(
            f"--resume: no interrupt waits at checkpoint {rec.checkpoint_id}", "replay without --resume re-runs from it"
        )
    tasks = []
    for t in snap.tasks:
        reused = resuming and newest and t.result is not None and not t.interrupts and t.error is None
        tasks.append(PlannedTask(t.name, t.id, t.path, reused, t.interrupts))
    if not tasks:
        notes.append("nothing runs: no task is due at this checkpoint (the thread ended here)")
    elif not resuming and waiting:
        notes.append("its interrupts are raised again (give --resume JSON to answer them)")
    for t in snap.errors:  # (why the user is replaying from here)
        notes.append(f"{t.name} failed here last time: {summary(t.error, 200)}")
    if resuming and not newest:
        notes.append("a resume at a checkpoint the thread has moved past re-runs every task of it")
    known = _nodes_named(view, rec) | {t.name for t in tasks} if until else set()
    for node in until:
        if node not in known:
            notes.append(
                f"{UNSEEN_NODE} {node!r}: if your graph has none, "
                "LangGraph runs past it (replay checks it against --graph before it runs)"
            )
    return Plan(
        view.thread_id,
        asked_ns,
        asked_id,
        view.checkpoint_ns,
        rec.checkpoint_id,
        resuming,
        newest,
        tuple(until),
        tuple(tasks),
        tuple(notes),
    )


def _nodes_named(view: ThreadView, rec: CheckpointRecord) -> set[str]:
    """The nodes the thread's newest checkpoint and `rec` name: those that ran (`versions_seen`)
    and those a channel routes to (`branch:to:NODE`)."""
    names: set[str] = set()
    for cid in {view.records[0].checkpoint_id, rec.checkpoint_id}:
        ck = view.checkpoint(cid)
        seen = ck.get("versions_seen")
        names.update(n for n in (seen if isinstance(seen, dict) else {}) if isinstance(n, str))
        versions = ck.get("channel_versions")
        names.update(
            c.removeprefix("branch:to:")
            for c in (versions if isinstance(versions, dict) else {})
            if isinstance(c, str) and c.startswith("branch:to:")
        )
    return names
