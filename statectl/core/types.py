"""`doctor --types`: every type the stored values name, how many values and threads name it, and
what LangGraph's strict mode (`LANGGRAPH_STRICT_MSGPACK=true`) does with it.

Read from the bytes alone (`codec.classes.named_values`): nothing is decoded with LangGraph's
serializer, unpickled or imported. A value is what LangGraph reads as one: a checkpoint's channel
value (a Postgres checkpoint names its blob rows; each checkpoint that holds a value counts it),
or a pending write. Each type gets a verdict against the safe set of the LangGraph installed in
the project's interpreter (`project.classes`, read from LangGraph's source there):

- `safe`: in LangGraph's SAFE_MSGPACK_TYPES: loads in strict mode as it is;
- `allow`: a msgpack ext 0/1/2/4/5 type outside it: strict mode returns its raw data instead
  (a dict, a list) unless `allowed_msgpack_modules` lists it — the allowlist statectl prints;
- `missing`: such a type the project's interpreter no longer has (module or class gone): it loads
  as raw data in every mode; not listed (restore it, or `statectl migrate --rename-class`);
- `not-a-class`: such a name the project defines as a function: loading calls it; never listed;
- `runs-code`: a callable that runs code (`codec.classes.runs_code`): never listed, blocked is right;
- `bad-name`: not a dotted Python name (hostile or damaged data): nothing can load it, never listed;
- `json`: a LangChain `lc` constructor of the app's own class in a JSON row: strict msgpack does
  not govern it; it loads as a dict in every mode unless `allowed_json_modules` lists its id;
- `langchain`: an `lc` id of LangChain's own, revived by LangChain's mapping;
- `pickle`: a class inside a `pickle_fallback` value: loaded only with `pickle_fallback=True`;
- `js`: named by LangGraph.js rows: LangGraph.js revives its own records; Python's allowlists do
  not apply.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from statectl.errors import StatectlError

if TYPE_CHECKING:
    from statectl.core.reader import StoreReader

THREADS_SHOWN = 20
"""Threads named per type (whole ids; the count says how many in all)."""
MAX_TYPES = 10_000
"""Distinct types held; values naming others are counted, not listed (a hostile store can name
millions)."""
NAME_CHARS = 300
"""A longer module or class name is kept cut (with `…`): no Python name is so long (`bad-name`)."""
SAFE, ALLOW, RUNS_CODE, BAD_NAME = "safe", "allow", "runs-code", "bad-name"
MISSING, NOT_A_CLASS = "missing", "not-a-class"
JSON, LANGCHAIN, PICKLE, JS = "json", "langchain", "pickle", "js"
VERDICTS = (ALLOW, MISSING, JSON, PICKLE, RUNS_CODE, NOT_A_CLASS, BAD_NAME, SAFE, LANGCHAIN, JS)
"""In the order the view lists them: what needs the user first."""


@dataclass
class StoredType:
    module: str
    name: str
    how: set[str] = field(default_factory=set)
    """How the values name it (`codec.classes`: msgpack-ctor, msgpack-pydantic, json-lc, pickle; js-lc)."""
    values: int = 0
    threads: int = 0
    thread_ids: list[str] = field(default_factory=list)
    """The first THREADS_SHOWN threads that name it, whole."""
    verdict: str = ""

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "name": self.name,
            "how": sorted(self.how),
            "verdict": self.verdict,
            "values": self.values,
            "threads": self.threads,
            "thread_ids": self.thread_ids,
        }


@dataclass
class TypesReport:
    label: str
    kind: str
    types: list[StoredType] = field(default_factory=list)
    threads: int = 0
    checkpoints: int = 0
    values: int = 0
    js_threads: int = 0
    unreadable: int = 0
    """Rows that did not parse (`doctor` names them)."""
    encrypted: int = 0
    """Values stored encrypted (`msgpack+aes`): their types cannot be read without the key."""
    as_stored: bool = True
    """The source reads values as the store holds them (`Source.as_stored`; False: a server's
    JSON, whose types are not listed)."""
    server_records: int = 0
    """langgraph dev threads with no checkpoint saved, only the server's record of their values
    (read as plain data: the types are not in it)."""
    left_out: int = 0
    """Values naming a type beyond the first MAX_TYPES."""
    safe_from: str = ""
    """Where the safe set comes from: the project's interpreter, or statectl's copy of it."""
    notes: list[str] = field(default_factory=list)

    def of(self, verdict: str) -> list[StoredType]:
        return [t for t in self.types if t.verdict == verdict]

    def allowed_msgpack_modules(self) -> list[tuple[str, str]]:
        """What strict mode needs listed to load every thread: (module, name) pairs, as
        LangGraph's `_check_allowed` looks them up."""
        return [(t.module, t.name) for t in self.of(ALLOW)]

    def allowed_json_modules(self) -> list[tuple[str, ...]]:
        """The `lc` ids of the app's own classes, as exact tuples (LangGraph has no prefixes)."""
        return [(*t.module.split("."), t.name) for t in self.of(JSON)]

    def needs_pickle(self) -> bool:
        return any("pickle" in t.how for t in self.types if t.verdict != RUNS_CODE)

    def serializer_line(self) -> str:
        """The `JsonPlusSerializer(...)` that loads every thread in strict mode as LangGraph's
        default loads it today (`lc` records of the app's classes: dicts in both; listing them in
        allowed_json_modules would change what they load as, so it is offered apart)."""
        args = [f"allowed_msgpack_modules={python_list(self.allowed_msgpack_modules())}"]
        if self.needs_pickle():
            args.append("pickle_fallback=True")
        return f"JsonPlusSerializer({', '.join(args)})"

    def python(self) -> str:
        """The allowlist as a Python snippet that runs as printed: comments (every name in them
        written as a Python literal: no name can end a comment), the import, the
        `allowed_msgpack_modules=[...]` argument and the `JsonPlusSerializer(...)` line."""
        out = [
            f"# statectl doctor --types: {self.label!a}: {self.threads} thread(s), {len(self.types)} type(s)",
            f"# LangGraph's safe set: {self.safe_from!a}",
            "# with LANGGRAPH_STRICT_MSGPACK=true, this serializer loads every value as it was stored",
        ]
        for verdict, why in (
            (MISSING, "not listed (the project has no such class: restore it, or statectl migrate --rename-class)"),
            (NOT_A_CLASS, "NOT listed (a function, not a class: loading would call it)"),
            (RUNS_CODE, "NOT listed (a callable that runs code: delete the rows that name it)"),
            (BAD_NAME, "NOT listed (not a Python name: nothing can load it)"),
            (JS, "not listed (LangGraph.js revives its own records)"),
        ):
            for t in self.of(verdict):
                out.append(f"# {why}: {t.dotted!a}")
        for t in self.of(ALLOW):
            if t.module == "__main__":
                out.append(
                    f"# {t.dotted!a} was written by a script run as the program: listed, it loads only where that "
                    "script is the program (move the class into a module: statectl migrate --rename-class)"
                )
        for note in self.notes:
            out.append(f"# note: {note!a}")
        if self.of(JSON):
            out.append(
                "# lc records of the app's own classes (JSON rows) load as plain dicts in every mode, strict or not; "
                "to revive them, add:"
            )
            out.append(f"#   allowed_json_modules={python_list(self.allowed_json_modules())}")
        out.append("from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer")
        out.append("")
        out.append(f"allowed_msgpack_modules={python_list(self.allowed_msgpack_modules())}")
        out.append("")
        out.append(f"serde = {self.serializer_line()}")
        return "\n".join(out) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {
            "db": self.label,
            "source": self.kind,
            "threads": self.threads,
            "checkpoints": self.checkpoints,
            "values": self.values,
            "js_threads": self.js_threads,
            "unreadable_rows": self.unreadable,
            "encrypted_values": self.encrypted,
            "server_records": self.server_records,
            "values_naming_unlisted_types": self.left_out,
            "safe_set": self.safe_from,
            "types": [t.to_json() for t in self.types],
            "allowed_msgpack_modules": [list(p) for p in self.allowed_msgpack_modules()],
            "allowed_json_modules": [list(p) for p in self.allowed_json_modules()],
            "pickle_fallback": self.needs_pickle(),
            "serializer": self.serializer_line(),
            "notes": self.notes,
        }


