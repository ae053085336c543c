"""Reading stored values in the project's interpreter: only the types the graph declares are built.

`fork` and `replay` read the thread back through LangGraph's saver, whose serializer would import
and call whatever a stored value names (`os.system`, a module of the project folder). Here every
stored value is first walked as inert data (msgpack ext values unpacked, never resolved; JSON
records read as dicts; pickles by an unpickler whose `find_class` asks first), and every type it
names is checked against an allowlist BEFORE anything is imported: the classes the graph's state
declares (and the classes those contain), LangGraph's own safe set, the app's serializer's own
allowlist (`statectl.project.declared` finds these), and the types the user allows
(`--allow-type module.Name`). Anything else is `Refused`: one line naming the type, and nothing
written. Only then LangGraph's serializer, made strict with that allowlist, builds the value.

It imports only the standard library and LangGraph (the project's interpreter may lack the rest).
"""

from __future__ import annotations

import io
import json
import pickle
import re
import sys
import types
from collections.abc import Iterable
from typing import Any, ClassVar

from statectl.project.writer_base import INMEM_TYPE, PG_TYPE, WriteError

Key = tuple[str, str]
DEPTH = 200
"""How deep a stored value is walked; deeper is refused (a value LangGraph wrote is never so deep)."""
PICKLE_TYPES = ("pickle", "inert-pickle")
"""LangGraph's pickle fallback, and the langgraph dev server's (as statectl's reader names it)."""
_PICKLE_PLUMBING = frozenset(
    {
        ("copyreg", "_reconstructor"),
        ("copyreg", "__newobj__"),
        ("builtins", "object"),
        ("builtins", "list"),
        ("builtins", "dict"),
        ("builtins", "tuple"),
        ("builtins", "bytearray"),
        ("builtins", "bytes"),
        ("builtins", "complex"),
        ("collections", "OrderedDict"),
        ("_codecs", "encode"),  # (how protocol 2 pickles bytes: a str and its codec name)
    }
)
"""What pickle itself needs to rebuild containers (none of it calls anything a value names)."""
_CODECS = ("latin1", "latin-1", "utf-8", "utf8", "ascii")
_NOT_BASES = ("builtins", "typing", "abc", "collections", "enum", "pydantic", "langchain_core.load")
"""Declared classes whose subclasses are not allowed by that alone (a base of everything)."""
_TYPE_NAME = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)+$")


class Refused(WriteError):
    """A stored value that names a type the read will not build."""


def parse_allowed(names: Iterable[str]) -> set[Key]:
    """`--allow-type module.Name` values as (module, name) pairs; a malformed one is a WriteError."""
    out = set()
    for text in names:
        if not _TYPE_NAME.match(text):
            raise WriteError(
                f"--allow-type {text!r} is not module.Name",
                "name one class by its module and name, e.g. --allow-type myapp.models.Note",
            )
        module, _, name = text.rpartition(".")
        out.add((module, name))
    return out


def safe_set() -> set[Key]:
    from langgraph.checkpoint.serde import _msgpack

    return {(k[0], k[1]) for k in _msgpack.SAFE_MSGPACK_TYPES}


