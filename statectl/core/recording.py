"""What a thread's branch recorded after a checkpoint, from the data alone (`replay --offline`):
each model answer (an AI message a task wrote) and each tool result (a tool message) in the order
the branch made them, with the node, the step, the task path and the namespace that made it, and
the messages the model had been sent (the state's messages before that step); the values its
interrupts were resumed with; the tasks that wrote neither (if they call a model, an offline run
cannot answer them).

A call is found by its place: the namespace's nodes (task ids left out: a re-run makes new ones),
the step, the node, the task path and the call's index within the task. The writer
(`statectl.project.offline`) answers the user's code from this, as JSON: it never reads the store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from statectl.core.reducers import is_message, message_data
from statectl.core.state import ThreadView, decode_write, pull_node
from statectl.model import CheckpointRecord

NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
_CONTROL = ("branch:", "join:", "start:", "__")


def ns_names(ns: str) -> str:
    """A checkpoint namespace without its task ids (`tools:abc|agent:def` -> `tools|agent`): what
    a re-run's namespace has in common with the original's."""
    return "|".join(part.split(":", 1)[0] for part in ns.split("|")) if ns else ""


def role(message: Any) -> str:
    kind = str(message_data(message).get("type") or "")
    return "ai" if kind in ("ai", "AIMessageChunk") else "tool" if kind in ("tool", "ToolMessageChunk") else kind


def form(message: Any) -> dict[str, Any]:
    """What a request's message is compared by: its role, content, tool calls (name, arguments,
    id) and the tool call it answers. Ids and metadata are not compared: a re-run makes new ones."""
    data = message_data(message)
    out: dict[str, Any] = {"role": role(message).removesuffix("MessageChunk").lower(), "content": data.get("content")}
    calls = data.get("tool_calls")
    if isinstance(calls, list) and calls:
        out["tool_calls"] = [
            {"name": c.get("name"), "args": c.get("args"), "id": c.get("id")} for c in calls if isinstance(c, dict)
        ]
    if data.get("tool_call_id") is not None:
        out["tool_call_id"] = data.get("tool_call_id")
    return out


@dataclass(frozen=True)
class Call:
    """One recorded answer: a model's message (`model`), a tool's result (`tool`), or the values an
    interrupt was resumed with (`resume`)."""

    kind: str
    ns: str
    """The namespace's nodes (`ns_names`): '' for the root graph."""
    step: int
    """The step the task ran in (its checkpoint's step + 1, as LangGraph's `langgraph_step`)."""
    node: str
    path: str
    """The task's path as the writes store it (`~__pregel_pull, model`)."""
    index: int
    """Which call of its kind within the task (0 first)."""
    checkpoint_id: str
    """The checkpoint the task ran from."""
    answer: Any
    """The message (inert, as statectl decodes it); for `resume` the list of values."""
    sent: tuple[int, ...] = ()
    """The messages the state held before the step (indexes into `Recording.messages`)."""
    own: tuple[int, ...] = ()
    """The messages the task itself wrote before this answer (its prompt, when it keeps it)."""
    update: dict[str, Any] = field(default_factory=dict)
    """A tool's other writes (a `Command(update=...)`): channel -> value."""
    error: str | None = None
    """A tool that raised: the error LangGraph saved (`repr(exception)`); `answer` is None."""
    call_id: str | None = None
    """The tool call of a tool that raised (its task's `Send`)."""

    @property
    def tool_call_id(self) -> str | None:
        if self.call_id is not None:
            return self.call_id
        value = message_data(self.answer).get("tool_call_id") if self.kind == "tool" else None
        return value if isinstance(value, str) else None

    def preview(self, limit: int = 100) -> str:
        """One line: the text, else the tool calls it asks for (data: escaped where it is shown)."""
        if self.kind == "resume":
            text = json.dumps(self.answer, ensure_ascii=False, default=str)
        elif self.error is not None:
            text = f"raised {self.error}"
        else:
            data = message_data(self.answer)
            text = _text(data.get("content"))
            found = data.get("tool_calls")
            calls: list[Any] = found if isinstance(found, list) else []
            asks = ", ".join(
                f"{c.get('name')}({json.dumps(c.get('args'), ensure_ascii=False, default=str)})"
                for c in calls
                if isinstance(c, dict)
            )
            if asks:
                text = f"{text}  → {asks}" if text else f"→ {asks}"
        text = " ".join(text.split())
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def to_json(self) -> dict[str, Any]:
        out = {
            "kind": self.kind,
            "ns": self.ns,
            "step": self.step,
            "node": self.node,
            "path": self.path,
            "index": self.index,
            "checkpoint_id": self.checkpoint_id,
            "answer": self.answer,
        }
        if self.kind == "model":
            out.update(sent=list(self.sent), own=list(self.own))
        if self.kind == "tool":
            out.update(tool_call_id=self.tool_call_id, update=self.update)
            if self.error is not None:
                out["error"] = self.error
        return out