def python_list(pairs: Sequence[tuple[str, ...]]) -> str:
    """A Python list of string tuples, exactly as Python writes it (repr escapes what data holds)."""
    return (
        "["
        + ", ".join("(" + ", ".join(repr(p) for p in pair) + ("," if len(pair) == 1 else "") + ")" for pair in pairs)
        + "]"
    )


# -- the scan -------------------------------------------------------------------------------------
def stored_types(
    store: StoreReader,
    safe: Callable[[list[tuple[str, str]]], set[tuple[str, str]]] | None = None,
    on_thread: Callable[[], object] | None = None,
    classes: Callable[[list[tuple[str, str]]], list[dict[str, Any]]] | None = None,
) -> TypesReport:
    """Every type the values of `store` name, with its counts and verdict. `safe` answers which
    of the named (module, name) pairs are in the safe set of the project's LangGraph (None:
    statectl's copy of LangGraph's set); `classes` looks the others up in the project's
    interpreter (`project.classes.check`: nothing imported): a function is never listed, nor a
    class the project no longer has (None: not looked up, every one listed)."""
    source = store.source
    report = TypesReport(store.label, source.kind, as_stored=source.as_stored)
    if not source.as_stored:
        report.notes.append(
            "a LangGraph server gives values as JSON, not as stored: the types its store holds are not visible "
            "here (run doctor --types on the store itself)"
        )
        return report
    from statectl.core.doctor import every_thread, thread_batches
    from statectl.sources.ahead import Ahead, batched

    found: dict[tuple[str, str], StoredType] = {}
    for batch in thread_batches(every_thread(store)):  # (as doctor reads: a round of queries a batch, Postgres)
        here = Ahead(source, [s.thread_id for s in batch]) if batched(source) else source
        for summary in batch:
            report.threads += 1
            _thread(here, summary.thread_id, report, found)
            if on_thread is not None:
                on_thread()
    _judge(found, report, safe, classes)
    return report


