"""`statectl fork` and `statectl replay`: time travel on a copy (by default) or in place.

Both write through LangGraph's own `update_state` / `stream` on the user's compiled graph, in the
project's interpreter (`statectl.project.travel`). With no `--to`, the thread is first copied into
a scratch SQLite file in the current folder (named, kept), so the source is only read.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from statectl.cli.options import (
    STEPS_OK,
    Checkpoint,
    Db,
    Json,
    Ns,
    Python,
    Thread,
    open_store,
    source_spec,
)
from statectl.cli.output import emit, emit_json, make_console
from statectl.cli.typer_compat import Exit
from statectl.errors import StatectlError
from statectl.project.timetravel import SCRATCH, Target

GraphTarget = Annotated[
    str | None,
    typer.Option(
        "--graph",
        help="Your graph (file.py:graph or module:graph): LangGraph's own update_state / "
        "stream run on it, with your reducers and nodes.",
        show_default=False,
    ),
]
To = Annotated[
    str | None,
    typer.Option(
        "--to",
        help=f"Write here (a SQLite file or postgresql:// URL; the thread is copied there "
        f"first if it is not in it). Default: ./{SCRATCH}.",
        show_default=False,
    ),
]
InPlace = Annotated[
    bool,
    typer.Option("--in-place", help="Write into the source itself (SQLite or Postgres), after a confirmation."),
]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before writing in place.")]


def _prepare(
    db: str | None,
    thread: str,
    checkpoint: str | None,
    ns: str,
    to: str | None,
    in_place: bool,
    yes: bool,
    python: str | None,
) -> Target:
    from statectl.project.timetravel import prepare

    with open_store(db) as store:
        return prepare(
            store,
            source_spec(db),
            thread,
            checkpoint,
            ns,
            to,
            in_place,
            python,
            confirm=lambda question: _confirm(question, yes),
            say=lambda line: typer.echo(f"statectl: {line}", err=True),
        )


def _confirm(question: str, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise StatectlError(f"{question.rstrip('?')}: confirm with --yes (there is no terminal to ask)")
    if not typer.confirm(question, default=False):
        raise StatectlError("nothing written")


def _request(target: Target, graph: str, op: str, **extra: Any) -> dict[str, Any]:
    return target.request(graph, op, **extra)


def _writer(python: str | None, request: dict[str, Any]) -> Any:
    from statectl.project.timetravel import start

    return start(python, request)


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
            out[key] = json.loads(text)
        except json.JSONDecodeError as exc:
            raise StatectlError(
                f"--set {key}: {text!r} is not JSON ({exc.msg})", "a text is quoted: --set topic='\"rye\"'"
            ) from None
    return out


def _edited(python: str | None, target: Target, graph: str) -> dict[str, Any]:
    """The state as JSON in $EDITOR; the keys whose value the user changed."""
    import json
    import shlex
    import subprocess
    import tempfile

    writer = _writer(python, _request(target, graph, "state"))
    try:
        current = writer.result()["values"]
    except BaseException:
        writer.stop()
        raise
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
        edited = json.loads(after)
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
    to: To = None,
    in_place: InPlace = False,
    yes: Yes = False,
    python: Python = None,
    json: Json = False,
) -> None:
    """Fork a thread at a checkpoint, with edited state.

    One new checkpoint on a new branch.
    Made by LangGraph's own update_state on your compiled graph (--graph), so reducers, as_node
    routing and channel versions are LangGraph's. Written into a copy of the thread (./statectl-
    scratch.sqlite unless --to or --in-place). Prints the new checkpoint and what it changed. To
    answer an interrupt differently, use `statectl replay --resume JSON` (it runs the graph)."""
    if graph is None:
        raise StatectlError("fork needs your graph: --graph file.py:graph", "LangGraph's update_state runs on it")
    values = _values(sets)
    if values is not None and edit:
        raise StatectlError("--set and --edit: give one")
    if values is None and not edit and as_node is None:
        raise StatectlError("say what the fork changes: --set KEY=JSON, --edit, or --as-node NODE")
    target = _prepare(db, thread_id, checkpoint, ns, to, in_place, yes, python)
    if edit:
        values = _edited(python, target, graph)
    writer = _writer(python, _request(target, graph, "fork", values=values, as_node=as_node))
    try:
        done = writer.result()
    except BaseException:
        writer.stop()
        raise
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


def replay(
    thread_id: Thread,
    checkpoint: Checkpoint = None,
    graph: GraphTarget = None,
    db: Db = None,
    ns: Ns = "",
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Run nothing: say which tasks would run first and which checkpoint the new branch starts from.",
        ),
    ] = False,
    until: Annotated[
        list[str] | None,
        typer.Option(
            "--until",
            help="Stop before this node runs (LangGraph's interrupt_before; several allowed).",
            show_default=False,
        ),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            help="JSON: answer the interrupt waiting at the checkpoint with this value (Command(resume=...)).",
            show_default=False,
        ),
    ] = None,
    to: To = None,
    in_place: InPlace = False,
    yes: Yes = False,
    python: Python = None,
    json: Json = False,
) -> None:
    """Re-run your graph from a checkpoint (runs your code).

    A new branch, made with your current code.
    RUNS YOUR CODE: your nodes, models and tools, as invoke(None, config) from that checkpoint
    would (LangGraph's own stream, on your compiled graph --graph). Each new step is shown as
    `log -p` shows it, then how the branch ended. Written into a copy of the thread
    (./statectl-scratch.sqlite unless --to or --in-place). --dry-run runs nothing.
    Exit: 0 done or waiting at an interrupt, 1 the branch ended in an error, 2 bad input."""
    import json as jsonlib

    from statectl.core.travel import plan

    value: Any = None
    if resume is not None:
        try:
            value = jsonlib.loads(resume)
        except jsonlib.JSONDecodeError as exc:
            raise StatectlError(
                f"--resume {resume!r} is not JSON ({exc.msg})", "a text is quoted: --resume '\"yes\"'"
            ) from None
    with open_store(db) as store:
        view = store.view(thread_id, ns)
        rec = view.resolve(checkpoint)
        root = store.view(view.thread_id, "") if view.checkpoint_ns else None
        the_plan = plan(view, rec, resume is not None, until or [], root)
    if dry_run:
        if json:
            emit_json(the_plan.to_json())
        else:
            from statectl.render.travel import plan_view

            emit(plan_view(the_plan), lines=True)
        return
    if graph is None:
        raise StatectlError("replay runs your graph: --graph file.py:graph", "--dry-run runs nothing")
    start = the_plan.start_checkpoint_id
    target = _prepare(db, the_plan.thread_id, start, the_plan.start_ns, to, in_place, yes, python)
    typer.echo(
        f"statectl: replay runs {graph}'s code (models are called, tools act) from checkpoint "
        f"{target.checkpoint_id} of thread {target.thread_id} in {target.label}",
        err=True,
    )
    for line in the_plan.notes:
        typer.echo(f"statectl: note: {line}", err=True)
    request = _request(target, graph, "replay", has_resume=resume is not None, resume=value, until=until or None)
    end = _run(target, request, python, json)
    if end is None:
        return
    _outcome(target, end, json)
    if end.get("failure"):
        raise Exit(1)


def _run(target: Target, request: dict[str, Any], python: str | None, json: bool) -> dict[str, Any] | None:
    """The re-run, each new step shown as it is saved; the writer's last answer."""
    writer = _writer(python, request)
    end: dict[str, Any] | None = None
    try:
        for answer in writer.answers():
            if "error" in answer:
                writer.proc.wait()
                raise StatectlError(answer["error"], answer.get("hint"))
            if answer.get("step") and answer["checkpoint_id"] == target.checkpoint_id:
                continue  # (LangGraph's stream names the checkpoint it starts from first)
            if answer.get("step") and not json:
                _step(target, answer["checkpoint_id"])
            elif answer.get("step"):
                emit_json({"checkpoint_id": answer["checkpoint_id"], "checkpoint_ns": answer["checkpoint_ns"]})
            if answer.get("done"):
                end = answer
        writer.proc.wait()
    except KeyboardInterrupt:
        writer.interrupt()
        typer.echo("statectl: replay stopped: the steps written so far stay", err=True)
        raise Exit(130) from None
    except BaseException:
        writer.stop()
        raise
    if end is None:
        writer.result()  # (says why the writer stopped)
    return end


def _step(target: Target, checkpoint_id: str) -> None:
    """One new checkpoint, as `log -p` shows it."""
    import statectl
    from statectl.core.diff import step_diff
    from statectl.core.timeline import entries
    from statectl.render.diff import diff_body
    from statectl.render.tables import log_line

    with statectl.open(target.spec) as store:
        view = store.view(target.thread_id, target.checkpoint_ns)
        entry = next((e for e in entries(view) if e.record.checkpoint_id == checkpoint_id), None)
        if entry is None:
            return
        from rich.padding import Padding

        console = make_console()
        whole = not console.is_terminal
        console.print(log_line(entry, False), soft_wrap=whole)
        for part in diff_body(step_diff(view, entry.record)):
            console.print(Padding(part, (0, 0, 0, 4), expand=False), soft_wrap=whole)
        console.file.flush()


def _outcome(target: Target, end: dict[str, Any], json: bool) -> None:
    import statectl

    with statectl.open(target.spec) as store:
        view = store.view(target.thread_id, target.checkpoint_ns)
        snap = view.snapshot(view.records[0].checkpoint_id)
    status = "error" if end.get("failure") else "interrupted" if (snap.interrupts or snap.next) else "done"
    if json:
        emit_json(
            {
                "thread_id": target.thread_id,
                "to": target.label,
                "status": status,
                "checkpoint_id": snap.checkpoint_id,
                "next": list(snap.next),
                "failure": end.get("failure"),
                "interrupts": [i.to_json() for i in snap.interrupts],
            }
        )
        return
    from statectl.render.travel import outcome_view

    emit(outcome_view(target.thread_id, target.label, status, snap, end.get("failure")), lines=True)


__all__ = ["STEPS_OK", "fork", "replay"]