@dataclass(frozen=True)
class Silent:
    """A task that ran and wrote no model answer and no tool result (`why` says what it wrote)."""

    ns: str
    step: int
    node: str
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"ns": self.ns, "step": self.step, "node": self.node, "why": self.why}


@dataclass(frozen=True)
class Recording:
    thread_id: str
    checkpoint_id: str
    """Where the offline run starts: the calls are those of the branch after it."""
    end_checkpoint_id: str
    """The original branch's end (the newest checkpoint descending from the start)."""
    calls: tuple[Call, ...]
    silent: tuple[Silent, ...]
    messages: tuple[dict[str, Any], ...]
    """Each message any call was sent, once (`form`)."""
    nodes: tuple[str, ...]
    """The root graph's nodes that ran on the branch."""
    inputs: tuple[tuple[str, Any], ...] = ()
    """The new input each later run of the branch started with (`invoke(input)`): its input
    checkpoint's id and the value (`__start__`)."""

    def request(self) -> Any:
        """As the writer takes it (`replay --offline`): plain JSON, the decoded data's own forms."""
        from statectl.codec.jsonout import json_bytes

        return json.loads(json_bytes(self.to_json()))

    def to_json(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "checkpoint_id": self.checkpoint_id,
            "end_checkpoint_id": self.end_checkpoint_id,
            "calls": [c.to_json() for c in self.calls],
            "silent": [s.to_json() for s in self.silent],
            "messages": list(self.messages),
            "nodes": list(self.nodes),
            "inputs": [{"checkpoint_id": cid, "value": value} for cid, value in self.inputs],
        }


