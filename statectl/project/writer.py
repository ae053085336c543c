"""Writes through LangGraph's own savers, in the project's interpreter: `copy`, `fork`, `replay`.

statectl keeps no LangGraph dependency and no second encoder of LangGraph's format. The commands
that write start this module in the interpreter that has the project's LangGraph (statectl's
own when it has one, else `--python`, the active or ./.venv virtualenv's, as `schema TARGET`
does) and send it rows as JSON lines on stdin; it writes them with `SqliteSaver` or
`PostgresSaver`, in one transaction, and answers with JSON lines on stdout after `MARK`.

Rows keep their stored bytes: a value goes to the saver as `Raw(type, bytes)`, which the
pass-through serializer hands back as it was, so a copy between stores of one layout (SQLite to
SQLite, Postgres to Postgres) is byte for byte the source's. Between layouts (the whole
checkpoint in one SQLite blob against Postgres' JSONB and one blob per channel version) the
checkpoint must be split or joined by its msgpack framing, each value's bytes kept (an ext value
is never read: nothing it names is imported). Pickled and encrypted values are copied only between
stores of one layout. A copy reads no value back; `fork` and `replay` read through
`statectl.project.safeload`, which builds only the types the graph declares.

It imports only the standard library, LangGraph and statectl's pure modules (never orjson or
anything else of statectl's dependencies: they may be absent from the project's interpreter).
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from statectl.project.write_targets import pg_message, write_target
from statectl.project.writer_base import INMEM_TYPE, MARK, PG_TYPE, SERVER_TYPE, WriteError

if TYPE_CHECKING:
    from langgraph.checkpoint.serde.base import SerializerProtocol

    from statectl.project.safeload import Allowlist

EXT_DELTA_SNAPSHOT = 7


def say(**answer: Any) -> None:
    sys.stdout.write(MARK + json.dumps(answer) + "\n")
    sys.stdout.flush()


# -- values as they were stored -------------------------------------------------------------------
class Raw:
    """A value as the source stored it: the serializer's (type, bytes), handed back unchanged."""

    __slots__ = ("data", "type")

    def __init__(self, type_: str, data: bytes | None) -> None:
        self.type, self.data = type_, data


class RawCheckpoint(dict):
    """A whole SQLite-layout checkpoint (`id` readable by the saver) whose bytes are kept."""

    raw: Raw


def pass_through(inner: Any) -> Any:
    """A serializer that returns `Raw` values (and a delta snapshot or checkpoint holding one) as
    stored, and leaves everything else to LangGraph's own serializer `inner`; it reads nothing."""
    from langgraph.checkpoint.serde.types import _DeltaSnapshot

    class PassThrough:
        def dumps_typed(self, obj: Any) -> tuple[str, bytes | None]:
            if isinstance(obj, Raw):
                return obj.type, obj.data
            if isinstance(obj, RawCheckpoint):
                return obj.raw.type, obj.raw.data
            if isinstance(obj, _DeltaSnapshot) and isinstance(obj[0], Raw):
                return obj[0].type, obj[0].data
            return inner.dumps_typed(obj)

        def loads_typed(self, data: tuple[str, bytes]) -> Any:
            raise WriteError(  # (a copy reads no value; fork and replay read through statectl.project.safeload)
                f"a copy does not read stored values (LangGraph's saver asked for a {data[0]!r} value)"
            )

    return PassThrough()


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _is_delta_snapshot(type_: str, data: bytes | None) -> bool:
    """A msgpack value that is ext 7 (`_DeltaSnapshot`) at its top (fixext or ext 8/16/32)."""
    if type_ != "msgpack" or not data:
        return False
    head = data[0]
    at = {0xD4: 1, 0xD5: 1, 0xD6: 1, 0xD7: 1, 0xD8: 1, 0xC7: 2, 0xC8: 3, 0xC9: 5}.get(head)
    return at is not None and len(data) > at and data[at] == EXT_DELTA_SNAPSHOT


def _opaque(type_: str, data: bytes | None, what: str) -> Any:
    """A msgpack value unpacked one level at a time: maps, lists and scalars as Python values, every
    ext value (a LangChain message, a dataclass, a datetime, a delta snapshot) kept as its ext
    bytes (`ormsgpack.Ext`), so nothing it names is imported and it packs back as it was."""
    import ormsgpack

    if type_ == "null":
        return None
    if type_ in ("bytes", "bytearray"):
        return data or b""
    if type_ != "msgpack":
        raise WriteError(
            f"{what} is stored as {type_!r}: between stores of two layouts (a SQLite file and "
            "Postgres) only msgpack values are carried over",
            "copy to a destination of the source's kind",
        )
    try:
        return ormsgpack.unpackb(data or b"\xc0", ext_hook=Ext, option=ormsgpack.OPT_NON_STR_KEYS)
    except Exception as exc:
        raise WriteError(f"{what} is corrupt ({exc})") from None


