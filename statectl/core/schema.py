"""The merged state schema of a graph: one row per field, with its channel, reducer, visibility
and who declared it (for `create_agent`: each middleware, in the order create_agent merges them).

The model (`Field`, `Schema`) and what works from history alone (`infer`, `drift`,
`check_thread`); reading a loaded graph's schema is `statectl.project.schema`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from statectl.core.state import ThreadView


@dataclass
class Field:
    """One state field, as `statectl schema --json` reports it."""

    name: str
    type: str
    channel: str
    reducer: str | None
    required: bool
    input: bool
    output: bool
    private: list[str] = field(default_factory=list)
    """OmitFromInput / OmitFromOutput / PrivateStateAttr, or `node schema` for a private channel."""
    declared_by: list[str] = field(default_factory=list)
    winner: str | None = None
    """Where declarers' annotations conflict: whose annotation create_agent kept (the last)."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Schema:
    fields: list[Field]
    kind: str
    """create_agent / StateGraph / functional (an @entrypoint Pregel)."""
    sources: list[str]
    """Middlewares then the base state (create_agent), or the state/input/output classes."""
    notes: list[str] = field(default_factory=list)
    order_open: list[str] = field(default_factory=list)
    """Middlewares whose place in `sources` the compiled graph does not pin down."""
    nodes: list[str] = field(default_factory=list)
    """The graph's nodes (what a checkpoint's `next` can name)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "sources": self.sources,
            "order_open": self.order_open,
            "notes": self.notes,
            "fields": [f.to_json() for f in self.fields],
            "nodes": self.nodes,
        }


@dataclass
class Observed:
    """A state key as seen in a thread's checkpoints."""

    name: str
    types: list[str]
    first_step: int | None
    last_changed_step: int | None
    accumulates: bool
    """Each change kept what was there: a list that was only appended to, a dict that only
    gained or updated keys (what a reducer does). A number that rose is not counted: a plain
    counter (`n + 1`, no reducer) rises too."""
    checkpoints: int
    """Checkpoints where the key has a value."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def observed_type(value: Any) -> str:
    """The kind of a decoded value: str, int, list[message], dict, Todo (a pydantic model's
    class name), None, ..."""
    from statectl.core.reducers import is_message

    if value is None:
        return "None"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float, str)):
        return type(value).__name__
    if isinstance(value, list):
        inner = sorted({("message" if is_message(v) else observed_type(v)) for v in value})
        return f"list[{' | '.join(inner)}]" if inner else "list"
    if isinstance(value, dict):
        if len(value) == 1 and next(iter(value)).startswith("$"):
            return next(iter(value))[1:]
        if "$type" in value:
            return str(value["$type"]).rsplit(".", 1)[-1]
        return "dict"
    return type(value).__name__


def infer(view: ThreadView) -> list[Observed]:
    """Keys, observed types, first/last change and accumulation, oldest step first."""
    records = list(reversed(view.records))
    info: dict[str, dict[str, Any]] = {}
    previous: dict[str, Any] = {}
    for rec in records:
        values = view.snapshot(rec.checkpoint_id).values
        if not isinstance(values, dict):
            values = {"(return value)": values}
        for key, value in values.items():
            slot = info.setdefault(
                key, {"types": [], "first": rec.step, "last": rec.step, "grows": True, "changes": 0, "count": 0}
            )
            slot["count"] += 1
            t = observed_type(value)
            if t not in slot["types"]:
                slot["types"].append(t)
            if key in previous and previous[key] != value:
                slot["last"] = rec.step
                slot["changes"] += 1
                slot["grows"] = slot["grows"] and _kept(previous[key], value)
        previous = values
    return [
        Observed(k, s["types"], s["first"], s["last"], s["grows"] and s["changes"] > 0, s["count"])
        for k, s in info.items()
    ]


def _kept(before: Any, after: Any) -> bool:
    if isinstance(before, list) and isinstance(after, list):
        return len(after) >= len(before) and after[: len(before)] == before
    if isinstance(before, dict) and isinstance(after, dict):
        return set(before) <= set(after)
    return False


@dataclass
class ThreadCheck:
    """What would break if a thread met a new schema (`schema TARGET --all-threads`)."""

    thread_id: str
    status: str
    problems: list[dict[str, Any]]

    @property
    def waiting(self) -> bool:
        """Will the thread run again from this checkpoint (an interrupt, a breakpoint, an error
        to retry, a step not finished)?"""
        return self.status != "done"

    def to_json(self) -> dict[str, Any]:
        return {"thread_id": self.thread_id, "status": self.status, "waiting": self.waiting, "problems": self.problems}


def check_thread(s: Schema, view: ThreadView, status: str) -> ThreadCheck:
    """A thread's newest root checkpoint (where a waiting thread resumes) against schema `s`:
    state keys the schema lacks, values whose type cannot be the declared one, keys the data
    proves a reducer's that the schema makes a plain value, nodes in `next` the graph lacks."""
    snap = view.snapshot(view.records[0].checkpoint_id)
    fields = {f.name: f for f in s.fields}
    problems: list[dict[str, Any]] = []
    values = snap.values if isinstance(snap.values, dict) and "$undecoded" not in snap.values else {}
    if s.kind != "functional":
        for key, value in values.items():
            f = fields.get(key)
            if f is None:
                problems.append({"problem": "unknown_key", "key": key})
                continue
            t = observed_type(value)
            if key not in snap.inferred and not _fits(f.type, t):
                problems.append({"problem": "type", "key": key, "declared": f.type, "observed": t})
            if f.channel == "last value" and view.proven_reducer(key):
                problems.append({"problem": "reducer_removed", "key": key, "declared": f.channel})
    if s.nodes:
        problems += [{"problem": "missing_node", "node": n} for n in dict.fromkeys(snap.next) if n not in s.nodes]
    return ThreadCheck(view.thread_id, status, problems)


