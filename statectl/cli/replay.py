"""`statectl replay`: re-run a graph from a checkpoint with the current code (or say what would run)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from statectl.cli.options import (
    Checkpoint,
    Db,
    Json,
    Ns,
    Python,
    Thread,
    open_store,
)
from statectl.cli.output import emit, emit_json, error_text, make_console
from statectl.cli.travel import GraphTarget, InPlace, Resume, To, Yes, prepare_target
from statectl.cli.typer_compat import Exit
from statectl.errors import StatectlError

if TYPE_CHECKING:  # (the writes load only when a command writes: `threads` does not pay for them)
    from statectl.project.launch import Writer
    from statectl.project.timetravel import Target


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
    resume: Resume = None,
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
    target, writer = prepare_target(
        db, the_plan.thread_id, start, the_plan.start_ns, to, in_place, yes, python, graph, until=until or None
    )
    said = (
        f"replay runs {graph}'s code (models are called, tools act) from checkpoint "
        f"{target.checkpoint_id} of thread {target.thread_id} in {target.label}"
    )
    typer.echo(f"statectl: {error_text(said)}", err=True)  # (a thread id is data: escaped)
    from statectl.core.travel import UNSEEN_NODE

    for line in the_plan.notes:
        if line.startswith(UNSEEN_NODE):  # (the loaded graph has every --until node: it checked them)
            continue
        typer.echo(f"statectl: note: {error_text(line)}", err=True)
    asked = target.request(graph, "replay", has_resume=resume is not None, resume=value, until=until or None)
    end = _run(target, asked, python, json, writer)
    if end is None:
        return
    _outcome(target, end, json)
    if end.get("failure"):
        raise Exit(1)


def _run(
    target: Target, request: dict[str, Any], python: str | None, json: bool, loaded: Writer
) -> dict[str, Any] | None:
    """The re-run by `loaded` (the graph loaded), each new step shown as it is saved; the
    writer's last answer."""
    from statectl.project.timetravel import start

    writer = start(python, request, loaded)
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
        entry = next(iter(entries(view, {checkpoint_id})), None)
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