class Ext:
    """An ext value's code and bytes, unread (what the ext code names is never imported)."""

    __slots__ = ("code", "data")

    def __init__(self, code: int, data: bytes) -> None:
        self.code, self.data = code, data


def _packed(value: Any) -> bytes:
    import ormsgpack

    def ext(obj: Any) -> Any:
        if isinstance(obj, Ext):
            return ormsgpack.Ext(obj.code, obj.data)
        raise TypeError(type(obj).__name__)

    return ormsgpack.packb(value, default=ext, option=ormsgpack.OPT_NON_STR_KEYS)


# -- destinations ---------------------------------------------------------------------------------
class Destination:
    """A store of a kind statectl writes (`write_targets`), written through LangGraph's saver."""

    def __init__(self, spec: dict[str, Any], atomic: bool = True) -> None:
        """`atomic`: everything written in one transaction, committed by `commit` (copy, fork);
        else each checkpoint as the saver commits it (replay: the steps already run stay)."""
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

        target = write_target(spec["kind"])
        if target is None:
            raise WriteError(f"statectl does not write a store of kind {spec['kind']!r}")
        self.target = target
        self.inner = JsonPlusSerializer()  # (no pickle_fallback: what it cannot encode raises)
        self.repickle: Any = None
        self.repickle_dry = False
        """`migrate --repickle`: the `safeload.Allowlist` pickled values are read with."""
        if "repickle" in spec:
            from statectl.project.safeload import Allowlist, parse_allowed

            self.repickle = Allowlist(parse_allowed(spec["repickle"]))
        self.repickle_dry = bool(spec.get("repickle_dry"))
        target.open(spec, pass_through(self.inner), atomic)
        self.saver: Any = target.saver

    def has_thread(self, thread_id: str) -> bool:
        return self.target.has_thread(thread_id)

    def commit(self) -> None:
        """Commit and close; a SQLite file is whole once this returns (say "written" after it)."""
        self.target.commit()

    def rollback(self) -> None:
        self.target.rollback()


