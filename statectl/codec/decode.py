"""Stored bytes -> inert Python values, without importing or calling anything the data names.

Every value comes back as plain JSON-able data. What JSON cannot hold uses statectl's tagged
form (see README, "JSON output"): ``{"$uuid": ...}``, ``{"$datetime": ...}``, ``{"$set": [...]}``,
``{"$type": "module.Class", "data" | "arg" | "args": ...}``, ``{"$bytes": base64}``, ... Tagged
objects are `Tagged` dicts so they are never confused with user dicts that happen to use the same
keys (those are escaped as ``{"$dict": [[key, value], ...]}``).
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import ormsgpack

from statectl.codec.js import UNDEFINED, drop_undefined, is_unset, js_record, restore
from statectl.codec.values import (
    TAGS,
    DeltaSnapshot,
    Tagged,
    b64,
    dashed_or_same,
    dashed_uuid,
    fix_json,
    json_safe,
    set_order,
    unb64,
)
from statectl.errors import DecodeError, install_hint
from statectl.settings import current

MIN_BLOB = 32 << 10
"""The smallest payload `codec.arrays` looks into for lists sharing their items (its MIN_BLOB)."""

__all__ = ["TAGS", "DeltaSnapshot", "Tagged", "b64", "dashed_uuid", "fix_json", "set_order", "unb64"]

# msgpack ext codes written by langgraph.checkpoint.serde.jsonplus
EXT_CONSTRUCTOR_SINGLE_ARG = 0
EXT_CONSTRUCTOR_POS_ARGS = 1
EXT_CONSTRUCTOR_KW_ARGS = 2
EXT_METHOD_SINGLE_ARG = 3
EXT_PYDANTIC_V1 = 4
EXT_PYDANTIC_V2 = 5
EXT_NUMPY_ARRAY = 6
EXT_DELTA_SNAPSHOT = 7


def aes_key() -> bytes | None:
    import os

    if (key := current().aes_key) is not None:
        return key
    env = os.environ.get("LANGGRAPH_AES_KEY")
    return env.encode() if env else None


def undecoded_text(info: Any) -> str:
    """What a value statectl did not decode is, in words: `pickle, 2.1 kB (...)`."""
    if not isinstance(info, dict):
        return f"not decoded: {info}"
    kind, size = str(info.get("type")), info.get("size")
    amount = "" if not isinstance(size, int) else f", {size} B" if size < 1000 else f", {size / 1000:.1f} kB"
    if kind.endswith("+aes"):
        what = f"encrypted (AES){amount}"
    elif kind == "pickle":
        what = f"pickle{amount}"
    else:
        what = f"{kind} payload{amount}"
    return f"{what}: {info['why']}" if info.get("why") else what


def _decrypt(type_: str, data: bytes) -> tuple[str, bytes] | Tagged:
    """`EncryptedSerializer.from_pycryptodome_aes` (AES, EAX mode: nonce 16 B, tag 16 B, then the
    ciphertext) -> the inner (type, bytes). Decryption runs no code."""
    key = aes_key()
    if key is None:
        return Tagged(
            {
                "$undecoded": {
                    "type": type_,
                    "size": len(data),
                    "why": "give the key with --aes-key or LANGGRAPH_AES_KEY",
                }
            }
        )
    try:
        from Crypto.Cipher import AES
    except ImportError:
        return Tagged(
            {
                "$undecoded": {
                    "type": type_,
                    "size": len(data),
                    "why": f"decrypting needs pycryptodome ({install_hint('aes')})",
                }
            }
        )
    if len(key) not in (16, 24, 32):
        raise DecodeError(f"the AES key is {len(key)} bytes long; LangGraph's keys are 16, 24 or 32 bytes")
    try:
        plain = AES.new(key, AES.MODE_EAX, nonce=data[:16]).decrypt_and_verify(data[32:], data[16:32])
    except (ValueError, KeyError) as exc:
        raise DecodeError(f"cannot decrypt an AES value: wrong key ({exc})") from None
    return type_[: -len("+aes")], plain


def _unpack(data: bytes) -> Any:
    return json_safe(ormsgpack.unpackb(data, ext_hook=_ext_hook, option=ormsgpack.OPT_NON_STR_KEYS))


class _Memo:
    """Decoded ext payloads by their bytes. LangGraph stores the whole state at every step, so a
    message is the same bytes in every later checkpoint: decoding it once makes reading a long
    thread linear in the bytes read instead of in the messages decoded, and makes equal messages
    of neighbouring checkpoints the same object (a diff compares them by identity first).
    Bounded by the payload bytes it holds; the oldest half goes when it is full. Decoded values are
    never changed in place anywhere in statectl, so sharing them is safe."""

    MIN = 128
    """Smaller payloads decode about as fast as they are looked up."""
    LIMIT = 32 << 20

    def __init__(self) -> None:
        self.by_code: dict[int, dict[bytes, Any]] = {}
        """Decoded values by ext code, then by payload (no key tuple made per lookup)."""
        self.size = 0

    def put(self, code: int, data: bytes, value: Any) -> None:
        self.by_code.setdefault(code, {})[data] = value
        self.size += len(data)
        if self.size > self.LIMIT:
            for items in self.by_code.values():
                for old in list(items)[: len(items) // 2 or 1]:
                    del items[old]
                    self.size -= len(old)


_MISS = object()
MEMO = _Memo()


def _ext_hook(code: int, data: bytes) -> Any:
    """Turn one msgpack ext into data. Imports nothing, calls nothing the payload names."""
    if len(data) < _Memo.MIN:
        return _ext_value(code, data)
    items = MEMO.by_code.get(code)
    value = _MISS if items is None else items.get(data, _MISS)
    if value is _MISS:
        value = _ext_value(code, data)
        MEMO.put(code, bytes(data), value)
    return value


def _ext_value(code: int, data: bytes) -> Any:
    if code == EXT_DELTA_SNAPSHOT:
        return DeltaSnapshot(_unpack(data))
    try:
        payload = _unpack(data)
    except (ValueError, TypeError):
        return Tagged({"$ext": code, "data": b64(data)})
    if code == EXT_NUMPY_ARRAY and isinstance(payload, list) and len(payload) == 4:
        dtype, shape, order, buf = payload
        return Tagged(
            {
                "$ndarray": {
                    "dtype": dtype,
                    "shape": shape,
                    "order": order,
                    "data": buf.get("$bytes") if isinstance(buf, dict) else buf,
                }
            }
        )
    if (
        code > EXT_PYDANTIC_V2
        or not isinstance(payload, list)
        or len(payload) < 3
        or not isinstance(payload[0], str)
        or not isinstance(payload[1], str)
    ):
        return Tagged({"$ext": code, "data": b64(data)})
    qual = f"{payload[0]}.{payload[1]}"
    arg = payload[2]
    if code == EXT_CONSTRUCTOR_SINGLE_ARG:
        if qual == "uuid.UUID":
            return Tagged({"$uuid": dashed_or_same(arg)})
        if qual == "decimal.Decimal":
            return Tagged({"$decimal": arg})
        if qual == "builtins.set":
            return Tagged({"$set": set_order(arg)})
        if qual == "builtins.frozenset":
            return Tagged({"$frozenset": set_order(arg)})
        return Tagged({"$type": qual, "arg": arg})
    if code == EXT_CONSTRUCTOR_POS_ARGS:
        if qual == "datetime.date" and isinstance(arg, list) and len(arg) == 3:
            y, m, d = arg
            return Tagged({"$date": f"{y:04d}-{m:02d}-{d:02d}"})
        return Tagged({"$type": qual, "args": arg})
    if code == EXT_METHOD_SINGLE_ARG:
        method = payload[3] if len(payload) > 3 else None
        if qual == "datetime.datetime" and method == "fromisoformat":
            return Tagged({"$datetime": arg})
        return Tagged({"$type": qual, "arg": arg, "method": method})
    return Tagged({"$type": qual, "data": arg})  # kwargs (2), pydantic v1 (4) / v2 (5)


def decode_msgpack(data: bytes) -> Any:
    """Decode one msgpack payload written by LangGraph's serializer."""
    if len(data) >= MIN_BLOB:
        from statectl.codec import arrays  # (a large blob only: `threads` skips its import)

        if len(data) >= arrays.MIN_BLOB and (value := arrays.decode_sharing(data, _unpack)) is not None:
            return value
    try:
        return _unpack(data)
    except (ValueError, TypeError, RecursionError) as exc:
        raise DecodeError(f"corrupt msgpack data ({exc})") from None


