"""Record what LangGraph itself reports for every checkpoint, in statectl's tagged JSON form.

This is deliberately an independent implementation of the tagged form: it works on the live
Python objects LangGraph returns (after its own deserialisation), while statectl works on the
raw bytes. Tests compare the two.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import math
import pathlib
from collections import deque
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any
from uuid import UUID

TAGS = {"$uuid", "$decimal", "$set", "$frozenset", "$date", "$datetime", "$type", "$bytes",
        "$dict", "$ndarray", "$ext", "$float", "$undecoded"}


def _name(obj: Any) -> str:
    return f"{type(obj).__module__}.{type(obj).__name__}"


def tagged(obj: Any) -> Any:
    """Live Python value -> statectl's lossless tagged JSON form."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, enum.Enum):
        return {"$type": _name(obj), "arg": tagged(obj.value)}
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        if math.isnan(obj) or math.isinf(obj):
            return {"$float": repr(obj)}
        return obj
    if hasattr(obj, "model_dump") and callable(obj.model_dump):
        return {"$type": _name(obj), "data": tagged(obj.model_dump())}
    if hasattr(obj, "to_json") and hasattr(obj, "is_lc_serializable") and obj.is_lc_serializable():
        # LangChain 0.2 (pydantic v1): as its JSON serializer stores it, the `to_json()` kwargs
        return {"$type": _name(obj), "data": tagged(obj.to_json()["kwargs"])}
    if hasattr(obj, "_asdict") and callable(obj._asdict):
        return {"$type": _name(obj), "data": tagged(obj._asdict())}
    if isinstance(obj, pathlib.PurePath):
        return {"$type": _name(obj), "args": tagged(list(obj.parts))}
    if isinstance(obj, UUID):
        return {"$uuid": str(obj)}
    if isinstance(obj, Decimal):
        return {"$decimal": str(obj)}
    if isinstance(obj, frozenset):
        return {"$frozenset": [tagged(x) for x in obj]}
    if isinstance(obj, set):
        return {"$set": [tagged(x) for x in obj]}
    if isinstance(obj, deque):
        return {"$type": _name(obj), "arg": [tagged(x) for x in obj]}
    if isinstance(obj, datetime):
        return {"$datetime": obj.isoformat()}
    if isinstance(obj, timedelta):
        return {"$type": _name(obj), "args": [obj.days, obj.seconds, obj.microseconds]}
    if isinstance(obj, date):
        return {"$date": obj.isoformat()}
    if isinstance(obj, time):
        return {"$type": _name(obj), "data": tagged({
            "hour": obj.hour, "minute": obj.minute, "second": obj.second,
            "microsecond": obj.microsecond, "tzinfo": obj.tzinfo, "fold": obj.fold})}
    if isinstance(obj, timezone):
        return {"$type": _name(obj), "args": tagged(list(obj.__getinitargs__()))}
    if type(obj).__name__ == "Send" and hasattr(obj, "node") and hasattr(obj, "arg"):
        args = [obj.node, obj.arg] + ([obj.timeout] if getattr(obj, "timeout", None) else [])
        return {"$type": _name(obj), "args": tagged(args)}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {"$type": _name(obj),
                "data": tagged({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})}
    if isinstance(obj, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(bytes(obj)).decode()}
    if isinstance(obj, (list, tuple)):
        return [tagged(x) for x in obj]
    if isinstance(obj, dict):
        if all(isinstance(k, str) for k in obj) and not (TAGS & obj.keys()):
            return {k: tagged(v) for k, v in obj.items()}
        return {"$dict": [[tagged(k), tagged(v)] for k, v in obj.items()]}
    if isinstance(obj, BaseException):
        return repr(obj)
    raise TypeError(f"cannot record {type(obj)!r}")


def _interrupt(i: Any) -> dict[str, Any]:
    return {"id": i.id, "value": tagged(i.value)}


def snapshot_record(snap: Any) -> dict[str, Any]:
    """One `StateSnapshot` in the `statectl log --json` shape."""
    conf = snap.config["configurable"]
    parent = (snap.parent_config or {}).get("configurable", {})
    return {
        "thread_id": conf["thread_id"],
        "checkpoint_ns": conf.get("checkpoint_ns", ""),
        "checkpoint_id": conf["checkpoint_id"],
        "parent_checkpoint_id": parent.get("checkpoint_id"),
        "created_at": snap.created_at,
        "metadata": tagged(snap.metadata),
        "values": tagged(snap.values),
        "next": list(snap.next),
        "tasks": [{
            "id": t.id, "name": t.name, "path": tagged(list(t.path)), "error": tagged(t.error),
            "interrupts": [_interrupt(i) for i in t.interrupts],
            "result": tagged(getattr(t, "result", None)),  # not in LangGraph 0.2
        } for t in getattr(snap, "tasks", ())],  # not in LangGraph 0.2.0
        "interrupts": [_interrupt(i) for i in getattr(snap, "interrupts", None)  # not in 0.2
                       or [i for t in getattr(snap, "tasks", ()) for i in t.interrupts]],
    }
