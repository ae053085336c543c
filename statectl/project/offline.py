"""`replay --offline` in the project's interpreter: the user's graph runs from the checkpoint with
their current code, but each chat model call (LangChain's `BaseChatModel`) is answered with the
message the original branch recorded for it, when the request matches the recording; each tool
call with its recorded result (unless `--offline models`); each interrupt with the value the
original branch resumed with; each later run of the branch with its recorded input. No network
connection is made: the process's sockets are guarded.

The first call that does not match stops the run with a report of where and why (the CLI exits
3), or, with `--live-after-divergence`, goes on with the real models and tools from there.

The recording comes from statectl as JSON (`statectl.core.recording`): nothing here reads the
store or imports a module the data names; messages are rebuilt by LangChain's own
`messages_from_dict`, which knows only its message types.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

from statectl.project.writer import WriteError, say

_MESSAGE_TYPES = frozenset({"human", "ai", "system", "tool", "AIMessageChunk", "ToolMessageChunk", "remove"})


class Diverged(BaseException):
    """The run left the recording (a `BaseException`: the user's code and LangChain's tool error
    handling catch `Exception`, and must not turn a divergence into a tool's error message)."""


class Offline:
    """The recording, indexed by where each answer was made, and what the run used of it."""

    def __init__(self, recording: dict[str, Any], tools: bool, live_after: bool) -> None:
        self.messages: list[dict[str, Any]] = recording.get("messages") or []
        self.keys = [_text_key(m) for m in self.messages]
        self.seen: dict[int, tuple[Any, str]] = {}
        self.texts: dict[Any, str] = {}
        self.answer_tools = tools
        self.live_after = live_after
        self.models: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
        self.tools: dict[str, dict[str, Any]] = {}
        self.resumes: list[dict[str, Any]] = []
        for call in recording.get("calls") or []:
            if call["kind"] == "model":
                self.models.setdefault((call["ns"], call["step"], call["node"]), []).append(call)
            elif call["kind"] == "tool" and call.get("tool_call_id"):
                self.tools.setdefault(call["tool_call_id"], call)
            elif call["kind"] == "resume":
                self.resumes.append(call)
        self.silent = {(s["ns"], s["step"], s["node"]): s["why"] for s in recording.get("silent") or []}
        self.inputs: list[Any] = [i["value"] for i in recording.get("inputs") or []]
        self.calls: dict[tuple[str, int, str, str], int] = {}
        self.used_resumes: dict[tuple[str, int, str], int] = {}
        self.lock = threading.Lock()
        self.report: dict[str, Any] | None = None
        self.live = False
        self.answered = {"model": 0, "tool": 0, "resume": 0, "input": 0}
        self.unverified: list[str] = []
        self.unchecked: dict[tuple[str, str], dict[str, Any]] = {}
        """The nodes whose request held a system message the recording does not hold."""
        self.offset: int | None = None
        """How many steps the new branch is ahead of the original's (1 where LangGraph saved a
        fork checkpoint to start it: a time travel from a checkpoint the thread moved past)."""
        self.probe: Any = lambda ran_from: 0

    def _step(self, ns: str, step: int, ran_from: str | None) -> int:
        """The original branch's step of a task that runs at `step` now, from checkpoint `ran_from`."""
        if ns:
            return step  # (a subgraph starts over: its steps are its own)
        if self.offset is None:
            self.offset = self.probe(ran_from)
        return step - self.offset

    # -- the user's calls ---------------------------------------------------------------------

    def model(self, chat: Any, request: Any, config: Any, kwargs: dict[str, Any] | None = None) -> Any:
        """The recorded answer to this model call, or None: call the real model (live). `kwargs`:
        the call's (a provider's `bind_tools` binds `tools=`: the names the model is given)."""
        if self.live:
            return None
        ns, step, node, path, ran_from = _where(config)
        messages = chat._convert_input(request).to_messages()
        with self.lock:
            self._stopped()
            now, step = step, self._step(ns, step, ran_from)
            key = (ns, step, node, path)
            index = self.calls.get(key, 0)
            self.calls[key] = index + 1
            recorded = [c for c in self.models.get((ns, step, node), []) if c["path"].startswith(path)]
            if index >= len(recorded):
                had = self.silent.get((ns, step, node))
                return self._diverge(
                    {
                        "why": "no recorded answer",
                        "ns": ns,
                        "step": step,
                        "new_step": now,
                        "checkpoint_id": ran_from,
                        "node": node,
                        "detail": f"the recording has {len(recorded)} model answer{'s' * (len(recorded) != 1)} "
                        f"for this task; this is call {index + 1}"
                        + (f" (the original task {had}: its model output is not in the state)" if had else ""),
                    }
                )
            call = recorded[index]
            mismatch = self._mismatch(call, messages)
            if mismatch is not None:
                answer = call["answer"].get("data", {}) if isinstance(call["answer"], dict) else {}
                recorded_answer = {
                    "role": "ai",
                    "content": answer.get("content"),
                    "tool_calls": answer.get("tool_calls"),
                }
                return self._diverge(
                    {
                        "ns": ns,
                        "step": step,
                        "new_step": now,
                        "checkpoint_id": ran_from,
                        "original_checkpoint_id": call.get("checkpoint_id"),
                        "node": node,
                        "answer": recorded_answer,
                        **mismatch,
                    }
                )
            unbound = _unbound(call["answer"], kwargs or {})
            if unbound is not None:
                return self._diverge(
                    {
                        "why": "tool not bound",
                        "ns": ns,
                        "step": step,
                        "new_step": now,
                        "checkpoint_id": ran_from,
                        "original_checkpoint_id": call.get("checkpoint_id"),
                        "node": node,
                        "detail": unbound,
                    }
                )
            self.answered["model"] += 1
            return _message(call["answer"])

    def tool(self, tool: Any, tool_input: Any, tool_call_id: str | None, config: Any) -> Any:
        """The recorded result of this tool call, or None: run the tool (`--offline models`, live)."""
        if self.live or not self.answer_tools:
            return None
        ns, step, node, _, ran_from = _where(config)
        with self.lock:
            self._stopped()
            where = {
                "ns": ns,
                "step": self._step(ns, step, ran_from),
                "new_step": step,
                "checkpoint_id": ran_from,
                "node": node,
            }
            call = self.tools.get(tool_call_id or "")
            if call is None:
                return self._diverge(
                    {
                        **where,
                        "why": "no recorded tool result",
                        "detail": f"tool {tool.name!r} (call {tool_call_id}) has no result in the recording",
                    }
                )
            if call.get("error") is not None:
                self.answered["tool"] += 1
                raise _recorded_error(call["error"])
            recorded = call["answer"].get("data", {}).get("name")
            if recorded and recorded != tool.name:
                return self._diverge(
                    {
                        **where,
                        "why": "tool differs",
                        "detail": f"call {tool_call_id} ran tool {recorded!r} in the recording; now {tool.name!r}",
                    }
                )
            self.answered["tool"] += 1
            message = _message(call["answer"])
            update: dict[str, Any] = call.get("update") or {}
            if not update:
                return message
            from langgraph.types import Command

            return Command(update={**{k: _revive(v) for k, v in update.items()}, "messages": [message]})

    def _stopped(self) -> None:
        if self.report is not None and not self.live:
            raise Diverged(self.report.get("why", "diverged"))

    def _diverge(self, report: dict[str, Any]) -> Any:
        self.report = report
        if self.live_after:
            self.live = True
            guard(False)
            say(going_live=True, **{k: report.get(k) for k in ("ns", "step", "new_step", "checkpoint_id", "node")})
            return None
        raise Diverged(report["why"])

    def _mismatch(self, call: dict[str, Any], sent: list[Any]) -> dict[str, Any] | None:
        """How the request differs from what the recording says was sent, or None. Compared: the
        messages that came from the state (they carry an id; a system message kept in the state
        too) against the state's messages before the step (a suffix: middleware may trim); the
        messages the node made itself against those it wrote with its answer, where it kept them
        (its system message too, when it kept one). A system message the node made and did not
        keep (create_agent's `system_prompt`, a prompt prepended in code or by middleware) is in
        no recording: it is not compared, and said once for its node (`unchecked`)."""
        own = call.get("own") or []
        kept = sum(self.messages[i].get("role") == "system" for i in own)
        made_system = [m for m in sent if getattr(m, "type", "") == "system" and not getattr(m, "id", None)]
        # (the last ones are those the node kept; any before them, middleware's or a
        # `system_prompt`, are in no recording)
        dropped = made_system[: max(0, len(made_system) - kept)]
        if dropped:
            self._unchecked(call, dropped)
        skip = {id(m) for m in dropped}
        now = [m for m in sent if id(m) not in skip]
        from_state = [self._key(m) for m in now if getattr(m, "id", None)]
        made = [self._key(m) for m in now if not getattr(m, "id", None)]
        for mine, indexes in ((from_state, call.get("sent") or []), (made, call.get("own") or [])):
            if not mine or (mine is made and not indexes):
                continue
            theirs = [self.keys[i] for i in indexes]
            if len(mine) > len(theirs) or mine != theirs[len(theirs) - len(mine) :]:
                return _first_difference([json.loads(k) for k in mine], [json.loads(k) for k in theirs])
        if made and not call.get("own"):
            self.unverified.append(f"step {call['step']} {call['node']}")
        return None

    def _unchecked(self, call: dict[str, Any], system: list[Any]) -> None:
        """Say once for a node that its system message is not in the recording (not compared)."""
        where = (call["ns"], call["node"])
        if where in self.unchecked:
            return
        text = " ".join(str(_content_text(system[0].content)).split())
        note = {
            "ns": call["ns"],
            "node": call["node"],
            "step": call["step"],
            "system": text[:80] + "…" * (len(text) > 80),
        }
        self.unchecked[where] = note
        say(system_note=note)

    def _key(self, message: Any) -> str:
        """A request message's form as text (`_form`), made once per message (a long thread sends
        each message again at every later call): per object, and across rounds (which load the
        state anew) per id and text for a message without tool calls."""
        held = self.seen.get(id(message))
        if held is not None and held[0] is message:
            return held[1]
        content = message.content
        plain = isinstance(content, str) and message.id and not getattr(message, "tool_calls", None)
        same = (message.type, message.id, getattr(message, "tool_call_id", None), content) if plain else None
        key = self.texts.get(same) if same is not None else None
        if key is None:
            key = _text_key(_form(message))
            if same is not None:
                self.texts[same] = key
        self.seen[id(message)] = (message, key)
        return key

    def resume_value(self, node: str, step: int, head: str) -> Any:
        """The next recorded answer to an interrupt of `node` at `step` (waiting at `head`)."""
        step = self._step("", step, head)
        for call in self.resumes:
            if call["node"] != node or call["step"] != step:
                continue
            key = (call["ns"], call["step"], call["node"])
            used = self.used_resumes.get(key, 0)
            if used < len(call["answer"]):
                self.used_resumes[key] = used + 1
                return call["answer"][used]
        return _NONE

    def next_input(self) -> Any:
        if not self.inputs:
            return _NONE
        self.answered["input"] += 1
        return _revive(self.inputs.pop(0))


_NONE = object()


class RecordedError(Exception):
    """A tool's error as the recording saved it, raised again where it was (its class is not
    one of Python's own: never imported from the name the data gives)."""


def _recorded_error(text: str) -> Exception:
    """The exception LangGraph saved as `repr(exc)`, raised again: one of Python's own exception
    classes with its message; any other class as `RecordedError` carrying the saved text."""
    import ast
    import builtins
    import re

    match = re.fullmatch(r"(\w+)\((.*)\)", text.strip(), re.DOTALL)
    cls = getattr(builtins, match.group(1), None) if match else None
    if match and isinstance(cls, type) and issubclass(cls, Exception):
        try:
            args = ast.literal_eval(f"({match.group(2)},)") if match.group(2) else ()
        except (ValueError, SyntaxError):
            args = (match.group(2),)
        return cls(*args)
    return RecordedError(text)


def _where(config: Any) -> tuple[str, int, str, str, str | None]:
    """The namespace's nodes, the step, the node, the task path of the running task and the
    checkpoint it runs from."""
    from langchain_core.runnables.config import ensure_config
    from langgraph.pregel._algo import task_path_str

    config = ensure_config(config)
    meta = config.get("metadata") or {}
    runtime = (config.get("configurable") or {}).get("__pregel_runtime")
    info = getattr(runtime, "execution_info", None)
    ns = str(meta.get("langgraph_checkpoint_ns") or "")
    names = "|".join(p.split(":", 1)[0] for p in ns.split("|")[:-1]) if ns else ""
    path = meta.get("langgraph_path")
    return (
        names,
        int(meta.get("langgraph_step", -1)),
        str(meta.get("langgraph_node", "?")),
        (task_path_str(tuple(path)) if path else ""),
        getattr(info, "checkpoint_id", None),
    )


def _form(message: Any) -> dict[str, Any]:
    kind = str(getattr(message, "type", ""))
    out: dict[str, Any] = {
        "role": "ai" if kind in ("ai", "AIMessageChunk") else "tool" if kind == "ToolMessageChunk" else kind,
        "content": message.content,
    }
    calls = getattr(message, "tool_calls", None)
    if calls:
        out["tool_calls"] = [{"name": c.get("name"), "args": c.get("args"), "id": c.get("id")} for c in calls]
    if getattr(message, "tool_call_id", None) is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


def _bound_names(kwargs: dict[str, Any]) -> list[str] | None:
    """The names of the tools a model call is given (`tools=`, as a provider's `bind_tools` binds
    them: OpenAI's `{"type": "function", "function": {"name": ...}}`, Anthropic's `{"name": ...}`,
    a tool object), or None when the call names none (not knowable: a model that keeps its tools
    another way)."""
    tools = kwargs.get("tools")
    if not isinstance(tools, (list, tuple)):
        return None
    names = []
    for tool in tools:
        name = None
        if isinstance(tool, dict):
            inner = tool.get("function")
            name = inner.get("name") if isinstance(inner, dict) else tool.get("name")
        else:
            name = getattr(tool, "name", None) or getattr(tool, "__name__", None)
        if isinstance(name, str):
            names.append(name)
    return names


def _unbound(answer: Any, kwargs: dict[str, Any]) -> str | None:
    """What is wrong when the recorded answer calls a tool the model is no longer given (renamed,
    removed), else None."""
    bound = _bound_names(kwargs)
    data = answer.get("data") if isinstance(answer, dict) else None
    calls = data.get("tool_calls") if isinstance(data, dict) else None
    if bound is None or not isinstance(calls, list):
        return None
    for c in calls:
        name = c.get("name") if isinstance(c, dict) else None
        if isinstance(name, str) and name not in bound:
            given = ", ".join(repr(n) for n in bound[:20]) + (", …" if len(bound) > 20 else "")
            return (
                f"the recorded answer calls tool {name!r}, which the model is no longer given "
                f"(its tools now: {given or 'none'})"
            )
    return None


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return str(content)


def _text_key(form: dict[str, Any]) -> str:
    return json.dumps(form, sort_keys=True, default=str)


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return _text_key(a) == _text_key(b)


def _first_difference(now: list[dict[str, Any]], recorded: list[dict[str, Any]]) -> dict[str, Any]:
    """The first message of `now` that differs from the recording (aligned at the start when the
    request is as long or longer, else at the end)."""
    base = recorded if len(now) >= len(recorded) else recorded[len(recorded) - len(now) :]
    offset = 0 if len(now) >= len(recorded) else len(recorded) - len(now)
    for i, (a, b) in enumerate(zip(now, base, strict=False)):
        if not _same(a, b):
            return {"why": "request differs", "index": i + offset, "now": a, "recorded": b}
    if len(now) > len(base):
        return {"why": "request differs", "index": len(base), "now": now[len(base)], "recorded": None}
    return {"why": "request differs", "index": len(now), "now": None, "recorded": base[len(now)]}


def _message(value: Any) -> Any:
    """A recorded message as LangChain's own class (only its message types)."""
    from langchain_core.messages import messages_from_dict

    data = value.get("data") if isinstance(value, dict) else None
    kind = data.get("type") if isinstance(data, dict) else None
    if not isinstance(data, dict) or kind not in _MESSAGE_TYPES:
        raise WriteError(f"the recording holds a message of type {kind!r} that the offline run cannot rebuild")
    return messages_from_dict([{"type": kind, "data": {k: v for k, v in data.items() if k != "type"}}])[0]


def _revive(value: Any, depth: int = 0) -> Any:
    """A recorded state value as the graph takes it: messages rebuilt, plain JSON as it is; any
    other object the data names is refused (never imported)."""
    if depth > 100:
        raise WriteError("the recording holds a value nested too deep to rebuild")
    if isinstance(value, list):
        return [_revive(v, depth + 1) for v in value]
    if isinstance(value, dict):
        if "$type" in value:
            if str(value["$type"]).startswith("langchain_core.messages."):
                return _message(value)
            raise WriteError(
                f"the recording holds a {value['$type']} value that the offline run cannot rebuild",
                "replay it with the real tools: --offline models",
            )
        return {k: _revive(v, depth + 1) for k, v in value.items()}
    return value


# -- the patches ---------------------------------------------------------------------------------
_ACTIVE: Offline | None = None
_GUARDED = False


@contextlib.contextmanager
def patched(offline: Offline) -> Iterator[None]:
    """LangChain's chat models and tools answer from `offline`, and sockets are guarded, inside."""
    global _ACTIVE
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk
    from langchain_core.tools import BaseTool

    saved = {
        (BaseChatModel, "invoke"): BaseChatModel.invoke,
        (BaseChatModel, "ainvoke"): BaseChatModel.ainvoke,
        (BaseChatModel, "stream"): BaseChatModel.stream,
        (BaseChatModel, "astream"): BaseChatModel.astream,
        (BaseTool, "run"): BaseTool.run,
        (BaseTool, "arun"): BaseTool.arun,
    }
    real_invoke, real_ainvoke = BaseChatModel.invoke, BaseChatModel.ainvoke
    real_stream, real_astream = BaseChatModel.stream, BaseChatModel.astream
    real_run, real_arun = BaseTool.run, BaseTool.arun

    def chunk(message: Any) -> Any:
        if isinstance(message, AIMessageChunk):
            return message
        data = message.model_dump(exclude={"type", "tool_calls", "invalid_tool_calls"})
        return AIMessageChunk(**data, tool_calls=message.tool_calls) if isinstance(message, AIMessage) else message

    def invoke(self: Any, value: Any, config: Any = None, **kwargs: Any) -> Any:
        answer = offline.model(self, value, config, kwargs)
        return real_invoke(self, value, config, **kwargs) if answer is None else answer

    async def ainvoke(self: Any, value: Any, config: Any = None, **kwargs: Any) -> Any:
        answer = offline.model(self, value, config, kwargs)
        return await real_ainvoke(self, value, config, **kwargs) if answer is None else answer

    def stream(self: Any, value: Any, config: Any = None, **kwargs: Any) -> Any:
        answer = offline.model(self, value, config, kwargs)
        if answer is None:
            yield from real_stream(self, value, config, **kwargs)
        else:
            yield chunk(answer)

    async def astream(self: Any, value: Any, config: Any = None, **kwargs: Any) -> Any:
        answer = offline.model(self, value, config, kwargs)
        if answer is None:
            async for part in real_astream(self, value, config, **kwargs):
                yield part
        else:
            yield chunk(answer)

    def run(self: Any, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        answer = offline.tool(self, tool_input, kwargs.get("tool_call_id"), kwargs.get("config"))
        return real_run(self, tool_input, *args, **kwargs) if answer is None else answer

    async def arun(self: Any, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        answer = offline.tool(self, tool_input, kwargs.get("tool_call_id"), kwargs.get("config"))
        return await real_arun(self, tool_input, *args, **kwargs) if answer is None else answer

    for (cls, name), fn in zip(saved, (invoke, ainvoke, stream, astream, run, arun), strict=True):
        setattr(cls, name, fn)
    _ACTIVE = offline
    guard(True)
    try:
        yield
    finally:
        guard(False)
        _ACTIVE = None
        for (cls, name), fn in saved.items():
            setattr(cls, name, fn)


# -- offline means offline: the process's sockets ------------------------------------------------
_REAL: dict[str, Any] = {
    "connect": socket.socket.connect,
    "connect_ex": socket.socket.connect_ex,
    "create_connection": socket.create_connection,
    "getaddrinfo": socket.getaddrinfo,
}


class NetworkRefused(ConnectionRefusedError):
    """A connection the offline run refused."""


def _refuse(call: str, where: Any) -> None:
    offline = _ACTIVE
    ns, step, node, ran_from = "", -1, "?", None
    with contextlib.suppress(Exception):
        ns, step, node, _, ran_from = _where(None)  # (the running task's, from LangChain's context)
    line = (
        f"offline: node {node} tried to connect to {where} ({call}): a model or client outside "
        "LangChain cannot be answered from the recording"
    )
    if offline is not None and offline.report is None:
        original = offline._step(ns, step, ran_from)
        offline.report = {
            "why": "network",
            "ns": ns,
            "step": original,
            "new_step": step,
            "checkpoint_id": ran_from,
            "node": node,
            "detail": line,
        }
    raise NetworkRefused(line)


def _connect(self: socket.socket, address: Any) -> Any:
    if self.family == getattr(socket, "AF_UNIX", None):
        return _REAL["connect"](self, address)
    _refuse("socket.connect", address)


def _connect_ex(self: socket.socket, address: Any) -> Any:
    if self.family == getattr(socket, "AF_UNIX", None):
        return _REAL["connect_ex"](self, address)
    _refuse("socket.connect_ex", address)


def _create_connection(address: Any, *args: Any, **kwargs: Any) -> Any:
    _refuse("socket.create_connection", address)


def _getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    _refuse("socket.getaddrinfo", f"{host}:{port}")


def guard(on: bool) -> None:
    """Refuse (on) or allow again every network connection of this process (Unix sockets stay)."""
    global _GUARDED
    if on == _GUARDED:
        return
    _GUARDED = on
    for owner, name, patch in (
        (socket.socket, "connect", _connect),
        (socket.socket, "connect_ex", _connect_ex),
        (socket, "create_connection", _create_connection),
        (socket, "getaddrinfo", _getaddrinfo),
    ):
        setattr(owner, name, patch if on else _REAL[name])


# -- the run -------------------------------------------------------------------------------------
def replay(graph: Any, config: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """`replay --offline`: LangGraph's own stream from the checkpoint, in rounds: after the run
    stops at an interrupt the original answered, it goes on with that answer; after it ends, with
    the branch's next recorded input. One answer per checkpoint saved, then the outcome."""
    from langgraph.types import Command

    offline = Offline(spec["recording"], spec.get("offline") != "models", bool(spec.get("live_after")))
    offline.probe = lambda ran_from: _forked(graph, config, ran_from)
    value: Any = None
    # --resume: the tasks re-run from the checkpoint (a time travel: the original's answers
    # saved on it are not handed back) and their interrupt gets this answer, not the recording's
    override: Any = Command(resume=spec["resume"]) if spec.get("has_resume") else None
    latest, asked = config, config
    until = spec.get("until") or None
    head = {"configurable": {k: v for k, v in config["configurable"].items() if k != "checkpoint_id"}}
    failure = None
    said: set[str] = set()
    pending: Any = None
    with patched(offline):
        while True:
            offline.seen.clear()  # (a round loads the state anew: the last round's messages are not sent again)
            try:  # (durability "sync": each step's checkpoint is saved before the next step runs, for `_forked`)
                for event in graph.stream(
                    value, asked, stream_mode="checkpoints", durability="sync", interrupt_before=until
                ):
                    conf = event["config"]["configurable"]
                    latest = {"configurable": {k: conf[k] for k in ("thread_id", "checkpoint_ns", "checkpoint_id")}}
                    pending = event.get("next")
                    if conf["checkpoint_id"] in said:
                        continue  # (each round's stream names the checkpoint it starts from first)
                    said.add(conf["checkpoint_id"])
                    say(step=True, checkpoint_id=conf["checkpoint_id"], checkpoint_ns=conf.get("checkpoint_ns", ""))
            except KeyboardInterrupt:
                raise
            except (Exception, Diverged) as exc:  # the branch ends in an error (saved), or left the recording
                if offline.report is None or offline.live:
                    text = str(exc).strip().splitlines()
                    failure = f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__
                break
            if offline.report is not None and not offline.live:
                break
            asked = head  # (the thread's head is the new branch's: later rounds fork nothing)
            if not pending:  # (it ended: the next recorded input, without reading the state again)
                value = offline.next_input()
                if value is _NONE:
                    break
                continue
            snap = graph.get_state(head)
            waiting = [t for t in snap.tasks if t.interrupts]
            if waiting:
                step = int(snap.metadata.get("step", -2)) + 1
                if override is not None:  # (--resume: the user's answer, not the recording's)
                    value, override = override, None
                else:
                    value = _resume(offline, waiting, step, snap.config["configurable"]["checkpoint_id"])
                if value is None:
                    break  # (the original waited here too, or was answered by no recorded value)
                continue
            break  # (stopped before a node: --until)
    snap = graph.get_state(head)
    return {  # (said by the caller once the destination is committed, closed and whole)
        "ok": True,
        "done": True,
        "checkpoint_id": latest["configurable"]["checkpoint_id"],
        "newest": snap.config["configurable"]["checkpoint_id"],
        "next": list(snap.next),
        "failure": failure,
        "diverged": offline.report,
        "live": offline.live,
        "answered": offline.answered,
        "unverified": offline.unverified[:20],
        "system_unchecked": list(offline.unchecked.values())[:20],
    }


def _forked(graph: Any, config: dict[str, Any], ran_from: str | None) -> int:
    """1 when LangGraph started the new branch with a fork checkpoint (a time travel from a
    checkpoint the thread moved past), else 0: read back from `ran_from`, the checkpoint a task of
    the run runs from, to the one the run started from. (The fork is saved in the background as
    the run starts: a checkpoint a task runs from that is not saved yet can only be it.)"""
    conf = config["configurable"]
    start, seen = conf["checkpoint_id"], 0
    while ran_from is not None and ran_from != start and seen < 100_000:
        saved = graph.checkpointer.get_tuple(
            {"configurable": {"thread_id": conf["thread_id"], "checkpoint_ns": "", "checkpoint_id": ran_from}}
        )
        if saved is None or (saved.metadata or {}).get("source") == "fork":
            return 1
        ran_from = (saved.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        seen += 1
    return 0


def _resume(offline: Offline, waiting: list[Any], step: int, head: str) -> Any:
    """The recorded answers to the interrupts `waiting` tasks raised (the thread waits at `head`)."""
    from langgraph.types import Command

    answers: dict[str, Any] = {}
    for task in waiting:
        for interrupt in task.interrupts:
            value = offline.resume_value(task.name, step, head)
            if value is _NONE:
                return None
            answers[interrupt.id] = value
    offline.answered["resume"] += len(answers)
    return Command(resume=answers)