def _thread(source: Any, t: str, report: TypesReport, found: dict[tuple[str, str], StoredType]) -> None:
    from statectl.codec.classes import named_values
    from statectl.codec.formats import INMEM_TYPE
    from statectl.core.js import js_time

    records = source.checkpoints(t, None)
    raws = source.raw_checkpoints(t)
    keys = [(t, r.checkpoint_ns, r.checkpoint_id) for r in records]
    all_writes = source.writes_of(keys) if source.reads_many else None
    from statectl.codec.classes import BlobMemo

    memo = BlobMemo()  # (a Postgres blob's names by its type and text: checkpoints share versions)
    seen: set[tuple[str, str]] = set()
    js = False
    for r in records:
        report.checkpoints += 1
        try:
            type_, blob = raws.get((r.checkpoint_ns, r.checkpoint_id)) or source.raw_checkpoint(
                t, r.checkpoint_ns, r.checkpoint_id
            )
            writes = (
                all_writes.get((t, r.checkpoint_ns, r.checkpoint_id), [])
                if all_writes is not None
                else source.writes(t, r.checkpoint_ns, r.checkpoint_id)
            )
        except StatectlError:
            report.unreadable += 1
            continue
        if type_ == INMEM_TYPE and blob and blob.startswith(b'{"server_record"'):
            report.server_records += 1  # (langgraph dev saved no checkpoint: its record's values are data)
            continue
        rows: list[tuple[str | None, bytes | None, bool]] = [(type_, blob, True)]
        rows += [(w.type, w.blob, False) for w in writes]
        for wtype, data, is_checkpoint in rows:
            if wtype is not None and _encrypted(wtype) and data:
                report.encrypted += 1
                continue
            try:
                values, ts = named_values(wtype, data, memo)
            except (ValueError, TypeError, RecursionError, KeyError, AttributeError):
                report.unreadable += 1
                continue
            if is_checkpoint:
                js = js_time(ts)
            for _channel, names in values:
                report.values += 1
                for (module, name), hows in _by_type(names).items():
                    if js:
                        hows = {"js-lc" if h == "json-lc" else h for h in hows}
                    if not _count(found, t, seen, _cut(module), _cut(name), hows):
                        report.left_out += 1
    if js:
        report.js_threads += 1


SERDE_TYPES = ("msgpack", "json", "pickle", "bytes", "bytearray", "null")
"""LangGraph's serializer types: `msgpack+aes` is one of them encrypted (`statectl+pg` is not:
statectl's own envelope of a Postgres row)."""


def _encrypted(type_: str) -> bool:
    base, plus, _cipher = type_.partition("+")
    return bool(plus) and base in SERDE_TYPES


