"""Frozen dataclasses for what statectl reads, named in LangGraph's vocabulary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
"""Task id of writes that belong to no task (`Command(update/goto/resume)` input)."""
CONTROL = frozenset({"__error__", "__error_source_node__", "__interrupt__", "__resume__"})
"""Channels LangGraph writes to steer a run (errors, interrupts, resume values), never state."""


def is_state_key(channel: str) -> bool:
    """Channels that are state (not LangGraph's internal bookkeeping). Before LangGraph 0.3 the
    bookkeeping channels were `start:NODE` and `branch:SRC:COND:DST`; a ThreadView also knows
    that layout's node channels (`ThreadView.is_state`)."""
    return not (channel.startswith(("branch:", "join:", "start:", "__")) or channel == "")


def wanted(channel: str, keys: frozenset[str] | None) -> bool:
    """Is `channel` read when only the state `keys` are (None: all)? Bookkeeping channels
    always are: `next` and the tasks are computed from them."""
    return keys is None or channel in keys or not is_state_key(channel)


@dataclass(frozen=True, slots=True)
class ThreadSummary:
    """One thread, computed from SQL and metadata alone (no blob is decoded)."""

    thread_id: str
    checkpoints: int | None
    """Checkpoints of the thread, all namespaces (None: a server, which would have to send
    every thread's whole history to count them)."""
    namespaces: int | None
    """Distinct `checkpoint_ns` values ('' for the root graph counts as one); None as above."""
    latest_checkpoint_id: str
    """Newest root-namespace checkpoint (id order = creation order)."""
    updated_at: str | None
    """`ts` of the newest root checkpoint, when the source stores it outside the blob."""
    step: int | None
    """`metadata.step` of the newest root checkpoint."""
    status: str
    """done / interrupted / error / pending, from the newest root checkpoint's writes."""
    server_status: str | None = None
    """The LangGraph server's own status of the thread (idle / busy / interrupted / error), for
    sources that keep the server's records (`langgraph dev` folders, servers)."""
    graph_id: str | None = None
    """The graph the server ran the thread with, where it recorded one."""
    metadata: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    """The newest root checkpoint's metadata (a server: the thread's and its state's), where
    `--meta KEY=VALUE` looks (LangGraph copies the run's configurable values and metadata there)."""

    def to_json(self) -> dict[str, Any]:
        out = {
            "thread_id": self.thread_id,
            "checkpoints": self.checkpoints,
            "namespaces": self.namespaces,
            "latest_checkpoint_id": self.latest_checkpoint_id,
            "updated_at": self.updated_at,
            "status": self.status,
        }
        if self.server_status is not None or self.graph_id is not None:
            out.update(server_status=self.server_status, graph_id=self.graph_id)
        return out


class ThreadPage(list):
    """A page of `ThreadSummary`s: `total` threads in the store (None when counting them would
    need a full scan), `more` when threads follow the page (pass the last thread id as `after`)."""

    total: int | None = None
    more: bool = False


class _Metadata:
    """`step` and `source` as a checkpoint's metadata gives them (a row's, a snapshot's)."""

    __slots__ = ()
    metadata: dict[str, Any]

    @property
    def step(self) -> int | None:
        step = self.metadata.get("step")
        return step if isinstance(step, int) else None

    @property
    def source(self) -> str | None:
        source = self.metadata.get("source")
        return source if isinstance(source, str) else None  # (malformed metadata: not a name)


@dataclass(frozen=True, slots=True)
class CheckpointRecord(_Metadata):
    """A checkpoint row without its (possibly large) value blob."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    metadata: dict[str, Any]
    """Checkpoint metadata: `source` (input/loop/update/fork), `step`, `parents`, ..."""


_METADATA = CheckpointRecord.__dict__["metadata"]  # (the slot under the property below)


class LazyCheckpointRecord(CheckpointRecord):
    """A `CheckpointRecord` whose metadata is read when first asked for, with its neighbours'
    (`pages.load`): SQLite keeps the metadata after the checkpoint blob, so listing a long thread
    with it reads every blob's pages, while its ids and parents sit at the start of each row."""

    __slots__ = ("_pages",)
    _pages: Any

    @classmethod
    def later(cls, thread_id: str, ns: str, cid: str, parent: str | None, pages: Any) -> LazyCheckpointRecord:
        rec = object.__new__(cls)
        fields = (
            ("thread_id", thread_id),
            ("checkpoint_ns", ns),
            ("checkpoint_id", cid),
            ("parent_checkpoint_id", parent),
        )
        for name, value in fields:
            CheckpointRecord.__dict__[name].__set__(rec, value)
        object.__setattr__(rec, "_pages", pages)
        return rec

    @property
    def metadata(self) -> dict[str, Any]:
        try:
            return _METADATA.__get__(self)
        except AttributeError:
            self._pages.load(self)
            return _METADATA.__get__(self)

    @metadata.setter
    def metadata(self, value: dict[str, Any]) -> None:
        _METADATA.__set__(self, value)

    @property
    def loaded(self) -> bool:
        try:
            _METADATA.__get__(self)
        except AttributeError:
            return False
        return True


@dataclass(frozen=True, slots=True)
class WriteRecord:
    """A pending write: output of task `task_id` that ran from checkpoint `checkpoint_id`."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    type: str | None
    blob: bytes | None = field(repr=False)
    checkpoint_id: str = ""
    """The checkpoint the write is pending on (the task ran from it)."""

    @property
    def sort_key(self) -> tuple[str, str, int]:
        """LangGraph's replay order: (task_path, task_id, idx)."""
        return (self.task_path, self.task_id, self.idx)


@dataclass(frozen=True, slots=True)
class Interrupt:
    """An `interrupt()` raised by a task: its id and the value it asked with."""

    id: str | None
    value: Any

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "value": self.value}


