"""Frozen dataclasses for what statectl reads, named in LangGraph's vocabulary, and `record`:
how statectl makes a frozen dataclass without compiling its methods at every start."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError, dataclass, field
from operator import attrgetter
from reprlib import recursive_repr
from typing import Any, ClassVar, TypeVar, dataclass_transform

NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
"""Task id of writes that belong to no task (`Command(update/goto/resume)` input)."""
CONTROL = frozenset({"__error__", "__error_source_node__", "__interrupt__", "__resume__"})
"""Channels LangGraph writes to steer a run (errors, interrupts, resume values), never state."""

_set = object.__setattr__


class Record:
    """What `@dataclass(frozen=True, slots=True)` compiles for each class (equality and hash on
    the compared fields, repr of the shown ones, no assignment, pickling), written once for every
    class made with `record`: compiling those methods class by class cost ~1 ms a class at every
    start (issue 55). A class whose instances are many (one per row read) writes its own
    `__init__`; the others take this one, which binds arguments as the generated one would."""

    __slots__ = ()
    _names: ClassVar[tuple[str, ...]]
    _defaults: ClassVar[dict[str, Any]]
    _compared: ClassVar[Callable[..., tuple[Any, ...]]]
    _shown: ClassVar[tuple[str, ...]]

    def __init__(self, *args: object, **kwargs: object) -> None:
        names, defaults = self._names, self._defaults
        if len(args) > len(names):
            raise TypeError(f"{type(self).__qualname__}() takes {len(names)} arguments but {len(args)} were given")
        for name, value in zip(names, args, strict=False):
            if name in kwargs:
                raise TypeError(f"{type(self).__qualname__}() got multiple values for argument {name!r}")
            _set(self, name, value)
        for name in names[len(args) :]:
            if name in kwargs:
                _set(self, name, kwargs.pop(name))
            elif name in defaults:
                _set(self, name, defaults[name])
            else:
                raise TypeError(f"{type(self).__qualname__}() missing required argument: {name!r}")
        if kwargs:
            raise TypeError(f"{type(self).__qualname__}() got an unexpected keyword argument {next(iter(kwargs))!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._compared(self) == self._compared(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._compared(self))

    @recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown)
        return f"{self.__class__.__qualname__}({shown})"

    def __setattr__(self, name: str, value: object) -> None:
        if "_names" in type(self).__dict__ or name in self._names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        _set(self, name, value)

    def __delattr__(self, name: str) -> None:
        if "_names" in type(self).__dict__ or name in self._names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)

    def __getstate__(self) -> list[object]:
        return [getattr(self, name) for name in self._names]

    def __setstate__(self, state: list[object]) -> None:
        for name, value in zip(self._names, state, strict=False):
            _set(self, name, value)


_R = TypeVar("_R", bound=type[Record])


class _Described:
    """A record's `__dataclass_fields__` and `__dataclass_params__`, made the first time they are
    asked for (`dataclasses.fields`, `replace`, `asdict`, `is_dataclass`) by `@dataclass(frozen=True,
    slots=True)` itself, on a class of the same fields: what it would have given the record."""

    def __init__(self, name: str, annotations: dict[str, Any], values: dict[str, Any]) -> None:
        self.name, self.annotations, self.values = name, annotations, values
        self.cls: type = object

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        body = {"__annotations__": self.annotations, "__module__": self.cls.__module__, **self.values}
        made: Any = dataclass(frozen=True, slots=True)(type(self.cls.__name__, (), body))
        made.__qualname__ = self.cls.__qualname__
        for name in ("__dataclass_fields__", "__dataclass_params__"):
            setattr(self.cls, name, getattr(made, name))  # (asked once)
        return getattr(made, self.name)


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: _R) -> _R:
    """`cls` (a `Record`) made a frozen dataclass with slots, as `@dataclass(frozen=True,
    slots=True)` makes one (its slots and `__match_args__`, and its fields for `dataclasses.fields`,
    `replace` and `asdict`, described when first asked for; mypy checks it as one), at the cost of
    making a class: no method compiled (`Record` holds them), no field examined until asked."""
    own = dict(cls.__dict__)
    annotations: dict[str, Any] = own.get("__annotations__", {})
    values: dict[str, Any] = {}
    names: list[str] = []
    defaults: dict[str, Any] = {}
    compared: list[str] = []
    shown: list[str] = []
    for name, kind in annotations.items():
        if isinstance(kind, str) and kind.startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = own.pop(name, MISSING)
        if value is not MISSING:
            values[name] = value
        spec = value if isinstance(value, Field) else None
        default = value if spec is None else spec.default
        if spec is not None and spec.default_factory is not MISSING:
            raise TypeError(f"{cls.__name__}.{name}: a record's defaults are values (no default_factory)")
        if default is not MISSING:
            defaults[name] = default
        elif defaults:
            raise TypeError(f"{cls.__name__}: non-default argument {name!r} follows default argument")
        names.append(name)
        if spec is None or spec.compare:
            compared.append(name)
        if spec is None or spec.repr:
            shown.append(name)
    if any("_names" in vars(base) for base in cls.__mro__[1:]):
        raise TypeError(f"{cls.__name__}: a record does not extend another record's fields")
    for name in ("__dict__", "__weakref__"):
        own.pop(name, None)
    fields, params = (_Described(n, annotations, values) for n in ("__dataclass_fields__", "__dataclass_params__"))
    get = attrgetter(*compared) if compared else None
    own.update(
        __slots__=tuple(names),
        __match_args__=tuple(names),
        __dataclass_fields__=fields,
        __dataclass_params__=params,
        _names=tuple(names),
        _defaults=defaults,
        _compared=(lambda o: ()) if get is None else (lambda o: (get(o),)) if len(compared) == 1 else get,
        _shown=tuple(shown),
    )
    meta: Any = type(cls)
    made: Any = meta(cls.__name__, cls.__bases__, own)
    made.__qualname__ = cls.__qualname__
    fields.cls = params.cls = made
    if "__init__" not in own:  # (`Record.__init__` takes *args: say what it binds, as help() shows it)
        from inspect import Parameter, Signature

        made.__signature__ = Signature(
            [
                Parameter(
                    name,
                    Parameter.POSITIONAL_OR_KEYWORD,
                    default=defaults.get(name, Parameter.empty),
                    annotation=annotations[name],
                )
                for name in names
            ],
            return_annotation=None,
        )
    return made


def is_state_key(channel: str) -> bool:
    """Channels that are state (not LangGraph's internal bookkeeping). Before LangGraph 0.3 the
    bookkeeping channels were `start:NODE` and `branch:SRC:COND:DST`; a ThreadView also knows
    that layout's node channels (`ThreadView.is_state`)."""
    return not (channel.startswith(("branch:", "join:", "start:", "__")) or channel == "")


def wanted(channel: str, keys: frozenset[str] | None) -> bool:
    """Is `channel` read when only the state `keys` are (None: all)? Bookkeeping channels
    always are: `next` and the tasks are computed from them."""
    return keys is None or channel in keys or not is_state_key(channel)


@record
class ThreadSummary(Record):
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

    def __init__(
        self,
        thread_id: str,
        checkpoints: int | None,
        namespaces: int | None,
        latest_checkpoint_id: str,
        updated_at: str | None,
        step: int | None,
        status: str,
        server_status: str | None = None,
        graph_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        _set(self, "thread_id", thread_id)
        _set(self, "checkpoints", checkpoints)
        _set(self, "namespaces", namespaces)
        _set(self, "latest_checkpoint_id", latest_checkpoint_id)
        _set(self, "updated_at", updated_at)
        _set(self, "step", step)
        _set(self, "status", status)
        _set(self, "server_status", server_status)
        _set(self, "graph_id", graph_id)
        _set(self, "metadata", metadata)

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


@record
class CheckpointRecord(Record, _Metadata):
    """A checkpoint row without its (possibly large) value blob."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    metadata: dict[str, Any]
    """Checkpoint metadata: `source` (input/loop/update/fork), `step`, `parents`, ..."""

    def __init__(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        parent_checkpoint_id: str | None,
        metadata: dict[str, Any],
    ) -> None:
        _set(self, "thread_id", thread_id)
        _set(self, "checkpoint_ns", checkpoint_ns)
        _set(self, "checkpoint_id", checkpoint_id)
        _set(self, "parent_checkpoint_id", parent_checkpoint_id)
        _set(self, "metadata", metadata)


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


@record
class WriteRecord(Record):
    """A pending write: output of task `task_id` that ran from checkpoint `checkpoint_id`."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    type: str | None
    blob: bytes | None = field(repr=False)
    checkpoint_id: str = ""
    """The checkpoint the write is pending on (the task ran from it)."""

    def __init__(
        self,
        task_id: str,
        task_path: str,
        idx: int,
        channel: str,
        type: str | None,  # noqa: A002 - the field's name, as the dataclass named it
        blob: bytes | None,
        checkpoint_id: str = "",
    ) -> None:
        _set(self, "task_id", task_id)
        _set(self, "task_path", task_path)
        _set(self, "idx", idx)
        _set(self, "channel", channel)
        _set(self, "type", type)
        _set(self, "blob", blob)
        _set(self, "checkpoint_id", checkpoint_id)

    @property
    def sort_key(self) -> tuple[str, str, int]:
        """LangGraph's replay order: (task_path, task_id, idx)."""
        return (self.task_path, self.task_id, self.idx)


@record
class Interrupt(Record):
    """An `interrupt()` raised by a task: its id and the value it asked with."""

    id: str | None
    value: Any

    def __init__(self, id: str | None, value: object) -> None:  # noqa: A002 - the field's name
        _set(self, "id", id)
        _set(self, "value", value)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "value": self.value}


@record
class Task(Record):
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

    def __init__(
        self,
        id: str,  # noqa: A002 - the field's name
        name: str,
        path: tuple[Any, ...],
        error: object = None,
        interrupts: tuple[Interrupt, ...] = (),
        result: object = None,
        finished: bool = False,
        subgraph_ns: str | None = None,
    ) -> None:
        _set(self, "id", id)
        _set(self, "name", name)
        _set(self, "path", path)
        _set(self, "error", error)
        _set(self, "interrupts", interrupts)
        _set(self, "result", result)
        _set(self, "finished", finished)
        _set(self, "subgraph_ns", subgraph_ns)

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


@record
class Snapshot(Record, _Metadata):
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

    def __init__(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        parent_checkpoint_id: str | None,
        created_at: str | None,
        metadata: dict[str, Any],
        values: object,
        next: tuple[str, ...],  # noqa: A002 - the field's name
        tasks: tuple[Task, ...],
        interrupts: tuple[Interrupt, ...],
        notes: tuple[str, ...] = (),
        inferred: tuple[str, ...] = (),
    ) -> None:
        _set(self, "thread_id", thread_id)
        _set(self, "checkpoint_ns", checkpoint_ns)
        _set(self, "checkpoint_id", checkpoint_id)
        _set(self, "parent_checkpoint_id", parent_checkpoint_id)
        _set(self, "created_at", created_at)
        _set(self, "metadata", metadata)
        _set(self, "values", values)
        _set(self, "next", next)
        _set(self, "tasks", tasks)
        _set(self, "interrupts", interrupts)
        _set(self, "notes", notes)
        _set(self, "inferred", inferred)

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