def branch(view: ThreadView, rec: CheckpointRecord) -> list[CheckpointRecord]:
    """`rec` and the checkpoints after it on the original branch, oldest first: the path to the
    newest checkpoint that descends from it."""
    children = view.children()
    newest, todo, seen = rec.checkpoint_id, [rec.checkpoint_id], {rec.checkpoint_id}
    while todo:
        cid = todo.pop()
        newest = max(newest, cid)
        for child in children.get(cid, ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    path = []
    for r in view.ancestry(view.record(newest)):
        path.append(r)
        if r.checkpoint_id == rec.checkpoint_id:
            break
    return path[::-1]


def recording(view: ThreadView, rec: CheckpointRecord) -> Recording:
    """What the branch after `rec` recorded (root namespace `view`, and its subgraphs' checkpoints
    made from the branch's steps)."""
    path = branch(view, rec)
    table = _Table()
    calls: list[Call] = []
    silent: list[Silent] = []
    nodes: dict[str, None] = {}
    ran_from = path  # (the end's writes: tasks of a step that did not finish, as they were saved)
    for r in ran_from:
        _step_calls(view, r, "", table, calls, silent, nodes)
    inputs = tuple(
        (r.checkpoint_id, (view.checkpoint(r.checkpoint_id).get("channel_values") or {}).get("__start__"))
        for r in path[1:]
        if r.source == "input"
    )
    on_branch = {r.checkpoint_id for r in ran_from}
    for ns in sorted(n for n in view.namespaces if n):
        sub = ThreadView(view.source, view.thread_id, ns)
        for r in reversed(sub.records):
            parents = r.metadata.get("parents")
            if isinstance(parents, dict) and parents.get("") in on_branch:
                _step_calls(sub, r, ns_names(ns), table, calls, silent, {})
    return Recording(
        view.thread_id,
        rec.checkpoint_id,
        path[-1].checkpoint_id,
        tuple(_made_once(calls)),
        tuple(silent),
        tuple(table.forms),
        tuple(nodes),
        inputs,
    )


def _step_calls(
    view: ThreadView,
    r: CheckpointRecord,
    ns: str,
    table: _Table,
    calls: list[Call],
    silent: list[Silent],
    nodes: dict[str, None],
) -> None:
    """The calls of the tasks that ran from checkpoint `r`."""
    writes = view.writes(r.checkpoint_id)
    if not writes:
        return
    snap = view.snapshot(r.checkpoint_id)
    names = {t.id: t.name for t in snap.tasks}
    step = (r.step if r.step is not None else -1) + 1
    by_task: dict[str, list[Any]] = {}
    for w in sorted(writes, key=lambda w: w.sort_key):
        by_task.setdefault(w.task_id, []).append(w)
    state = snap.values if isinstance(snap.values, dict) else {}

    def sent(key: str) -> tuple[int, ...]:
        return tuple(table.index(m) for m in _messages(state.get(key)))

    known = _Ids(state)

    for task_id, ws in by_task.items():
        if task_id == NULL_TASK_ID:
            continue
        node = names.get(task_id) or pull_node(ws[0].task_path) or "?"
        if not ns:
            nodes.setdefault(node)
        if node == "__start__":  # (the run's input: no task made it)
            continue
        where = {"ns": ns, "step": step, "node": node, "path": ws[0].task_path, "checkpoint_id": r.checkpoint_id}
        found = _task_calls(ws, where, sent, known, table)
        resumed = any(c.kind == "resume" for c in found)
        failed = next((decode_write(w) for w in ws if w.channel == "__error__"), None)
        call_id = _sent_tool_call(view, r, ws[0].task_path) if failed is not None and not found else None
        if call_id is not None:  # a tool that raised: the run raises it again there
            found.append(Call("tool", index=0, answer=None, error=str(failed), call_id=call_id, **where))
        calls.extend(found)
        if not [c for c in found if c.kind != "resume"] and not resumed:
            wrote = sorted({w.channel for w in ws if not w.channel.startswith(_CONTROL)})
            why = "wrote " + ", ".join(wrote) if wrote else "wrote no state"
            silent.append(Silent(ns, step, node, why))


def _sent_tool_call(view: ThreadView, r: CheckpointRecord, path: str) -> str | None:
    """The id of the tool call a `Send` task ran (`Send("tools", [tool_call])` of create_agent, or
    LangGraph's `ToolCallWithContext`), from the Sends checkpoint `r` holds."""
    parts = path.removeprefix("~").split(", ")
    if len(parts) < 2 or parts[0] != "__pregel_push" or not parts[1].isdigit():
        return None
    sends = (view.checkpoint(r.checkpoint_id).get("channel_values") or {}).get("__pregel_tasks")
    idx = int(parts[1])
    if not isinstance(sends, list) or idx >= len(sends) or not isinstance(sends[idx], dict):
        return None
    args = sends[idx].get("args")
    arg = args[1] if isinstance(args, list) and len(args) > 1 else None
    if isinstance(arg, list) and len(arg) == 1:
        arg = arg[0]
    if isinstance(arg, dict) and isinstance(arg.get("tool_call"), dict):
        arg = arg["tool_call"]
    found = arg.get("id") if isinstance(arg, dict) else None
    return found if isinstance(found, str) else None


class _Ids:
    """The ids of the messages a state holds, read when first asked (most steps write no answer)."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state
        self.ids: set[Any] | None = None

    def __contains__(self, mid: Any) -> bool:
        if self.ids is None:
            self.ids = {message_data(m).get("id") for v in self.state.values() for m in _messages(v)} - {None}
        return mid in self.ids


def _made_once(calls: list[Call]) -> list[Call]:
    """Each model answer where the model made it: a subgraph's answer is also written by its
    parent's node (the subgraph's output), which called no model; the deepest namespace made it."""
    depth: dict[Any, int] = {}
    for c in calls:
        mid = message_data(c.answer).get("id") if c.kind == "model" else None
        if mid is not None:
            depth[mid] = max(depth.get(mid, 0), c.ns.count("|") + bool(c.ns))
    return [
        c
        for c in calls
        if c.kind != "model"
        or (mid := message_data(c.answer).get("id")) is None
        or depth[mid] == c.ns.count("|") + bool(c.ns)
    ]


def _task_calls(
    ws: list[Any],
    where: dict[str, Any],
    sent: Any,
    known: Any,
    table: _Table,
) -> list[Call]:
    """The answers one task's writes hold, in the order it wrote them."""
    own: list[int] = []
    answers = tools = 0
    other: dict[str, Any] = {}
    found: list[Call] = []
    for w in ws:
        if w.channel == "__resume__":
            value = decode_write(w)
            found.append(Call("resume", index=0, answer=value if isinstance(value, list) else [value], **where))
            continue
        if w.channel.startswith(_CONTROL):
            continue
        value = decode_write(w)
        items = _messages(value)
        if not items:
            other[w.channel] = value
            continue
        for m in items:
            kind = role(m)
            if kind == "ai" and message_data(m).get("id") not in known:  # (not a rewrite of one)
                found.append(Call("model", index=answers, answer=m, sent=sent(w.channel), own=tuple(own), **where))
                answers += 1
            elif kind == "tool":
                found.append(Call("tool", index=tools, answer=m, **where))
                tools += 1
            own.append(table.index(m))
    if [c.kind for c in found if c.kind != "resume"] == ["tool"] and other:  # (a tool's Command(update=...))
        found = [Call(**{**c.__dict__, "update": other}) if c.kind == "tool" else c for c in found]
    return found