# LangChain's serialized ids of its messages (`langchain.schema.messages.X`, as `lc: 1` JSON keeps
# them) and the classes they load as (langchain_core.load.mapping), kept here as data: statectl
# never imports a class a row names
_LC_MESSAGE_MODULES = {
    "AIMessage": "ai",
    "AIMessageChunk": "ai",
    "HumanMessage": "human",
    "HumanMessageChunk": "human",
    "SystemMessage": "system",
    "SystemMessageChunk": "system",
    "ToolMessage": "tool",
    "ToolMessageChunk": "tool",
    "FunctionMessage": "function",
    "FunctionMessageChunk": "function",
    "ChatMessage": "chat",
    "ChatMessageChunk": "chat",
    "RemoveMessage": "modifier",
}


def _lc_type(lc_id: list) -> str:
    """The class a LangChain `lc` id names, as the msgpack rows name it (`langchain_core.messages.
    human.HumanMessage` for `["langchain", "schema", "messages", "HumanMessage"]`)."""
    path = [str(p) for p in lc_id]
    if (
        len(path) >= 2
        and path[-2:-1] == ["messages"]
        and path[-1] in _LC_MESSAGE_MODULES
        and path[0] in ("langchain", "langchain_core")
    ):
        return f"langchain_core.messages.{_LC_MESSAGE_MODULES[path[-1]]}.{path[-1]}"
    return ".".join(path)


