"""`statectl replay`: re-run a graph from a checkpoint with the current code (or say what would run)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from statectl.cli.argv import OFFLINE_VALUES, offline_typo
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
from statectl.cli.typer_compat import Exit
from statectl.cli.write_options import AllowType, GraphTarget, InPlace, Resume, To, Yes, json_arg, prepare_target
from statectl.errors import NotFoundError, StatectlError

if TYPE_CHECKING:  # (the writes load only when a command writes: `threads` does not pay for them)
    from statectl.core.recording import Recording
    from statectl.core.rerun_plan import Plan
    from statectl.project.copy_fork_rerun import Target
    from statectl.project.launch import Writer


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
    allow_type: AllowType = None,
    json: Json = False,
    offline: Annotated[
        str | None,
        typer.Option(
            "--offline",
            help="Answer each model call (LangChain chat models) with the message the original "
            "branch recorded for it, each tool call with its recorded result (`--offline models`: "
            "tools run for real), each interrupt with the recorded answer; no network. The first "
            "call that differs from the recording stops the run (exit 3). Without CHECKPOINT: "
            "from the thread's first checkpoint (with --resume: where an interrupt waited).",
            show_default=False,
        ),
    ] = None,
    live_after_divergence: Annotated[
        bool,
        typer.Option(
            "--live-after-divergence",
            help="With --offline: where the run leaves the recording, go on with the real models and tools.",
        ),
    ] = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="With --offline: exit 0 when the new branch ends in the original's state, else "
            "print the diff and exit 1 (a thread as a regression test).",
        ),
    ] = False,
    expect: Annotated[
        list[str] | None,
        typer.Option(
            "--expect",
            help="KEY=JSON: exit 1 unless the new branch ends with this value of KEY (several allowed). "
            "KEY may be a dotted path: structured_response.score, messages.-1.content.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Re-run your graph from a checkpoint (runs your code).

    A new branch, made with your current code.
    RUNS YOUR CODE: your nodes, models and tools, as invoke(None, config) from that checkpoint
    would (LangGraph's own stream, on your compiled graph --graph). Each new step is shown as
    `log -p` shows it, then how the branch ended. Written into a copy of the thread
    (./statectl-scratch.sqlite unless --to or --in-place). --dry-run runs nothing.
    Exit: 0 done or waiting at an interrupt, 1 the branch ended in an error (or --check /
    --expect failed), 2 bad input, 3 --offline: the run left the recording."""

    if offline is None and (check or live_after_divergence):
        raise StatectlError(f"{'--check' if check else '--live-after-divergence'} needs --offline")
    if offline not in (None, *OFFLINE_VALUES):
        offline_typo(offline)
        raise StatectlError(f"--offline {offline!r}: give no value, or 'models' (the tools run for real)")
    expected = _expected(expect or [])

    value = _resume_value(resume)
    the_plan, recording = _read(db, thread_id, ns, checkpoint, offline, resume is not None, until or [])
    if dry_run:
        _dry_run(the_plan, recording, json)
        return
    if graph is None:
        raise StatectlError("replay runs your graph: --graph file.py:graph", "--dry-run runs nothing")
    import contextlib

    with contextlib.ExitStack() as stack:
        if recording is not None and (check or expected) and to is None and not in_place:
            to = _check_copy(stack)
        start = the_plan.start_checkpoint_id
        nodes = list(recording.nodes) if recording is not None else None
        target, writer = prepare_target(
            db,
            the_plan.thread_id,
            start,
            the_plan.start_ns,
            to,
            in_place,
            yes,
            python,
            graph,
            allow_type,
            until=until or None,
            nodes=nodes,
        )
        said = (
            f"replay runs {graph}'s code ({_ACTS[offline]}) from checkpoint {target.checkpoint_id} "
            f"of thread {target.thread_id} in {target.label}"
        )
        typer.echo(f"statectl: {error_text(said)}", err=True)  # (a thread id is data: escaped)
        from statectl.core.rerun_plan import UNSEEN_NODE

        for line in the_plan.notes:
            if line.startswith(UNSEEN_NODE):  # (the loaded graph has every --until node: it checked them)
                continue
            typer.echo(f"statectl: note: {error_text(line)}", err=True)
        extra: dict[str, Any] = {}
        if recording is not None:
            extra = {"offline": offline, "live_after": live_after_divergence, "recording": recording.request()}
        asked = target.request(
            graph, "replay", has_resume=resume is not None, resume=value, until=until or None, **extra
        )
        end = _run(target, asked, python, json, writer)
        if end is None:
            return
        if recording is not None:
            from statectl.cli.offline import finish

            raise Exit(finish(target, end, recording, check, expected, json))
        _outcome(target, end, json)
        if end.get("failure"):
            raise Exit(1)
        if expected:
            from statectl.cli.offline import expectations

            raise Exit(expectations(target, expected, json))