# -- a thread's rows, written ---------------------------------------------------------------------
class Copier:
    """Writes one thread's rows (as `statectl.core.copy.rows` sends them) to a destination."""

    def __init__(self, dest: Destination, thread_id: str) -> None:
        self.dest, self.thread_id = dest, thread_id
        self.checkpoints = self.writes = 0
        self.repickled = 0
        self.kept: dict[str, int] = {}
        """`migrate --repickle`: pickled values left as stored (no msgpack for their type), by type."""

    def _repickle(self, type_: str, data: bytes | None, what: str) -> tuple[str, bytes | None]:
        """`migrate --repickle`: a value LangGraph's `pickle_fallback` pickled, read by statectl's
        restricted unpickler (only the types allowed are built) and encoded again by LangGraph's
        serializer without `pickle_fallback`; a value it cannot encode is kept as stored."""
        allow = self.dest.repickle
        if allow is None or type_ != "pickle" or data is None:
            return type_, data
        new_type, new, kept = repickled(allow, self.dest.inner, type_, data, what)
        if kept is not None:
            self.kept[kept] = self.kept.get(kept, 0) + 1
            if self.dest.repickle_dry:  # (a scratch copy, maybe of another layout: counted, not carried)
                return "null", None
            return type_, data
        self.repickled += 1
        return new_type, new

    def config(self, ns: str, checkpoint_id: str | None) -> dict[str, Any]:
        configurable = {"thread_id": self.thread_id, "checkpoint_ns": ns}
        if checkpoint_id is not None:
            configurable["checkpoint_id"] = checkpoint_id
        return {"configurable": configurable}

    def checkpoint(self, row: dict[str, Any]) -> None:
        type_, data = row["type"], _bytes(row["checkpoint"])
        ns, cid = row["checkpoint_ns"], row["checkpoint_id"]
        what = f"checkpoint {cid}"
        type_, data = self._repickle(type_, data, what)
        if type_ == SERVER_TYPE:
            raise WriteError(
                "a LangGraph server gives its states as JSON, not the checkpoints it stores: they "
                "cannot be written back exactly",
                "copy from the server's own database (its Postgres), or from a langgraph dev folder",
            )
        if type_ in (PG_TYPE, INMEM_TYPE):
            checkpoint, versions = self._split(type_, data, what)
        elif not self.dest.target.blob_per_version:  # (the whole checkpoint in one blob, as stored)
            checkpoint = RawCheckpoint(id=cid)
            checkpoint.raw = Raw(type_, data)
            versions = {}
        else:  # a whole SQLite checkpoint, split into a checkpoint and one blob per channel
            whole = _opaque(type_, data, what)
            if not isinstance(whole, dict) or not isinstance(whole.get("channel_values"), dict):
                raise WriteError(f"{what} is not a LangGraph checkpoint")
            checkpoint, versions = dict(whole), dict(whole.get("channel_versions") or {})
            checkpoint["channel_values"] = {k: self._blob_value(v) for k, v in whole["channel_values"].items()}
        if checkpoint.get("id") != cid:
            raise WriteError(f"{what}: its stored id is {checkpoint.get('id')!r}")
        metadata = row["metadata"]
        if isinstance(metadata, dict) and "$undecoded" in metadata:
            raise WriteError(f"{what}: its metadata could not be read ({metadata['$undecoded']})")
        self.dest.saver.put(self.config(ns, row["parent_checkpoint_id"]), checkpoint, metadata, versions)
        self.checkpoints += 1

    def _blob_value(self, value: Any) -> Any:
        """A channel value of a whole checkpoint as Postgres stores it: a primitive inline, any
        other value a blob of its own bytes (a delta snapshot marked as LangGraph marks it)."""
        from langgraph.checkpoint.serde.types import _DeltaSnapshot

        if value is None or isinstance(value, (str, int, float, bool)):
            return value
        if isinstance(value, bytes):  # (as LangGraph's serializer types bytes)
            return Raw("bytes", value)
        raw = Raw("msgpack", _packed(value))
        return _DeltaSnapshot(raw) if isinstance(value, Ext) and value.code == EXT_DELTA_SNAPSHOT else raw

    def _split(self, type_: str, data: bytes | None, what: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """A Postgres or langgraph dev checkpoint (checkpoint + one blob per channel version) as
        the dict a saver's `put` takes, and the versions of its blobs."""
        from langgraph.checkpoint.serde.types import _DeltaSnapshot

        doc = json.loads(data or b"{}")
        if type_ == PG_TYPE:
            checkpoint = dict(doc["checkpoint"])
            blobs = [(ch, ver, t, _bytes(b)) for ch, ver, t, b in doc["blobs"]]
        else:
            if "server_record" in doc:
                raise WriteError(f"{what} is known only from the server's record, not stored")
            ct, cb = doc["checkpoint"]
            checkpoint = _opaque(ct, _bytes(cb), what)
            versions = checkpoint.get("channel_versions") or {}
            blobs = [(ch, versions.get(ch), t, _bytes(b)) for ch, t, b in doc["blobs"]]
        values = dict(checkpoint.get("channel_values") or {})
        blob_versions = {}
        for channel, version, t, blob in blobs:
            blob_versions[channel] = version
            t, blob = self._repickle(t, blob, f"{what}'s channel {channel!r}")
            if t == "empty":
                continue
            if self.dest.target.blob_per_version:  # one blob a channel version, as stored
                raw = Raw(t, blob)
                values[channel] = _DeltaSnapshot(raw) if _is_delta_snapshot(t, blob) else raw
            else:  # joined into one whole checkpoint, each value's bytes as they were
                values[channel] = _opaque(t, blob, f"{what}'s channel {channel!r}")
        checkpoint["channel_values"] = values
        if not self.dest.target.blob_per_version:
            whole = RawCheckpoint(id=checkpoint.get("id"))
            whole.raw = Raw("msgpack", _packed(checkpoint))
            return whole, blob_versions
        return checkpoint, blob_versions

    def write(self, row: dict[str, Any]) -> None:
        """One task's writes on one checkpoint, in their stored order: `put_writes` numbers them
        as LangGraph did (special channels by their fixed index)."""
        items = [
            (ch, Raw(*self._repickle(t, _bytes(v), f"a write to {ch!r} on checkpoint {row['checkpoint_id']}")))
            for _idx, ch, t, v in row["items"]
        ]
        config = self.config(row["checkpoint_ns"], row["checkpoint_id"])
        self.dest.saver.put_writes(config, items, row["task_id"], row.get("task_path") or "")
        self.writes += len(items)


def repickled(
    allow: Allowlist, inner: SerializerProtocol, type_: str, data: bytes, what: str
) -> tuple[str, bytes | None, str | None]:
    """A pickled value read by statectl's restricted unpickler (`allow`, a `safeload.Allowlist`:
    another class is refused by name) and encoded again by `inner`, LangGraph's serializer without
    `pickle_fallback`: (type, bytes, None); or, when it cannot encode it, (type, data, the type that
    kept it pickled)."""
    value = allow.unpickle(data, what)
    try:
        new_type, new = inner.dumps_typed(value)
    except Exception:  # (ormsgpack's encode error: the type has no msgpack form)
        name = type(value).__module__ + "." + type(value).__qualname__
        for obj in _objects(value):
            try:
                inner.dumps_typed(obj)
            except Exception:
                name = type(obj).__module__ + "." + type(obj).__qualname__
                break
        return type_, data, name
    return new_type, new, None


def repickle_values(lines: Iterator[str]) -> None:
    """`migrate --repickle --in-place`: the first line names the classes allowed besides
    LangGraph's safe set (`{"allow": [...]}`); each next one a row's pickled values
    (`{"values": [[what, base64], ...]}`), answered with each encoded again (`[type, base64]`) or
    kept (`[null, the type with no msgpack form]`). A class not allowed: an error answer, and the
    writer stops. statectl's process writes the store; this one only reads and encodes."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from statectl.project.safeload import Allowlist, parse_allowed

    inner = JsonPlusSerializer()  # (no pickle_fallback: what it cannot encode raises)
    allow: Any = None
    try:
        for line in lines:
            row = json.loads(line)
            if allow is None:
                allow = Allowlist(parse_allowed(row["allow"]))
                say(ok=True)
                continue
            out: list[list[Any]] = []
            for what, text in row["values"]:
                new_type, new, kept = repickled(allow, inner, "pickle", base64.b64decode(text), what)
                out.append([None, kept] if kept is not None else [new_type, _text(new)])
            say(values=out)
    except WriteError as exc:
        say(error=exc.message, hint=exc.hint)


def _text(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _objects(value: Any, depth: int = 0) -> Iterator[Any]:
    """The objects in an unpickled value that are not plain data, innermost first (the first
    that does not encode names the type that kept the value pickled)."""
    if depth > 50:
        return
    if isinstance(value, dict):
        for v in value.values():
            yield from _objects(v, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _objects(v, depth + 1)
    elif value is not None and not isinstance(value, (str, int, float, bool, bytes)):
        yield from _objects(getattr(value, "__dict__", None), depth + 1)
        yield value


def _tally(copiers: list[Copier]) -> dict[str, Any]:
    """What the copy wrote; with `migrate --repickle`, the values encoded again and kept, by thread."""
    out: dict[str, Any] = {
        "checkpoints": sum(c.checkpoints for c in copiers),
        "writes": sum(c.writes for c in copiers),
    }
    if any(c.dest.repickle is not None for c in copiers):
        out["repickled"] = {c.thread_id: c.repickled for c in copiers if c.repickled}
        out["kept"] = {c.thread_id: c.kept for c in copiers if c.kept}
    return out


def copy_rows(lines: Iterator[str]) -> None:
    """The copy protocol: `open`, then for each thread `thread`, its `checkpoint` and `writes`
    rows, then `commit`. Nothing is written unless every row was."""
    dest: Destination | None = None
    copier: Copier | None = None
    threads = 0
    copiers: list[Copier] = []
    try:
        for line in lines:
            row = json.loads(line)
            op = row.pop("op")
            if op == "open":
                dest = Destination(row)
            elif op == "thread":
                assert dest is not None
                if dest.has_thread(row["as"]):
                    if not row.get("replace"):
                        raise WriteError(
                            f"the destination already holds thread {row['as']!r}",
                            "--replace replaces it, --as NEW_ID copies under another id",
                        )
                    dest.saver.delete_thread(row["as"])
                copier = Copier(dest, row["as"])
                copiers.append(copier)
                threads += 1
            elif op == "checkpoint":
                assert copier is not None
                copier.checkpoint(row)
            elif op == "writes":
                assert copier is not None
                copier.write(row)
            elif op == "commit":
                assert dest is not None
                dest.commit()
                dest = None
                say(ok=True, threads=threads, **_tally(copiers))
                return
        raise WriteError("the copy was cut short: nothing was written")
    except WriteError as exc:
        say(error=exc.message, hint=exc.hint)
    except Exception as exc:  # the saver's own failure (disk full, a lost connection): one line
        # (its first line: Postgres' DETAIL quotes the failing row, which is the user's data)
        say(error=f"writing failed: {type(exc).__name__}: {pg_message(exc)[:300]}")
    finally:
        if dest is not None:
            dest.rollback()