PICKLE_PLUMBING = frozenset(
    {("copyreg", "_reconstructor"), ("copyreg", "__newobj__"), ("copyreg", "__newobj_ex__"), ("_codecs", "encode")}
    | {("builtins", n) for n in ("object", "list", "dict", "tuple", "bytearray", "bytes", "complex")}
    | {("collections", "OrderedDict")}
)
"""What pickle itself names to rebuild containers: no type of the app's."""


def _by_type(names: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str], set[str]]:
    """A value's names, each (module, name) once, with every way the value names it (pickle's own
    plumbing left out)."""
    out: dict[tuple[str, str], set[str]] = {}
    for module, name, how in names:
        if how == "pickle" and (module, name) in PICKLE_PLUMBING:
            continue
        out.setdefault((module, name), set()).add(how)
    return out


def _cut(text: str) -> str:
    return text if len(text) <= NAME_CHARS else text[:NAME_CHARS] + "…"


def _count(
    found: dict[tuple[str, str], StoredType], t: str, seen: set[tuple[str, str]], module: str, name: str, hows: set[str]
) -> bool:
    """One more value naming (module, name) in thread `t`; False where the type is past MAX_TYPES."""
    key = (module, name)
    entry = found.get(key)
    if entry is None:
        if len(found) >= MAX_TYPES:
            return False
        entry = found[key] = StoredType(module, name)
    entry.how |= hows
    entry.values += 1
    if key not in seen:
        seen.add(key)
        entry.threads += 1
        if len(entry.thread_ids) < THREADS_SHOWN:
            entry.thread_ids.append(t)
    return True


def _judge(
    found: dict[tuple[str, str], StoredType],
    report: TypesReport,
    safe: Callable[[list[tuple[str, str]]], set[tuple[str, str]]] | None,
    classes: Callable[[list[tuple[str, str]]], list[dict[str, Any]]] | None = None,
) -> None:
    from statectl.codec.classes import is_safe, runs_code

    pairs = sorted(found)
    if safe is not None:
        safe_set = safe(pairs)
    else:
        safe_set = {p for p in pairs if is_safe(*p)}
        report.safe_from = report.safe_from or "statectl's copy of LangGraph's SAFE_MSGPACK_TYPES"
    for key in pairs:
        entry = found[key]
        entry.verdict = _verdict(entry, key in safe_set, runs_code(*key))
    asked = [k for k in pairs if found[k].verdict == ALLOW and k[0] != "__main__"]
    if classes is not None and asked:
        for key, answer in zip(asked, classes(asked), strict=True):
            status = answer.get("status")
            if status == "ok" and answer.get("kind") == "function":
                found[key].verdict = NOT_A_CLASS
            elif status in ("missing module", "missing class"):
                found[key].verdict = MISSING
    order = {v: i for i, v in enumerate(VERDICTS)}
    report.types = sorted(found.values(), key=lambda e: (order[e.verdict], e.module, e.name))
    if report.encrypted:
        report.notes.append(
            f"{report.encrypted} value(s) are stored encrypted (EncryptedSerializer): the types inside them cannot be "
            "read without the key, and are not listed"
        )
    if report.left_out:
        report.notes.append(
            f"{report.left_out} value(s) name types beyond the first {MAX_TYPES:,}: counted, not listed (the allowlist "
            "is incomplete)"
        )
    if report.server_records:
        report.notes.append(
            f"{report.server_records} langgraph dev thread(s) have no checkpoint saved, only the server's record of "
            "their values, which holds no types: what they name is not listed"
        )
    if report.unreadable:
        report.notes.append(
            f"{report.unreadable} row(s) did not parse and are not counted (statectl doctor names them)"
        )
    if report.js_threads:
        report.notes.append(
            f"{report.js_threads} thread(s) were written by LangGraph.js: it revives its own records, and Python's "
            "allowed_msgpack_modules / allowed_json_modules do not apply to them"
        )


_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$", re.ASCII)


def _verdict(entry: StoredType, safe: bool, runs: bool) -> str:
    how = entry.how
    if runs:
        return RUNS_CODE
    if not (_NAME.match(entry.module) and _NAME.match(entry.name)) or len(entry.dotted) > 300:
        return BAD_NAME
    if how & {"msgpack-ctor", "msgpack-pydantic"}:
        return SAFE if safe else ALLOW
    if "pickle" in how:
        return PICKLE
    if "json-lc" in how:
        if safe or entry.module.split(".")[0] in ("langchain", "langchain_core"):
            return LANGCHAIN
        return JSON
    return JS