# -- the check ------------------------------------------------------------------------------------
class Allowlist:
    """The types a read may build, and the check of a stored value against them."""

    def __init__(self, allowed: set[Key], declared_classes: Iterable[type] = (), thread: str = "") -> None:
        classes = list(declared_classes)
        self.allowed = set(allowed) | safe_set() | {(c.__module__, c.__name__) for c in classes}
        self.bases = tuple(c for c in classes if c is not object and not c.__module__.startswith(_NOT_BASES))
        self.thread = thread

    def allows(self, module: str, name: str) -> bool:
        """Allowed by name; or a subclass of a declared class, in a module the graph has already
        imported (looked up in its namespace: nothing is imported or run to answer)."""
        if (module, name) in self.allowed:
            return True
        mod = sys.modules.get(module)
        cls = getattr(mod, "__dict__", {}).get(name) if isinstance(mod, types.ModuleType) else None
        if isinstance(cls, type) and any(b in cls.__mro__ for b in self.bases):  # (real bases, no ABC hooks)
            self.allowed.add((module, name))
            return True
        return False

    def refuse(self, what: str, where: str) -> Refused:
        thread = f" of thread {self.thread!r}" if self.thread else ""
        if not _TYPE_NAME.match(what) or len(what) > 200:  # (a name is data: escaped, bounded)
            what = repr(what[:200]) + ("..." if len(what) > 200 else "")
        return Refused(
            f"{where}{thread} names {what}, not a type the graph's state declares: not reconstructed, nothing written",
            f"--allow-type {what} builds it, if you trust this data",
        )

    def named(self, module: Any, name: Any, where: str) -> None:
        if not isinstance(module, str) or not isinstance(name, str):
            raise Refused(f"{where}{self._of()} holds a malformed typed value: nothing written")
        if not self.allows(module, name):
            raise self.refuse(f"{module}.{name}", where)

    def _of(self) -> str:
        return f" of thread {self.thread!r}" if self.thread else ""

    # typed values
    def check_typed(self, type_: str, data: bytes | None, where: str, cipher: Any = None) -> None:
        """Walk one stored `(type, bytes)` value: a named type that is not allowed is `Refused`."""
        if type_ in ("null", "empty", "bytes", "bytearray") or data is None:
            return
        if "+" in type_:  # encrypted (EncryptedSerializer): read with the app's own cipher
            base, _, cipher_name = type_.partition("+")
            if cipher is None:
                raise Refused(f"{where}{self._of()} is encrypted ({type_}) and the graph's checkpointer has no cipher")
            self.check_typed(base, cipher.decrypt(cipher_name, data), where)
            return
        if type_ == "msgpack":
            self._msgpack(data, where)
        elif type_ == "json":
            self._json(data, where)
        elif type_ in PICKLE_TYPES:
            self.unpickle(data, where)
        else:
            raise Refused(f"{where}{self._of()} is stored as {type_!r}, which statectl does not read")

    def _msgpack(self, data: bytes, where: str) -> None:
        value = _unpack(data, where, self)
        if isinstance(value, dict) and isinstance(value.get("channel_values"), dict):  # a whole checkpoint
            for key, v in value["channel_values"].items():
                self._walk(v, f"{where}'s channel {key!r}", 0)
            rest = {k: v for k, v in value.items() if k != "channel_values"}
            self._walk(rest, where, 0)
        else:
            self._walk(value, where, 0)

    def _walk(self, value: Any, where: str, depth: int) -> None:
        if depth > DEPTH:
            raise Refused(f"{where}{self._of()} is nested deeper than {DEPTH} levels: nothing written")
        if isinstance(value, dict):
            for k, v in value.items():
                self._walk(k, where, depth + 1)
                self._walk(v, where, depth + 1)
        elif isinstance(value, list):
            for v in value:
                self._walk(v, where, depth + 1)
        elif isinstance(value, _Ext):
            self._ext(value, where, depth + 1)

    def _ext(self, ext: _Ext, where: str, depth: int) -> None:
        code = ext.code
        if code not in range(8):  # (LangGraph reads an unknown ext code as None: nothing is built)
            return
        inner = _unpack(ext.data, where, self)
        if code == 7:  # a delta snapshot: its value
            self._walk(inner, where, depth)
            return
        if code == 6:  # a numpy array: numpy builds it, when the state declares arrays
            dtype = inner[0] if isinstance(inner, list) and inner else None
            if not self.allows("numpy", "ndarray"):
                raise self.refuse("numpy.ndarray", where)
            if not isinstance(dtype, str) or "O" in dtype or "V" in dtype:
                raise Refused(f"{where}{self._of()} holds an array of dtype {dtype!r}: not reconstructed")
            return
        if not isinstance(inner, list) or len(inner) < 3:
            raise Refused(f"{where}{self._of()} holds a malformed typed value (ext {code}): nothing written")
        if code == 3:  # a method call: only LangGraph's own safe ones
            from langgraph.checkpoint.serde import _msgpack

            method = inner[3] if len(inner) > 3 else None
            if (inner[0], inner[1], method) not in _msgpack.SAFE_MSGPACK_METHODS:
                raise self.refuse(f"{inner[0]}.{inner[1]}.{method}", where)
        else:
            self.named(inner[0], inner[1], where)
        self._walk(inner[2], where, depth)

    def _json(self, data: bytes, where: str) -> None:
        from langchain_core.load.load import ALL_SERIALIZABLE_MAPPINGS

        def hook(obj: dict[str, Any]) -> Any:
            if obj.get("lc") in (1, 2) and obj.get("type") == "constructor":
                ids = obj.get("id")
                if not isinstance(ids, list) or len(ids) < 2 or not all(isinstance(p, str) for p in ids):
                    raise Refused(f"{where}{self._of()} holds a malformed constructor record: nothing written")
                path = ids
                if obj.get("lc") == 1:  # (LangChain's reviver builds the class its mapping names)
                    path = list(ALL_SERIALIZABLE_MAPPINGS.get(tuple(ids), ids))
                self.named(".".join(path[:-1]), path[-1], where)
            return obj

        try:
            json.loads(data, object_hook=hook)
        except RecursionError:
            raise Refused(f"{where}{self._of()} is nested too deep: nothing written") from None
        except ValueError as exc:
            raise Refused(f"{where}{self._of()} is not JSON ({str(exc)[:100]}): nothing written") from None

    def unpickle(self, data: bytes, where: str) -> Any:
        """A pickle rebuilt by an unpickler that finds only allowed classes (and pickle's own
        container plumbing); anything else is `Refused` before its module is imported."""
        allow = self

        class Unpickler(pickle._Unpickler):  # (Python's own: its BUILD can be guarded)
            dispatch: ClassVar[dict[int, Any]] = dict(pickle._Unpickler.dispatch)

            def load_build(self) -> None:
                """BUILD sets state on the object below it: never on a class, a function or a
                module (`setattr(Path, '__truediv__', ...)` would change code that runs later)."""
                target = self.stack[-2] if len(self.stack) > 1 else None  # type: ignore[attr-defined]
                if isinstance(target, type | types.FunctionType | types.BuiltinFunctionType | types.ModuleType):
                    name = getattr(target, "__qualname__", getattr(target, "__name__", "?"))
                    raise Refused(f"{where}{allow._of()} is a pickle that sets attributes of {name}: not read")
                pickle._Unpickler.load_build(self)  # type: ignore[attr-defined]

            dispatch[pickle.BUILD[0]] = load_build

            def find_class(self, module: str, name: str) -> Any:
                module, name = _py3_name(module, name)
                key = (module, name)
                if key not in _PICKLE_PLUMBING and not allow.allows(module, name):
                    raise allow.refuse(f"{module}.{name}", where)
                if key == ("_codecs", "encode"):
                    return _encode
                return super().find_class(module, name)

            def persistent_load(self, pid: Any) -> Any:
                raise Refused(f"{where}{allow._of()} is a pickle with external references: not read")

        try:
            return Unpickler(io.BytesIO(data)).load()
        except Refused:
            raise
        except RecursionError:
            raise Refused(f"{where}{self._of()} is a pickle nested too deep: not read") from None
        except Exception as exc:
            raise Refused(f"{where}{self._of()} is a pickle that cannot be read ({type(exc).__name__})") from None