@dataclass
class Drift:
    """Where a thread's data and the schema disagree."""

    unknown_keys: list[str]
    """Keys in the thread's checkpoints that the schema does not have."""
    never_written: list[str]
    """Schema fields no checkpoint of the thread holds."""
    type_mismatches: list[dict[str, Any]]
    """{field, declared, observed} where an observed value cannot be of the declared type."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def drift(s: Schema, observed: list[Observed]) -> Drift:
    names = {f.name for f in s.fields}
    seen = {o.name: o for o in observed}
    mismatches = []
    for f in s.fields:
        o = seen.get(f.name)
        if o is None:
            continue
        bad = [t for t in o.types if not _fits(f.type, t)]
        if bad:
            mismatches.append({"field": f.name, "declared": f.type, "observed": bad})
    return Drift(
        sorted(seen.keys() - names - {"(return value)"}),
        [f.name for f in s.fields if f.name not in seen and f.channel not in ("ephemeral", "untracked")],
        mismatches,
    )


_BASIC = {
    "str": "str",
    "int": "int",
    "float": "float",
    "bool": "bool",
    "None": "None",
    "dict": "dict",
    "list": "list",
    "set": "set",
    "bytes": "bytes",
}


def value_fits(declared: str, value: Any) -> bool:
    """Can `value` (decoded, or as `fork --set` gives it) be of the declared type? As
    `check_thread` judges a thread: only clear conflicts count."""
    return _fits(declared, observed_type(value))


def _fits(declared: str, observed: str) -> bool:
    """Can a value observed as `observed` be of the declared type? Only clear conflicts count."""
    alternatives = [a.strip() for a in _split_union(declared)]
    for a in alternatives:
        head = a.split("[", 1)[0]
        if head in ("Any", "?", "object") or len(head) == 1 or head.startswith("~"):
            return True
        if head not in _BASIC and head not in ("list", "dict", "Literal", "AnyMessage", "Sequence", "Mapping"):
            return True  # a class (TypedDict, pydantic model, enum...): not judged from the data
        if head == "Literal":
            if observed in ("str", "int", "bool"):
                return True
            continue
        if head in ("list", "Sequence") and observed.startswith("list"):
            return True
        if head in ("dict", "Mapping") and (observed == "dict" or observed[:1].isupper()):
            return True
        if head == observed or (head == "float" and observed == "int"):
            return True
    return False


def _split_union(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "|" and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [*out, cur]