def _messages(value: Any) -> list[Any]:
    if is_message(value):
        return [value]
    if isinstance(value, list) and value and all(is_message(m) for m in value):
        return value
    return []


class _Table:
    """Each message sent once (`form`), and where: the decoder shares a message between the
    checkpoints that hold it, so each decoded message is made into a form once."""

    def __init__(self) -> None:
        self.forms: list[dict[str, Any]] = []
        self.by_key: dict[str, int] = {}
        self.by_object: dict[int, tuple[Any, int]] = {}

    def index(self, message: Any) -> int:
        held = self.by_object.get(id(message))
        if held is not None and held[0] is message:
            return held[1]
        f = form(message)
        key = json.dumps(f, sort_keys=True, default=str)
        at = self.by_key.get(key)
        if at is None:
            at = self.by_key[key] = len(self.forms)
            self.forms.append(f)
        self.by_object[id(message)] = (message, at)
        return at


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(b.get("text", "")) if isinstance(b, dict) else str(b)
            for b in content
            if not isinstance(b, dict) or b.get("type") in (None, "text")
        )
    return "" if content is None else str(content)


def content_text(value: Any) -> str:
    """A message content (or a form's) as one text: what a word diff compares."""
    if isinstance(value, dict) and "role" in value:
        text = _text(value.get("content"))
        for c in value.get("tool_calls") or []:
            text += f" → {c.get('name')}({json.dumps(c.get('args'), ensure_ascii=False, sort_keys=True, default=str)})"
        return text
    return _text(value)


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """`old` against `new`, word by word: (`=`|`-`|`+`, text) pieces, git's --word-diff."""
    import difflib
    import re

    a, b = re.findall(r"\s+|\S+", old), re.findall(r"\s+|\S+", new)
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("=", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(("-", "".join(a[i1:i2])))
        if j2 > j1:
            out.append(("+", "".join(b[j1:j2])))
    return out


def regenerated_ids(original: Any, new: Any) -> Any:
    """`new` state values with the message ids a re-run regenerated put back: a message of a list
    that equals the original's at the same position but for its id takes the original's id (as
    `diff` aligns them). What is left to differ is what the run changed."""
    if not isinstance(original, dict) or not isinstance(new, dict):
        return new
    out = dict(new)
    for key, after in new.items():
        before = original.get(key)
        if not (_messages(before) and _messages(after)) or not isinstance(after, list) or not isinstance(before, list):
            continue
        fixed = list(after)
        for i, (a, b) in enumerate(zip(before, after, strict=False)):
            if a != b and _without_id(a) == _without_id(b):
                fixed[i] = a
        out[key] = fixed
    return out


def _without_id(message: Any) -> Any:
    data = message_data(message)
    return {**message, "data": {k: v for k, v in data.items() if k != "id"}}