def _py3_name(module: str, name: str) -> tuple[str, str]:
    """A protocol 0-2 pickle's Python 2 name (`__builtin__.set`) as pickle itself maps it."""
    import _compat_pickle

    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def _encode(text: str, codec: str = "utf-8") -> bytes:
    if codec.lower() not in _CODECS:
        raise pickle.UnpicklingError(f"codec {codec!r}")
    return text.encode(codec)


class _Ext:
    __slots__ = ("code", "data")

    def __init__(self, code: int, data: bytes) -> None:
        self.code, self.data = code, data


def _unpack(data: bytes, where: str, allow: Allowlist) -> Any:
    import ormsgpack

    try:
        return ormsgpack.unpackb(data, ext_hook=_Ext, option=ormsgpack.OPT_NON_STR_KEYS)
    except Exception as exc:
        raise Refused(f"{where}{allow._of()} is not readable msgpack ({str(exc)[:100]}): nothing written") from None


# -- rows, as the CLI sends them (statectl.core.copy) -----------------------------------------------
def check_rows(allow: Allowlist, rows: Iterable[dict[str, Any]], cipher: Any = None) -> None:
    """Every value of a checkpoint row and its writes rows (as `statectl.core.copy` sends them),
    walked: refused before the thread is copied or anything written."""
    import base64

    def raw(text: str | None) -> bytes | None:
        return None if text is None else base64.b64decode(text)

    for row in rows:
        if row.get("op") == "writes":
            for _idx, channel, type_, value in row["items"]:
                allow.check_typed(
                    type_, raw(value), f"a pending write to {channel!r} on checkpoint {row['checkpoint_id']}", cipher
                )
            continue
        what = f"checkpoint {row['checkpoint_id']}"
        type_, data = row["type"], raw(row["checkpoint"])
        if type_ == PG_TYPE:
            doc = json.loads(data or b"{}")
            for channel, _version, t, blob in doc.get("blobs") or []:
                allow.check_typed(t, raw(blob), f"{what}'s channel {channel!r}", cipher)
            allow._walk(doc.get("checkpoint"), what, 0)
        elif type_ == INMEM_TYPE:
            doc = json.loads(data or b"{}")
            if "checkpoint" in doc:
                ct, cb = doc["checkpoint"]
                allow.check_typed(ct, raw(cb), what, cipher)
            for channel, t, blob in doc.get("blobs") or []:
                allow.check_typed(t, raw(blob), f"{what}'s channel {channel!r}", cipher)
        elif "+" in type_ or type_ in ("msgpack", "json", *PICKLE_TYPES):
            allow.check_typed(type_, data, what, cipher)