@dataclass(frozen=True, slots=True)
class Task:
    """A task of a step, as `StateSnapshot.tasks` reports it."""

    id: str
    name: str
    path: tuple[Any, ...]
    error: Any = None
    """The raw `__error__` value: LangGraph stores `repr(exception)`, a string."""
    interrupts: tuple[Interrupt, ...] = ()
    result: Any = None
    """Writes of a finished task to state keys (`{key: value}`), else None."""
    finished: bool = False
    subgraph_ns: str | None = None
    """`checkpoint_ns` of the subgraph run by this task, when the database holds one."""

    def to_json(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "name": self.name,
            "path": list(self.path),
            "error": self.error,
            "interrupts": [i.to_json() for i in self.interrupts],
            "result": self.result,
        }
        if self.subgraph_ns:
            out["subgraph_ns"] = self.subgraph_ns
        return out


@dataclass(frozen=True, slots=True)
class Snapshot(_Metadata):
    """The state at one checkpoint, as LangGraph's `get_state_history` reports it."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    created_at: str | None
    metadata: dict[str, Any]
    values: Any
    """State keys -> values (a dict; for the functional API, the return value)."""
    next: tuple[str, ...]
    tasks: tuple[Task, ...]
    interrupts: tuple[Interrupt, ...]
    notes: tuple[str, ...] = ()
    """Caveats about this reconstruction (e.g. a delta channel rebuilt without a seed)."""
    inferred: tuple[str, ...] = ()
    """State keys whose value statectl inferred, not read: a reducer channel before its first
    write, shown as its type's empty value because later writes prove it is a reducer."""

    @property
    def errors(self) -> tuple[Task, ...]:
        return tuple(t for t in self.tasks if t.error is not None)

    def to_json(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "checkpoint_ns": self.checkpoint_ns,
            "checkpoint_id": self.checkpoint_id,
            "parent_checkpoint_id": self.parent_checkpoint_id,
            "created_at": self.created_at,
            "metadata": self.metadata,
            "values": self.values,
            "next": list(self.next),
            "tasks": [t.to_json() for t in self.tasks],
            "interrupts": [i.to_json() for i in self.interrupts],
            **({"notes": list(self.notes)} if self.notes else {}),  # what could not be read
            **({"inferred": list(self.inferred)} if self.inferred else {}),  # values not read but inferred
        }


_SIZES = ("Part", "ThreadSize", "ChannelSize", "StoreSize", "ThreadChannels")


def __getattr__(name: str) -> Any:
    """The sizes `statectl size` reports, in `statectl.sizes` (imported by the commands that use
    them: every other command is spared their classes)."""
    if name in _SIZES:
        from statectl import sizes

        return getattr(sizes, name)
    raise AttributeError(f"module 'statectl.model' has no attribute {name!r}")
