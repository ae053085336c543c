"""`fork` and `replay` in the project's interpreter: the user's graph, LangGraph's own
`update_state` and `stream`, written by LangGraph's own saver (started by `statectl.project.writer`).

This runs the user's code by design (their nodes, models and tools on `replay`; their reducers on
`fork`). Nothing here is named by the data: the graph is the TARGET the user gave.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import uuid
from collections.abc import Iterator
from typing import Any

from statectl.project.declared import declared, langgraph_declared, serde_allowed
from statectl.project.safeload import Allowlist, check_rows, cipher_of, guarded, parse_allowed
from statectl.project.writer import Destination, WriteError, say


def jsonable(value: Any, depth: int = 0) -> Any:
    """A state value as JSON a person can edit: messages and pydantic models as their dict form,
    dataclasses as dicts, dates as ISO text; what has no JSON form as its repr (marked)."""
    if depth > 200:
        return {"$repr": "(nested deeper)"}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v, depth + 1) for v in value]
    if hasattr(value, "model_dump") and callable(value.model_dump):
        return jsonable(value.model_dump(), depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value), depth + 1)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return {"$repr": repr(value)[:2000]}


def _loaded(target: str) -> Any:
    from statectl.project.target import compiled, load

    return compiled(load(target))


def _serde(graph: Any) -> Any:
    """The app's own checkpointer's serializer (its allowed modules, its encryption), if any."""
    own = getattr(graph, "checkpointer", None)
    return None if isinstance(own, bool) else getattr(own, "serde", None)


def _allowlist(graph: Any, spec: dict[str, Any]) -> Allowlist:
    """What reading the thread may build: the graph's declared types, LangGraph's safe set, the
    app serializer's own allowlist and `--allow-type`."""
    allowed = parse_allowed(spec.get("allow") or []) | langgraph_declared(graph) | serde_allowed(_serde(graph))
    return Allowlist(allowed, declared(graph), spec.get("thread_id") or "")


def _graph(spec: dict[str, Any], dest: Destination, graph: Any = None) -> Any:
    """The user's compiled graph (`graph`: loaded already), writing through `dest`'s saver, which
    writes with the app's own serializer and reads only what `_allowlist` allows."""
    if graph is None:
        graph = _loaded(spec["target"])
    serde = _serde(graph)
    dest.saver.serde = guarded(_allowlist(graph, spec), serde if serde is not None else dest.inner, cipher_of(serde))
    return graph.copy(update={"checkpointer": dest.saver})


def _config(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "configurable": {
            "thread_id": spec["thread_id"],
            "checkpoint_ns": spec.get("checkpoint_ns") or "",
            "checkpoint_id": spec["checkpoint_id"],
        }
    }


def _checked_keys(graph: Any, values: dict[str, Any]) -> None:
    keys = set(getattr(graph, "channels", {}) or {})
    unknown = sorted(k for k in values if k not in keys or k.startswith(("branch:", "__")))
    if unknown:
        state = sorted(k for k in keys if not k.startswith(("branch:", "__")))
        raise WriteError(f"the graph has no state key {unknown[0]!r}", f"its keys: {', '.join(state)}")