# -- the serializer the saver reads with ----------------------------------------------------------
def cipher_of(serde: Any) -> Any:
    """The app's EncryptedSerializer's cipher (None: no encryption)."""
    return getattr(serde, "cipher", None) if hasattr(serde, "cipher") and hasattr(serde, "serde") else None


def guarded(allow: Allowlist, dumps: Any, cipher: Any = None) -> Any:
    """A serializer for the saver: it writes with `dumps` (the app's own serializer, encryption
    kept), and reads each value only after `allow` checked it, with LangGraph's serializer made
    strict to the same allowlist (pickles: `Allowlist.unpickle`)."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    def strict() -> Any:
        keys = tuple(allow.allowed)
        ids = tuple((*module.split("."), name) for module, name in keys)
        return JsonPlusSerializer(allowed_msgpack_modules=keys, allowed_json_modules=ids)

    class Guarded:
        reader = strict()

        def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
            return dumps.dumps_typed(obj)

        def loads_typed(self, data: tuple[str, bytes]) -> Any:
            type_, blob = data
            if "+" in type_:
                base, _, cipher_name = type_.partition("+")
                if cipher is None:
                    raise Refused(f"a value is encrypted ({type_}) and the graph's checkpointer has no cipher")
                type_, blob = base, cipher.decrypt(cipher_name, blob)
            where = "a stored value"
            allow.check_typed(type_, blob, where)
            if len(allow.allowed) != len(self.reader._allowed_msgpack_modules or ()):  # (a subclass found meanwhile)
                self.reader = strict()
            if type_ in PICKLE_TYPES:
                return allow.unpickle(blob, where)
            return self.reader.loads_typed((type_, blob))

    return Guarded()