def _resume_value(resume: str | None) -> Any:
    import json as jsonlib

    if resume is None:
        return None
    try:
        return json_arg(resume, "--resume")
    except jsonlib.JSONDecodeError as exc:
        raise StatectlError(
            f"--resume {resume!r} is not JSON ({exc.msg})", "a text is quoted: --resume '\"yes\"'"
        ) from None


def _read(
    db: str | None,
    thread_id: str,
    ns: str,
    checkpoint: str | None,
    offline: str | None,
    resumed: bool,
    until: list[str],
) -> tuple[Plan, Recording | None]:
    """The plan of the replay and, offline, the recording it answers from (read from the data)."""
    from statectl.core.rerun_plan import plan

    recording: Recording | None = None
    try:
        with open_store(db) as store:
            view = store.view(thread_id, ns)
            if checkpoint is not None or offline is None:
                rec = view.resolve(checkpoint)
            elif resumed:  # (offline --resume: where an interrupt waited, as replay --resume from the latest)
                rec = _waiting(view)
            else:
                rec = view.records[-1]
            root = store.view(view.thread_id, "") if view.checkpoint_ns else None
            the_plan = plan(view, rec, resumed, until, root)
            if offline is not None:
                from statectl.cli.offline import recorded

                recording = recorded(root or view, the_plan.start_checkpoint_id)
    except NotFoundError as exc:
        if offline is None:
            raise
        # (offline, exit 3 says the run left the recording: a mistyped thread or checkpoint in CI
        # must not read as that)
        raise StatectlError(exc.message, exc.hint) from None
    return the_plan, recording


def _waiting(view: Any) -> Any:
    """The newest checkpoint of the thread where an interrupt waited (its writes hold one): where
    `--offline --resume` without CHECKPOINT answers it otherwise."""
    for rec in view.records:
        if any(w.channel == "__interrupt__" for w in view.writes(rec.checkpoint_id)):
            return rec
    raise StatectlError(
        f"--resume: no interrupt waited in thread {view.thread_id}",
        "replay --offline without --resume answers from the recording",
    )


def _check_copy(stack: Any) -> str:
    """Where `--check` / `--expect` write when no --to is given: a check is a verdict, not a branch
    to keep, so a temporary copy removed when statectl ends (./statectl-scratch.sqlite kept every
    run's branch, and a later run of the thread collided with its old copy)."""
    import tempfile
    from pathlib import Path

    return str(Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="statectl-check-"))) / "replay.sqlite")


def _run(
    target: Target, request: dict[str, Any], python: str | None, json: bool, loaded: Writer
) -> dict[str, Any] | None:
    """The re-run by `loaded` (the graph loaded), each new step shown as it is saved; the
    writer's last answer."""
    from statectl.project.copy_fork_rerun import start

    writer = start(python, request, loaded)
    end: dict[str, Any] | None = None
    try:
        for answer in writer.answers():
            if "error" in answer:
                writer.proc.wait()
                raise StatectlError(answer["error"], answer.get("hint"))
            if answer.get("system_note"):
                from statectl.cli.offline import say_system

                say_system(answer["system_note"])
                continue
            if answer.get("going_live"):
                from statectl.cli.offline import say_live

                say_live(answer)
                continue
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


_ACTS = {
    None: "models are called, tools act",
    "models": "models answered from the recording, tools act",
    "all": "models and tools answered from the recording",
}


def _dry_run(the_plan: Plan, recording: Recording | None, json: bool) -> None:
    """The plan; with --offline, the recording the run would answer from."""
    if json:
        out = the_plan.to_json()
        emit_json({**out, "recording": recording.to_json()} if recording is not None else out)
        return
    from statectl.render.rerun import plan_view

    emit(plan_view(the_plan), lines=True)
    if recording is not None:
        from statectl.render.offline import recording_view

        emit(recording_view(recording), lines=True)


def _expected(pairs: list[str]) -> dict[str, Any]:
    """`--expect KEY=JSON` as {key: value}."""
    import json as jsonlib

    out: dict[str, Any] = {}
    for pair in pairs:
        key, eq, text = pair.partition("=")
        if not eq or not key:
            raise StatectlError(f"--expect {pair!r} is not KEY=JSON", "a text is quoted: --expect 'answer=\"yes\"'")
        try:
            out[key] = jsonlib.loads(text)
        except jsonlib.JSONDecodeError as exc:
            raise StatectlError(f"--expect {key}: {text!r} is not JSON ({exc.msg})") from None
    return out


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
    from statectl.render.rerun import outcome_view

    emit(outcome_view(target.thread_id, target.label, status, snap, end.get("failure")), lines=True)
