"""`statectl fork`: one new checkpoint on a new branch, by LangGraph's own update_state."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from statectl.cli.options import (
    Checkpoint,
    Db,
    Json,
    Ns,
    Python,
    Thread,
)
from statectl.cli.output import emit, emit_json, make_console
from statectl.cli.write_options import AllowType, GraphTarget, InPlace, Resume, To, Yes, json_arg, prepare_target
from statectl.errors import StatectlError

if TYPE_CHECKING:  # (the writes load only when a command writes: `threads` does not pay for them)
    from statectl.project.copy_fork_rerun import Target
    from statectl.project.launch import Writer


def _values(sets: list[str] | None) -> dict[str, Any] | None:
    import json

    if not sets:
        return None
    out = {}
    for item in sets:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise StatectlError(f"--set {item!r} is not KEY=JSON", "e.g. --set topic='\"rye\"' --set count=3")
        try:
            out[key] = json_arg(text, f"--set {key}")
        except json.JSONDecodeError as exc:
            raise StatectlError(
                f"--set {key}: {text!r} is not JSON ({exc.msg})", "a text is quoted: --set topic='\"rye\"'"
            ) from None
    return out


def _edited(python: str | None, target: Target, graph: str, writer: Writer) -> dict[str, Any]:
    """The state as JSON in $EDITOR (read by `writer`, the graph loaded); the keys whose value
    the user changed."""
    import json
    import shlex
    import subprocess
    import tempfile

    from statectl.project.copy_fork_rerun import run

    current = run(python, target.request(graph, "state"), writer)["values"]
    if not isinstance(current, dict):
        raise StatectlError("--edit edits a state that is a mapping of keys", "use --set KEY=JSON")
    text = json.dumps(current, indent=2, ensure_ascii=False) + "\n"
    fd, path = tempfile.mkstemp(prefix="statectl-state-", suffix=".json")  # (0600: a state may hold secrets)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        editor = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
        try:
            code = subprocess.call([*editor, path])
        except FileNotFoundError:
            raise StatectlError(f"no editor {editor[0]!r}: set $EDITOR", "nothing written") from None
        if code != 0:
            raise StatectlError(f"the editor exited with {code}: nothing written")
        after = Path(path).read_text()
    finally:
        os.unlink(path)
    if after == text:
        raise StatectlError("the state was saved unchanged: nothing written")
    try:
        edited = json_arg(after, "the edited state")
    except json.JSONDecodeError as exc:
        raise StatectlError(f"the edited state is not JSON (line {exc.lineno}: {exc.msg}): nothing written") from None
    if not isinstance(edited, dict):
        raise StatectlError("the edited state is not a JSON object: nothing written")
    if gone := sorted(set(current) - set(edited)):
        raise StatectlError(
            f"key {gone[0]!r} was removed: a fork sets values, it cannot remove a key",
            "set it to its empty value instead",
        )
    return {k: v for k, v in edited.items() if k not in current or current[k] != v}


def fork(
    thread_id: Thread,
    checkpoint: Checkpoint = None,
    graph: GraphTarget = None,
    db: Db = None,
    ns: Ns = "",
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="KEY=JSON: the new value of a state key, through its reducer (several allowed).",
            show_default=False,
        ),
    ] = None,
    edit: Annotated[
        bool,
        typer.Option(
            "--edit",
            help="Edit the state as JSON in $EDITOR (messages as their dict form); the keys you change are written.",
        ),
    ] = False,
    as_node: Annotated[
        str | None,
        typer.Option(
            "--as-node",
            help="Write the update as if this node had made it (what runs next follows).",
            show_default=False,
        ),
    ] = None,
    resume: Resume = None,
    to: To = None,
    in_place: InPlace = False,
    yes: Yes = False,
    python: Python = None,
    allow_type: AllowType = None,
    json: Json = False,
) -> None:
    """Fork a thread at a checkpoint, with edited state.

    One new checkpoint on a new branch.
    Made by LangGraph's own update_state on your compiled graph (--graph), so reducers, as_node
    routing and channel versions are LangGraph's. Written into a copy of the thread (./statectl-
    scratch.sqlite unless --to or --in-place). Prints the new checkpoint and what it changed.
    --resume JSON answers a waiting interrupt differently: that runs the graph, exactly as
    `statectl replay --resume JSON`."""
    if graph is None:
        raise StatectlError("fork needs your graph: --graph file.py:graph", "LangGraph's update_state runs on it")
    if resume is not None:
        if sets or edit or as_node is not None:
            raise StatectlError("--resume answers the interrupt; --set, --edit and --as-node write state: give one")
        from statectl.cli.replay import replay

        return replay(
            thread_id, checkpoint, graph, db, ns, False, None, resume, to, in_place, yes, python, allow_type, json
        )
    values = _values(sets)
    if values is not None and edit:
        raise StatectlError("--set and --edit: give one")
    if values is None and not edit and as_node is None:
        raise StatectlError("say what the fork changes: --set KEY=JSON, --edit, or --as-node NODE")
    from statectl.project.copy_fork_rerun import run

    target, writer = prepare_target(
        db, thread_id, checkpoint, ns, to, in_place, yes, python, graph, allow_type, values=values, as_node=as_node
    )
    if edit:  # (the loaded writer reads the state; a second one writes the keys changed)
        values = _edited(python, target, graph, writer)
        done = run(python, target.request(graph, "fork", values=values, as_node=as_node))
    else:
        done = run(python, target.request(graph, "fork", values=values, as_node=as_node), writer)
    _report(target, done["checkpoint_id"], json, "forked")


def _report(target: Target, checkpoint_id: str, json: bool, verb: str) -> None:
    """The new checkpoint, and what it changed (as `statectl diff` shows it)."""
    import statectl
    from statectl.core.diff import step_diff

    with statectl.open(target.spec) as store:
        view = store.view(target.thread_id, target.checkpoint_ns)
        rec = view.record(checkpoint_id)
        d = step_diff(view, rec)
        if json:
            emit_json(
                {
                    "thread_id": target.thread_id,
                    "checkpoint_ns": target.checkpoint_ns,
                    "checkpoint_id": checkpoint_id,
                    "parent_checkpoint_id": rec.parent_checkpoint_id,
                    "to": target.label,
                    "diff": d.to_json(),
                }
            )
            return
        from statectl.render.diff import diff_view

        make_console().print(
            f"{verb} thread {target.thread_id} at {target.checkpoint_id}: new checkpoint "
            f"{checkpoint_id} in {target.label}",
            soft_wrap=True,
        )
        emit(diff_view(d), lines=True)