def _checked_types(graph: Any, values: dict[str, Any]) -> None:
    """A pydantic state's fields validate the new values (LangGraph's update_state writes them as
    given; the next node would then fail on them): a value of the wrong type is one line. A
    TypedDict's or dataclass's annotations are checked as `schema --all-threads` checks a thread."""
    schema = getattr(getattr(graph, "builder", None), "state_schema", None)
    fields = getattr(schema, "model_fields", None)
    if not isinstance(fields, dict):
        _checked_annotations(graph, values)
        return
    from pydantic import TypeAdapter, ValidationError

    for key, value in values.items():
        field = fields.get(key)
        if field is None:
            continue
        try:
            TypeAdapter(field.annotation).validate_python(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            owner = getattr(schema, "__name__", "the state")
            raise WriteError(
                f"{key}{'.' + where if where else ''}: {first.get('msg', 'not valid')} "
                f"({owner}.{key} is {_type_name(field.annotation)})",
                "nothing written",
            ) from None


def _checked_annotations(graph: Any, values: dict[str, Any]) -> None:
    """A plain key's new value (no reducer: what is written is what is stored) whose type cannot
    be the declared one (`core.schema.value_fits`): one line, before anything is written."""
    from statectl.core.schema import observed_type, value_fits
    from statectl.errors import StatectlError
    from statectl.project.schema import schema

    try:
        declared = schema(graph)
    except StatectlError:  # (a graph whose schema statectl cannot read: LangGraph writes it as given)
        return
    if declared.kind == "functional":
        return
    fields = {f.name: f for f in declared.fields}
    for key, value in values.items():
        f = fields.get(key)
        if f is None or f.channel != "last value" or value_fits(f.type, value):
            continue
        owner = (f.declared_by or declared.sources or ["the state"])[-1]
        raise WriteError(f"{key}: a {observed_type(value)} value, and {owner}.{key} is {f.type}", "nothing written")


def _type_name(annotation: Any) -> str:
    if getattr(annotation, "__args__", None) or not hasattr(annotation, "__name__"):
        return str(annotation).replace("typing.", "")
    return str(annotation.__name__)


_SPECIAL_NODES = ("__input__", "__copy__", "__end__")
"""`as_node` values update_state takes that are not nodes of the graph."""


def _checked_nodes(graph: Any, names: list[str], what: str, special: tuple[str, ...] = ()) -> None:
    nodes = getattr(graph, "nodes", None)
    if not isinstance(nodes, dict):
        return
    unknown = [n for n in names if n not in nodes and n not in special]
    if unknown:
        mine = sorted(n for n in nodes if not n.startswith("__"))
        raise WriteError(f"{what} {unknown[0]!r}: the graph has no such node", f"its nodes: {', '.join(mine)}")


def serve(lines: Iterator[str]) -> None:
    """The travel protocol: one request (`travel`); or first `load`, which loads the graph and
    checks what the request will give it (state keys and their types, node names), answers, and
    then waits for the request. The CLI loads first and copies the thread only once the graph
    loaded: a graph that does not import, or a key it does not have, leaves nothing written."""
    spec = json.loads(next(lines, "") or "null")
    if not isinstance(spec, dict):
        return
    if spec.get("op") != "load":
        travel(spec)
        return
    try:
        graph = _loaded(spec["target"])
        values = spec.get("values")
        if values:
            _checked_keys(graph, values)
            _checked_types(graph, values)
        if spec.get("as_node") is not None:
            _checked_nodes(graph, [spec["as_node"]], "--as-node", _SPECIAL_NODES)
        _checked_nodes(graph, spec.get("until") or [], "--until")
        check_rows(_allowlist(graph, spec), spec.get("check") or [], cipher_of(_serde(graph)))
        _checked_nodes(graph, spec.get("nodes") or [], "the thread ran node")
    except Exception as exc:
        _failed(exc)
        return
    say(ok=True, loaded=True)
    request = next(lines, "")
    if request:  # (none: the CLI stopped before writing, e.g. the copy failed)
        travel(json.loads(request), graph)


def _failed(exc: Exception) -> None:
    """An exception as the one answer: a `WriteError` as it says, any other as its first line."""
    if isinstance(exc, WriteError):
        say(error=exc.message, hint=exc.hint)
        return
    first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
    say(error=f"{type(exc).__name__}: {first}".rstrip(": "))


def travel(spec: dict[str, Any], graph: Any = None) -> None:
    """`state` (the values at a checkpoint, for --edit), `fork` or `replay` (`graph`: the user's
    graph, loaded already by `serve`)."""
    dest: Destination | None = None
    try:
        dest = Destination(spec["dest"], atomic=spec["op"] != "replay")
        graph = _graph(spec, dest, graph)
        config = _config(spec)
        if spec["op"] == "state":
            snap = graph.get_state(config)
            say(ok=True, values=jsonable(snap.values))
        else:  # (the outcome is said once the destination is committed, closed and whole)
            if spec["op"] == "fork":
                answer = _fork(graph, config, spec)
            elif spec.get("offline"):
                from statectl.project.offline import replay

                answer = replay(graph, config, spec)
            else:
                answer = _replay(graph, config, spec)
            dest.commit()
            dest = None
            say(**answer)
    except Exception as exc:
        _failed(exc)
    finally:
        if dest is not None:
            dest.rollback()


def _fork(graph: Any, config: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    from langgraph.errors import InvalidUpdateError

    values = spec.get("values")
    if values is not None:
        _checked_keys(graph, values)
        _checked_types(graph, values)
    try:
        new = graph.update_state(config, values, as_node=spec.get("as_node"))
    except InvalidUpdateError as exc:
        raise WriteError(str(exc).strip().splitlines()[0]) from None
    return {
        "ok": True,
        "checkpoint_id": new["configurable"]["checkpoint_id"],
        "checkpoint_ns": new["configurable"].get("checkpoint_ns", ""),
    }


def _replay(graph: Any, config: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """Run the graph from the checkpoint (None: go on; or `Command(resume=...)`), one answer per
    checkpoint as LangGraph saves it; the outcome (said once the destination is closed)."""
    from langgraph.types import Command

    value: Any = Command(resume=spec["resume"]) if spec.get("has_resume") else None
    until = spec.get("until") or None
    latest = config
    failure = None
    try:
        for event in graph.stream(value, config, stream_mode="checkpoints", interrupt_before=until):
            conf = event["config"]["configurable"]
            latest = {"configurable": {k: conf[k] for k in ("thread_id", "checkpoint_ns", "checkpoint_id")}}
            say(step=True, checkpoint_id=conf["checkpoint_id"], checkpoint_ns=conf.get("checkpoint_ns", ""))
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # the user's node raised: the branch ends in an error, which is saved
        text = str(exc).strip().splitlines()
        failure = f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__
    snap = graph.get_state({"configurable": {k: v for k, v in latest["configurable"].items() if k != "checkpoint_id"}})
    return {
        "ok": True,
        "done": True,
        "checkpoint_id": latest["configurable"]["checkpoint_id"],
        "newest": snap.config["configurable"]["checkpoint_id"],
        "next": list(snap.next),
        "failure": failure,
        "interrupts": [jsonable(i.value) for i in getattr(snap, "interrupts", ())],
    }