def _json_hook(obj: dict[str, Any]) -> Any:
    """LangChain `lc` constructor envelopes become inert `$type` objects; LangGraph.js's `lc: 2`
    records their values (`codec.js`)."""
    if obj.get("lc") == 2 and not is_unset(value := js_record(obj)):
        return value
    if obj.get("lc") in (1, 2) and obj.get("type") == "constructor" and isinstance(obj.get("id"), list):
        data = obj.get("kwargs", {})
        if not isinstance(data, dict):  # (not what LangChain writes: kept as data)
            data = {"kwargs": data}
        elif UNDEFINED in data.values():
            data = drop_undefined(data)
        if obj.get("args"):
            data = {**data, "args": obj["args"]}
        return Tagged({"$type": _lc_type(obj["id"]), "data": data})
    if TAGS & obj.keys():
        return Tagged({"$dict": [[k, v] for k, v in obj.items()]})
    return obj


def sniff(data: bytes) -> str:
    """The serializer of an untyped row: JSON (`JsonPlusSerializer.dumps`), a pickle (protocol 2+
    starts with PROTO), else msgpack."""
    head = data.lstrip()[:1]
    if head in (b"{", b"[", b'"') or data.strip() in (b"null", b"true", b"false"):
        return "json"
    if head == b"\x80":
        return "pickle"
    return "msgpack"


def _json(data: bytes) -> Any:
    try:
        value = json.loads(data or b"null", object_hook=_json_hook)
        marker = '"undefined"' if isinstance(data, str) else b'"undefined"'
        return restore(value) if data and marker in data else value  # (LangGraph.js's undefined)
    except ValueError as exc:
        raise DecodeError(f"corrupt JSON data ({exc})") from None
    except RecursionError:
        raise DecodeError("JSON data nested too deeply to read") from None


def _retag(value: Any) -> Any:
    if isinstance(value, list):
        return [_retag(v) for v in value]
    if isinstance(value, dict):
        out = {k: _retag(v) for k, v in value.items()}
        return Tagged(out) if TAGS & value.keys() else out
    return value


def _server_json(data: bytes) -> Any:
    """Writes made from a LangGraph server's snapshot (`statectl+json`, `formats.server`): tagged
    JSON, its tags restored."""
    try:
        return _retag(orjson.loads(data or b"null"))
    except ValueError as exc:
        raise DecodeError(f"corrupt JSON data ({exc})") from None


def _inert_pickle(data: bytes) -> Any:
    """A langgraph dev folder's cloudpickle pairs: read by the inert unpickler, nothing runs."""
    from statectl.codec.unpickle import decode_pickle

    return decode_pickle(data)


def _pickle(data: bytes) -> Any:
    """JsonPlusSerializer(pickle_fallback=True): what msgpack could not hold. Read only when
    asked (--unpickle-inert), and then inertly."""
    if current().unpickle:
        return _inert_pickle(data)
    return Tagged(
        {
            "$undecoded": {
                "type": "pickle",
                "size": len(data),
                "why": "--unpickle-inert reads it without running anything",
            }
        }
    )


def _bytes(data: bytes) -> Any:
    return Tagged({"$bytes": b64(data)})


_DECODERS: dict[str, Any] = {
    "msgpack": decode_msgpack,
    "bytes": _bytes,
    "bytearray": _bytes,
    "json": _json,
    "statectl+json": _server_json,
    "inert-pickle": _inert_pickle,
    "pickle": _pickle,
}


def decode_typed(type_: str | None, data: bytes | memoryview | None) -> Any:
    """Decode a `(type, bytes)` pair as stored in a `type`/`blob` column pair."""
    if data is not None and not isinstance(data, bytes):
        data = bytes(data)
    if type_ is None and data:  # a table without a `type` column (langgraph 0.0.x / 0.1.x)
        type_ = sniff(data)
    if type_ is not None and type_.endswith("+aes"):
        inner = _decrypt(type_, data or b"")
        if isinstance(inner, Tagged):
            return inner
        type_, data = inner
    if type_ == "null" or type_ == "empty":
        return None
    decoder = _DECODERS.get(type_ or "")
    if decoder is None:  # a serializer statectl does not know: never decoded
        return Tagged({"$undecoded": {"type": type_, "size": len(data or b"")}})
    return decoder(data or b"")
